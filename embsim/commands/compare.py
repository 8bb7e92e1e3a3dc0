"""`embsim compare`: every strategy x scheduler on one cluster and model, ranked."""

from __future__ import annotations

import json

import click
from rich.console import Console
from rich.table import Table

from ..ablation import ablation as run_ablation
from ..compare import compare, parse_names
from ..report.compare_json import compare_document
from ..report.compare_why import losses_to_fifo, why_best
from ..errors import InputError
from ..report.units import compute_source_text, human_time
from ..report.compare_table import print_matrix
from ..schedulers import SCHEDULERS
from ..strategies import STRATEGIES
from .checks import force_option, notes_option, plot_option, refuse_overwrite
from .options import config_from_options, simulation_options


@click.command("compare")
@simulation_options
@click.option("--strategies", help="comma-separated strategies (default: all)")
@click.option("--schedulers", help="comma-separated schedulers (default: all)")
@click.option("--workers", type=click.IntRange(1, 2), default=2, show_default=True,
              help="parallel worker processes (at most 2)")
@plot_option("write a bar chart (PNG)")
@click.option("--json", "as_json", is_flag=True, help="print the matrix as JSON")
@click.option("--ablation", is_flag=True,
              help="EmbRace 2D taken apart: one strategy (--strategies, default embrace) under fifo, "
                   "priority, embrace-2d and embrace-2d with each part off")
@force_option("--plot file")
@notes_option()
def command(strategies, schedulers, workers, plot, as_json, ablation, force, notes, **options):
    """Simulate every strategy x scheduler and rank them: the rows that fit in memory first,
    then by step time. --option NAME.KEY=VALUE reaches only the strategy or scheduler called NAME."""
    refuse_overwrite(plot, force, "--plot")
    cfg, option_bag = config_from_options(options)
    if ablation:
        # its runs are fixed (fifo, priority, embrace-2d part by part) and it draws no chart
        for flag, value in (("--plot", plot), ("--schedulers", schedulers)):
            if value:
                raise InputError(f"{flag}: not with --ablation (its runs are fixed and it "
                                 f"draws no chart)")
        names = parse_names(strategies or "embrace", STRATEGIES, "--strategies")
        if len(names) != 1:
            raise InputError(f"--ablation takes one strategy, got --strategies {strategies}")
        result = run_ablation(cfg, names[0], option_bag)
        if as_json:
            click.echo(json.dumps(result.as_json(), indent=2))
        else:
            print_ablation(result)
        return
    result = compare(cfg, parse_names(strategies, STRATEGIES, "--strategies"),
                     parse_names(schedulers, SCHEDULERS, "--schedulers"), workers=workers,
                     options=option_bag)
    if plot:
        from ..report.plots import compare_bar_chart
        compare_bar_chart(result, plot)
    if as_json:
        if plot:
            click.echo(f"wrote {plot} (bar chart)", err=True)   # stdout stays one JSON document
        # what was compared and with which options, and the why/slower lines, as on the terminal
        click.echo(json.dumps(compare_document(result), indent=2))
    else:
        print_matrix(result, all_notes=notes == "all")
        if plot:
            click.echo(f"wrote {plot} (bar chart)")
        why = why_best(result.rows)
        if why:
            click.echo(f"why: {why}")
        for line in losses_to_fifo(result.rows):
            click.echo(f"slower: {line}")


def print_ablation(result, console: Console | None = None) -> None:
    console = console or Console(width=160)
    cfg = result.config
    t = Table(title=f"{result.strategy} on {cfg.topology}, {cfg.model}: EmbRace 2D part by part",
              title_justify="left")
    for col in ("run", "step", "exposed comm", "vs embrace-2d", "vs fifo"):
        t.add_column(col, justify="left" if col == "run" else "right")
    full, fifo = result.full, result.fifo
    for label, r in result.rows:
        if r.refused is not None:
            t.add_row(label, "refused", "", "", "")
            continue
        t.add_row(label, human_time(r.step_time), human_time(r.exposed_comm),
                  f"{(r.step_time - full.step_time) * 1e3:+.2f} ms", f"{(r.step_time - fifo.step_time) * 1e3:+.2f} ms")
    console.print(t)
    console.print(f"compute times: {compute_source_text(full.compute_source)}")
    # the options of the whole runs (fifo, priority, embrace-2d); a part-off run differs
    # from embrace-2d's by its part only, which its label says (--json lists every run's)
    texts = [u.text(c) for u in result.options[:3] if u is not None for c in ("strategy", "scheduler")]
    for text in dict.fromkeys(texts):
        console.print(f"options: {text}", soft_wrap=True, markup=False, highlight=False)
    for line in result.bottlenecks():
        console.print(f"slower than fifo: {line}")
