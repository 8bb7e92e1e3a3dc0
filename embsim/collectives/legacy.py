"""How NCCL before 2.5 picked a protocol: a size threshold, not a cost model.

NCCL's tuning model (src/graph/tuning.cc, nccl_model.py) first shipped in v2.5.6-1. Up to
2.4 the enqueue code chose with fixed rules (v2.4.8-1 src/enqueue.cc getPatternInfo,
getLoopInfo, getKernelInfo; thresholds in src/include/enqueue.h, src/init.cc):

* pattern: Broadcast/Reduce a pipeline (one chunk per loop), AllGather/ReduceScatter a
  ring (nRanks chunks per loop), AllReduce a ring run twice -- or the tree (up, down,
  one chunk per loop) when the size is at most the tree threshold, which single-node
  communicators set to 0 (ncclTreeThreshold: `nnodes < 2` disables it).
* LL launch: threads start at NCCL_LL_MIN_NTHREADS (64) and double while a thread would
  carry more than min(threadThreshold, NCCL_LL_CHANNEL_THRESHOLD = 8) bytes of a loop's
  chunks, up to MAXTHREADS (256); channels = ceil(bytes / (threads x chunks x 8)), at
  most the communicator's.
* the choice: LL when bytes <= channels x threads x chunks x threadThreshold, where
  threadThreshold is NCCL_THREAD_THRESHOLD (64 B; 32 before Volta), doubled on several
  nodes, and four times that for the tree patterns; else Simple.

These rules are 2.4's (2.3.7 sized the LL limit by the thread maximum, common_coll.h).
Only the choice is taken from 2.4 here: the kernels and constants of the oldest modelled
release stand in for the rest (releases.py says so in the output).
"""

from __future__ import annotations

import math

THRESHOLD_CHOICE_SINCE = (2, 4)   # 2.3.7 sized LL by its thread maximum (common_coll.h)
THRESHOLD_CHOICE_BEFORE = (2, 5)  # v2.5.6-1 adds src/graph/tuning.cc
LL_MIN_NTHREADS = 64              # enqueue.h NCCL_LL_MIN_NTHREADS
LL_CHANNEL_THRESHOLD = 8          # enqueue.h NCCL_LL_CHANNEL_THRESHOLD, bytes per thread
MAX_THREADS = 256                 # devcomm.h MAXTHREADS = NCCL_LL_MAX_NTHREADS; rings.h default
THREAD_THRESHOLD = 64             # enqueue.h NCCL_THREAD_THRESHOLD, bytes per thread
THREAD_THRESHOLD_PREVOLTA = 32    # NCCL_THREAD_THRESHOLD_PREVOLTA (compute capability <= 6)
TREE_THREAD_FACTOR = 4            # getKernelInfo: tree patterns use 4x the threshold

# ncclTreeThreshold (init.cc): its own rough figures for ring and tree.
_RING_MBPS_PER_CHANNEL_NVLINK = 5000.0   # "approx, in MB/s or B/us"
_RING_MBPS_NO_NVLINK = 5000.0
_RING_LAT_INTER = 6.0
_TREE_LAT_INTRA = 4.0
_TREE_LAT_INTER = 15.0


def tree_threshold(n_nodes: int, n_ranks: int, channels: int, nvlink: bool) -> float:
    """Bytes up to which 2.4 runs AllReduce as a tree (init.cc ncclTreeThreshold)."""
    ring_bw = _RING_MBPS_PER_CHANNEL_NVLINK * channels if nvlink else _RING_MBPS_NO_NVLINK
    if nvlink:
        tree_bw = ring_bw * 3 / 4 * (2 if n_nodes == 2 else 1)
    else:
        tree_bw = ring_bw * 2 / 3
    ring_lat = _RING_LAT_INTER * (n_ranks - 1)
    tree_lat = (_TREE_LAT_INTER * math.log2(max(1, n_nodes))
                + _TREE_LAT_INTRA * (n_ranks / max(1, n_nodes) - 1))
    if n_nodes < 2 or ring_lat <= tree_lat:
        return 0.0
    if tree_bw > ring_bw:
        return math.inf
    return ring_bw * tree_bw / (ring_bw - tree_bw) * (ring_lat - tree_lat)


def _chunks_per_loop(op: str, tree: bool, n_ranks: int) -> int:
    """getLoopInfo: nchunksPerLoop of the pattern."""
    if tree or op in ("broadcast", "reduce"):
        return 1
    return n_ranks


def ll_launch(nbytes: float, chunks: int, channels: int, per_thread: int) -> tuple[int, int]:
    """(channels, threads) of 2.4's LL launch (getKernelInfo)."""
    per_thread_ll = min(per_thread, LL_CHANNEL_THRESHOLD)
    nt = LL_MIN_NTHREADS
    while math.ceil(nbytes / (nt * chunks)) > per_thread_ll and nt * 2 <= MAX_THREADS:
        nt *= 2
    nc = max(1, math.ceil(nbytes / (nt * chunks * per_thread_ll)))
    return min(nc, channels), nt


def choose(op: str, nbytes: float, arch: int, n_nodes: int, n_ranks: int, channels: int,
           nvlink: bool) -> tuple[str, str]:
    """(algo, proto) NCCL 2.4 runs for `op` of `nbytes` (getPatternInfo + getKernelInfo)."""
    per_thread = THREAD_THRESHOLD_PREVOLTA if arch < 70 else THREAD_THRESHOLD
    if n_nodes > 1:
        per_thread *= 2
    tree = op == "all_reduce" and nbytes <= tree_threshold(n_nodes, n_ranks, channels, nvlink)
    chunks = _chunks_per_loop(op, tree, n_ranks)
    nc, nt = ll_launch(nbytes, chunks, channels, per_thread)
    limit = nc * nt * chunks * per_thread * (TREE_THREAD_FACTOR if tree else 1)
    return ("Tree" if tree else "Ring"), ("LL" if nbytes <= limit else "Simple")
