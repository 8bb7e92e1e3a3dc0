"""`embsim compare`: every strategy x scheduler on one cluster and model, ranked."""

from __future__ import annotations

import json

import click

from ..compare import compare, parse_names
from ..report.compare_table import print_matrix
from ..report.result_json import compare_json
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
    cfg, option_bag = config_from_options(options)
    result = compare(cfg, parse_names(strategies, STRATEGIES, "--strategies"),
                     parse_names(schedulers, SCHEDULERS, "--schedulers"), workers=workers,
                     options=option_bag)
    if plot:
        from ..report.plots import compare_bar_chart
        compare_bar_chart(result, plot)
    if as_json:
        if plot:
            click.echo(f"wrote {plot} (bar chart)", err=True)   # stdout stays one JSON document
        click.echo(json.dumps(compare_json(result), indent=2))
    else:
        print_matrix(result)
        if plot:
            click.echo(f"wrote {plot} (bar chart)")
