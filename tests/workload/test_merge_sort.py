"""Thrust 1.15's merge sort (sort_by_key with a custom comparator), kernel by kernel."""

import pytest

from embsim.workload.merge_sort import items_per_tile, merge_passes, merge_sort_kernels


def test_tiles_follow_the_sm60_tuning_by_key_size():
    assert items_per_tile(8) == 256 * 8          # 17 x 4 / 8 = 8 items a thread
    assert items_per_tile(4) == 256 * 17
    assert items_per_tile(1) == 256 * 17         # capped at the nominal 17


@pytest.mark.parametrize("items, passes", [(1, 0), (2048, 0), (2049, 1), (4096, 1), (4097, 2),
                                           (1 << 20, 9)])
def test_merge_passes_are_log2_of_the_tiles_rounded_up(items, passes):
    assert merge_passes(items, 8) == passes


def test_every_pass_reads_and_writes_every_pair_once():
    n = 1 << 20
    ks = merge_sort_kernels("s", n, 8, 8)
    names = [k.name.split(".", 1)[1] for k in ks]
    assert names[0] == "block_sort"
    assert names[1:] == [f"{kind}.{p}" for p in range(9) for kind in ("partition", "merge")]
    moving = [k for k in ks if k.name.endswith("block_sort") or ".merge." in k.name]
    assert all(k.nbytes == 2 * n * 16 for k in moving)
    searches = sum(k.nbytes for k in ks if ".partition." in k.name)
    assert searches < 0.01 * sum(k.nbytes for k in moving)   # the merge-path searches are small
    assert all(k.ops == 0 for k in ks)                         # library launches


def test_nothing_to_sort_launches_nothing():
    assert merge_sort_kernels("s", 0, 8, 8) == []
