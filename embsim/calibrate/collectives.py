"""nccl-tests-style sweeps of real collectives (gloo or NCCL) over process groups.

Sizes follow nccl-tests' "size" column: all_reduce / broadcast the buffer, all_gather
the gathered output, reduce_scatter the input, alltoall one rank's send buffer. Each
sample times `iters` back-to-back calls after a barrier; a sample's time is the slowest
rank's (the collective is done when the last rank is).
"""

from __future__ import annotations

import time
from typing import Callable

import torch
import torch.distributed as dist

from embsim.trace import CollectiveCurve

from .timing import Stat

OPS = ("all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast")
MIN_BYTES = 1024


def sweep_sizes(max_bytes: int, factor: int = 4) -> list[int]:
    sizes, s = [], MIN_BYTES
    while s <= max_bytes:
        sizes.append(s)
        s *= factor
    return sizes


def max_sweep_bytes(device: torch.device, world: int, cap: int) -> int:
    """Largest size whose buffers (~3 per rank) fit in a quarter of free memory."""
    if device.type == "cuda":
        free = torch.cuda.mem_get_info(device)[0]
    else:
        with open("/proc/meminfo") as f:
            info = {l.split(":")[0]: int(l.split()[1]) * 1024 for l in f}
        free = info.get("MemAvailable", 1 << 30) // max(1, world)
    return max(MIN_BYTES, min(cap, free // 12))


def _call(op: str, nbytes: int, group, device: torch.device) -> Callable[[], None]:
    n = dist.get_world_size(group)
    elems = max(n, nbytes // 4 // n * n)      # float32, divisible by the group size
    buf = torch.ones(elems, device=device)
    if op == "all_reduce":
        return lambda: dist.all_reduce(buf, group=group)
    if op == "broadcast":
        src = dist.get_global_rank(group, 0) if group is not None else 0
        return lambda: dist.broadcast(buf, src=src, group=group)
    if op == "all_gather":
        parts = list(buf.chunk(n))
        mine = torch.ones(elems // n, device=device)
        return lambda: dist.all_gather(parts, mine, group=group)
    if op == "reduce_scatter":
        out = torch.empty(elems // n, device=device)
        if device.type == "cuda":
            return lambda: dist.reduce_scatter_tensor(out, buf, group=group)
        parts = list(buf.chunk(n))
        return lambda: dist.reduce_scatter(out, parts, group=group)
    if op == "alltoall":
        out = torch.empty_like(buf)
        return lambda: dist.all_to_all_single(out, buf, group=group)
    raise ValueError(op)


def _sample(fn, iters: int, group, device: torch.device) -> float:
    dist.barrier(group=group)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    mine = torch.tensor([(time.perf_counter() - t0) / iters], dtype=torch.float64,
                        device=device)
    dist.all_reduce(mine, op=dist.ReduceOp.MAX, group=group)
    return float(mine.item())


def sweep(op: str, sizes: list[int], device: torch.device, group=None, scope: str = "all",
          warmup: int = 2, reps: int = 5) -> CollectiveCurve:
    medians, spreads = [], []
    for nbytes in sizes:
        fn = _call(op, nbytes, group, device)
        # Warm up (connection set-up, allocator) before the first timed sample; `first`
        # is group-wide, so every rank agrees on `iters` below.
        for _ in range(max(warmup, 3)):
            fn()
        first = _sample(fn, 1, group, device)
        # Small sizes are repeated more per sample so the timer's resolution is not the measurement.
        iters = int(max(1, min(50, 0.02 / max(first, 1e-7))))
        stat = Stat.of([_sample(fn, iters, group, device) for _ in range(reps)])
        medians.append(stat.median_s)
        spreads.append(stat.spread_s)
    return CollectiveCurve(op=op, ranks=dist.get_world_size(group), scope=scope,
                           sizes=tuple(sizes), median_s=tuple(medians), spread_s=tuple(spreads))
