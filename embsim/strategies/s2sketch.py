"""S2 Reducer's sizes and what its sketch loses, as pure functions.

The authors' code (Sparse_Sketch_Reducer, `Sketch_Embed_Reducer`) compresses an n x m
embedding gradient into a count sketch of ONE row of c = int(n * m * sparsity * rank)
scalar buckets (each element hashed to a bucket with a random sign) plus one fp32 per
table row (the "bitmap"), and sum-AllReduces both. Their GNMT configuration: sparsity
0.02, rank 0.25 (c = 0.5 % of the table); their LSTM (wikitext-2): 0.01, 0.001.

Decoding reads each nonzero element back from its bucket: exact only when no other
nonzero element of the summed gradient hashed there. With E nonzero elements (union rows
x dim) in c buckets, an element shares its bucket with Poisson(E / c) others.
"""

from __future__ import annotations

import math

SKETCH_BYTES = 4   # fp32 buckets
BITMAP_BYTES = 4   # one fp32 per row: their bitmap is a float tensor, sum-AllReduced

# the authors' GNMT configuration (compression_config.py)
GNMT_SPARSITY = 0.02
GNMT_RANK = 0.25


def published_buckets(vocab: int, dim: int, sparsity: float, rank: float) -> int:
    """c = int(n * m * sparsity * rank), at least one bucket."""
    return max(1, int(vocab * dim * sparsity * rank))


def published_bytes(vocab: int, dim: int, sparsity: float, rank: float) -> tuple[int, int]:
    """(sketch AllReduce bytes, bitmap AllReduce bytes) per step and table."""
    return published_buckets(vocab, dim, sparsity, rank) * SKETCH_BYTES, vocab * BITMAP_BYTES


def collision_free_fraction(elements: float, buckets: int) -> float:
    """Fraction of nonzero elements alone in their bucket (decoded exactly)."""
    return math.exp(-max(elements - 1.0, 0.0) / buckets)


def colliders_per_element(elements: float, buckets: int) -> float:
    """Other nonzero elements summed into an element's estimate, on average: the decoded
    value carries their sum (random signs: noise of that many gradients' magnitude)."""
    return max(elements - 1.0, 0.0) / buckets


def median_exact_fraction(width_factor: float, depth: int) -> float:
    """embsim's former sizing (depth rows of D-vector buckets, width = width_factor x the
    union): probability a row's median estimate is collision-free, i.e. more than half of
    its buckets hold no other row (Poisson load 1/width_factor per bucket)."""
    clean = math.exp(-1.0 / width_factor)
    need = depth // 2 + 1
    return sum(math.comb(depth, k) * clean ** k * (1 - clean) ** (depth - k) for k in range(need, depth + 1))
