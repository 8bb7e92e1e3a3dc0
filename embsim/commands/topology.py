"""`embsim topology show SPEC [--json]` and `embsim topology list`: inspect cluster topologies."""

from __future__ import annotations

import click

from ..errors import InputError
from ..report.topology_summary import print_topology_summary
from ..topology.aliases import ALIASES
from ..topology import TopologyError, list_presets, load_topology, preset_dirs
from .listing import echo_listing, echo_summary


@click.group("topology")
def command() -> None:
    """Inspect cluster topologies (presets in topologies/, or your own YAML)."""


@command.command("show")
@click.argument("spec")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def show(spec: str, as_json: bool) -> None:
    """Summarise SPEC: NxG, PRESET, PRESET:NxG, file.yaml or file.yaml:NxG."""
    try:
        summary = load_topology(spec).summary()
    except TopologyError as exc:
        # the value came as an argument here, not as --topology
        text = str(exc)
        if text.startswith("--topology "):
            text = "topology show " + text[len("--topology "):]
        raise TopologyError(text) from None
    echo_summary(summary, as_json, print_topology_summary)


@command.command("list")
def list_cmd() -> None:
    """List the presets, one line each (name and description), and where they are looked up."""
    presets = list_presets()
    other = ", ".join(f"{a} ({p})" for a, (p, _) in ALIASES.items() if p in presets)
    echo_listing(((name, _description(name)) for name in presets),
                 f"looked up in this order: {', '.join(str(d) for d in preset_dirs())}\n"
                 f"# also accepted, any case, _ for -: {other}")


def _description(name: str) -> str:
    """A preset's `description:`, read without building the topology."""
    from embsim.topology.clusterspec import find_preset
    from embsim.yamlio import load_yaml
    path = find_preset(name)
    try:
        # the project's reader: a user's broken file (not UTF-8, an alias bomb) on
        # EMBSIM_TOPOLOGY_PATH is listed without a description, not a traceback
        doc = load_yaml(path).data if path else None
    except InputError:
        doc = None
    return str(doc.get("description", "")) if isinstance(doc, dict) else ""
