"""Per-link demand of a rail-aligned (PXN) all-to-all without routing N^2 pairs.

The pairwise form (demand.AlltoallRoutes) routes every (node a, node b, rail GPU y) pair:
at 2,048 nodes that is 33 million routes. But every node is a copy of one template and
the network is regular, so each link's bytes are a sum over a group of pairs that the
structure names directly:
  * a link inside node a carries the local pairs (x -> y) whose template route uses it
    (x's bytes for y, plus the PXN forwarding of x's bytes for remote GPUs on rail y);
  * the links from GPU y to its NIC on node a, and the NIC's up-link, carry (a -> b, y)
    for every other node b; their mirror images on node b carry (a -> b, y) for every a;
  * a leaf's up-link to spine s carries the pairs leaving its node group on that rail
    whose ECMP hash (a + b) mod S picks s; the same for pods and the core.
With traffic matrix[i, j] = row[i] * col[j] (collectives.traffic), every such sum is a
product of per-node totals, so the cost is linear in the GPU count.

Exactness: the pairwise form adds equal weights one by one in a fixed order. For a
uniform pattern (every byte count the same: AlltoAll, a PS push or pull) a link's bytes
are that weight added `count` times, which is reproduced exactly from the structural
counts by one sequential cumulative sum, so results are bit-identical to the pairwise
form. For skewed patterns where one side is uniform (EmbRace shard=rows: bytes depend only
on the sender, or only on the receiver) the links inside nodes and at the NICs, which set
the collective's time, are summed in the pairwise order too (pairwise.seqsum_vec adds a
value k times exactly in O(log k)); only spine and core links, whose sums run over pairs
of whole leaf groups, are products of totals, equal to the pairwise form to ~1e-15.
"""

from __future__ import annotations

import numpy as np

from embsim.network import Demand
from embsim.topology.vroutes import NetIds

from .demand import ordered_ranks
from .pairwise import seqsum_vec
from .traffic import Traffic


class NotRegular(ValueError):
    """The communicator does not use the same local GPUs on every node."""


def seqsum(value: float, counts: np.ndarray) -> np.ndarray:
    """value added to 0.0 `counts[k]` times one by one (the pairwise form's order)."""
    counts = np.asarray(counts, dtype=np.int64)
    top = int(counts.max(initial=0))
    if top == 0:
        return np.zeros(counts.shape)
    table = np.concatenate(([0.0], np.cumsum(np.full(top, float(value)))))
    return table[counts]


def _cross(A: np.ndarray, B: np.ndarray, group: np.ndarray, n_groups: int, node: np.ndarray,
           n_spines: int) -> np.ndarray:
    """(n_groups, S): sum over a in group G of A[a] x sum over b outside G with
    (node[a] + node[b]) mod S == s of B[b]."""
    res = node % n_spines
    tot = np.bincount(res, weights=B, minlength=n_spines)
    grp = np.bincount(group * n_spines + res, weights=B, minlength=n_groups * n_spines).reshape(n_groups, n_spines)
    s = np.arange(n_spines)
    q = (s[None, :] - node[:, None]) % n_spines                 # residue b needs, per (a, s)
    outside = tot[q] - grp[group[:, None], q]
    out = np.bincount((group[:, None] * n_spines + s[None, :]).reshape(-1),
                      weights=(A[:, None] * outside).reshape(-1), minlength=n_groups * n_spines)
    return out.reshape(n_groups, n_spines)


