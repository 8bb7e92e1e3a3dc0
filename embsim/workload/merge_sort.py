"""Thrust's comparison sort (a merge sort) as the kernels it launches: what
`thrust::sort_by_key` costs when its comparator is not thrust::less / thrust::greater
(PyTorch's sparse coalesce sorts with its own LTOp functor; embsim.workload.torch_coalesce).

Read from thrust/system/cuda/detail/sort.h at thrust 1.15.0 (NVIDIA/thrust tag 1.15.0, the
Thrust of CUDA 11.6):
- __smart_sort::can_use_primitive_sort: radix sort only for an arithmetic key compared
  with thrust::less<Key> or thrust::greater<Key>; any other comparator takes
  __merge_sort::merge_sort;
- Tuning<sm60, T> (the newest tuning, so every GPU from Pascal on): 256 threads, items per
  thread min(17, max(1, 17 x 4 / sizeof(key))), so a tile of 2,048 pairs for 8-byte keys;
- doit_step: one block-sort kernel sorts each tile (reads and writes every key and item),
  then log2 (rounded up) of the tile count merge passes, each a partition kernel (one
  merge-path search per tile boundary) and a merge kernel (reads and writes every key and
  item, ping-ponging between the input and a temporary buffer);
- merge_sort then calls cuda_cub::synchronize(policy): cudaStreamSynchronize, so the host
  waits for the sort before it launches anything else.
Every kernel moves what it reads and writes through HBM; the launches are Thrust's own
(library launches: ops=0, the framework op that calls the sort pays its dispatch).
"""

from __future__ import annotations

import math

from .kernels import Kernel, stream

BLOCK_THREADS = 256               # Tuning<sm60,T>
NOMINAL_4B_ITEMS_PER_THREAD = 17
OFFSET_BYTES = 8                  # Size: the iterators' difference_type (ptrdiff_t)


def items_per_tile(key_bytes: int) -> int:
    """Pairs one block sorts and one merge tile covers (Tuning<sm60, key_type>)."""
    per_thread = min(NOMINAL_4B_ITEMS_PER_THREAD,
                     max(1, NOMINAL_4B_ITEMS_PER_THREAD * 4 // key_bytes))
    return BLOCK_THREADS * per_thread


def merge_passes(items: float, key_bytes: int) -> int:
    """Merge passes after the block sort: thrust::detail::log2_ri (log2 rounded up) of
    the tile count."""
    tiles = math.ceil(float(items) / items_per_tile(key_bytes))
    return math.ceil(math.log2(tiles)) if tiles > 1 else 0


def merge_sort_kernels(name: str, items: float, key_bytes: int, value_bytes: int) -> list[Kernel]:
    """The kernels of one sort_by_key over `items` (key, value) pairs by merge sort. The
    caller accounts for the stream synchronisation that follows them."""
    n = float(items)
    if n <= 0:
        return []
    pair = key_bytes + value_bytes
    tile = items_per_tile(key_bytes)
    tiles = math.ceil(n / tile)
    out = [stream(f"{name}.block_sort", 2 * n * pair, ops=0)]
    for p in range(merge_passes(n, key_bytes)):
        # a binary search of the two lists being merged per tile boundary (a few scattered
        # key reads each), one offset written per boundary
        span = tile * (2 << p)
        search = (tiles + 1) * (OFFSET_BYTES + key_bytes * math.ceil(math.log2(span)))
        out += [stream(f"{name}.partition.{p}", search, ops=0),
                stream(f"{name}.merge.{p}", 2 * n * pair, ops=0)]
    return out
