"""The kernels PyTorch's context parallelism adds around each ring step's SDPA call (the
merges of the forward's partial outputs, the backward's FP32 gradient accumulations), as
memory-bound passes at their byte counts; the exchanges themselves: workload.torch_cp.
Line numbers: torch 2.6.0's torch/distributed/tensor/experimental/_attention.py."""

from __future__ import annotations

from .kernels import FP32, stream     # FP32: the merge and gradient buffers (convert_to_f32, :57)


def _kv_cat(name: str, i: int, c: int, nk: float, e: int, fused: bool, impl: str) -> list:
    """`torch.cat([key.flatten(), value.flatten()])` before every step but the last (:483):
    K and V read and written once. Compiled, only a cat a collective reads stays: the
    all-gather's at step 0, every one of the all-to-all's."""
    if i >= c - 1 or (fused and impl == "torch-allgather" and i > 0):
        return []
    return [stream(f"{name}.kv_cat", 2 * 2 * nk * e, copy=True)]


def forward_merges(name: str, i: int, c: int, n: float, nk: float, e: int, fused: bool,
                   impl: str) -> list:
    """Step i's kernels after its SDPA call: the K/V cat, then `_SDPAMerger.step` on an
    output of n elements (rank C - 1: every merge full width). Eager: the cast to FP32
    (e + 4 bytes an element), then out - block_out (3 FP32 passes), sigmoid(...) * that (2),
    out - that (3); the last step casts the FP32 result back (4 + e). Compiled: one pass
    reading the running output and the step's, writing the running output (the first reads
    step 0's e-byte output, the last writes e bytes: the casts fuse in)."""
    out = _kv_cat(name, i, c, nk, e, fused, impl)
    if fused:
        if i > 0:
            read_prev, write = (e if i == 1 else FP32), (e if i == c - 1 else FP32)
            out.append(stream(f"{name}.merge", n * (read_prev + e + write), pointwise=True))
        return out
    out.append(stream(f"{name}.merge_cast", n * (e + FP32), copy=True))
    if i > 0:
        out += [stream(f"{name}.merge_sub", 3 * n * FP32, pointwise=True),
                stream(f"{name}.merge_mul", 2 * n * FP32, pointwise=True),
                stream(f"{name}.merge_update", 3 * n * FP32, pointwise=True)]
    if i == c - 1:
        out.append(stream(f"{name}.merge_out_cast", n * (FP32 + e), copy=True))
    return out


def backward_accumulates(name: str, i: int, c: int, nq: float, nk: float, e: int, fused: bool,
                         impl: str) -> list:
    """Step i's kernels around its flash backward (rank C - 1: dK and dV of the first KV
    half added into the received FP32 buffers on steps i >= 1, dQ over all queries).
    Eager: step 0 zero-fills the FP32 dQ, dK, dV (:633-635); the K/V cat; dK and dV added
    (FP32 += e-byte: 4 + e + 4 bytes an element; on i >= 1 into their first half, then
    `_partial_update`'s cat rewrites each whole, 8 bytes an element); the FP32 dK/dV cat for
    the permute (16 bytes per K element); dQ added (4 + e + 4). The last step casts dQ and
    the received dK/dV back (:763-767). Compiled: the adds fuse into the cat that writes
    the dKV buffer, and the zero-fills and dQ's casts into the adds."""
    out = _kv_cat(name, i, c, nk, e, fused, impl)
    new_kv = 2 * nk if i == 0 else nk          # dK + dV elements this step adds
    if fused:
        received = 0 if i == 0 else 2 * nk * FP32
        out.append(stream(f"{name}.dkv_update", received + new_kv * e + 2 * nk * FP32,
                          pointwise=True))
        out.append(stream(f"{name}.dq_add", nq * ((0 if i == 0 else FP32) + e
                                                 + (e if i == c - 1 else FP32)), pointwise=True))
        if i == c - 1:
            out.append(stream(f"{name}.dkv_out_cast", 2 * nk * (FP32 + e), copy=True))
        return out
    if i == 0:
        out.append(stream(f"{name}.grad_zero", (nq + 2 * nk) * FP32))
    out.append(stream(f"{name}.dkv_add", new_kv * (2 * FP32 + e), pointwise=True))
    if i > 0:
        out.append(stream(f"{name}.dkv_partial_cat", 2 * nk * 2 * FP32, copy=True))
    out.append(stream(f"{name}.dkv_cat", 2 * nk * 2 * FP32, copy=True))
    out.append(stream(f"{name}.dq_add", nq * (2 * FP32 + e), pointwise=True))
    if i == c - 1:
        out += [stream(f"{name}.dq_out_cast", nq * (FP32 + e), copy=True),
                stream(f"{name}.dkv_out_cast", 2 * nk * (FP32 + e), copy=True)]
    return out
