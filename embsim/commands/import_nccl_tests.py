"""`embsim import-nccl-tests`: real nccl-tests logs -> a trace's measured collective curves
(the network half of a calibration, for users who only have nccl-tests results)."""

from __future__ import annotations

import shlex
import sys

import click

from ..errors import InputError
from ..imports import load_nccl_tests_log, trace_from_nccl_tests, with_rank_count
from ..topology import load_topology
from ..trace import write_trace
from .checks import refuse_overwrite

PLACEMENTS = ("in-place", "out-of-place", "best")


@click.command("import-nccl-tests")
@click.argument("logs", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--out", required=True, type=click.Path(dir_okay=False), help="trace file to write")
@click.option("--topology", help="the measured system (preset or file); the curves then apply "
                                 "only to simulations on that preset")
@click.option("--op", help="collective, when neither the log nor its file name says")
@click.option("--placement", type=click.Choice(PLACEMENTS), default="in-place", show_default=True)
@click.option("--force", is_flag=True, help="overwrite an existing --out")
def command(logs, out, topology, op, placement, force):
    """Turn nccl-tests stdout logs into the collective curves of an embsim trace."""
    refuse_overwrite(out, force)
    runs = [run for log in logs for run in load_nccl_tests_log(log, op=op)]
    name, nodes = "", None
    if topology:
        topo = load_topology(topology)
        name = topology if topology.endswith((".yaml", ".yml")) else topo.preset
        nodes = topo.n_nodes
        # a log without all its rank lines ran on the whole measured system
        runs = [run if run.complete else with_rank_count(run, topo.n_gpus, f"--topology {topology}")
                for run in runs]
        for run in runs:
            if run.ranks > topo.n_gpus:
                raise InputError(f"{run.where}: {run.ranks} ranks but topology {topology} has "
                                 f"{topo.n_gpus} GPUs")
    cmd = "embsim " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    trace = trace_from_nccl_tests(runs, topology=name, command=cmd, placement=placement, nodes=nodes)
    write_trace(out, trace)
    click.echo(f"wrote {out}: {len(trace.collectives)} collective curves")
    for c in trace.collectives:
        click.echo(f"  {c.op:14s} {c.ranks:5d} ranks  {len(c.sizes):3d} sizes  "
                   f"{c.sizes[0]}..{c.sizes[-1]} B")
    for run in runs:
        for row in run.dropped:       # zero-byte rows, rows with wrong values
            click.echo(f"note: {run.where}: left out {row}", err=True)
        for note in run.notes:        # a run cut off, CUDA-graph launches, an old layout
            click.echo(f"note: {run.where}: {note}", err=True)
    if not name:
        click.echo("note: no --topology: the curves are not tied to a preset", err=True)
