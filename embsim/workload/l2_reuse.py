"""L2 reuse between back-to-back kernels: a memory-bound kernel that reads the tensor the
kernel just before it wrote finds it in L2 when that tensor fits there, and reads those
bytes at L2 bandwidth instead of HBM bandwidth (writes still go to HBM: L2 is write-back,
the lines are evicted later).

Only a GEMM's output counts as the producer's tensor (its size is m x n per product, known
exactly); a weight-gradient GEMM's output is a parameter gradient that no activation
kernel reads next, and a chain of memory-bound kernels (dropout -> residual add -> norm)
is not followed, since a stream kernel does not record what it writes. A tensor fits when
it is at most GpuCompute.l2_reuse_bytes (the capacity over the L2 partitions, each of
which caches the data of its own SMs: NVIDIA A100 whitepaper, "L2 cache is divided into
two partitions"). All or nothing: the producer writes the tensor in the order the consumer
reads it, so under LRU a tensor larger than the cache has been evicted by the time it is
read. The hit is at most half the kernel's bytes (a kernel reads its input once and writes
at least as much as it reads from it)."""

from __future__ import annotations

from .gpu_props import GpuCompute
from .kernels import Kernel


def produced_bytes(prev: Kernel | None, elem_bytes: int) -> float:
    """Bytes of the tensor `prev` wrote that the next kernel reads (0: none we follow)."""
    if prev is None or prev.kind != "gemm" or prev.count != 1 or prev.name.endswith("wgrad"):
        return 0.0
    return float(prev.m * prev.n * prev.batch * elem_bytes)


def l2_hit_bytes(kr: Kernel, produced: float, gpu: GpuCompute) -> float:
    """Bytes of stream kernel `kr` read from L2 rather than HBM."""
    if (kr.kind != "stream" or kr.count != 1 or kr.recurrent or produced <= 0
            or gpu.l2_reuse_bytes <= 0 or gpu.l2_read_bps <= 0 or produced > gpu.l2_reuse_bytes):
        return 0.0
    return min(produced, kr.nbytes / 2)
