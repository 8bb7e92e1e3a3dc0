"""Whole tables placed on GPUs, as hybrid-parallel DLRM trainers place them.

NVIDIA DeepLearningExamples' PyTorch DLRM (dlrm/utils/distributed.py, get_device_mapping
and distribute_to_buckets) puts every embedding table whole on one GPU. Balancing the
largest per-GPU sum is NP-hard, and the tables should also be spread nearly evenly in
number, so it runs a greedy with a cap: tables largest first, each into the bucket with
the smallest sum so far, a bucket closed once it holds ceil(tables / GPUs) tables. Merlin
Distributed Embeddings' "memory_balanced" strategy (the TensorFlow2 DLRM's) is the same
greedy over table bytes. Both are reproduced here over rows x dim (the table's parameters:
DLE sorts by rows, and its tables share one width, so the order is the same).
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
