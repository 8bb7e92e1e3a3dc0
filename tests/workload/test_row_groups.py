"""Runs of rows stand in for a large table's cold rows: sums over runs match the exact
per-row sums, and a run's rows are where the exact table has them."""

import numpy as np
import pytest

from embsim.workload import row_groups
from embsim.workload.row_groups import log_uniform_runs, run_edges, starts_of, total, zipf_runs
from embsim.workload.tokens import RowTouches, TokenStats, log_uniform_probs


@pytest.fixture
def small_runs(monkeypatch):
    """Runs from row 200 on, for tables of a few thousand rows (exact sums stay cheap)."""
    monkeypatch.setattr(row_groups, "EXACT_ROWS", 1000)
    monkeypatch.setattr(row_groups, "HEAD_ROWS", 200)
    monkeypatch.setattr(row_groups, "RUN_SPREAD", 0.05)


def expand(values, counts):
    return np.repeat(values, counts)


def exact_zipf(vocab, s):
    w = np.arange(1, vocab + 1, dtype=np.float64) ** -s
    return w / w.sum()


def test_small_tables_stay_exact():
    probs, counts = zipf_runs(5000, 1.05)
    assert counts is None
    assert np.array_equal(probs, exact_zipf(5000, 1.05))


def test_run_edges_cover_the_table_with_bounded_spread(small_runs):
    edges = run_edges(100_000)
    assert edges[0] == 0 and edges[-1] == 100_000
    assert np.all(np.diff(edges) >= 1)
    assert np.array_equal(edges[:201], np.arange(201))           # the head, row by row
    tail = edges[200:]
    assert np.all(np.diff(tail)[:-1] <= 0.05 * tail[:-2] + 1)     # each run within the spread


@pytest.mark.parametrize("s", [0.8, 1.0, 1.05, 1.3])
def test_zipf_runs_match_exact_sums(small_runs, s):
    vocab = 50_000
    probs, counts = zipf_runs(vocab, s)
    assert counts is not None and counts.sum() == vocab and len(counts) < vocab / 20
    assert total(probs, counts) == pytest.approx(1.0, rel=1e-12)
    exact = TokenStats(vocab=vocab, s=s, corpus=None, probs=exact_zipf(vocab, s))
    runs = TokenStats(vocab=vocab, s=s, corpus=None, probs=probs, counts=counts)
    for tokens in (10, 1e3, 1e5, 1e7):
        # runs 5 % wide here: second order in the spread (the default 0.1 % is ~1e-8)
        assert runs.unique(tokens) == pytest.approx(exact.unique(tokens), rel=2e-4)
        assert runs.overlap(tokens, 2 * tokens) == pytest.approx(exact.overlap(tokens, 2 * tokens), rel=5e-4)


def test_default_runs_are_within_1e_7_of_exact():
    vocab = row_groups.EXACT_ROWS + 500_000
    probs, counts = zipf_runs(vocab, 1.05)
    exact = TokenStats(vocab=vocab, s=1.05, corpus=None, probs=exact_zipf(vocab, 1.05))
    runs = TokenStats(vocab=vocab, s=1.05, corpus=None, probs=probs, counts=counts)
    for tokens in (1e3, 65536.0, 1e6, 1e8):
        assert runs.unique(tokens) == pytest.approx(exact.unique(tokens), rel=1e-7)


def test_log_uniform_runs_hold_each_runs_exact_mass(small_runs):
    vocab = 30_000
    counts = np.diff(run_edges(vocab))
    per_row = log_uniform_runs(vocab, counts)
    exact = log_uniform_probs(vocab)
    mass = np.add.reduceat(exact, starts_of(counts))
    assert np.allclose(per_row * counts, mass, rtol=1e-12, atol=0)
    assert total(per_row, counts) == pytest.approx(1.0, rel=1e-12)


def test_row_touches_in_runs_match_exact(small_runs):
    vocab = 40_000
    probs, counts = zipf_runs(vocab, 1.05)
    runs = RowTouches(TokenStats(vocab=vocab, s=1.05, corpus=None, probs=probs, counts=counts),
                      tokens=2000.0, candidates=500)
    exact = RowTouches(TokenStats(vocab=vocab, s=1.05, corpus=None, probs=expand(probs, counts)),
                       tokens=2000.0, candidates=500)
    # the same per-row token probabilities expanded; the exact side's candidates are per
    # row, the runs' per run: second order in the 5 % spread
    assert runs.union(8) == pytest.approx(exact.union(8), rel=2e-3)
    assert runs.unique() == pytest.approx(exact.unique(), rel=2e-3)
    assert runs.next_overlap(4) == pytest.approx(exact.next_overlap(4), rel=2e-3)
    assert runs.read_fraction_next(4) == pytest.approx(exact.read_fraction_next(4), rel=2e-3)
    assert exact.inclusion.size == vocab and runs.inclusion.size == counts.size


def test_sampling_a_table_in_runs_stays_in_range_and_matches_the_expectation(small_runs):
    vocab = 1_000_000
    probs, counts = zipf_runs(vocab, 1.05)
    stats = TokenStats(vocab=vocab, s=1.05, corpus=None, probs=probs, counts=counts)
    ids = stats.sample(np.random.default_rng(3), (8, 20_000))
    assert ids.min() >= 0 and ids.max() < vocab
    assert ids.max() > row_groups.HEAD_ROWS                 # rows inside runs are drawn
    measured = np.mean([np.unique(row).size for row in ids])
    assert measured == pytest.approx(stats.unique(20_000), rel=0.02)
    again = stats.sample(np.random.default_rng(3), (8, 20_000))
    assert np.array_equal(ids, again)                         # seeded: the same rows


def test_a_billion_row_table_costs_runs_not_rows():
    stats = TokenStats.zipf(3_000_000_000)
    assert stats.probs.size < 2_000_000
    u = stats.unique(65536.0)
    assert 0 < u < 65536 and stats.unique(8 * 65536.0) > u


def test_corpus_with_a_larger_table_adds_one_unread_run(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("the cat sat on the mat the end")
    stats = TokenStats.from_corpus(corpus, vocab=row_groups.EXACT_ROWS + 10)
    assert stats.counts is not None and stats.counts[-1] == row_groups.EXACT_ROWS + 10 - 6
    assert stats.probs[-1] == 0.0
    assert stats.unique(1e6) == pytest.approx(6.0)
    assert stats.sample(np.random.default_rng(0), (100,)).max() < 6
