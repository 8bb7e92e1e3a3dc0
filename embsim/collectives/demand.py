"""Per-link byte demands of each collective algorithm over the real topology links.

A demand says how many bytes each directed link carries for one collective of S bytes;
model.py scales it so that its bottleneck time equals the simulated transfer time.
Every pattern is linear in S, so callers compute the unit pattern (S = 1) once per
(op, algo, communicator) and scale it. Routes come from `topology.route`; they are
gathered into flat numpy arrays so that big patterns (alltoallv at 1024 ranks) are
aggregated with bincount, never with per-pair Python arithmetic on the bytes; the routes
themselves are computed in bulk (topology.vroutes). AlltoallRoutes is the pairwise
all-to-all, kept for arbitrary dense matrices; structured traffic at any scale goes
through alltoall_demand.AlltoallPattern, which gives the same bytes without N^2 pairs.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain
from typing import Sequence

import numpy as np

from embsim.network import Demand
from embsim.topology.vroutes import route_table


@dataclass(frozen=True)
class RouteSet:
    """Many routes as flat arrays: route k is links[offsets[k]:offsets[k+1]]."""

    links: np.ndarray
    lengths: np.ndarray

    @classmethod
    def of(cls, topology, pairs: Sequence[tuple[int, int]], same_nic: bool = False) -> "RouteSet":
        """`same_nic`: the pairs are hops of ring/tree channels, which cross the network on
        one rail (route_table)."""
        pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
        links, lengths = route_table(topology, pairs[:, 0], pairs[:, 1], same_nic)
        return cls(links, lengths)

    def demand(self, weights: np.ndarray) -> Demand:
        w = np.repeat(np.asarray(weights, dtype=np.float64), self.lengths)
        return Demand(links=self.links, bytes=w).normalised()


def ordered_ranks(topology, ranks: Sequence[int]) -> list[list[int]]:
    """The communicator's ranks grouped by node (nodes in order, local ranks in order)."""
    r = np.sort(np.asarray(ranks, dtype=np.int64).reshape(-1))
    if r.size == 0:
        return []
    if r[0] < 0 or r[-1] >= topology.n_gpus:
        raise IndexError(f"rank out of range 0..{topology.n_gpus - 1}")
    node = r // topology.gpus_per_node
    cuts = np.flatnonzero(np.diff(node)) + 1
    return [g.tolist() for g in np.split(r, cuts)]


def _ring_edges(groups: list[list[int]], rotations: int) -> list[list[tuple[int, int]]]:
    """One ring per rotation; rotation k enters each node at its k-th GPU (spreads NICs)."""
    rings = []
    for k in range(rotations):
        order = list(chain.from_iterable(g[k % len(g):] + g[:k % len(g)] for g in groups))
        rings.append([(order[i], order[(i + 1) % len(order)]) for i in range(len(order))])
    return rings


def _ring_pairs(groups: list[list[int]], rotations: int) -> np.ndarray:
    """_ring_edges as one (pairs, 2) array, without Python per edge when nodes are even."""
    if len({len(g) for g in groups}) != 1:
        return np.array(list(chain.from_iterable(_ring_edges(groups, rotations))), dtype=np.int64)
    G = np.array(groups, dtype=np.int64)
    out = []
    for k in range(rotations):
        order = np.roll(G, -(k % G.shape[1]), axis=1).reshape(-1)
        out.append(np.stack([order, np.roll(order, -1)], axis=1))
    return np.concatenate(out)


def ring_demand(topology, ranks: Sequence[int], per_edge_bytes: float) -> Demand:
    """Every rank sends `per_edge_bytes` to its ring successor, channels spread over NICs."""
    groups = ordered_ranks(topology, ranks)
    if sum(len(g) for g in groups) < 2:
        return Demand.empty()
    rotations = 1
    if len(groups) > 1:
        rotations = max(1, min(len(topology.rails) or 1, min(len(g) for g in groups)))
    pairs = _ring_pairs(groups, rotations)
    rs = RouteSet.of(topology, pairs, same_nic=True)
    return rs.demand(np.full(len(pairs), per_edge_bytes / rotations))


