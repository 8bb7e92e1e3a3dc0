"""CUB 1.15's DeviceRadixSort::SortPairs dispatch on SM80, kernel by kernel."""

import pytest

from embsim.workload.radix_sort import SINGLE_TILE_ITEMS, radix_sort_kernels


def names(kernels):
    return [k.name.split(".", 1)[1] for k in kernels]


def test_a_single_tile_sorts_every_bit_in_one_kernel():
    ks = radix_sort_kernels("s", SINGLE_TILE_ITEMS, 8, 4)
    assert names(ks) == ["single_tile"] and ks[0].nbytes == 2 * SINGLE_TILE_ITEMS * 12


def test_onesweep_for_64_bit_keys_is_eight_passes_of_eight_bits():
    n = 65536
    ks = radix_sort_kernels("s", n, 8, 4)
    passes = [k for k in ks if ".onesweep." in k.name]
    assert len(passes) == 8
    assert all(k.nbytes == 2 * n * 12 for k in passes)        # each pass reads and writes every pair
    assert names(ks)[:3] == ["memset", "histogram", "exclusive_sum"]
    assert sum(k.count for k in ks) == 2 + 1 + 1 + 2 * 8     # launches: memsets, histogram, sum, passes
    assert all(k.ops == 0 for k in ks)                        # library launches, no framework dispatch


@pytest.mark.parametrize("bits, passes", [(1, 1), (8, 1), (9, 2), (17, 3), (32, 4)])
def test_only_the_requested_low_bits_are_sorted(bits, passes):
    ks = radix_sort_kernels("s", 1e5, 4, 4, key_bits=bits)
    assert sum(".onesweep." in k.name for k in ks) == passes


def test_short_keys_take_the_upsweep_scan_downsweep_passes():
    ks = radix_sort_kernels("s", 1e5, 2, 4)                   # 16 bits in passes of 7
    assert names(ks) == [f"{kind}.{p}" for p in range(3) for kind in ("upsweep", "scan", "downsweep")]


def test_nothing_to_sort_launches_nothing():
    assert radix_sort_kernels("s", 0, 8, 4) == [] and radix_sort_kernels("s", 100, 4, 4, key_bits=0) == []
