"""Local aggregation for the parameter-server strategy: what one node pushes when its GPUs'
sparse rows are summed on the node first (Parallax's `local_aggregation`, BytePS's
intra-machine reduce; sources in strategies/ps.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from ..collectives.traffic import Traffic
from ..network import Demand
from ..plan.ops import NodeCopy
from ..topology.build import tree_offsets

PULLS = ("node", "gpu")   # one pull per node then a local broadcast (BytePS) | per GPU (Parallax)


def server_matrix(n_workers: int, per_worker_bytes: float, shares: np.ndarray) -> Traffic:
    """workers x servers bytes: every worker sends each server its share of the rows
    (kept as its two factors: at 16,384 workers the dense matrix would not fit)."""
    return Traffic(_every_worker(n_workers), per_worker_bytes * np.asarray(shares, dtype=np.float64))


@lru_cache(maxsize=8)
def _every_worker(n_workers: int) -> np.ndarray:
    """One read-only row of ones that every table's push and pull share (Traffic keeps a
    read-only array as it is): a thousand tables would hold a thousand copies."""
    ones = np.ones(n_workers)
    ones.setflags(write=False)
    return ones


def _copies(template, root: str, gpus: int, per_gpu_bytes: float, to_host: bool) -> tuple[float, Demand, float]:
    """Each of a node's first `gpus` GPUs copying `per_gpu_bytes` to (to_host) or from its
    host memory at `root` over the node's PCIe / host tree (topology.build NodeTemplate:
    links are (u, v, kind, B/s, s)), all at once: (the longest route's latency, the bytes
    on each node-local link offset, the seconds on an idle node: that latency plus the
    busiest link's bytes over its capacity)."""
    routes = [tree_offsets(template, f"gpu{la}", root) if to_host else tree_offsets(template, root, f"gpu{la}")
              for la in range(gpus)]
    latency = max((sum(template.links[o][4] for o in r) for r in routes), default=0.0)
    load = Demand.sum(Demand.along(r, per_gpu_bytes) for r in routes)
    capacity = np.array([link[3] for link in template.links], dtype=np.float64)
    return latency, load, latency + load.bottleneck_time(capacity) if routes else 0.0


def host_transfer_seconds(template, root: str, gpus: int, per_gpu_bytes: float, to_host: bool) -> float:
    """Seconds for each of a node's `gpus` GPUs to copy `per_gpu_bytes` to (to_host) or
    from the node's host memory at `root` over the node's own PCIe / host links, all at
    once on an idle node (NodeHost.copies' idle time)."""
    return _copies(template, root, gpus, per_gpu_bytes, to_host)[2]


def node_copy(template, root: str, n_nodes: int, per_node_links: int, gpus: int,
              per_gpu_bytes: float, to_host: bool) -> NodeCopy:
    """The same copies on every one of `n_nodes` nodes at once, as the network's link
    bytes (node a's local link o is link a x per_node_links + o): the runtime carries them
    beside the step's other traffic, so a copy shares its PCIe links with a collective
    crossing them; on an idle node it takes host_transfer_seconds (NodeHost.copies' copy)."""
    return NodeHost(template, root, n_nodes, per_node_links).copies(gpus, per_gpu_bytes, to_host)[0]


@dataclass(frozen=True)
class NodeHost:
    """Where a node's GPUs copy to: its PCIe / host tree (topology.build NodeTemplate) up to
    the host-memory vertex `root`, replicated on `n_nodes` nodes of `per_node_links` links."""
    template: object
    root: str
    n_nodes: int
    per_node_links: int

    # (what, one node's values) -> those values on every node (NodeHost._once)
    _arrays: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def copies(self, gpus: int, per_gpu_bytes: float, to_host: bool) -> tuple[NodeCopy, float]:
        """(the copies on every node as network bytes, their seconds on an idle node)."""
        latency, load, idle = _copies(self.template, self.root, gpus, per_gpu_bytes, to_host)
        links = self._once("links", load.links, self._link_ids)
        nbytes = self._once("bytes", load.bytes, self._tiled)
        return NodeCopy(latency, Demand(links=links, bytes=nbytes)), idle

    def _link_ids(self, offsets: np.ndarray) -> np.ndarray:
        """Node a's link offset o as link a x per_node_links + o, node by node: sorted when
        `offsets` are."""
        base = np.arange(self.n_nodes, dtype=np.int64) * self.per_node_links
        return np.repeat(base, offsets.size) + self._tiled(offsets)

    def _tiled(self, per_node: np.ndarray) -> np.ndarray:
        """The same values on every node, node by node."""
        return np.tile(per_node, self.n_nodes)

    def _once(self, what: str, per_node: np.ndarray, build) -> np.ndarray:
        """build(per_node), once per value and read-only, so that Demand keeps it as it is:
        every table's copies cross the same links, and a synthetic model's repeated tables
        copy the same bytes (Merlin's jumbo: 1,022 tables, 9 sizes); at 2,048 nodes each
        array is ~10^4 entries, two per table."""
        key = (what, per_node.tobytes())
        array = self._arrays.get(key)
        if array is None:
            array = self._arrays[key] = np.array(build(per_node))     # owns its memory
            array.setflags(write=False)
        return array
