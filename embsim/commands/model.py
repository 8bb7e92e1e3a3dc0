"""`embsim model list` and `embsim model show NAME|FILE [--json]`: the model zoo, inspected."""

from __future__ import annotations

import click

from ..errors import InputError
from .listing import echo_listing, echo_summary


@click.group("model")
def command() -> None:
    """Inspect models (the zoo in embsim/workload/zoo/, or your own YAML)."""


@command.command("list")
def list_cmd() -> None:
    """List the zoo's models, one line each (name and description), and where they are."""
    from ..workload import ZOO_DIR, list_models, load_spec
    echo_listing(((name, load_spec(name).description) for name in list_models()),
                 f"a NAME is looked up in {ZOO_DIR}; any other model: give its .yaml path "
                 "(same dialect, see `embsim model show NAME`)")


@command.command("show")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def show(name: str, as_json: bool) -> None:
    """Summarise NAME (a zoo model) or FILE.yaml: layers, parameters, tables, defaults, FLOPs."""
    from ..workload import load_spec, model_from_spec
    from .model_summary import model_summary, print_model_summary
    spec = load_spec(name, flag="model show")    # the value came as an argument, not as --model
    try:
        model = model_from_spec(spec)           # the one spec: a user file is read once
    except InputError as exc:      # building a loaded spec: errors that name neither
        raise InputError(f"model show {name}: {exc}") from None
    echo_summary(model_summary(spec, model), as_json, print_model_summary)
