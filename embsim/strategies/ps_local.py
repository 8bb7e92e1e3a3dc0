"""Local aggregation for the parameter-server strategy: what one node pushes when its GPUs'
sparse rows are summed on the node first (Parallax's `local_aggregation`, BytePS's
intra-machine reduce; sources in strategies/ps.py)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..network import Demand
from ..plan.ops import NodeCopy

PULLS = ("node", "gpu")   # one pull per node then a local broadcast (BytePS) | per GPU (Parallax)


def _routes(template, root: str, gpus: int, to_host: bool) -> list[list[int]]:
    """Each of a node's first `gpus` GPUs' route to (to_host) or from its host memory at
    `root`, as node-local link offsets (topology.build NodeTemplate)."""
    from ..topology.build import tree_path
    out = []
    for la in range(gpus):
        verts = tree_path(template, f"gpu{la}", root)
        if not to_host:
            verts = verts[::-1]
        out.append([template.offset[(u, v)] for u, v in zip(verts, verts[1:])])
    return out


def _node_load(template, root: str, gpus: int, per_gpu_bytes: float, to_host: bool) -> tuple[float, dict]:
    """(the longest route's latency, bytes per node-local link offset) of every GPU's copy."""
    load: dict[int, float] = {}
    latency = 0.0
    for offsets in _routes(template, root, gpus, to_host):
        for o in offsets:
            load[o] = load.get(o, 0.0) + per_gpu_bytes
        latency = max(latency, sum(template.links[o][4] for o in offsets))
    return latency, load


def _idle_seconds(template, latency: float, load: dict) -> float:
    """The longest route's latency plus the busiest link's bytes over its capacity
    (topology.build NodeTemplate: links are (u, v, kind, B/s, s))."""
    return latency + max(b / template.links[o][3] for o, b in load.items()) if load else 0.0


def host_transfer_seconds(template, root: str, gpus: int, per_gpu_bytes: float, to_host: bool) -> float:
    """Seconds for each of a node's `gpus` GPUs to copy `per_gpu_bytes` to (to_host) or
    from the node's host memory at `root` over the node's own PCIe / host links, all at
    once on an idle node."""
    return _idle_seconds(template, *_node_load(template, root, gpus, per_gpu_bytes, to_host))


def node_copy(template, root: str, n_nodes: int, per_node_links: int, gpus: int,
              per_gpu_bytes: float, to_host: bool) -> NodeCopy:
    """The same copies on every one of `n_nodes` nodes at once, as the network's link
    bytes (node a's local link o is link a x per_node_links + o): the runtime carries them
    beside the step's other traffic, so a copy shares its PCIe links with a collective
    crossing them; on an idle node it takes host_transfer_seconds."""
    return _node_copy(n_nodes, per_node_links, *_node_load(template, root, gpus, per_gpu_bytes, to_host))


@dataclass(frozen=True)
class NodeHost:
    """Where a node's GPUs copy to: its PCIe / host tree (topology.build NodeTemplate) up to
    the host-memory vertex `root`, replicated on `n_nodes` nodes of `per_node_links` links."""
    template: object
    root: str
    n_nodes: int
    per_node_links: int

    def copies(self, gpus: int, per_gpu_bytes: float, to_host: bool) -> tuple[NodeCopy, float]:
        """(the copies on every node as network bytes, their seconds on an idle node)."""
        latency, load = _node_load(self.template, self.root, gpus, per_gpu_bytes, to_host)
        return _node_copy(self.n_nodes, self.per_node_links, latency, load), _idle_seconds(self.template, latency, load)


def _node_copy(n_nodes: int, per_node_links: int, latency: float, load: dict) -> NodeCopy:
    offsets = np.array(sorted(load), dtype=np.int64)
    nbytes = np.array([load[o] for o in offsets], dtype=np.float64)
    base = np.arange(n_nodes, dtype=np.int64)[:, None] * per_node_links
    links = (base + offsets[None, :]).reshape(-1)
    return NodeCopy(latency, Demand(links=links, bytes=np.tile(nbytes, n_nodes)))
