"""The human form of a topology summary (`embsim topology show`)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table


def print_topology_summary(s: dict) -> None:
    """`embsim topology show`: the Topology.summary() dict as text and a link table."""
    console = Console(highlight=False)
    gpu, fab, nics, net, tot = s["gpu"], s["fabric"], s["nics"], s["network"], s["totals"]
    console.print(f"[bold]{s['preset']}[/bold] {s['shape']}  ({s['n_gpus']} GPUs)  {s['source']}")
    if s.get("read_as"):
        console.print(s["read_as"])
    if s["description"]:
        console.print(s["description"])
    console.print(f"GPU     {gpu['model']}  sm{gpu['arch']}  {gpu['bf16_tflops']:g} TFLOPS bf16  "
                  f"{gpu['hbm_gb']:g} GiB ({gpu['hbm_gb'] * 2**30 / 1e9:.1f} GB) @ {gpu['hbm_gbps']:g} GB/s")
    host = s.get("host_memory_gb")
    console.print(f"Host    {host:g} GiB ({host * 2**30 / 1e9:,.1f} GB) memory per node" if host is not None
                  else "Host    memory not given (host_memory_gb): host memory unknown, not checked")
    fabric = ", ".join(f"{k}={v}" for k, v in fab.items() if k != "kind")
    console.print(f"Fabric  {fab['kind']}  {fabric}")
    if nics["count"]:
        console.print(f"NICs    {nics['in_use']} of {nics['count']} per node in use, {nics['gbit']:g} Gb/s, "
                      f"{nics['latency_us']:g} µs, GPUs per NIC {nics['gpus']}"
                      + (f", NCCL path GPU-NIC {'/'.join(nics['nccl_path'])}" if nics.get("nccl_path") else ""))
    else:
        console.print("NICs    none (single node)")
    if net:
        console.print(f"Network {net['kind']}  oversubscription {net['oversubscription']:g}  "
                      f"{net['rails']} rails  {net['leaves']} leaves ({net['nodes_per_leaf']} nodes each)  "
                      f"{net['spines']} spines  switch {net['switch_latency_us']:g} µs")
        per_tier = ", ".join(f"{n} {tier}" for tier, n in net["switches"].items())
        ports = f"{net['radix']}-port switches" if net["radix"] else "logical switches (no radix given)"
        console.print(f"Tiers   {net['tiers']}: {per_tier} ({ports}"
                      + (f"; {net['pods']} pods, spine oversubscription {net['spine_oversubscription']:g}"
                         if net["tiers"] == 3 else "") + ")")
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
    # one node has no network to inject into: "0 GB/s injection" read as NICs that carry nothing
    injection = (f"{tot['injection_gbps_per_node']:g} GB/s injection per node" if net
                 else "no network injection (one node)")
    console.print(f"Totals  {tot['vertices']} vertices ({types}), {tot['links']} links, "
                  f"{tot['peak_bf16_pflops']:g} PFLOPS bf16, {tot['memory_gb']:,.10g} GB device memory, "
                  f"{injection}")
