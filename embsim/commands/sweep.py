"""`embsim sweep`: a grid of simulations on Dask, resumable, results as CSV and JSON lines."""

from __future__ import annotations

import click

from ..sweep import load_sweep, run_sweep
from ..sweep.check import check_points


@click.command("sweep")
@click.argument("sweep_file", type=click.Path(dir_okay=False))
@click.option("--scheduler", help="address of an existing Dask scheduler, e.g. tcp://host:8786 "
                                  "(default: a local cluster)")
@click.option("--workers", type=click.IntRange(min=1), help="local cluster workers (default 2)")
@click.option("--out", type=click.Path(file_okay=False), help="results folder (default sweeps/NAME)")
@click.option("--threads", is_flag=True, help="local workers as threads, not processes")
@click.option("--no-progress", is_flag=True, help="no progress bar")
def command(sweep_file, scheduler, workers, out, threads, no_progress):
    """Run every point of SWEEP_FILE; re-running skips the points already in --out."""
    spec = load_sweep(sweep_file)
    check_points(list(spec.points), f"{sweep_file}:", topology_origin="topology")
    out = out or f"sweeps/{spec.name}"
    summary = run_sweep(list(spec.points), out, scheduler=scheduler, workers=workers,
                        processes=not threads, progress=not no_progress, name=spec.name)
    # why a point that has a result ran again
    stale = (f" ({summary.stale} again: a file read or embsim changed)"
             if summary.stale else "")
    click.echo(f"{spec.name}: {summary.total} points, {summary.skipped} already done, "
               f"{summary.ran} run{stale}, {summary.failed} failed -> {out}/results.csv, results.jsonl")
    if summary.ok == 0:
        click.echo(f"embsim: error: sweep {spec.name}: no point succeeded "
                   f"(errors in {out}/results.jsonl)", err=True)
        return 1
    return 0
