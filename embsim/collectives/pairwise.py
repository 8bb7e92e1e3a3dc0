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
