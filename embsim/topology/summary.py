"""The node/link summary that `embsim topology show` prints (plain dict, JSON-ready).

Printed units: GB/s per direction, µs, Gb/s for NIC line rate.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict

from .build import switch_counts
from .nccl_view import PATH_ORDER, nccl_nic_path_type


def link_classes(topo) -> list[dict]:
    """Links grouped by (kind, bandwidth, latency), in order of first appearance."""
    counts: Counter = Counter()
    order: list[tuple] = []
    kinds, bandwidth, latency = topo._columns
    for kind, bw, lat in zip(kinds, bandwidth, latency):
        key = (kind, round(bw / 1e9, 6), round(lat * 1e6, 6))
        if key not in counts:
            order.append(key)
        counts[key] += 1
    return [{"kind": k, "bandwidth_gbps": bw, "latency_us": lat, "count": counts[(k, bw, lat)]}
            for k, bw, lat in order]


def topology_summary(topo) -> dict:
    node = topo.node
    fabric = {k: v for k, v in asdict(node.fabric).items() if v not in (None, ())}
    if node.fabric.kind != "pcie":
        fabric.pop("pcie_p2p", None)     # a PCIe-tree property only
    if "nvlink_pairs" in fabric:
        fabric["nvlink_pairs"] = [list(p) for p in fabric["nvlink_pairs"]]
    vertex_types = Counter({t: n * topo.n_nodes for t, n in Counter(topo._template.vertices.values()).items()})
    vertex_types.update(kind for _, kind in topo.switches())
    lay = topo._layout
    network = None
    if lay is not None:
        network = {"kind": node.network.kind, "oversubscription": node.network.oversubscription,
                   "switch_latency_us": node.network.switch_latency_us, "rails": len(lay.rails),
                   "nodes_per_leaf": lay.nodes_per_leaf, "leaves": lay.n_leaves,
                   "spines": lay.n_spines if lay.n_leaves > 1 else 0,
                   "tiers": lay.tiers, "radix": node.network.radix,
                   "spine_oversubscription": node.network.spine_oversubscription,
                   "pods": lay.n_pods if lay.tiers == 3 else None,
                   "switches": switch_counts(node, lay)}
    nic_gbps = node.nics.gbit / 8
    return {
        "preset": topo.preset,
        "read_as": topo.alias_note or None,
        "source": node.source,
        "description": node.description,
        "shape": f"{topo.n_nodes}x{topo.gpus_per_node}",
        "n_nodes": topo.n_nodes,
        "gpus_per_node": topo.gpus_per_node,
        "n_gpus": topo.n_gpus,
        "gpu": asdict(node.gpu),
        # a node's host (CPU) memory, GiB; None: the file gives none (nothing checked against it)
        "host_memory_gb": node.host_memory_gb,
        "fabric": fabric,
        "nics": {"count": node.nics.count, "in_use": len(topo._template.nics), "gbit": node.nics.gbit,
                 "latency_us": node.nics.latency_us, "gpus": [list(g) for g in node.nics.gpus],
                 # NCCL's path class from each NIC's first GPU to it, as NCCL logs it (P2C over C2C)
                 "nccl_path": sorted({p for k in topo._template.nics if node.nics.gpus
                                      for p in [nccl_nic_path_type(topo._template, node.nics.gpus[k][0], k)]
                                      if p}, key=PATH_ORDER.index)},
        "network": network,
        "links": link_classes(topo),
        "overrides": topo.overrides,
        "totals": {
            "vertices": sum(vertex_types.values()),
            "vertex_types": dict(sorted(vertex_types.items())),
            "links": topo.n_links,
            "peak_bf16_pflops": round(topo.n_gpus * node.gpu.bf16_tflops / 1000, 6),
            "memory_gb": round(topo.n_gpus * node.gpu.hbm_gb, 6),
            "injection_gbps_per_node": round(len(topo._template.nics) * nic_gbps, 6) if lay else 0.0,
        },
    }
