"""Per-layer times from a trace, and what happens outside what it measured.

Inside the measured range (a batch between the layer's smallest and largest measured
batch, at the trace's sequence length) a layer's time is interpolated between measured
points. Outside it, the time at the nearest measured point is scaled by the kernel
model's own ratio between the asked shape and that point, rather than by a straight line
through two points that says nothing about, say, a 16x longer sequence. The run's compute
source then says which layers were scaled and from where.
"""

from __future__ import annotations

from typing import Callable

from ..errors import InputError


def trace_layer_times(model, trace, kernel_times: Callable, at_shape: Callable,
                      sparse_lookups: bool = False):
    """(fwd, bwd, note): per-layer seconds, and None or a sentence naming the
    extrapolation. `kernel_times(model)` gives the kernel model's per-layer LayerTimes;
    `at_shape(batch, seq)` rebuilds the same model at a measured shape. With
    `sparse_lookups`, embedding layers on a table with a sparse gradient take the trace's
    sparse-gradient variant when it has one."""
    sparse_tables = {t.name for t in model.tables if not model.dense_gradient(t.name)}
    cache: dict[int, dict] = {}

    def reference(batch: int) -> dict:
        if batch not in cache:
            cache[batch] = kernel_times(at_shape(batch, trace.seq))
        return cache[batch]

    fwd, bwd, scaled, ranges = {}, {}, [], set()
    wanted = None
    for layer in model.layers:
        name = layer.name
        if (sparse_lookups and layer.kind == "embedding" and layer.table in sparse_tables
                and f"{name}:sparse" in trace.layers):
            name = f"{name}:sparse"
        if name not in trace.layers:
            raise InputError(f"--trace {trace.source}: no timing for layer {layer.name!r} of "
                             f"{model.name} (trace is of {trace.model})")
        points = trace.layers[name].points
        lo, hi = points[0].batch, points[-1].batch
        ranges.add((lo, hi))
        if lo <= model.batch <= hi and model.seq == trace.seq:
            fwd[layer.name], bwd[layer.name] = trace.interp(name, model.batch)
            continue
        wanted = wanted or kernel_times(model)
        ref_batch = min(max(model.batch, lo), hi)
        measured = trace.interp(name, ref_batch)
        want, ref = wanted[layer.name], reference(ref_batch)[layer.name]
        fwd[layer.name], bwd[layer.name] = (
            m * w / r if r > 0 else m
            for m, w, r in ((measured[0], want.fwd_s, ref.fwd_s), (measured[1], want.bwd_s, ref.bwd_s)))
        scaled.append(layer.name)
    note = None
    if scaled:
        batches = ", ".join(f"{lo}" if lo == hi else f"{lo}-{hi}" for lo, hi in sorted(ranges))
        note = (f"extrapolated: batch {model.batch} x seq {model.seq} is beyond the measured "
                f"batch {batches} x seq {trace.seq}; {len(scaled)} of {len(model.layers)} layer "
                f"times scaled from the nearest measured point by the kernel model")
    return fwd, bwd, note