def _heap_edges(n: int) -> list[tuple[int, int]]:
    return [((i - 1) // 2, i) for i in range(1, n)]


def tree_demand(topology, ranks: Sequence[int], nbytes: float) -> Demand:
    """AllReduce tree: intra-node chains + inter-node double binary tree (S/2 per tree).

    Reduce goes up and broadcast comes down, so every tree edge carries its bytes both ways.
    Across nodes the trees' channels cross on every rail, as the rings' do (NCCL searches
    the tree graph's channels over the node's NICs like the ring's): channel k of the first
    tree leaves each node from its k-th GPU, of the second from its k-th from the end.
    """
    groups = ordered_ranks(topology, ranks)
    pairs, weights = [], []
    for g in groups:
        for a, b in zip(g, g[1:]):
            pairs += [(a, b), (b, a)]
            weights += [nbytes, nbytes]
    n = len(groups)
    if n > 1:
        rotations = max(1, min(len(topology.rails) or 1, min(len(g) for g in groups)))
        for k in range(rotations):
            for tree, leader in ((list(range(n)), k), (list(range(n - 1, -1, -1)), -1 - k)):
                for p, c in _heap_edges(n):
                    a, b = groups[tree[p]][leader], groups[tree[c]][leader]
                    pairs += [(a, b), (b, a)]
                    weights += [nbytes / 2 / rotations] * 2
    if not pairs:
        return Demand.empty()
    return RouteSet.of(topology, pairs, same_nic=True).demand(np.array(weights))


def nvls_demand(topology, ranks: Sequence[int], nbytes: float, op: str) -> Demand:
    """NVLink SHARP: each GPU pushes its data to the switch and reads the result back;
    across nodes, one inter-node ring per rail carries 1/g of the node's data."""
    groups = ordered_ranks(topology, ranks)
    up, down = [], []
    share = 1.0 if op == "all_reduce" else (len(groups[0]) - 1) / max(1, len(groups[0]))
    flat = np.array(list(chain.from_iterable(groups)), dtype=np.int64)
    node, local = np.divmod(flat, topology.gpus_per_node)
    for outgoing, acc in ((True, up), (False, down)):
        # a GPU's NVLink ports are the same template offsets on every node (rank l = node 0)
        offsets = [topology._device_links(l, outgoing, "nvlink") for l in range(topology.gpus_per_node)]
        table = np.full((len(offsets), max(1, max(map(len, offsets)))), -1, dtype=np.int64)
        for l, o in enumerate(offsets):
            table[l, :len(o)] = o
        ids = table[local] + (node * topology._per_node)[:, None]
        acc.append(ids[table[local] >= 0])
    links = np.concatenate(up + down) if up else np.zeros(0, dtype=np.int64)
    d = Demand(links=links, bytes=np.full(links.size, nbytes * share))
    n = len(groups)
    if n > 1:
        g = min(len(x) for x in groups)
        per = 2.0 * (n - 1) / n * nbytes / g
        pairs = [(groups[i][y], groups[(i + 1) % n][y]) for y in range(g) for i in range(n)]
        d = d + RouteSet.of(topology, pairs).demand(np.full(len(pairs), per))
    return d.normalised()


class AlltoallRoutes:
    """Routes of a rail-aligned (PXN) all-to-all: local (node, x, y) and remote (a, b, y)."""

    def __init__(self, topology, ranks: Sequence[int]):
        self.groups = ordered_ranks(topology, ranks)
        self.n_nodes = len(self.groups)
        self.g = min(len(x) for x in self.groups)
        N, g = self.n_nodes, self.g
        local_pairs = [(grp[x], grp[y]) for grp in self.groups for x in range(g) for y in range(g)]
        self.local = RouteSet.of(topology, local_pairs)                  # shape (N, g, g)
        remote = [(self.groups[a][y], self.groups[b][y]) for a in range(N) for b in range(N) for y in range(g)]
        self.remote = RouteSet.of(topology, remote)                      # shape (N, N, g)

    def demand(self, m: np.ndarray) -> Demand:
        """m: (N*g, N*g) bytes in comm order (node-major). Aggregated per rail, vectorised."""
        N, g = self.n_nodes, self.g
        blocks = m.reshape(N, g, N, g)
        local = np.einsum("axay->axy", blocks).copy()
        idx = np.arange(g)
        local[:, idx, idx] = 0.0
        # PXN: bytes from (a, x) to remote (b, y) first cross the fabric x -> y on node a.
        to_rail = blocks.sum(axis=2)                       # (N, g, g): a, x, y over all b
        remote_self = np.einsum("axay->axy", blocks)
        fwd = to_rail - remote_self
        fwd[:, idx, idx] = 0.0
        local_w = (local + fwd).reshape(-1)
        remote_w = blocks.sum(axis=1)                      # (N, N, g): a, b, y over all x
        remote_w[np.arange(N), np.arange(N), :] = 0.0
        return (self.local.demand(local_w) + self.remote.demand(remote_w.reshape(-1))).normalised()


def uniform_alltoall_matrix(n: int, nbytes: float) -> np.ndarray:
    m = np.full((n, n), nbytes / n)
    np.fill_diagonal(m, 0.0)
    return m
