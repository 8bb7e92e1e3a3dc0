"""A large table's rows in runs of (nearly) equal probability, so that token statistics
cost memory and time in the runs, not in the rows.

Industrial embedding tables hold 1e8-1e10 rows; one float per row is 0.8-80 GB per array.
Under Zipf's law p_v ∝ (v+1)^-s the probabilities of neighbouring cold rows differ by a
factor (1 + 1/v)^s, so past the head the rows can share a value per run without changing a
sum such as E[unique] = Σ 1 - (1 - p_v)^T by more than the run's spread allows:

* the first `head` rows (the hot ones, where neighbours differ most) keep one entry each;
* the rest are cut into geometric runs [a, a·(1 + RUN_SPREAD)), each holding its rows'
  mean probability (the run's exact mass over its row count).

Every per-row quantity then comes as (values per run, rows per run); a sum over rows is
Σ counts · values. Within a run the values differ by at most a factor (1 + RUN_SPREAD)^s,
so a concave per-row function (1 - exp(-T p)) is off by second order in that spread:
below 1e-6 relative at RUN_SPREAD = 1e-3 (tests/workload/test_row_groups.py compares
with the exact per-row sums).
"""

from __future__ import annotations

import math

import numpy as np

# Tables up to this many rows keep one entry per row: every result on them is the exact
# per-row sum (and bit for bit what it was before runs existed).
EXACT_ROWS = 1 << 22
HEAD_ROWS = 1 << 20          # rows kept exact at the hot end of a grouped table
RUN_SPREAD = 1e-3            # a run's last row is at most this much further out than its first


def run_edges(vocab: int) -> np.ndarray:
    """Row boundaries of the runs: 0, 1, ..., HEAD_ROWS, then geometric up to vocab (int64)."""
    head, spread = HEAD_ROWS, RUN_SPREAD
    if vocab <= head:
        return np.arange(vocab + 1, dtype=np.int64)
    n_runs = int(np.ceil(np.log(vocab / head) / np.log1p(spread)))
    tail = np.unique(np.round(head * (1.0 + spread) ** np.arange(n_runs + 1)).astype(np.int64))
    tail = tail[(tail > head) & (tail < vocab)]
    return np.concatenate([np.arange(head + 1, dtype=np.int64), tail, [vocab]])


def zipf_runs(vocab: int, s: float) -> tuple[np.ndarray, np.ndarray | None]:
    """Per-row probability of Zipf(s) over `vocab` rows (row v ∝ (v+1)^-s), as (values,
    counts): one entry per row (counts None) up to EXACT_ROWS, runs beyond."""
    if vocab <= EXACT_ROWS:
        weights = np.arange(1, vocab + 1, dtype=np.float64) ** -s
        return weights / weights.sum(), None
    edges = run_edges(vocab)
    counts = np.diff(edges)
    head = np.arange(1, HEAD_ROWS + 1, dtype=np.float64) ** -s
    # a run [a, b) of rows holds weights (a+1)^-s .. b^-s: its mass by the midpoint rule,
    # the integral of x^-s from a + 1/2 to b + 1/2 (relative error ~ s(s+1)/(24 a^2))
    a = edges[HEAD_ROWS:-1].astype(np.float64) + 0.5
    b = edges[HEAD_ROWS + 1:].astype(np.float64) + 0.5
    if abs(s - 1.0) < 1e-12:
        tail_mass = np.log(b / a)
    else:
        tail_mass = (b ** (1.0 - s) - a ** (1.0 - s)) / (1.0 - s)
    total = head.sum() + tail_mass.sum()
    values = np.concatenate([head, tail_mass / counts[HEAD_ROWS:]]) / total
    return values, counts


def log_uniform_runs(vocab: int, counts: np.ndarray | None) -> np.ndarray:
    """TensorFlow's log-uniform candidate distribution P(v) = log((v+2)/(v+1)) / log(V+1),
    per row of each run: a run [a, b) holds log((b+1)/(a+1)) / log(V+1) exactly (the sum
    telescopes), shared evenly by its rows."""
    if counts is None:
        v = np.arange(vocab, dtype=np.float64)
        return np.log1p(1.0 / (v + 1.0)) / math.log(vocab + 1.0)
    edges = np.concatenate([[0], np.cumsum(counts)]).astype(np.float64)
    mass = np.log((edges[1:] + 1.0) / (edges[:-1] + 1.0)) / math.log(vocab + 1.0)
    return mass / counts


def total(values: np.ndarray, counts: np.ndarray | None) -> float:
    """Σ over rows of a per-row quantity held per run."""
    v = np.asarray(values, dtype=np.float64)
    return float(v.sum() if counts is None else np.dot(v, counts))


def starts_of(counts: np.ndarray) -> np.ndarray:
    """First row of each run."""
    return np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
