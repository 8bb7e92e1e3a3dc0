"""How much a collective in flight slows compute on the same ranks.

On a CPU host gloo's send/receive/reduce threads run on the cores the ranks compute on;
on a GPU NCCL's kernels take SMs and memory bandwidth from the compute kernels. Either
way a layer's backward runs slower while DDP's AllReduce overlaps it. Measured here on
every rank at once (as in training): the forward+backward of a representative layer
(the layer kind that takes most of a step's compute) timed alone, then while a queue of
asynchronous all_reduce calls on a large buffer runs, sized so the collectives outlast
the compute. factor = concurrent / alone - 1 is the engine's `interference`.
"""

from __future__ import annotations

import math
from typing import Callable

import torch
import torch.distributed as dist

from embsim.trace import CollectiveCurve, InterferenceMeasurement, LayerTiming

from .layers import TokenSource, layer_step
from .spec import LayerShape, ModelShape
from .timing import Stat, Stopwatch

OVERLAP = 3.0          # collectives queued for this many times the compute: none ends early


def representative_layer(model: ModelShape, timings: list[LayerTiming], batch: int) -> LayerShape:
    """The layer whose shape (summed over the layers sharing it) takes most compute time."""
    by_name = {t.name: t for t in timings}
    totals: dict[tuple, float] = {}
    first: dict[tuple, LayerShape] = {}
    for layer in model.layers:
        t = by_name.get(layer.name)
        if t is None:
            continue
        point = min(t.points, key=lambda p: abs(p.batch - batch))
        key = (layer.kind, tuple(sorted(layer.params.items())))
        totals[key] = totals.get(key, 0.0) + point.fwd_s + point.bwd_s
        first.setdefault(key, layer)
    return first[max(totals, key=lambda k: totals[k])]


def calls_to_outlast(seconds: float, curve: CollectiveCurve, nbytes: int) -> int:
    """all_reduce calls of `nbytes` that, queued back to back, run OVERLAP x `seconds`."""
    return max(1, math.ceil(OVERLAP * seconds / max(curve.time_at(nbytes), 1e-9)))


def _agreed_max(value: float, device: torch.device) -> float:
    t = torch.tensor([value], dtype=torch.float64, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return float(t.item())


def measure_interference(model: ModelShape, timings: list[LayerTiming], batch: int, seq: int,
                         tokens: TokenSource, device: torch.device, curve: CollectiveCurve,
                         nbytes: int, warmup: int, reps: int,
                         progress: Callable[[str], None] = lambda s: None) -> InterferenceMeasurement:
    layer = representative_layer(model, timings, batch)
    progress(f"interference: {layer.name} forward+backward beside all_reduce of {nbytes} B")
    step = layer_step(layer, model, batch, seq, tokens, device)
    watch = Stopwatch(device)
    buf = torch.ones(max(1, nbytes // 4), device=device)

    def timed() -> float:
        m0 = watch.mark()
        step()
        return watch.seconds([m0, watch.mark()])[0]

    for _ in range(warmup):
        timed()
    alone, concurrent = [], []
    for _ in range(reps):
        dist.barrier()
        alone.append(timed())
    # every rank must queue the same number of calls: agree on the slowest rank's time
    calls = calls_to_outlast(_agreed_max(Stat.of(alone).median_s, device), curve, buf.numel() * 4)
    for _ in range(warmup + reps):
        dist.barrier()
        works = [dist.all_reduce(buf, async_op=True) for _ in range(calls)]
        took = timed()
        for w in works:
            w.wait()
        concurrent.append(took)
    concurrent = concurrent[warmup:]
    a, c = Stat.of(alone), Stat.of(concurrent)
    return InterferenceMeasurement(layer=layer.name, batch=batch, collective="all_reduce",
                                   nbytes=buf.numel() * 4, alone_s=a.median_s,
                                   concurrent_s=c.median_s, reps=reps)
