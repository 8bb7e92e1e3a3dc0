"""`embsim compare`: every strategy x scheduler on one cluster and model, ranked."""

from __future__ import annotations

import json

import click
from rich.console import Console
from rich.table import Table

from ..compare import compare
from ..compare import parse_names
from ..report.units import human_bytes, human_time
from ..schedulers import SCHEDULERS
from ..strategies import STRATEGIES
from .options import config_from_options, simulation_options


@click.command("compare")
@simulation_options
@click.option("--strategies", help="comma-separated strategies (default: all)")
@click.option("--schedulers", help="comma-separated schedulers (default: all)")
@click.option("--workers", type=click.IntRange(1, 2), default=2, show_default=True,
              help="parallel worker processes (at most 2)")
@click.option("--plot", type=click.Path(dir_okay=False), help="write a bar chart (PNG)")
@click.option("--json", "as_json", is_flag=True, help="print the matrix as JSON")
def command(strategies, schedulers, workers, plot, as_json, **options):
    """Simulate every strategy x scheduler and rank them by step time."""
    cfg = config_from_options(options)
    result = compare(cfg, parse_names(strategies, STRATEGIES, "--strategies"),
                     parse_names(schedulers, SCHEDULERS, "--schedulers"), workers=workers)
    if plot:
        from ..report.plots import compare_bar_chart
        compare_bar_chart(result, plot)
    if as_json:
        if plot:
            click.echo(f"wrote {plot} (bar chart)", err=True)
        click.echo(json.dumps(result.as_json(), indent=2))
    else:
        print_matrix(result)
        if plot:
            click.echo(f"wrote {plot} (bar chart)")


def print_matrix(result, console: Console | None = None) -> None:
    console = console or Console(width=160)
    cfg = result.config
    t = Table(title=f"{cfg.model} on {cfg.topology} ({result.n_gpus} GPUs), ranked by step time; "
                    f"speedup over {result.baseline}", title_justify="left")
    for col in ("rank", "strategy/scheduler", "step", "speedup", "exposed comm", "sent per GPU",
                "memory per GPU", "fits"):
        t.add_column(col, justify="left" if col == "strategy/scheduler" else "right")
    for i, r in enumerate(x for x in result.rows if x.refused is None):
        t.add_row(str(i + 1), r.label, human_time(r.step_time), f"{r.speedup:.2f}x",
                  human_time(r.exposed_comm), human_bytes(r.comm_bytes_per_gpu),
                  human_bytes(r.memory_per_gpu), "yes" if r.fits_in_memory else "[red]NO[/red]")
    console.print(t)
    console.print(f"compute times: {result.compute_source.removeprefix('compute: ')}")
    for r in result.rows:
        if r.refused is not None:
            console.print(f"refused: {r.label}: {r.refused}")
    notes = dict.fromkeys(n for r in result.rows for n in r.notes)
    for n in notes:
        console.print(f"note: {n}")
