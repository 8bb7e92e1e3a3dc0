"""DeepLearningExamples' greedy placement of whole tables on GPUs."""

import pytest

from embsim.strategies.table_placement import distribute_to_buckets, owners


def test_greedy_by_hand():
    # largest first into the smallest bucket; a bucket closes at ceil(5 / 2) = 3 tables;
    # equal sums keep their order (Python's stable sort, as DLE's buckets.sort)
    # 0 -> A; 1 -> B; 2 -> B (4 < 5); 3 -> A (5 < 7); A and B tie at 7, A first: 4 -> A, closed
    assert distribute_to_buckets([5, 4, 3, 2, 1], 2) == [[0, 3, 4], [1, 2]]


@pytest.mark.parametrize("tables,gpus", [(26, 8), (3, 8), (8, 8), (100, 16), (1, 1)])
def test_every_table_placed_once_within_the_cap(tables, gpus):
    sizes = [((7 * i) % 13 + 1) * 10 ** (i % 4) for i in range(tables)]
    buckets = distribute_to_buckets(sizes, gpus)
    assert len(buckets) == gpus
    assert sorted(i for b in buckets for i in b) == list(range(tables))
    cap = -(-tables // gpus)
    assert max(len(b) for b in buckets) <= cap
    own = owners(sizes, gpus)
    assert all(i in buckets[own[i]] for i in range(tables))


def test_the_largest_tables_go_to_different_gpus():
    sizes = [100, 90, 80, 1, 1, 1, 1, 1]
    own = owners(sizes, 4)
    assert len({own[0], own[1], own[2]}) == 3


def test_merlin_column_slices_by_hand():
    from embsim.strategies.table_placement import column_slices
    t = 1280 * 1048576                      # the README's --column_slice_threshold
    assert column_slices(25_000_000 * 16, 16, t, 8) == [16]             # under it: whole
    assert column_slices(50_000_000 * 32, 32, t, 8) == [16, 16]         # 1.6e9: two halves
    assert column_slices(400_000_000 * 256, 256, t, 128) == [2] * 128    # 102.4e9: 128 slices
    assert column_slices(400_000_000 * 256, 256, t, 32) == [8] * 32      # capped at the GPUs
    assert column_slices(10 ** 12, 3, 1, 8) == [1, 1, 1]                # and at the width
    assert column_slices(100 * 10, 10, 1, 4) == [3, 3, 2, 2]            # remainder first
    assert column_slices(10 ** 9, 64, None, 8) == [64]


def test_merlin_memory_balanced_deals_a_snake():
    from embsim.strategies.table_placement import memory_balanced
    # sorted: 0 (9), 1 (8), ..., 7 (2): GPUs 0 1 1 0 0 1 1 0
    assert memory_balanced([9, 8, 7, 6, 5, 4, 3, 2], 2) == [0, 1, 1, 0, 0, 1, 1, 0]
    own = memory_balanced([float(i % 7) for i in range(100)], 8)
    counts = [own.count(g) for g in range(8)]
    assert max(counts) - min(counts) <= 1
