"""Per-layer times from a trace, and what happens outside what it measured.

Inside the measured range (a batch between the layer's smallest and largest measured
batch, at the trace's sequence length) a layer's time is interpolated between measured
points. Outside it, the time at the nearest measured point is scaled by the kernel
(roofline) model's own ratio between the asked shape and that point, rather than by a
straight line through two points that says nothing about, say, a 16x longer sequence.
The run's compute source then says which layers were scaled and from where.
"""

from __future__ import annotations

from ..errors import InputError
from ..workload import load_model
from ..workload.roofline import layer_time


def trace_layer_times(model, trace, gpu, model_ref: str, untie_outputs: bool,
                      sparse_lookups: bool = False):
    """(fwd, bwd, note): per-layer seconds, and None or a sentence naming the
    extrapolation. `model_ref` (a zoo name or file) rebuilds the model at a measured shape.
    With `sparse_lookups`, embedding layers on a table with a sparse gradient take the
    trace's sparse-gradient variant when it has one."""
    sparse_tables = {t.name for t in model.tables if not model.dense_gradient(t.name)}
    reference_models: dict[int, object] = {}

    def at(batch: int):
        if batch not in reference_models:
            reference_models[batch] = load_model(model_ref, batch=batch, seq=trace.seq,
                                                 untie_outputs=untie_outputs)
        return reference_models[batch]

    fwd, bwd, scaled, ranges = {}, {}, [], set()
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
        ref_batch = min(max(model.batch, lo), hi)
        measured = trace.interp(name, ref_batch)
        want = layer_time(layer, gpu, model.dtype_bytes)
        ref = layer_time(at(ref_batch).layer(layer.name), gpu, model.dtype_bytes)
        out = []
        for m, w, r in ((measured[0], want.fwd_s, ref.fwd_s), (measured[1], want.bwd_s, ref.bwd_s)):
            out.append(m * w / r if r > 0 else m)
        fwd[layer.name], bwd[layer.name] = out
        scaled.append(layer.name)
    note = None
    if scaled:
        batches = ", ".join(f"{lo}" if lo == hi else f"{lo}-{hi}" for lo, hi in sorted(ranges))
        note = (f"extrapolated: batch {model.batch} x seq {model.seq} is beyond the measured "
                f"batch {batches} x seq {trace.seq}; {len(scaled)} of {len(model.layers)} layer "
                f"times scaled from the nearest measured point by the roofline model")
    return fwd, bwd, note
