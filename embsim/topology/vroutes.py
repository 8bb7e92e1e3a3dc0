"""Routes of many GPU pairs at once, as numpy arrays (the same links, in the same order,
as `Topology.route` for each pair, without a Python call per pair).

Every node is a copy of one template and the network is regular, so a route is
(template offsets on the source node) + (network hops, arithmetic on node and rail
indices) + (template offsets on the destination node). Link ids of the network follow
the order of `build.network_links`: per (node, rail) an up/down NIC pair, then per
(leaf, spine) an up/down pair, then per (pod, spine) an up/down pair to the core.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class NetIds:
    """Link-id arithmetic of a topology's network (vectorised over node/rail arrays)."""

    base: int            # id of the first network link
    n_nodes: int
    n_rails: int
    nodes_per_leaf: int
    rail_optimised: bool
    n_spines: int
    n_leaves: int
    leaves_per_group: int
    groups_per_pod: int
    tiers: int

    @classmethod
    def of(cls, topo) -> "NetIds":
        lay = topo._layout
        return cls(base=topo._net_base, n_nodes=lay.n_nodes, n_rails=len(lay.rails),
                   nodes_per_leaf=lay.nodes_per_leaf, rail_optimised=lay.rail_optimised,
                   n_spines=lay.n_spines, n_leaves=lay.n_leaves, leaves_per_group=lay.leaves_per_group,
                   groups_per_pod=lay.groups_per_pod, tiers=lay.tiers)

    def nic_up(self, node, rail):
        return self.base + 2 * (node * self.n_rails + rail)

    def nic_down(self, node, rail):
        return self.base + 2 * (node * self.n_rails + rail) + 1

    def leaf(self, node, rail):
        group = node // self.nodes_per_leaf
        return group * self.n_rails + rail if self.rail_optimised else group

    def pod(self, leaf):
        return (leaf // self.leaves_per_group) // self.groups_per_pod

    def leaf_up(self, leaf, spine):
        return self.base + 2 * self.n_nodes * self.n_rails + 2 * (leaf * self.n_spines + spine)

    def spine_down(self, spine, leaf):
        return self.leaf_up(leaf, spine) + 1

    def core_up(self, pod, spine):
        base3 = self.base + 2 * self.n_nodes * self.n_rails + 2 * self.n_leaves * self.n_spines
        return base3 + 2 * (pod * self.n_spines + spine)

    def core_down(self, spine, pod):
        return self.core_up(pod, spine) + 1

    def hops(self, a, ra, b, rb) -> np.ndarray:
        """(pairs, 6) link ids of the network part a/ra -> b/rb, -1 where a hop is not taken."""
        a, ra, b, rb = (np.asarray(x, dtype=np.int64) for x in (a, ra, b, rb))
        out = np.full((a.size, 6), -1, dtype=np.int64)
        out[:, 0] = self.nic_up(a, ra)
        out[:, 5] = self.nic_down(b, rb)
        la, lb = self.leaf(a, ra), self.leaf(b, rb)
        cross = la != lb
        s = (a + b) % self.n_spines
        out[cross, 1] = self.leaf_up(la, s)[cross]
        out[cross, 4] = self.spine_down(s, lb)[cross]
        if self.tiers == 3:
            pa, pb = self.pod(la), self.pod(lb)
            core = cross & (pa != pb)
            out[core, 2] = self.core_up(pa, s)[core]
            out[core, 3] = self.core_down(s, pb)[core]
        return out


def _padded(rows: list[tuple[int, ...]], shape: tuple[int, ...]) -> np.ndarray:
    width = max((len(r) for r in rows), default=0)
    out = np.full((len(rows), max(width, 1)), -1, dtype=np.int64)
    for i, r in enumerate(rows):
        out[i, :len(r)] = r
    return out.reshape(*shape, -1)


def _templates(topo, same_nic: bool = False):
    cache = getattr(topo, "_vroute_templates", None)
    if cache is None:
        cache = topo._vroute_templates = {}
    hit = cache.get(same_nic)
    if hit is None:
        g = topo.gpus_per_node
        local = _padded([topo._local(("gpu", x, "gpu", y)) if x != y else ()
                         for x in range(g) for y in range(g)], (g, g))
        head = tail = src_rail = dst_rail = None
        if topo._layout is not None:
            parts = [topo.remote_template(x, y, same_nic) for x in range(g) for y in range(g)]
            head = _padded([p[0] for p in parts], (g, g))
            tail = _padded([p[3] for p in parts], (g, g))
            rails = topo.rails
            src_rail = np.array([rails.index(p[1]) for p in parts], dtype=np.int64).reshape(g, g)
            dst_rail = np.array([rails.index(p[2]) for p in parts], dtype=np.int64).reshape(g, g)
        hit = cache[same_nic] = (local, head, tail, src_rail, dst_rail)
    return hit


def _shifted(offsets: np.ndarray, base: np.ndarray, keep: np.ndarray) -> np.ndarray:
    return np.where((offsets >= 0) & keep[:, None], offsets + base[:, None], -1)


def route_table(topo, src, dst, same_nic: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(links, lengths): links is the concatenation of route(src[k], dst[k]) over k;
    `same_nic`: routes of ring/tree channel hops (Topology.remote_template)."""
    src = np.asarray(src, dtype=np.int64).reshape(-1)
    dst = np.asarray(dst, dtype=np.int64).reshape(-1)
    if src.size and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= topo.n_gpus):
        raise IndexError(f"rank out of range 0..{topo.n_gpus - 1}")
    g, per_node = topo.gpus_per_node, topo._per_node
    a, la = np.divmod(src, g)
    b, lb = np.divmod(dst, g)
    local, head, tail, src_rail, dst_rail = _templates(topo, same_nic)
    same = a == b
    parts = [_shifted(local[la, lb], a * per_node, same)]
    remote = ~same
    if remote.any():
        parts.append(_shifted(head[la, lb], a * per_node, remote))
        net = NetIds.of(topo).hops(a, src_rail[la, lb], b, dst_rail[la, lb])
        net[same] = -1
        parts.append(net)
        parts.append(_shifted(tail[la, lb], b * per_node, remote))
    full = np.concatenate(parts, axis=1)
    mask = full >= 0
    return full[mask], mask.sum(axis=1)
