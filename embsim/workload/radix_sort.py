"""CUB's DeviceRadixSort::SortPairs as the kernels it launches: what a framework's sort of
ids costs (TensorFlow's GPU Unique sorts twice; embsim.workload.tf_dedup).

Read from cub/device/dispatch/dispatch_radix_sort.cuh at CUB 1.15.0 (NVIDIA/cub tag
1.15.0, the CUB of CUDA 11.6), DispatchRadixSort::Invoke and its SM80 policy (Policy800):
- at most SingleTilePolicy's tile (256 threads x 19 items = 4,864 items): one kernel
  sorts every bit in shared memory;
- otherwise, keys of 4 bytes or more (ONESWEEP = sizeof(KeyT) >= 4 from Policy600 on):
  InvokeOnesweep: two memsets (pass counters, bins), one histogram kernel over the keys
  for every pass at once, one exclusive-sum kernel, then per pass of 8 bits
  (ONESWEEP_RADIX_BITS) a memset of the look-back counters and one onesweep kernel that
  reads every key and value and writes them to their place;
- otherwise (1- and 2-byte keys): InvokePasses, per pass of PRIMARY_RADIX_BITS (7, or 5
  for 1-byte keys; the last pass may be one bit narrower) an upsweep kernel (reads the
  keys), a spine scan and a downsweep kernel (reads and writes keys and values).
Every kernel moves what it reads and writes through HBM; the launches are CUB's own
(library-internal: a CUDA launch each on the host, no framework dispatch).
"""

from __future__ import annotations

import math

from .kernels import Kernel, stream

SINGLE_TILE_ITEMS = 256 * 19      # Policy800 SingleTilePolicy: BLOCK_THREADS x ITEMS_PER_THREAD
ONESWEEP_RADIX_BITS = 8
ONESWEEP_MIN_KEY_BYTES = 4        # ONESWEEP = sizeof(KeyT) >= sizeof(uint32_t)
RADIX_DIGITS = 1 << ONESWEEP_RADIX_BITS
OFFSET_BYTES = 4                  # OffsetT: int for inputs under 2^31 items


def radix_sort_kernels(name: str, items: float, key_bytes: int, value_bytes: int,
                       key_bits: int | None = None) -> list[Kernel]:
    """The kernels of one SortPairs over `items` (key, value) pairs, sorting the low
    `key_bits` bits (default: every bit of the key, CUB's end_bit = 8 x sizeof(KeyT)).
    Every kernel is a library launch (ops=0): the framework op that calls the sort pays
    the dispatch."""
    bits = 8 * key_bytes if key_bits is None else int(key_bits)
    n = float(items)
    if n <= 0 or bits <= 0:
        return []
    pair = key_bytes + value_bytes
    if n <= SINGLE_TILE_ITEMS:
        return [stream(f"{name}.single_tile", 2 * n * pair, ops=0)]
    if key_bytes >= ONESWEEP_MIN_KEY_BYTES:
        passes = math.ceil(bits / ONESWEEP_RADIX_BITS)
        bins = passes * RADIX_DIGITS * OFFSET_BYTES
        out = [stream(f"{name}.memset", OFFSET_BYTES * passes, count=2, ops=0),
               stream(f"{name}.histogram", n * key_bytes + bins, ops=0),
               stream(f"{name}.exclusive_sum", 2 * bins, ops=0)]
        for p in range(passes):
            out += [stream(f"{name}.lookback_memset.{p}", RADIX_DIGITS * OFFSET_BYTES
                           * math.ceil(n / (384 * 21)), ops=0),          # OnesweepPolicy tile
                    stream(f"{name}.onesweep.{p}", 2 * n * pair, ops=0)]
        return out
    primary = 7 if key_bytes > 1 else 5
    passes = math.ceil(bits / primary)
    out = []
    for p in range(passes):
        out += [stream(f"{name}.upsweep.{p}", n * key_bytes, ops=0),
                stream(f"{name}.scan.{p}", 2 * RADIX_DIGITS * OFFSET_BYTES, ops=0),
                stream(f"{name}.downsweep.{p}", 2 * n * pair, ops=0)]
    return out
