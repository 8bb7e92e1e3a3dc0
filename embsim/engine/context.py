"""Build a StepContext: per-layer compute times (measured or a labelled roofline
estimate), optimizer times and the token statistics of every embedding table."""

from __future__ import annotations

import re

import numpy as np

from ..errors import InputError
from ..plan.context import StepContext, TableTraffic
from ..workload.roofline import (SOURCE as ROOFLINE, ComputeSpec, layer_time, optimizer_step_time,
                                 sparse_optimizer_step_time)
from ..workload.tokens import TokenStats
from .trace_times import trace_layer_times

GiB = 1 << 30
# DDP (allreduce) AllReduces every table as a dense gradient, so its lookup's backward
# builds a dense vocab x dim gradient; every other strategy keeps a sparse table's
# gradient as (index, row) pairs, the kernel a trace times as `<layer>:sparse`.
DENSE_TABLE_GRAD_STRATEGIES = ("allreduce",)


def table_traffic(model, n_gpus: int, stats_for) -> dict[str, TableTraffic]:
    out = {}
    for table in model.tables:
        owner = model.table_owner(table.name)
        stats = stats_for(table)
        # rows touched with repeats: the input lookups plus sparse output-side rows
        # (e.g. a sampled softmax tied to the table)
        t = model.row_touches(table.name)
        union = stats.union(n_gpus, t)
        # fraction of this step's lookups whose row the next step (all GPUs) reads again
        touched_next = -np.expm1(n_gpus * t * np.log1p(-stats.probs))
        out[owner] = TableTraffic(
            table=table.name, layer=owner, vocab=table.vocab, dim=table.dim,
            lookups_per_gpu=float(model.batch * table.lookups_per_sample),
            unique_per_gpu=stats.unique(t), unique_union=union,
            unique_next_overlap=stats.overlap(n_gpus * t, n_gpus * t),
            lookup_fraction_next=float(np.sum(stats.probs * touched_next)),
            dense_grad=model.dense_gradient(table.name),
            row_probs=stats.probs)
    return out


_CHIP = re.compile(r"\bcpu\b|\b([a-z]+) ?(\d{2,})")


def device_chip(name: str) -> str:
    """The chip a device name denotes: "NVIDIA H100 80GB HBM3" and "H100-SXM5-80GB" -> "h100",
    "NVIDIA GeForce RTX 3090" and "RTX-3090" -> "rtx3090", "cpu: Xeon" -> "cpu"."""
    text = re.sub(r"[_-]", " ", name.lower().replace("nvidia", "").replace("geforce", ""))
    m = _CHIP.search(text)
    if m is None:
        return name.lower()
    return "cpu" if m.group(1) is None else m.group(1) + m.group(2)


def check_trace_device(trace, topo) -> None:
    """Measured layer times transfer only to the chip they were measured on."""
    have, want = device_chip(trace.device), device_chip(topo.node.gpu.model)
    if have != want:
        raise InputError(f"--trace {trace.source}: measured on {trace.device!r}, but topology "
                         f"{topo.preset} has {topo.node.gpu.model!r}: its layer times do not transfer "
                         f"(use the trace's own topology {trace.topology or '?'}, or no --trace for a "
                         "labelled roofline estimate)")


def step_context(model, topo, trace, cfg) -> tuple[StepContext, str]:
    gpu = ComputeSpec.from_gpu(topo.node.gpu)
    if trace is not None and not trace.layers:
        trace = None    # a network-only trace (import-nccl-tests): collectives, no layer times
    if trace is not None:
        check_trace_device(trace, topo)
        fwd, bwd, extrapolated = trace_layer_times(
            model, trace, gpu, cfg.model, cfg.untie_outputs,
            sparse_lookups=cfg.strategy not in DENSE_TABLE_GRAD_STRATEGIES)
        source = f"measured: {trace.source or 'trace'} ({trace.device}, {trace.provenance.backend})"
        if extrapolated:
            source += f"; {extrapolated}"
    else:
        times = {l.name: layer_time(l, gpu, model.dtype_bytes) for l in model.layers}
        fwd = {n: t.fwd_s for n, t in times.items()}
        bwd = {n: t.bwd_s for n, t in times.items()}
        source = f"compute: {ROOFLINE} ({topo.node.gpu.model})"
    # Optimizer steps are always the roofline's: a trace's optimizer timing is per
    # element and scaled below when present.
    dense_update = {l.name: optimizer_step_time(l.params, model, gpu).seconds
                    for l in model.layers if l.params > 0}
    per_elem = _trace_optimizer_rates(trace) if trace is not None and trace.optimizer else None
    if per_elem is not None and per_elem.get("dense"):
        dense_update = {n: per_elem["dense"] * model.layer(n).params for n in dense_update}

    def sparse_update(layer_name: str, rows: float) -> float:
        table = model.table(model.layer(layer_name).table)
        if per_elem is not None and per_elem.get("sparse-rows"):
            return per_elem["sparse-rows"] * rows * table.dim
        return sparse_optimizer_step_time(rows, table.dim, model, gpu).seconds

    if cfg.corpus:
        def stats_for(table):
            return TokenStats.from_corpus(cfg.corpus, vocab=table.vocab)
    else:
        def stats_for(table):
            return TokenStats.zipf(table.vocab, cfg.zipf_s)

    ctx = StepContext(model=model, n_gpus=topo.n_gpus, gpus_per_node=topo.gpus_per_node,
                      layer_fwd=fwd, layer_bwd=bwd, layer_update=dense_update,
                      sparse_update=sparse_update,
                      tables=table_traffic(model, topo.n_gpus, stats_for),
                      hbm_bytes=float(topo.node.gpu.hbm_gb) * GiB, gpu=gpu)
    return ctx, source


def _trace_optimizer_rates(trace) -> dict[str, float]:
    """Seconds per updated element, from the trace's optimizer timings."""
    rates = {}
    for o in trace.optimizer:
        if o.elements > 0:
            rates[o.name] = o.median_s / o.elements
    return rates
