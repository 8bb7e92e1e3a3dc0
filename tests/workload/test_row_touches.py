"""Rows a step touches: TensorFlow's unique candidate sampler against brute force, the
Zen density it reproduces, and how row sharding spreads the load."""

import numpy as np
import pytest

from embsim.errors import InputError
from embsim.workload import TokenStats, load_model
from embsim.workload.tokens import (RowTouches, log_uniform_probs, shard_of_rows, shard_shares,
                                    unique_candidate_inclusion)


def tf_unique_sampler(rng, vocab, k):
    """What log_uniform_candidate_sampler(unique=True) does: draw until k distinct rows."""
    cdf = np.cumsum(log_uniform_probs(vocab))
    seen = set()
    while len(seen) < k:
        seen.update(np.minimum(np.searchsorted(cdf, rng.random(k - len(seen))), vocab - 1).tolist())
    return np.fromiter(seen, dtype=np.int64)


def test_log_uniform_is_a_distribution():
    p = log_uniform_probs(1000)
    assert p.sum() == pytest.approx(1.0, rel=1e-12)
    assert np.all(np.diff(p) < 0)


def test_unique_candidates_match_the_tensorflow_sampler():
    vocab, k = 5000, 400
    pi = unique_candidate_inclusion(vocab, k)
    assert pi.sum() == pytest.approx(k, rel=1e-6)        # exactly k distinct rows
    rng = np.random.default_rng(0)
    hits = np.zeros(vocab)
    trials = 300
    for _ in range(trials):
        hits[tf_unique_sampler(rng, vocab, k)] += 1
    freq = hits / trials
    # the hottest rows are always in, a tail row rarely; compare by blocks of rows
    for block in (slice(0, 10), slice(10, 100), slice(100, 1000), slice(1000, 5000)):
        assert freq[block].sum() == pytest.approx(pi[block].sum(), rel=0.05)


def test_rows_touched_by_a_step_match_brute_force():
    vocab, tokens, k = 5000, 600, 300
    stats = TokenStats.zipf(vocab, 1.05)
    touches = RowTouches(stats, tokens=tokens, candidates=k)
    rng = np.random.default_rng(1)
    sizes = [np.union1d(stats.sample(rng, (tokens,)), tf_unique_sampler(rng, vocab, k)).size
             for _ in range(200)]
    assert np.mean(sizes) == pytest.approx(touches.unique(), rel=0.02)
    # tokens alone: the plain i.i.d. estimate
    assert RowTouches(stats, tokens).unique() == pytest.approx(stats.unique(tokens), rel=1e-12)


def test_lstm_lm1b_density_is_zens():
    # Zen (OSDI'25) measured 1.13 % gradient density per GPU batch; 8192 distinct candidates
    # plus the batch's 2560 tokens give it (candidates drawn with repeats gave 0.71 %)
    m = load_model("lstm-lm1b")
    t = m.table("word")
    assert t.sampled == 8192
    touches = RowTouches(TokenStats.zipf(t.vocab, 1.05), m.batch * t.lookups_per_sample, t.sampled)
    assert 0.0110 < touches.unique() / t.vocab < 0.0118
    # every candidate is a distinct row: at least k rows, at most k + the tokens
    assert t.sampled < touches.unique() < t.sampled + m.batch * t.lookups_per_sample


def test_union_and_next_overlap_from_inclusion():
    stats = TokenStats.zipf(100, 1.0)
    touches = RowTouches(stats, tokens=5)
    q = touches.inclusion
    assert touches.union(3) == pytest.approx(np.sum(1 - (1 - q) ** 3))
    u = 1 - (1 - q) ** 3
    assert touches.next_overlap(3) == pytest.approx(np.sum(u * u))
    assert 0 < touches.read_fraction_next(3) < 1


def test_shards_contiguous_and_hashed():
    assert shard_of_rows(10, 3, "contiguous").tolist() == [0, 0, 0, 0, 1, 1, 1, 2, 2, 2]
    hashed = shard_of_rows(100_000, 16, "hashed")
    assert np.bincount(hashed, minlength=16).min() > 0.9 * 100_000 / 16   # even row counts
    assert not np.all(np.diff(hashed[:32]) == 0)                           # neighbours spread
    with pytest.raises(InputError):
        shard_of_rows(10, 2, "random")


def test_hashing_a_zipf_vocabulary_is_lumpy_but_far_better_than_blocks():
    probs = TokenStats.zipf(793471, 1.05).probs
    blocks, hashed = shard_shares(probs, 16, "contiguous"), shard_shares(probs, 16, "hashed")
    assert blocks.sum() == pytest.approx(1) and hashed.sum() == pytest.approx(1)
    # the first block holds the hottest rows: most of the reads
    assert blocks[0] == blocks.max() and blocks.max() * 16 > 8
    # hashing spreads them, but row 0 alone (~7 % of reads) stays on one shard
    assert 1.5 < hashed.max() * 16 < 3.0 < blocks.max() * 16
    assert hashed.max() >= probs[0]


def test_partitions_dealt_in_turn_like_byteps():
    assert shard_of_rows(10, 3, "partitions", block_rows=2).tolist() == [0, 0, 1, 1, 2, 2, 0, 0, 1, 1]
    with pytest.raises(InputError, match="partition"):
        shard_of_rows(10, 3, "partitions")
    # lstm-lm1b's touched rows over 16 servers: the first 2000-row partition (the hottest
    # words, touched by every step) loads its server ~3x the mean; hashing rows evens it
    m = load_model("lstm-lm1b")
    t = m.table("word")
    q = RowTouches(TokenStats.zipf(t.vocab, 1.05), m.batch * t.lookups_per_sample, t.sampled).inclusion
    parts = shard_shares(q, 16, "partitions", block_rows=1_024_000 // 512)
    assert 2.5 < parts.max() * 16 < 4.0
    assert shard_shares(q, 16, "hashed").max() * 16 < 1.05
