"""Traffic: an all-to-all-v byte matrix that is an outer product, kept as its two factors.

Every all-to-all-v a strategy issues is of this form: a PS push spreads each rank's rows
evenly over the shards (matrix[i, j] = bytes / n), EmbRace's row-sharded lookups send
each shard's share of every rank's lookups (matrix[i, j] = share[i] x bytes). Keeping
`row` and `col` instead of the n x n matrix makes the cost linear in the GPU count: at
16,384 GPUs the dense matrix alone would be 2 GB. Scaling keeps the factor that is not
all ones, so every element is computed exactly as the dense matrix would hold it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .pairwise import const_rows_sum, leaf_of, row_sum, rows_sum, seqsum_vec


def _frozen(a) -> np.ndarray:
    """`a` as a 1-D float64 array no one can write to: one that is already that (and owns
    its memory) is shared as it is (a ps server matrix's row of ones, one per worker, is
    the same for every table), anything else is copied."""
    if (isinstance(a, np.ndarray) and a.dtype == np.float64 and a.ndim == 1
            and not a.flags.writeable and a.base is None):
        return a
    a = np.array(a, dtype=np.float64, copy=True).reshape(-1)
    a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False)
class Traffic:
    """matrix[i, j] = row[i] * col[j] bytes from rank i to rank j (diagonal: kept local);
    rectangular for workers x parameter servers."""

    row: np.ndarray
    col: np.ndarray

    def __post_init__(self) -> None:
        row, col = _frozen(self.row), _frozen(self.col)
        for a in (row, col):
            if not np.all(np.isfinite(a)) or (a.size and a.min() < 0):
                raise ValueError("Traffic: factors must be finite and >= 0")
        object.__setattr__(self, "row", row)
        object.__setattr__(self, "col", col)

    # ----------------------------------------------------------------- builders
    @classmethod
    def even(cls, n: int, per_rank_bytes: float) -> "Traffic":
        """Each rank sends per_rank_bytes spread evenly over all n ranks (itself included)."""
        return cls(np.ones(n), np.full(n, per_rank_bytes / n))

    @classmethod
    def from_senders(cls, per_sender: np.ndarray) -> "Traffic":
        """Rank i sends per_sender[i] bytes to every rank."""
        per_sender = np.asarray(per_sender, dtype=np.float64)
        return cls(per_sender, np.ones(per_sender.size))

    # ------------------------------------------------------------------ algebra
    @property
    def n(self) -> int:
        return int(self.row.size)

    @property
    def shape(self) -> tuple[int, int]:
        return (int(self.row.size), int(self.col.size))

    @property
    def T(self) -> "Traffic":
        return Traffic(self.col, self.row)

    def _ones(self, a: np.ndarray) -> bool:
        return bool(np.all(a == 1.0))

    def __mul__(self, factor: float) -> "Traffic":
        # scale the factor that carries the bytes: row[i] * f * 1 == (row[i] * 1) * f exactly
        if self._ones(self.row) and not self._ones(self.col):
            return Traffic(self.row, self.col * factor)
        return Traffic(self.row * factor, self.col)

    __rmul__ = __mul__

    def __truediv__(self, k: float) -> "Traffic":
        if self._ones(self.row) and not self._ones(self.col):
            return Traffic(self.row, self.col / k)
        return Traffic(self.row / k, self.col)

    def permuted(self, order: np.ndarray) -> "Traffic":
        """The same traffic with ranks renumbered: new rank k is old rank order[k]."""
        return Traffic(self.row[order], self.col[order])

    def dense(self) -> np.ndarray:
        """The n x n matrix (small n only: tests and the pairwise reference)."""
        return np.outer(self.row, self.col)

    def key(self) -> tuple:
        return (self.row.tobytes(), self.col.tobytes())

    def total(self) -> float:
        return float(self.row.sum() * self.col.sum())

    @property
    def kind(self) -> str:
        """'uniform' (one value everywhere), 'senders' (col all ones), 'receivers' (row all
        ones) or 'outer' (both vary): what the demand aggregation can do exactly."""
        r1, c1 = self._ones(self.row), self._ones(self.col)
        if (r1 and np.all(self.col == self.col[0])) or (c1 and np.all(self.row == self.row[0])):
            return "uniform"
        if c1:
            return "senders"
        if r1:
            return "receivers"
        return "outer"

    @property
    def value(self) -> float:
        """The one element of a uniform Traffic."""
        return float(self.row[0] * self.col[0])


def traffic_p2p_load(traffic: Traffic, node_of: np.ndarray, ppn: int) -> tuple[float, float, float, int]:
    """What p2p.alltoallv_time reads off a dense matrix, from the two factors in O(n):
    (bytes per GPU over its fabric link, bytes per GPU through its NIC, the largest
    message, the most peers one rank sends to). PXN forwards each remote byte once over
    the sending node's fabric, so a GPU's fabric bytes are its local plus remote bytes."""
    row, col = traffic.row, traffic.col
    node_of = np.asarray(node_of, dtype=np.int64)
    _, node, counts = np.unique(node_of, return_inverse=True, return_counts=True)
    regular = np.all(counts == counts[0]) and np.all(np.diff(node) >= 0)
    if regular and traffic.kind == "uniform":
        return _uniform_p2p_load(traffic.n, int(counts[0]), traffic.value, ppn)
    if regular and traffic.kind in ("senders", "receivers"):
        return _one_sided_p2p_load(traffic, int(counts[0]), ppn)
    node_row = np.bincount(node, weights=row)[node]         # per rank: its node's totals
    node_col = np.bincount(node, weights=col)[node]
    local_out = row * (node_col - col)
    local_in = col * (node_row - row)
    remote_out = row * (col.sum() - node_col)
    remote_in = col * (row.sum() - node_row)
    intra = float(max((local_out + remote_out).max(initial=0.0), (local_in + remote_in).max(initial=0.0)))
    inter = float(max(remote_out.max(initial=0.0), remote_in.max(initial=0.0)))
    # largest off-diagonal element and most nonzero off-diagonal elements in a row
    per_peer = 0.0
    if traffic.n > 1:
        top_r, top_c = np.argsort(row)[::-1][:2], np.argsort(col)[::-1][:2]
        per_peer = max(float(row[i] * col[j]) for i in top_r for j in top_c if i != j)
    nz_col = int((col > 0).sum())
    peers = int(np.where(row > 0, nz_col - (col > 0), 0).max(initial=0))
    return (intra if ppn > 1 else 0.0, inter, per_peer, max(1, peers))


def _uniform_p2p_load(n: int, g: int, c: float, ppn: int) -> tuple[float, float, float, int]:
    """traffic_p2p_load for c bytes between every two ranks, nodes of g consecutive ranks,
    with the dense path's exact arithmetic: its row sums are numpy pairwise sums
    (reproduced by collectives.pairwise), its column sums add one row after another."""
    if c <= 0 or n < 2:
        return (0.0, 0.0, 0.0, 1)
    # column sums: c added once per sender on another node / on the same node
    remote_in = local_in = 0.0
    for _ in range(n - g):
        remote_in += c
    for _ in range(g - 1):
        local_in += c
    intra_in = local_in + remote_in
    intra_out = inter_out = 0.0
    local_max: dict[tuple, float] = {}       # the same block pattern recurs all along the row
    for k in range(n // g):
        lo, hi = k * g, (k + 1) * g
        remote_out = row_sum(n, [(0, lo, c), (hi, n, c)])
        inter_out = max(inter_out, remote_out)
        leaf = leaf_of(n, lo, hi)
        key = (leaf[1], lo - leaf[0]) if leaf else (n, lo)
        if key not in local_max:
            length, base = (leaf[1], lo - leaf[0]) if leaf else (n, lo)
            local_max[key] = max(row_sum(length, [(base, base + j, c), (base + j + 1, base + g, c)])
                                 for j in range(g))
        # rounding is monotonic, so the largest local sum gives the largest total
        intra_out = max(intra_out, local_max[key] + remote_out)
    intra = max(intra_out, intra_in)
    inter = max(inter_out, remote_in)
    return (intra if ppn > 1 else 0.0, inter, c, n - 1)


def _one_sided_p2p_load(traffic: Traffic, g: int, ppn: int) -> tuple[float, float, float, int]:
    """traffic_p2p_load when bytes depend only on the sender (row) or only on the receiver
    (col), nodes of g consecutive ranks, with the dense path's exact arithmetic: row sums
    are numpy's pairwise sums (pairwise.rows_sum evaluates them on the masked blocks only),
    column sums add one row after another (pairwise.seqsum_vec, or a running sum)."""
    n = traffic.n
    ranks = np.arange(n)
    lo = ranks // g * g
    hi = lo + g
    if traffic.kind == "senders":
        r = traffic.row
        pure: dict[int, np.ndarray] = {}

        def value_of(s, L, rows):
            return np.broadcast_to(r[rows][:, None], (rows.size, L))

        def pure_sum(s, L, rows):                        # an unmasked subtree of r[row]
            return const_rows_sum(L, r, pure)[rows]
        remote_in = np.zeros(n // g)                    # per node: every other node's senders, in order
        for i in range(n):
            k = i // g
            remote_in[:k] += r[i]
            remote_in[k + 1:] += r[i]
        remote_in = remote_in[ranks // g]
        local_in = np.zeros(n)
        for x in range(g):                              # the node's other senders, in order
            src = lo + x
            local_in = local_in + np.where(src != ranks, r[src], 0.0)
    else:
        c = traffic.col
        pure_c: dict[tuple[int, int], float] = {}

        def value_of(s, L, rows):
            return np.broadcast_to(c[s:s + L][None, :], (rows.size, L))

        def pure_sum(s, L, rows):
            if (s, L) not in pure_c:
                pure_c[(s, L)] = float(np.sum(c[s:s + L]))
            return np.full(rows.size, pure_c[(s, L)])
        remote_in = seqsum_vec(c, n - g)
        local_in = seqsum_vec(c, g - 1)
    remote_out = rows_sum(n, lo, hi, ranks, False, value_of, pure_sum)
    local_out = rows_sum(n, lo, hi, ranks, True, value_of, None)
    intra = float(max((local_out + remote_out).max(initial=0.0), (local_in + remote_in).max(initial=0.0)))
    inter = float(max(remote_out.max(initial=0.0), remote_in.max(initial=0.0)))
    row, col = traffic.row, traffic.col
    top_r, top_c = np.argsort(row)[::-1][:2], np.argsort(col)[::-1][:2]
    per_peer = max(float(row[i] * col[j]) for i in top_r for j in top_c if i != j)
    peers = int(np.where(row > 0, int((col > 0).sum()) - (col > 0), 0).max(initial=0))
    return (intra if ppn > 1 else 0.0, inter, per_peer, max(1, peers))


def busiest_node_bytes(node_of: np.ndarray, remote_out: np.ndarray, remote_in: np.ndarray) -> float:
    """The busiest node's off-node bytes, sent or received, from each rank's (p2p.node_nic_share
    reads it)."""
    _, node = np.unique(np.asarray(node_of, dtype=np.int64), return_inverse=True)
    return float(max(np.bincount(node, weights=remote_out).max(initial=0.0),
                     np.bincount(node, weights=remote_in).max(initial=0.0)))


def node_remote_bytes(traffic: Traffic, node_of: np.ndarray) -> float:
    """busiest_node_bytes of an outer-product traffic, in O(n) from its two factors."""
    row, col = traffic.row, traffic.col
    _, node = np.unique(np.asarray(node_of, dtype=np.int64), return_inverse=True)
    node_row, node_col = np.bincount(node, weights=row)[node], np.bincount(node, weights=col)[node]
    return busiest_node_bytes(node_of, row * (col.sum() - node_col), col * (row.sum() - node_row))

