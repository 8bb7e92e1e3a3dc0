"""A collective on one rank, as NCCL runs it: no peer and no algorithm, yet not free.

NCCL hands a one-rank collective to ncclLaunchOneRank (src/device/onerank.cu): out of
place it copies the send buffer into the receive buffer (ncclCudaMemcpyAsync, or the
oneRankReduce kernel for a pre-multiplied sum such as ncclAvg), in place it does nothing.
nccl-tests' out-of-place column therefore times one device-to-device copy: a read and a
write of the buffer at device-memory speed, plus the launch. busbw is 0 by definition
where its factor is (n-1)/n (all_reduce, all_gather, reduce_scatter, alltoall), the time
is not; broadcast, reduce and sendrecv keep factor 1 (busbw = algbw), as nccl-tests does.

The copy runs at the bandwidth the compute model uses for every streaming kernel (the
GPU's hbm_gbps x its measured hbm_fraction, workload.gpu_compute), after one CUDA launch
(GpuCompute.launch_s).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..workload.gpu_compute import for_gpu
from .busbw import busbw_factor


@dataclass(frozen=True)
class OneRankCopy:
    seconds: float
    note: str


def one_rank_copy(op: str, nbytes: int, gpu_spec) -> OneRankCopy:
    """The out-of-place time of a one-rank `op` of `nbytes` (its receive buffer) on the GPU
    a topology's gpu: section describes, and the note that says how it was made."""
    gpu = for_gpu(gpu_spec)
    bandwidth = gpu.hbm_bps * gpu.hbm_fraction
    seconds = gpu.launch_s + 2.0 * nbytes / bandwidth
    note = (f"one rank: NCCL copies the send buffer to the receive buffer (ncclLaunchOneRank, "
            f"out of place; in place it does nothing): a read and a write at "
            f"{bandwidth / 1e9:,.0f} GB/s ({gpu_spec.model} HBM {gpu.hbm_bps / 1e9:,.0f} GB/s x "
            f"{gpu.hbm_fraction:g}) + a {gpu.launch_s * 1e6:g} µs launch"
            + (f"; {op} busbw is 0 by definition" if busbw_factor(op, 1) == 0 else ""))
    return OneRankCopy(seconds, note)
