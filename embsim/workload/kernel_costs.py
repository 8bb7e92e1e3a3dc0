"""A layer's LayerCost summed from its kernel lists, for layer kinds whose costs are
defined by the kernels they launch (Transformer-XL's blocks, the adaptive embedding and
softmax): FLOPs from the GEMMs, bytes from every kernel, so the two never disagree."""

from __future__ import annotations

from .costs import LayerCost
from .kernels_layers import LayerKernels


def kernel_bytes(kernels, e: int) -> float:
    """HBM bytes of a kernel list: streams as given, GEMMs read both operands and write
    the product once."""
    total = 0.0
    for kn in kernels:
        if kn.kind == "gemm":
            total += kn.batch * kn.count * (kn.m * kn.k + kn.k * kn.n + kn.m * kn.n) * e
        elif kn.kind == "stream":
            total += kn.nbytes * kn.count
        else:
            total += kn.rows * kn.row_bytes * kn.count
    return total


def gemm_flops(kernels) -> int:
    return sum(2 * kn.m * kn.n * kn.k * kn.batch * kn.count for kn in kernels if kn.kind == "gemm")


def cost_from_kernels(kl: LayerKernels, params: int, d: int, elementwise: int,
                      saved: int) -> LayerCost:
    """The LayerCost of kernel lists `kl` over `params` parameters of `d` bytes, with
    `elementwise` FLOPs forward (twice that backward) and `saved` activation bytes."""
    return LayerCost(params=params, fwd_flops=gemm_flops(kl.fwd) + elementwise,
                     bwd_flops=gemm_flops(kl.bwd) + 2 * elementwise,
                     fwd_bytes=int(kernel_bytes(kl.fwd, d)), bwd_bytes=int(kernel_bytes(kl.bwd, d)),
                     grad_bytes=d * params, activation_bytes=saved,
                     fwd_kernels=len(kl.fwd), bwd_kernels=len(kl.bwd))
