"""Per-layer and optimizer times of a model on one GPU from the kernel model.

    gpu = for_gpu(topology.node.gpu)
    times = model_times(model, gpu)            # name -> LayerTime
    source = gpu.label                         # "kernel model, A100-SXM4-80GB spec"
"""

from __future__ import annotations

from dataclasses import dataclass

from .gpu_props import GpuCompute
from .kernel_time import kernels_time
from .kernels import stream
from .model import Layer, Model
from .precision import precision


@dataclass(frozen=True)
class LayerTime:
    name: str
    fwd_s: float
    bwd_s: float
    bwd_sparse_s: float | None = None     # embedding: backward with a sparse gradient


def layer_time(layer: Layer, model: Model, gpu: GpuCompute) -> LayerTime:
    prec, e = precision(model.dtype), model.dtype_bytes
    kl = layer.kernels
    sparse = kernels_time(kl.bwd_sparse, gpu, prec, e) if kl.bwd_sparse else None
    return LayerTime(layer.name, kernels_time(kl.fwd, gpu, prec, e),
                     kernels_time(kl.bwd, gpu, prec, e), sparse)


def model_times(model: Model, gpu: GpuCompute) -> dict[str, LayerTime]:
    """Forward order; repeats of one zoo layer share their kernels, so time them once."""
    gpu.gemm_peak(precision(model.dtype))      # refuse a dtype the GPU lacks, once
    cache: dict[int, LayerTime] = {}
    out = {}
    for layer in model.layers:
        key = id(layer.kernels)
        if key not in cache:
            cache[key] = layer_time(layer, model, gpu)
        t = cache[key]
        out[layer.name] = LayerTime(layer.name, t.fwd_s, t.bwd_s, t.bwd_sparse_s)
    return out


def optimizer_bytes_per_element(dtype_bytes: int, state_bytes: int, master_bytes: int) -> int:
    """Read param + grad, read+write state and master copy, write param; with mixed
    precision the loss-scale unscale/overflow check reads the gradient once more."""
    unscale = dtype_bytes if master_bytes else 0
    return 3 * dtype_bytes + 2 * state_bytes + 2 * master_bytes + unscale


def optimizer_step_time(elements: float, model: Model, gpu: GpuCompute, kernels: int = 1,
                        index_bytes: float = 0) -> float:
    """Update `elements` parameters with a fused multi-tensor kernel (torch foreach/fused,
    apex FusedAdam/FusedLAMB): memory-bound."""
    opt = model.optimizer
    nbytes = elements * optimizer_bytes_per_element(
        model.dtype_bytes, opt.state_bytes_per_param, opt.master_bytes_per_param) + index_bytes
    return kernels_time([stream("optimizer", nbytes, count=kernels)], gpu,
                        precision(model.dtype), model.dtype_bytes)


def sparse_optimizer_step_time(rows: float, dim: int, model: Model, gpu: GpuCompute) -> float:
    """Update only the `rows` touched rows of a `dim`-wide table (8-byte indices): a
    coalesce kernel and the row update."""
    r = int(round(rows))
    return optimizer_step_time(r * dim, model, gpu, kernels=2, index_bytes=8 * r)
