"""`embsim import-profile`: per-layer times of a trace from a PyTorch profiler JSON."""

from __future__ import annotations

import shlex
import sys

import click

from ..errors import InputError
from ..imports import load_profile, trace_from_profile
from ..trace import write_trace
from ..workload import load_model
from ..topology import load_topology
from ..topology.device_names import device_chip
from .checks import MAX_BATCH, MAX_SEQ, count, model_option, refuse_overwrite
from .options import split_pairs


def _renames(items) -> dict:
    return dict(split_pairs(items, "--rename", "RANGE=LAYER"))


@click.command("import-profile")
@click.argument("profile", type=click.Path(dir_okay=False))
@model_option("zoo model whose layers the profile's ranges name", required=True)
@click.option("--out", required=True, type=click.Path(dir_okay=False), help="trace file to write")
@click.option("--batch", type=count(1, MAX_BATCH), help="per-GPU batch the profile ran (default: the model's)")
@click.option("--seq", type=count(1, MAX_SEQ), help="sequence length the profile ran (default: the model's)")
@click.option("--topology", required=True,
              help="the profiled machine (preset or file): the trace's layer times apply to its GPU")
@click.option("--rename", multiple=True, help="RANGE=LAYER, e.g. Embedding_0=embed (repeatable)")
@click.option("--force", is_flag=True, help="overwrite an existing --out")
def command(profile, model, out, batch, seq, topology, rename, force):
    """Turn a Kineto Chrome trace (record_function('fwd:<layer>') or nn.Module ranges)
    into per-layer forward/backward times of an embsim trace."""
    refuse_overwrite(out, force)
    m = load_model(model, batch=batch, seq=seq)
    topo = load_topology(topology)           # a name that resolves, or one line now
    name = topology if topology.endswith((".yaml", ".yml")) else topo.preset
    layers = load_profile(profile, _renames(rename))
    if device_chip(layers.device) != device_chip(topo.node.gpu.model):
        # the trace would say "measured" on a GPU that never ran these layers
        raise InputError(f"{profile}: profiled on {layers.device!r}, but --topology {topology} has "
                         f"{topo.node.gpu.model!r}: give the profiled machine as --topology")
    cmd = "embsim " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    trace = trace_from_profile(layers, m, batch=m.batch, seq=m.seq, topology=name, command=cmd)
    missing = [layer.name for layer in m.layers if layer.name not in trace.layers]
    if missing:
        # a trace-driven run needs every layer's time (engine.trace_times): refused here,
        # not at the first simulate of the written trace
        raise InputError(f"{profile}: no range for layer(s) {', '.join(missing)} of model {m.name}; "
                         f"profile them too, or --rename RANGE=LAYER the ranges that time them")
    write_trace(out, trace)
    click.echo(f"wrote {out}: {len(trace.layers)} layers of {m.name} at batch {m.batch} "
               f"({layers.timing} time, {layers.device})")
    for name, s in layers.layers.items():
        click.echo(f"  {name:24s} fwd {s.fwd_median * 1e3:9.3f} ms  bwd {s.bwd_median * 1e3:9.3f} ms"
                   f"  ({len(s.fwd_s)} samples)")
