"""`embsim topology show SPEC [--json]` and `embsim topology list`: inspect cluster topologies."""

from __future__ import annotations

import json

import click
from rich.console import Console
from rich.table import Table

from embsim.topology import TopologyError, list_presets, load_topology, preset_dirs


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
    _print_summary(summary)


@command.command("list")
def list_cmd() -> None:
    """List the preset names and where they are looked up."""
    for name in list_presets():
        click.echo(name)
    click.echo(f"# looked up in this order: {', '.join(str(d) for d in preset_dirs())}", err=True)


def _print_summary(s: dict) -> None:
    console = Console(highlight=False)
    gpu, fab, nics, net, tot = s["gpu"], s["fabric"], s["nics"], s["network"], s["totals"]
    console.print(f"[bold]{s['preset']}[/bold] {s['shape']}  ({s['n_gpus']} GPUs)  {s['source']}")
    if s["description"]:
        console.print(s["description"])
    console.print(f"GPU     {gpu['model']}  sm{gpu['arch']}  {gpu['bf16_tflops']:g} TFLOPS bf16  "
                  f"{gpu['hbm_gb']:g} GB @ {gpu['hbm_gbps']:g} GB/s")
    fabric = ", ".join(f"{k}={v}" for k, v in fab.items() if k != "kind")
    console.print(f"Fabric  {fab['kind']}  {fabric}")
    if nics["count"]:
        console.print(f"NICs    {nics['in_use']} of {nics['count']} per node in use, {nics['gbit']:g} Gb/s, "
                      f"{nics['latency_us']:g} µs, GPUs per NIC {nics['gpus']}")
    else:
        console.print("NICs    none (single node)")
    if net:
        console.print(f"Network {net['kind']}  oversubscription {net['oversubscription']:g}  "
                      f"{net['rails']} rails  {net['leaves']} leaves ({net['nodes_per_leaf']} nodes each)  "
                      f"{net['spines']} spines  switch {net['switch_latency_us']:g} µs")
    else:
        console.print("Network none (one node)")
    if s["overrides"]:
        console.print(f"Overrides {s['overrides']}")
    table = Table(title="Links (directed)")
    for col in ("kind", "GB/s per direction", "latency µs", "count"):
        table.add_column(col, justify="left" if col == "kind" else "right")
    for c in s["links"]:
        table.add_row(c["kind"], f"{c['bandwidth_gbps']:g}", f"{c['latency_us']:g}", str(c["count"]))
    console.print(table)
    types = ", ".join(f"{n} {t}" for t, n in tot["vertex_types"].items())
    console.print(f"Totals  {tot['vertices']} vertices ({types}), {tot['links']} links, "
                  f"{tot['peak_bf16_pflops']:g} PFLOPS bf16, {tot['memory_gb']:g} GB device memory, "
                  f"{tot['injection_gbps_per_node']:g} GB/s injection per node")
