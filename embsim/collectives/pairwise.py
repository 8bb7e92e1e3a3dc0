"""numpy's pairwise summation, evaluated on a row described by runs of equal values.

`np.sum` of a float64 row adds in a fixed tree (blocks of <= 128 elements, eight
interleaved accumulators inside a block, halves split at multiples of 8 above). A row of
the all-to-all matrix is a few runs of one value among zeros, so its sum can be
reproduced exactly without materialising the row: subtrees that hold no run sum to 0.0
and subtrees of one value repeat, so a memo on each subtree's shape makes a row cost
O(log n). The dense all-to-all-v path sums rows with numpy; this gives the same bits.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

BLOCK = 128      # numpy's PW_BLOCKSIZE
UNROLL = 8


def _block(values: list[float]) -> float:
    n = len(values)
    if n < UNROLL:
        res = 0.0
        for v in values:
            res += v
        return res
    r = values[:UNROLL]
    i = UNROLL
    while i < n - (n % UNROLL):
        for j in range(UNROLL):
            r[j] += values[i + j]
        i += UNROLL
    res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
    while i < n:
        res += values[i]
        i += 1
    return res


@lru_cache(maxsize=65536)
def _sum(n: int, runs: tuple[tuple[int, int, float], ...]) -> float:
    """Pairwise sum of a length-n row: value v on [lo, hi) for each run, 0 elsewhere."""
    if not runs:
        return 0.0
    if n <= BLOCK:
        values = [0.0] * n
        for lo, hi, v in runs:
            values[lo:hi] = [v] * (hi - lo)
        return _block(values)
    half = n // 2
    half -= half % UNROLL
    left = tuple((lo, min(hi, half), v) for lo, hi, v in runs if lo < half)
    right = tuple((max(lo, half) - half, hi - half, v) for lo, hi, v in runs if hi > half)
    return _sum(half, left) + _sum(n - half, right)


def row_sum(n: int, runs) -> float:
    """What np.sum gives for a float64 row of length n holding `runs` (lo, hi, value)
    and zeros elsewhere; runs must not overlap."""
    return _sum(int(n), tuple((int(lo), int(hi), float(v)) for lo, hi, v in runs if hi > lo and v != 0.0))


@lru_cache(maxsize=64)
def leaves(n: int) -> tuple[tuple[int, int], ...]:
    """(start, length) of the blocks numpy's pairwise sum splits a length-n row into."""
    if n <= BLOCK:
        return ((0, n),)
    half = n // 2
    half -= half % UNROLL
    return leaves(half) + tuple((s + half, m) for s, m in leaves(n - half))


def leaf_of(n: int, lo: int, hi: int) -> tuple[int, int] | None:
    """The block holding all of [lo, hi), or None if the range straddles two. A row whose
    nonzeros all lie in one block sums to that block's sum (every other subtree is 0.0)."""
    for start, length in leaves(n):
        if start <= lo and hi <= start + length:
            return start, length
        if start >= hi:
            break
    return None


# ------------------------------------------------------------------ vectorised forms
# Rows of an outer-product matrix: row i is zero except where its mask is on; values are
# value_of(s, L, rows) -> (rows, L). Either "outside": on outside [lo, hi) (a rank's
# bytes to other nodes), or "inside": on inside [lo, hi) except position excl (its bytes
# to the other GPUs of its node). Leaves are summed by numpy itself on the masked block,
# so the bits are numpy's; subtrees with no mask edge are pure (all on, or all off).

def rows_sum(n: int, lo, hi, excl, inside: bool, value_of, pure_sum) -> np.ndarray:
    """np.sum of every row, vectorised over rows. pure_sum(s, L, rows) gives the sum of
    the unmasked subtree [s, s + L) for those rows (outside mode only)."""
    lo, hi, excl = (np.asarray(x, dtype=np.int64) for x in (lo, hi, excl))

    def rec(s: int, L: int, rows: np.ndarray) -> np.ndarray:
        if L <= BLOCK:
            pos = s + np.arange(L)
            within = (pos >= lo[rows, None]) & (pos < hi[rows, None])
            on = (within & (pos != excl[rows, None])) if inside else ~within
            return np.where(on, value_of(s, L, rows), 0.0).sum(axis=1)
        half = L // 2
        half -= half % UNROLL
        out = np.zeros(rows.size)
        parts = []
        for a, m in ((s, half), (s + half, L - half)):
            touched = (lo[rows] < a + m) & (hi[rows] > a)
            part = np.zeros(rows.size)
            if touched.any():
                part[touched] = rec(a, m, rows[touched])
            if not inside and (~touched).any():
                part[~touched] = pure_sum(a, m, rows[~touched])
            parts.append(part)
        out = parts[0] + parts[1]
        return out

    rows = np.arange(lo.size)
    return rec(0, int(n), rows) if n > 0 else np.zeros(lo.size)


def seqsum_vec(values, count) -> np.ndarray:
    """values[k] added to 0.0 count[k] times one by one, exactly, in O(log count) steps:
    inside one binade of the running sum every addition adds the same rounded amount,
    so whole runs are taken at once and only the step that crosses a binade is done as a
    real floating-point addition. (A tie, v exactly half-way between two spacings, rounds
    to even: after one real step the sum is even and every later step adds rint(q).)"""
    v = np.array(values, dtype=np.float64).reshape(-1)
    left = np.broadcast_to(np.asarray(count, dtype=np.int64), v.shape).copy()
    acc = np.zeros(v.size)
    left[v <= 0] = 0
    first = left > 0                                  # 0.0 + v == v
    acc[first] = v[first]
    left[first] -= 1
    while True:
        i = np.flatnonzero(left > 0)
        if i.size == 0:
            return acc
        a, x, n = acc[i], v[i], left[i]
        _, e = np.frexp(a)                            # a in [2^(e-1), 2^e)
        u = np.ldexp(1.0, e - 53)                     # spacing of doubles there
        q = x / u                                     # exact: power-of-two scaling
        tie = (q - np.floor(q)) == 0.5
        if tie.any():                                 # one real step makes the sum even
            a[tie] = a[tie] + x[tie]
            n[tie] -= 1
            _, e2 = np.frexp(a)
            moved = e2 != e
        else:
            moved = np.zeros(a.size, dtype=bool)
        d = np.rint(q) * u                            # each later addition in this binade
        ok = (d > 0) & ~moved & (n > 0)
        top = np.ldexp(1.0, e)
        room = np.ceil((top - a) / np.where(d > 0, d, 1.0)) - 1    # additions staying below top
        steps = np.where(ok, np.minimum(np.maximum(room, 0), n), 0).astype(np.int64)
        a = a + steps.astype(np.float64) * d          # exact: multiples of u below top
        n = n - steps
        cross = ok & (n > 0)
        a[cross] = a[cross] + x[cross]                # the step into the next binade, for real
        n[cross] -= 1
        n[(d == 0) & ~moved] = 0                      # below half a spacing: never moves again
        acc[i], left[i] = a, n


def const_rows_sum(L: int, v: np.ndarray, memo: dict | None = None) -> np.ndarray:
    """np.sum of rows of length L that hold one value each (v[row] everywhere)."""
    memo = {} if memo is None else memo
    if L not in memo:
        if L <= BLOCK:
            memo[L] = np.broadcast_to(v[:, None], (v.size, L)).sum(axis=1)
        else:
            half = L // 2
            half -= half % UNROLL
            memo[L] = const_rows_sum(half, v, memo) + const_rows_sum(L - half, v, memo)
    return memo[L]
