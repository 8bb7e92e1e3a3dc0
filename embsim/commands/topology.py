"""`embsim topology show SPEC [--json]` and `embsim topology list`: inspect cluster topologies."""

from __future__ import annotations

import json

import click

from ..report.topology_summary import print_topology_summary
from ..topology import TopologyError, list_presets, load_topology, preset_dirs


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
    if as_json:
        click.echo(json.dumps(summary, indent=2))
        return
    print_topology_summary(summary)


@command.command("list")
def list_cmd() -> None:
    """List the presets, one line each (name and description), and where they are looked up."""
    names = list_presets()
    width = max((len(n) for n in names), default=0)
    for name in names:
        click.echo(f"{name:<{width}}  {_description(name)}")
    click.echo(f"# looked up in this order: {', '.join(str(d) for d in preset_dirs())}", err=True)


def _description(name: str) -> str:
    """A preset's `description:` line, read without building the topology."""
    import yaml

    from embsim.topology.clusterspec import find_preset
    path = find_preset(name)
    try:
        doc = yaml.safe_load(path.read_text()) if path else None
    except (OSError, yaml.YAMLError):
        doc = None
    text = str(doc.get("description", "")) if isinstance(doc, dict) else ""
    return text.split(". ")[0]       # the first sentence: one line per preset

