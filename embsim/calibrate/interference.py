"""How much compute and a collective slow each other when they overlap on the same ranks.

On a CPU host gloo's send/receive/reduce threads run on the cores the ranks compute on;
on a GPU NCCL's kernels take SMs and memory bandwidth from the compute kernels. Either
way DDP's AllReduce of one layer's gradient overlaps the next layers' backward. Measured
here on every rank at once (as in training), in turn so all three see the same drift of
the machine: the forward+backward of a representative layer (the layer shape that takes
most of a step's compute) alone, an all_reduce alone (of that layer's gradient, or larger
until it lasts half the compute), and both started together. embsim.trace.InterferenceMeasurement turns them into the engine's
`interference` factor.
"""

from __future__ import annotations

import time
from typing import Callable

import torch
import torch.distributed as dist

from embsim.trace import CollectiveCurve, InterferenceMeasurement, LayerTiming

from .layers import TokenSource, layer_step
from .modules import build_layer
from .spec import LayerShape, ModelShape
from .timing import Stat, Stopwatch

FP32 = 4
COMM_SHARE = 0.5    # collective time / compute time measured together (see comparable_bytes)


def _agreed_max(value: float, device: torch.device) -> float:
    t = torch.tensor([value], dtype=torch.float64, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return float(t.item())


def representative_layer(model: ModelShape, timings: list[LayerTiming], batch: int,
                         device: torch.device | None = None) -> LayerShape:
    """The layer with a gradient (DDP AllReduces it while later layers' backward runs)
    whose shape, summed over the layers sharing it, takes most compute time. With a
    process group every rank adds its timings in, so all ranks pick the same layer."""
    by_name = {t.name: t for t in timings}
    keys: list[tuple] = []
    totals: dict[tuple, float] = {}
    first: dict[tuple, LayerShape] = {}
    for layer in model.layers:
        t = by_name.get(layer.name)
        if t is None or gradient_bytes(layer, model) <= FP32:
            continue
        point = min(t.points, key=lambda p: abs(p.batch - batch))
        key = (layer.kind, tuple(sorted(layer.params.items())))
        if key not in totals:
            keys.append(key)
        totals[key] = totals.get(key, 0.0) + point.fwd_s + point.bwd_s
        first.setdefault(key, layer)
    values = torch.tensor([totals[k] for k in keys], dtype=torch.float64)
    if device is not None and dist.is_initialized():
        values = values.to(device)
        dist.all_reduce(values)
    return first[keys[int(torch.argmax(values.cpu()))]]


def gradient_bytes(layer: LayerShape, model: ModelShape) -> int:
    """The fp32 gradient DDP AllReduces once the layer's backward is done (>= 4 B)."""
    if layer.kind in ("softmax_loss", "fm_interaction"):
        return FP32                               # no parameters
    return max(FP32, FP32 * sum(p.numel() for p in build_layer(layer, model).parameters()))


def comparable_bytes(seconds: float, curve: CollectiveCurve, at_least: int) -> int:
    """The smallest all_reduce size (a power of two, >= at_least) that the measured curve
    says takes `seconds`: the overlap cost is a difference of two compute times, so the
    collective must be long enough for it to stand out of their noise."""
    nbytes = max(FP32, at_least)
    while curve.time_at(nbytes) < seconds and nbytes < (1 << 31):
        nbytes *= 2
    return nbytes


def measure_interference(model: ModelShape, timings: list[LayerTiming], batch: int, seq: int,
                         tokens: TokenSource, device: torch.device, curve: CollectiveCurve,
                         warmup: int, reps: int,
                         progress: Callable[[str], None] = lambda s: None) -> InterferenceMeasurement:
    layer = representative_layer(model, timings, batch, device)
    point = min(next(t for t in timings if t.name == layer.name).points,
                key=lambda p: abs(p.batch - batch))
    # a collective half as long as the compute (all ranks agree: the curve is shared)
    nbytes = comparable_bytes(COMM_SHARE * (point.fwd_s + point.bwd_s), curve,
                              gradient_bytes(layer, model))
    nbytes = int(_agreed_max(float(nbytes), device))
    progress(f"interference: {layer.name} forward+backward and an all_reduce of {nbytes} B")
    step = layer_step(layer, model, batch, seq, tokens, device)
    watch = Stopwatch(device)
    buf = torch.ones(nbytes // FP32, device=device)

    def timed(fn) -> float:
        dist.barrier()
        m0 = watch.mark()
        fn()
        return watch.seconds([m0, watch.mark()])[0]

    comm_done: list[float] = []

    def both():
        t0 = time.perf_counter()
        work = dist.all_reduce(buf, async_op=True)
        # when the collective itself finished (gloo's thread runs the callback): how much
        # the compute slowed it, which the engine does not model yet
        fut = work.get_future().then(lambda f: comm_done.append(time.perf_counter() - t0))
        step()
        work.wait()
        fut.wait()

    def comm():
        dist.all_reduce(buf)

    alone, comms, boths = [], [], []
    for i in range(warmup + reps):
        a, c, b = timed(step), timed(comm), timed(both)
        if i >= warmup:
            alone.append(a)
            comms.append(c)
            boths.append(b)
    overlapped = comm_done[warmup:]
    return InterferenceMeasurement(layer=layer.name, batch=batch, collective="all_reduce",
                                   nbytes=buf.numel() * FP32, alone_s=Stat.of(alone).median_s,
                                   comm_s=Stat.of(comms).median_s, both_s=Stat.of(boths).median_s,
                                   reps=reps, comm_overlapped_s=Stat.of(overlapped).median_s)
