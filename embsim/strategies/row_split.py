"""A sparse table's rows split over N GPUs (embrace `shard=rows|hashed`): what each owner
serves and touches, from the table's token statistics. Used by the per-table exchange
(embrace.py: the hottest owner sets the pace) and by the fused one (embrace_tables.py: one
piece per owner)."""

from __future__ import annotations

import numpy as np

from ..workload.sharding import shard_shares, shard_sums
from ..workload.tokens import union_inclusion


def row_block_shares(probs: np.ndarray, shards: int, counts: np.ndarray | None = None) -> np.ndarray:
    """Total of `probs` each contiguous row block holds (blocks as torch.chunk): with lookup
    probabilities, the fraction of lookups it serves. With `counts`, probs are per row of runs
    of that many rows (row_groups)."""
    return shard_sums(probs, shards, "contiguous", counts=counts)


def row_block_unique(probs: np.ndarray, shards: int, draws: float,
                     counts: np.ndarray | None = None) -> np.ndarray:
    """Expected distinct rows of each block touched by `draws` i.i.d. lookups."""
    touched = -np.expm1(draws * np.log1p(-np.asarray(probs, dtype=float)))
    return shard_sums(touched, shards, "contiguous", counts=counts)


def row_split(t, shard: str, dedup: bool, n: int, lookups: float) -> tuple[np.ndarray, np.ndarray] | None:
    """(shares, rows) per owner of table `t` (a TableTraffic) split over n GPUs: the share of
    what a GPU sends that each owner serves (its lookups, or with `dedup` its distinct rows),
    and the distinct rows of the owner's part that the n batches of `lookups` lookups touch.
    `shard` rows: contiguous blocks in frequency order; hashed: by row hash. None for a table
    without token statistics."""
    if t.row_probs is None or t.row_inclusion is None:
        return None
    weights = t.row_inclusion if dedup else t.row_probs
    if shard == "hashed":
        shares = shard_shares(weights, n, "hashed", counts=t.row_counts)
        rows = shard_sums(union_inclusion(t.row_inclusion, n), n, "hashed", counts=t.row_counts)
    else:
        blocks = row_block_shares(weights, n, t.row_counts)
        shares = blocks / blocks.sum()
        rows = row_block_unique(t.row_probs, n, n * lookups, t.row_counts)
    return shares, rows
