"""`embsim simulate`: data-parallel training steps of a model on a cluster."""

from __future__ import annotations

import json

import click

from .. import __version__
from ..engine.config import with_options
from ..errors import InputError
from ..engine.run import simulate
from ..report.chrome_trace import write_chrome_trace
from ..report.result_json import simulation_json
from ..report.summary import print_summary
from .checks import force_option, notes_option, refuse_overwrite
from .options import simulation_options, config_from_options


IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".svg", ".pdf")


@click.command("simulate")
@simulation_options
@click.option("--strategy", default="allreduce", show_default=True, help="embedding synchronisation strategy")
@click.option("--scheduler", default="fifo", show_default=True, help="communication scheduler")
@click.option("--json", "as_json", is_flag=True, help="print the result as JSON")
@click.option("--chrome-trace", "chrome_trace", type=click.Path(dir_okay=False),
              help="write a Chrome/Perfetto trace of the simulated timeline")
@force_option("--chrome-trace file")
@notes_option()
def command(strategy, scheduler, as_json, chrome_trace, force, notes, **options):
    """Simulate data-parallel training steps and say where the time goes."""
    if chrome_trace is not None and (chrome_trace == "-" or chrome_trace.lower().endswith(IMAGE_SUFFIXES)):
        # not stdout (--json owns it) and not an image: Perfetto reads the JSON file
        raise InputError(f"--chrome-trace {chrome_trace}: name a .json file (a Chrome/Perfetto trace)")
    refuse_overwrite(chrome_trace, force, "--chrome-trace")
    cfg, option_bag = config_from_options(options, strategy=strategy, scheduler=scheduler)
    result = simulate(with_options(cfg, option_bag))
    if chrome_trace:
        summary = simulation_json(result)
        about = {key: summary[key] for key in ("model", "topology", "strategy", "scheduler",
                                               "workload", "step_time_ms", "compute_source")}
        about["generator"] = f"embsim {__version__}"
        write_chrome_trace(chrome_trace, result.run, result.n_gpus, result.cluster.gpus_per_node, about)
    if as_json:
        click.echo(json.dumps({**simulation_json(result), "options": result.options_used.as_json()},
                              indent=2))
    else:
        print_summary(result, all_notes=notes == "all")
        for component in ("strategy", "scheduler"):
            click.echo(f"options: {result.options_used.text(component)}")
    if chrome_trace:
        # stderr under --json, so that stdout stays one JSON document
        click.echo(f"wrote {chrome_trace} (Chrome/Perfetto trace: open in ui.perfetto.dev)",
                   err=as_json)