class AlltoallPattern:
    """Structure of one communicator's all-to-all on one topology (built once, reused)."""

    def __init__(self, topology, ranks):
        t = topology
        self.topology = t
        self.groups = ordered_ranks(t, ranks)
        local = [t.local_of(r) for r in self.groups[0]]
        if any([t.local_of(r) for r in grp] != local for grp in self.groups):
            raise NotRegular("all-to-all: every node of the communicator needs the same local GPUs")
        self.N, self.g = len(self.groups), len(local)
        self.nodes = np.array([t.node_of(grp[0]) for grp in self.groups], dtype=np.int64)
        self.n_links, self.per_node = len(t.links), t._per_node
        g = self.g
        # local pairs in the pairwise order (x, y), each with its template route
        self.local_entries = [(x, y, o) for x in range(g) for y in range(g) if x != y
                              for o in t._local(("gpu", local[x], "gpu", local[y]))]
        self.remote = []
        if self.N > 1:
            for y in range(g):
                head, src_nic, dst_nic, tail = t.remote_template(local[y], local[y])
                if src_nic != dst_nic:
                    raise NotRegular("all-to-all: a rail GPU leaves through another rail's NIC")
                self.remote.append((head, t.rails.index(dst_nic), tail))
            self.net = NetIds.of(t)
        # which rail GPUs' remote pairs share each link next to a NIC (in y order)
        self.head_sets, self.tail_sets, self.rail_sets = {}, {}, {}
        for y, (head, rail, tail) in enumerate(self.remote):
            for sets, keys in ((self.head_sets, head), (self.tail_sets, tail), (self.rail_sets, (rail,))):
                for key in keys:
                    sets[key] = sets.get(key, ()) + (y,)

    # ---------------------------------------------------------------- public
    def demand(self, traffic: Traffic) -> Demand:
        """Per-link bytes of the all-to-all-v `traffic` (ranks in node-major order)."""
        if traffic.n != self.N * self.g:
            raise ValueError(f"all-to-all: traffic for {traffic.n} ranks, communicator has {self.N * self.g}")
        if traffic.kind == "uniform":
            return self.uniform(traffic.value)
        local_w, A, B = self._weights(traffic)
        vals = self._local_sums(local_w)
        if self.N > 1:
            vals = vals + self._remote_sums(A, B, traffic.kind)
        return _as_demand(vals)

    def uniform(self, w: float) -> Demand:
        """Every rank sends w bytes to every other rank (exactly the pairwise result)."""
        N, g = self.N, self.g
        if w <= 0 or N * g < 2:
            return Demand.empty()
        # local pair x -> y: its own w plus w forwarded for each other node's rail-y GPU
        # (w summed over all N nodes, less its own: the pairwise form's arithmetic)
        w_local = w + (float(seqsum(w, N)) - w)
        counts = self._local_sums(np.ones((N, g, g)))
        vals = seqsum(w_local, counts.astype(np.int64))
        if N > 1:
            w_remote = float(seqsum(w, g))     # g senders on a node share rail y's pair
            vals = vals + seqsum(w_remote, self._remote_sums(np.ones(N), np.ones((N, g))).astype(np.int64))
        return _as_demand(vals)

    # -------------------------------------------------------------- internals
    def _weights(self, traffic: Traffic):
        """local_w (N, g, g) and the remote factors A (N,), B (N, g): bytes of the remote
        pair (a -> b, rail y) are A[a] * B[b, y]."""
        N, g = self.N, self.g
        row, col = traffic.row.reshape(N, g), traffic.col.reshape(N, g)
        kind = traffic.kind
        A = np.zeros(N)
        for x in range(g):                               # sum over a node's senders, in order
            A = A + row[:, x]
        B = col.copy()
        if kind == "receivers":
            B = np.zeros((N, g))
            for _ in range(g):
                B = B + col
            A = np.ones(N)
        local = row[:, :, None] * col[:, None, :]
        if kind == "senders":                            # x's bytes to every node's rail GPUs
            to_rail = seqsum_vec(row.reshape(-1), N).reshape(N, g)
            to_rail = np.broadcast_to(to_rail[:, :, None], (N, g, g))
        else:
            per_rail = np.cumsum(col, axis=0)[-1]         # sum over nodes, in order
            to_rail = row[:, :, None] * per_rail[None, None, :]
        local_w = local + (to_rail - local)
        idx = np.arange(g)
        local_w[:, idx, idx] = 0.0
        return local_w, A, B

    def _exact_end_sums(self, kind: str, A: np.ndarray, B: np.ndarray):
        """Bytes of the links a remote pair (a -> b, rail GPU y) crosses on its two nodes,
        summed the way the pairwise form adds them: on node a over b (then y), on node b
        over a (then y), skipping a == b. Per tuple of rail GPUs sharing a link."""
        N = self.N
        tuples = set(self.head_sets.values()) | set(self.tail_sets.values()) | set(self.rail_sets.values())
        out_of, in_of, by_size = {}, {}, {}
        for ys in tuples:
            k = len(ys)
            if kind == "senders":                        # every pair of node a carries A[a]
                if k not in by_size:
                    acc = np.zeros(N)
                    for a in range(N):                   # node b: A of every other node, in order
                        for _ in range(k):
                            acc[:a] += A[a]
                            acc[a + 1:] += A[a]
                    by_size[k] = (seqsum_vec(A, (N - 1) * k), acc)
                out_of[ys], in_of[ys] = by_size[k]
            else:                                        # every pair into b on rail y carries B[b, y]
                acc = np.zeros(N)
                for b in range(N):
                    for y in ys:
                        acc[:b] += B[b, y]
                        acc[b + 1:] += B[b, y]
                out_of[ys] = acc
                if k == 1:
                    in_of[ys] = seqsum_vec(B[:, ys[0]], N - 1)
                else:
                    acc = np.zeros(N)
                    for _ in range(N - 1):
                        for y in ys:
                            acc = acc + B[:, y]
                    in_of[ys] = acc
        return out_of, in_of

    def _local_sums(self, local_w: np.ndarray) -> np.ndarray:
        node_vals = np.zeros((self.N, self.per_node))
        for x, y, o in self.local_entries:
            node_vals[:, o] += local_w[:, x, y]
        out = np.zeros(self.n_links)
        ids = (self.nodes[:, None] * self.per_node + np.arange(self.per_node)[None, :]).reshape(-1)
        out[ids] = node_vals.reshape(-1)
        return out

    def _remote_sums(self, A: np.ndarray, B: np.ndarray, kind: str = "outer") -> np.ndarray:
        N, net, nodes = self.N, self.net, self.nodes
        node_vals = np.zeros((N, self.per_node))
        ids, vals = [], []
        A_tot, B_tot = A.sum(), B.sum(axis=0)
        rail_B = np.zeros((N, net.n_rails))
        exact = kind in ("senders", "receivers")
        for y, (head, rail, tail) in enumerate(self.remote):
            rail_B[:, rail] += B[:, y]
            if exact:
                continue
            out_y = A * (B_tot[y] - B[:, y])             # a -> every other node, rail y
            in_y = B[:, y] * (A_tot - A)                 # every other node -> b, rail y
            for o in head:
                node_vals[:, o] += out_y
            for o in tail:
                node_vals[:, o] += in_y
            ids += [net.nic_up(nodes, rail), net.nic_down(nodes, rail)]
            vals += [out_y, in_y]
        if exact:
            # links next to the NICs in the pairwise form's order (they set the step time)
            out_of, in_of = self._exact_end_sums(kind, A, B)
            for o, ys in self.head_sets.items():
                node_vals[:, o] = out_of[ys]
            for o, ys in self.tail_sets.items():
                node_vals[:, o] = in_of[ys]
            for rail, ys in self.rail_sets.items():
                ids += [net.nic_up(nodes, rail), net.nic_down(nodes, rail)]
                vals += [out_of[ys], in_of[ys]]
        S = net.n_spines
        if net.n_leaves > 1:
            group = nodes // net.nodes_per_leaf
            n_groups = int(group.max()) + 1
            s = np.arange(S)
            for r in range(net.n_rails) if net.rail_optimised else (None,):
                Br = rail_B[:, r] if r is not None else rail_B.sum(axis=1)
                if not Br.any():
                    continue
                up, down = _cross(A, Br, group, n_groups, nodes, S), _cross(Br, A, group, n_groups, nodes, S)
                leaf = np.arange(n_groups) * net.n_rails + r if r is not None else np.arange(n_groups)
                ids += [net.leaf_up(leaf[:, None], s[None, :]).reshape(-1),
                        net.spine_down(s[None, :], leaf[:, None]).reshape(-1)]
                vals += [up.reshape(-1), down.reshape(-1)]
            if net.tiers == 3:
                first_leaf = net.leaf(nodes, 0)
                pod = net.pod(first_leaf)
                n_pods = int(pod.max()) + 1
                Ball = rail_B.sum(axis=1)
                up, down = _cross(A, Ball, pod, n_pods, nodes, S), _cross(Ball, A, pod, n_pods, nodes, S)
                p = np.arange(n_pods)
                ids += [net.core_up(p[:, None], s[None, :]).reshape(-1),
                        net.core_down(s[None, :], p[:, None]).reshape(-1)]
                vals += [up.reshape(-1), down.reshape(-1)]
        node_ids = (nodes[:, None] * self.per_node + np.arange(self.per_node)[None, :]).reshape(-1)
        ids.append(node_ids)
        vals.append(node_vals.reshape(-1))
        return np.bincount(np.concatenate(ids), weights=np.concatenate(vals), minlength=self.n_links)


def _as_demand(vals: np.ndarray) -> Demand:
    keep = np.flatnonzero(vals > 0)
    return Demand(links=keep, bytes=vals[keep])
