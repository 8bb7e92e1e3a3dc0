"""Sharding a table's rows: which fraction of the row traffic each of n shards (GPUs or
parameter servers) serves.

Contiguous blocks of the frequency-sorted vocabulary (the block holding the hottest rows
serves most: the worst case), rows hashed to shards (a few hot rows still make the load
lumpy; uniform is only the limit), or partitions of consecutive rows dealt out in turn
(BytePS). Per-row weights may come per run of rows (embsim.workload.row_groups): a
run of one row is placed exactly; a longer run's rows are counted per shard exactly for
contiguous blocks and partitions, and spread evenly for hashing, which scatters
consecutive rows (runs are >= ~1,000 rows, past the exact head).
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError
from .row_groups import starts_of

SHARDINGS = ("contiguous", "hashed", "partitions")
_HASH_MULT = 2654435761          # Knuth's multiplicative hash (golden ratio x 2^32)


def _check(how: str, block_rows: int | None) -> None:
    if how not in SHARDINGS:
        raise InputError(f"sharding {how!r}: expected one of {', '.join(SHARDINGS)}")
    if how == "partitions" and (not block_rows or block_rows < 1):
        raise InputError("sharding partitions: needs a partition size of at least one row")


def _block_bounds(vocab: int, shards: int) -> np.ndarray:
    """Row boundaries of contiguous blocks as torch.chunk / np.array_split cut them."""
    q, r = divmod(vocab, shards)
    sizes = np.full(shards, q, dtype=np.int64)
    sizes[:r] += 1
    return np.concatenate([[0], np.cumsum(sizes)])


def shard_of_row_ids(rows: np.ndarray, vocab: int, shards: int, how: str,
                     block_rows: int | None = None) -> np.ndarray:
    """Shard index of the given rows of a `vocab`-row table."""
    _check(how, block_rows)
    rows = np.asarray(rows, dtype=np.int64)
    if how == "partitions":
        return (rows // int(block_rows)) % shards
    if how == "contiguous":
        return np.searchsorted(_block_bounds(vocab, shards), rows, side="right") - 1
    h = (rows.astype(np.uint64) * np.uint64(_HASH_MULT)) & np.uint64(0xFFFFFFFF)
    return ((h >> np.uint64(16)) % np.uint64(shards)).astype(np.int64)


def shard_of_rows(vocab: int, shards: int, how: str, block_rows: int | None = None) -> np.ndarray:
    """Shard index of every row: contiguous blocks (as torch.chunk), a fixed
    multiplicative hash of the row id (deterministic, spreads neighbours apart), or
    partitions of `block_rows` consecutive rows dealt out in turn (BytePS cuts a tensor
    into fixed-size partitions and spreads them over the servers)."""
    return shard_of_row_ids(np.arange(vocab), vocab, shards, how, block_rows)


def _rows_below(x: np.ndarray, vocab: int, shards: int, how: str, block_rows: int | None) -> np.ndarray:
    """Rows of each shard among rows [0, x), for every x: shape (len(x), shards)."""
    x = np.asarray(x, dtype=np.int64)[:, None]
    j = np.arange(shards, dtype=np.int64)[None, :]
    if how == "contiguous":
        b = _block_bounds(vocab, shards)
        return np.clip(x - b[:-1][None, :], 0, np.diff(b)[None, :])
    block = int(block_rows)
    cycle = block * shards
    return (x // cycle) * block + np.clip(x % cycle - j * block, 0, block)


def _run_rows_per_shard(starts: np.ndarray, counts: np.ndarray, vocab: int, shards: int,
                        how: str, block_rows: int | None) -> np.ndarray:
    """Rows of each run on each shard, shape (runs, shards): exact for contiguous blocks
    and partitions, even for hashing (it scatters consecutive rows)."""
    if how == "hashed":
        return np.repeat(counts[:, None] / shards, shards, axis=1)
    return (_rows_below(starts + counts, vocab, shards, how, block_rows)
            - _rows_below(starts, vocab, shards, how, block_rows)).astype(np.float64)


def rows_per_shard(vocab: int, shards: int, how: str, block_rows: int | None = None) -> np.ndarray:
    """Rows of a `vocab`-row table each shard holds: exact for contiguous blocks and
    partitions (BytePS deals a tensor's partitions from the first server on), even for
    hashing (the optimistic bound it already is for the load)."""
    _check(how, block_rows)
    return _run_rows_per_shard(np.array([0], dtype=np.int64), np.array([vocab], dtype=np.int64),
                               vocab, shards, how, block_rows)[0]


def shard_sums(weights: np.ndarray, shards: int, how: str, block_rows: int | None = None,
               counts: np.ndarray | None = None) -> np.ndarray:
    """The total of `weights` (per row: reads, or touched rows) each shard holds. With
    `counts`, weights are per row of each run of `counts` rows."""
    w = np.asarray(weights, dtype=np.float64)
    if counts is None:
        out = np.bincount(shard_of_rows(w.size, shards, how, block_rows), weights=w, minlength=shards)
    else:
        _check(how, block_rows)
        counts = np.asarray(counts, dtype=np.int64)
        vocab, starts, single = int(counts.sum()), starts_of(counts), counts == 1
        # one-row runs (the exact head) placed row by row; longer runs counted per shard
        out = np.bincount(shard_of_row_ids(starts[single], vocab, shards, how, block_rows),
                          weights=w[single], minlength=shards)
        multi = ~single
        if multi.any():
            out = out + w[multi] @ _run_rows_per_shard(starts[multi], counts[multi], vocab,
                                                       shards, how, block_rows)
    return out


def shard_shares(weights: np.ndarray, shards: int, how: str, block_rows: int | None = None,
                 counts: np.ndarray | None = None) -> np.ndarray:
    """Fraction of the total `weights` each shard holds (shard_sums, normalised)."""
    out = shard_sums(weights, shards, how, block_rows, counts)
    return out / out.sum()
