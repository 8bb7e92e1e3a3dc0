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
