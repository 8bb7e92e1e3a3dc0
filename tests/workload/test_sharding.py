"""Sharding rows over GPUs or servers, per row and per run of rows."""

import numpy as np
import pytest

from embsim.errors import InputError
from embsim.workload.row_groups import starts_of
from embsim.workload.sharding import shard_of_row_ids, shard_of_rows, shard_shares

COUNTS = np.array([1, 1, 1, 5, 7, 20, 33, 64, 100], dtype=np.int64)   # 232 rows in 9 runs


def expanded(weights, counts):
    return np.repeat(weights, counts)


@pytest.mark.parametrize("how,block", [("contiguous", None), ("partitions", 3), ("partitions", 50)])
@pytest.mark.parametrize("shards", [1, 3, 7, 16])
def test_runs_are_split_exactly_for_blocks_and_partitions(how, block, shards):
    w = np.random.default_rng(shards).random(COUNTS.size)
    runs = shard_shares(w, shards, how, block_rows=block, counts=COUNTS)
    rows = shard_shares(expanded(w, COUNTS), shards, how, block_rows=block)
    assert np.allclose(runs, rows, rtol=1e-12, atol=1e-15)


def test_hashed_runs_spread_evenly_and_head_rows_exactly():
    counts = np.array([1] * 50 + [5000, 20000], dtype=np.int64)
    w = np.concatenate([np.linspace(1, 0.1, 50), [1e-4, 1e-5]])
    runs = shard_shares(w, 8, "hashed", counts=counts)
    rows = shard_shares(expanded(w, counts), 8, "hashed")
    assert runs.sum() == pytest.approx(1.0)
    assert np.allclose(runs, rows, atol=2e-3)    # the multiplicative hash spreads long runs evenly


def test_shard_of_row_ids_agrees_with_every_row():
    for how, block in (("contiguous", None), ("hashed", None), ("partitions", 4)):
        every = shard_of_rows(1000, 7, how, block_rows=block)
        ids = np.array([0, 5, 142, 143, 999])
        assert np.array_equal(shard_of_row_ids(ids, 1000, 7, how, block_rows=block), every[ids])


def test_starts_of_runs():
    assert starts_of(COUNTS).tolist() == [0, 1, 2, 3, 8, 15, 35, 68, 132]


def test_bad_sharding_is_refused():
    with pytest.raises(InputError, match="sharding 'random'"):
        shard_shares(np.ones(3), 2, "random", counts=np.array([1, 1, 1]))
    with pytest.raises(InputError, match="partition size"):
        shard_shares(np.ones(3), 2, "partitions", counts=np.array([1, 1, 1]))


def test_rows_per_shard_places_a_whole_table():
    """The rows each server holds (ps host memory): partitions dealt from the first server on,
    contiguous blocks as torch.chunk cuts them, hashing even."""
    import numpy as np
    from embsim.workload.sharding import rows_per_shard
    assert list(rows_per_shard(10, 3, "contiguous")) == [4, 3, 3]
    assert list(rows_per_shard(10, 3, "partitions", 2)) == [4, 4, 2]
    assert list(rows_per_shard(3_000_000, 4, "partitions", 1_000_000)) == [1e6, 1e6, 1e6, 0]
    assert np.allclose(rows_per_shard(10, 4, "hashed"), 2.5)
    assert rows_per_shard(1_000_003, 7, "partitions", 1000).sum() == 1_000_003
