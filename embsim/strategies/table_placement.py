"""Whole tables placed on GPUs, as hybrid-parallel DLRM trainers place them.

NVIDIA DeepLearningExamples' PyTorch DLRM (dlrm/utils/distributed.py, get_device_mapping
and distribute_to_buckets) puts every embedding table whole on one GPU. Balancing the
largest per-GPU sum is NP-hard, and the tables should also be spread nearly evenly in
number, so it runs a greedy with a cap: tables largest first, each into the bucket with
the smallest sum so far, a bucket closed once it holds ceil(tables / GPUs) tables. It is
reproduced here over rows x dim (the table's parameters: DLE sorts by rows, and its tables
share one width, so the order is the same).

NVIDIA Merlin distributed-embeddings (TensorFlow 2) places differently
(distributed_embeddings/python/layers/dist_model_parallel.py, DistEmbeddingStrategy, the
same from its first commit c6b2e2f to 4cb42d4): a table with more than
column_slice_threshold elements is first cut along its width into N slices, N the smallest
power of two that brings a slice under the threshold, capped at the GPU count and the
width (maybe_slice_table_column); then "memory_balanced" sorts the slices and tables by
size and deals them in a snake, GPU i taking positions i and 2 GPUs - 1 - i of every 2 GPUs
(apply_stragety): even counts, not a size greedy.
"""

from __future__ import annotations

import math
from collections import deque
from typing import Sequence


def distribute_to_buckets(sizes: Sequence[float], buckets: int) -> list[list[int]]:
    """Indices of `sizes` per bucket: largest first into the currently smallest bucket,
    at most ceil(len(sizes) / buckets) per bucket. Closed buckets come first, in the
    order they filled, then the open ones from smallest sum; ties keep input order."""
    if buckets < 1:
        raise ValueError(f"buckets: must be >= 1, got {buckets}")
    cap = math.ceil(len(sizes) / buckets) if sizes else 1
    order = deque(sorted(range(len(sizes)), key=lambda i: sizes[i], reverse=True))
    open_buckets: list[list[int]] = [[] for _ in range(buckets)]
    closed: list[list[int]] = []
    total = lambda b: sum(sizes[i] for i in b)
    while order:
        bucket = open_buckets[0]
        bucket.append(order.popleft())
        if len(bucket) == cap:
            closed.append(open_buckets.pop(0))
        open_buckets.sort(key=total)      # stable: equal sums keep their order
    return closed + open_buckets


def owners(sizes: Sequence[float], gpus: int) -> list[int]:
    """The GPU each table lives on (bucket k on GPU k)."""
    owner = [0] * len(sizes)
    for gpu, bucket in enumerate(distribute_to_buckets(sizes, gpus)):
        for i in bucket:
            owner[i] = gpu
    return owner


def column_slices(elements: int, width: int, threshold: float | None, gpus: int) -> list[int]:
    """Merlin distributed-embeddings' column slicing of one table (maybe_slice_table_column):
    the widths of its slices, the first `width % N` one column wider; [width] when it stays
    whole (no threshold, or at most `threshold` elements)."""
    if threshold is None or elements <= threshold:
        return [width]
    n, size = 1, float(elements)
    while size > threshold:
        n, size = n * 2, size / 2
    n = min(n, gpus, width)
    base, extra = divmod(width, n)
    return [base + (1 if i < extra else 0) for i in range(n)]


def memory_balanced(sizes: Sequence[float], gpus: int) -> list[int]:
    """The GPU of each entry under Merlin distributed-embeddings' "memory_balanced": sorted
    by size, largest first (ties: the later entry first, as Python sorts the (size, index)
    pairs in reverse), GPU i takes sorted positions i, 2 G - 1 - i, 2 G + i, ..."""
    order = [i for _, i in sorted(zip(sizes, range(len(sizes))), reverse=True)]
    owner = [0] * len(sizes)
    for pos, i in enumerate(order):
        k = pos % (2 * gpus)
        owner[i] = k if k < gpus else 2 * gpus - 1 - k
    return owner
