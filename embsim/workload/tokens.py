"""Token statistics: how many embedding rows a batch touches, alone and across GPUs.

Tokens are drawn independently from a unigram distribution p over the vocabulary
(row v = the v-th most frequent word, as frequency-sorted vocabularies are laid out):
either Zipf(s), p_v ∝ (v+1)^-s — natural-language word frequencies follow Zipf's law with
s ≈ 1.0–1.1 (docs/sources/workloads.md), default 1.05 — or the empirical unigram frequencies
of a real text file. For T tokens, exactly,

    E[unique rows] = sum_v 1 - (1 - p_v)^T       (computed as -expm1(T * log1p(-p_v)))

and the union over k GPUs' batches of T tokens each is the same with T -> k*T
("densification": density(k) = E[U_k] / V grows with k). A seeded sampler draws actual
batches so schedulers can split "rows the next batch does not touch" exactly.

Rows a step touches (RowTouches) are the batch's token rows plus, for a sampled softmax
tied to the table, its candidates. TensorFlow's sampler (`log_uniform_candidate_sampler`,
`unique=True`, the default of `sampled_softmax_loss`) draws from the log-uniform
distribution until it holds k *distinct* rows, shared by the whole batch: row v is a
candidate with probability 1 - (1 - q_v)^T* where T* is the number of draws that yields k
distinct rows in expectation. The softmax's true classes are the batch's next tokens,
the same rows as its inputs, so they add no rows.

Large tables (beyond row_groups.EXACT_ROWS) hold their cold rows in runs of nearly equal
probability (embsim.workload.row_groups): every per-row array is then per run, with
`counts` rows per run, and every sum over rows weighs by the counts. Sharding the rows
over GPUs or servers: embsim.workload.sharding.
"""

from __future__ import annotations

import codecs
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..yamlio import GZIPPED, check_regular_file, is_gzipped
from .row_groups import EXACT_ROWS, log_uniform_runs, starts_of, total, zipf_runs
from .sharding import SHARDINGS, shard_of_rows, shard_shares   # noqa: F401  (re-exported)

MAX_CORPUS_BYTES = 1 << 30      # read whole into memory: a larger file is refused, not swapped

DEFAULT_ZIPF_S = 1.05
# The largest Zipf exponent a run may give (--zipf, a sweep's zipf_s): beyond it nearly
# every lookup hits one row
MAX_ZIPF_S = 10
WORD = re.compile(r"[^\W\d_]+")     # runs of letters (any script); everything else splits



def corpus_text(path) -> str:
    """A corpus file's text: a regular file (no pipe) of UTF-8 text without NUL bytes. Random
    bytes were read as noise words and moved the result without a word. A multi-byte
    character cut at the very end (`head -c`) is dropped, not refused."""
    path = check_regular_file(path, "corpus", max_bytes=MAX_CORPUS_BYTES)
    try:
        if is_gzipped(path):
            raise InputError(f"{path}: cannot read corpus: {GZIPPED}")
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read corpus: {exc.strerror or exc}") from None
    nul = data.find(b"\0")
    if nul >= 0:
        raise InputError(f"{path}: cannot read corpus: not a text file (a NUL byte at byte {nul}); "
                         f"give UTF-8 text")
    try:
        return codecs.getincrementaldecoder("utf-8")().decode(data)   # not final: a cut tail is dropped
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: cannot read corpus: not UTF-8 text (byte {exc.start}); "
                         f"give UTF-8 text") from None


def check_corpus_text(path) -> None:
    """A corpus refused up front as reading it would refuse it (before a sweep's points or
    a simulation run): corpus_text."""
    corpus_text(path)

@dataclass(frozen=True, eq=False)
class TokenStats:
    """A unigram token distribution over `vocab` rows (Zipf exponent `s` or a `corpus`).

    `probs` holds one row's probability per entry; with `counts`, entry i stands for a run
    of counts[i] consecutive rows that share it (large tables: embsim.workload.row_groups)."""

    vocab: int
    s: float | None
    corpus: str | None
    probs: np.ndarray = field(repr=False)
    stream: np.ndarray | None = field(default=None, repr=False)   # corpus as row ids
    counts: np.ndarray | None = field(default=None, repr=False)   # rows per entry (None: 1)
    _log_miss: np.ndarray = field(init=False, repr=False)          # log(1 - p_v)
    _cdf: np.ndarray = field(init=False, repr=False)

    def __post_init__(self):
        with np.errstate(divide="ignore"):    # a row read by every token: log(0) = -inf, exact
            object.__setattr__(self, "_log_miss", np.log1p(-self.probs))
        cdf = np.cumsum(self.probs if self.counts is None else self.probs * self.counts)
        object.__setattr__(self, "_cdf", cdf / cdf[-1])
        for a in (self.probs, self._log_miss, self._cdf, self.stream, self.counts):
            if a is not None:
                a.setflags(write=False)   # shared (zipf is cached): nobody may edit it

    # ----- constructors
    @classmethod
    def zipf(cls, vocab: int, s: float = DEFAULT_ZIPF_S) -> "TokenStats":
        if not isinstance(vocab, int) or vocab <= 0:
            raise InputError(f"vocab: must be a positive integer, got {vocab!r}")
        if not s >= 0:     # 0: uniform (row weights v^-0 = 1), as a synthetic benchmark's ids
            raise InputError(f"Zipf exponent (--zipf, a sweep's zipf_s) {s!r}: must be >= 0")
        return _zipf(vocab, float(s))

    @classmethod
    def from_corpus(cls, path: str | Path, vocab: int | None = None) -> "TokenStats":
        """Empirical unigram statistics of a text file (lower-cased, split on non-letters).

        With a model vocabulary larger than the words seen, the extra rows are never
        touched (probability 0); with fewer rows than distinct words, the vocab-1 most
        frequent words keep their rows and the rest share an <unk> row, as a word-level
        vocabulary does."""
        text = corpus_text(path)
        words = WORD.findall(text.lower())
        if not words:
            raise InputError(f"{path}: corpus has no words")
        counts = Counter(words)
        # deterministic order: most frequent first, ties alphabetical
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        if vocab is None:
            vocab = len(ranked)
        if not isinstance(vocab, int) or vocab <= 0:
            raise InputError(f"vocab: must be a positive integer, got {vocab!r}")
        own_rows = len(ranked) if len(ranked) <= vocab else vocab - 1
        row_of = {w: i for i, (w, _) in enumerate(ranked[:own_rows])}
        unk = vocab - 1
        stream = np.fromiter((row_of.get(w, unk) for w in words), dtype=np.int64,
                             count=len(words))
        if vocab > EXACT_ROWS and vocab > own_rows + 1:
            # a table far larger than the text: the words' rows, then one run of rows
            # no word reads (probability 0)
            freq = np.bincount(stream, minlength=own_rows).astype(np.float64)
            counts = np.ones(own_rows + 1, dtype=np.int64)
            counts[-1] = vocab - own_rows
            return cls(vocab=vocab, s=None, corpus=str(path),
                       probs=np.append(freq / freq.sum(), 0.0), stream=stream, counts=counts)
        freq = np.bincount(stream, minlength=vocab).astype(np.float64)
        return cls(vocab=vocab, s=None, corpus=str(path), probs=freq / freq.sum(),
                   stream=stream)

    # ----- exact expectations
    def unique(self, tokens: float) -> float:
        """Expected distinct rows touched by `tokens` independent draws."""
        return total(-np.expm1(tokens * self._log_miss), self.counts)

    def union(self, k: int, tokens: float) -> float:
        """Expected distinct rows touched by the union of k GPUs' batches of `tokens`."""
        return self.unique(k * tokens)

    def density(self, k: int, tokens: float) -> float:
        """Fraction of the vocabulary in the union of k batches (densification curve)."""
        return self.union(k, tokens) / self.vocab

    def densification(self, ks, tokens: float) -> np.ndarray:
        return np.array([self.density(int(k), tokens) for k in ks])

    def overlap(self, tokens_next: float, tokens_this: float) -> float:
        """Expected rows touched by this batch that the next (independent) batch also touches."""
        touched_this = -np.expm1(tokens_this * self._log_miss)
        touched_next = -np.expm1(tokens_next * self._log_miss)
        return total(touched_this * touched_next, self.counts)

    def not_needed_next(self, tokens_next: float, tokens_this: float) -> float:
        """Expected rows of this batch's gradient that the next batch does not read:
        the part a scheduler may defer past the next forward."""
        return self.unique(tokens_this) - self.overlap(tokens_next, tokens_this)

    # ----- sampling
    def sample(self, rng: np.random.Generator, shape, contiguous: bool = False) -> np.ndarray:
        """Token row ids of `shape`; i.i.d. from probs, or (corpus, contiguous=True) real
        spans of the text starting at random offsets, one span per last-axis row."""
        shape = tuple(shape)
        if contiguous:
            if self.stream is None:
                raise InputError("contiguous sampling needs a corpus, not a Zipf distribution")
            length = shape[-1]
            if length > len(self.stream):
                raise InputError(f"{self.corpus}: {len(self.stream)} words, fewer than "
                                 f"{length} tokens per batch")
            starts = rng.integers(0, len(self.stream) - length + 1, size=shape[:-1])
            return self.stream[starts[..., None] + np.arange(length)]
        u = rng.random(shape)
        ids = np.minimum(np.searchsorted(self._cdf, u, side="right"), self._cdf.size - 1)
        if self.counts is None:
            return ids
        # a run drawn: the row within it from where u fell in the run's slice of the CDF
        lo = np.where(ids > 0, self._cdf[np.maximum(ids - 1, 0)], 0.0)
        within = (u - lo) / (self._cdf[ids] - lo)
        offset = np.minimum((within * self.counts[ids]).astype(np.int64), self.counts[ids] - 1)
        return starts_of(self.counts)[ids] + offset


# ----------------------------------------------------------- sampled candidates
def log_uniform_probs(vocab: int) -> np.ndarray:
    """TensorFlow's log-uniform (Zipfian) candidate distribution over a frequency-sorted
    vocabulary: P(v) = log((v + 2) / (v + 1)) / log(vocab + 1)."""
    return log_uniform_runs(vocab, None)


def draws_for_unique(log_miss: np.ndarray, k: float, counts: np.ndarray | None = None) -> float:
    """Draws T with E[distinct rows] = k (bisection on the monotone expectation)."""
    vocab = log_miss.size if counts is None else int(np.sum(counts))
    if not 0 < k < vocab:
        raise InputError(f"sampled candidates: need 0 < k < vocabulary ({vocab}), got {k!r}")
    unique = lambda t: total(-np.expm1(t * log_miss), counts)
    lo, hi = k, 2.0 * k
    while unique(hi) < k:
        lo, hi = hi, 2.0 * hi
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if unique(mid) < k else (lo, mid)
        if hi - lo <= 1e-9 * hi:
            break
    return 0.5 * (lo + hi)


@lru_cache(maxsize=16)
def unique_candidate_inclusion(vocab: int, k: int, runs_key: bytes | None = None) -> np.ndarray:
    """Probability that each row is one of the k distinct candidates of one step
    (TensorFlow's unique log-uniform sampler); sums to k over the rows. `runs_key`: the
    rows per run (int64 bytes, hashable for the cache) where the table's statistics come in
    runs: one entry per run."""
    runs = None if runs_key is None else np.frombuffer(runs_key, dtype=np.int64)
    log_miss = np.log1p(-log_uniform_runs(vocab, runs))
    pi = -np.expm1(draws_for_unique(log_miss, k, runs) * log_miss)
    pi.setflags(write=False)
    return pi


def union_inclusion(inclusion: np.ndarray, k: int) -> np.ndarray:
    """P(row v is touched by any of k independent steps), from one step's per-row
    inclusion p_v: 1 - (1 - p_v)^k, computed as -expm1(k * log1p(-p_v)) with p_v held
    below 1 so the logarithm stays finite."""
    p = np.minimum(np.asarray(inclusion, dtype=np.float64), 1.0 - 1e-16)
    return -np.expm1(k * np.log1p(-p))


def _read_only(a: np.ndarray) -> np.ndarray:
    """A cached array handed to strategies: nobody may edit it."""
    a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False)
class RowTouches:
    """Which rows of one table one GPU's step touches, row by row (expected values).

    `tokens` rows are read with repeats (one per token); `candidates` distinct sampled
    rows are shared by the batch. Steps and GPUs draw independently. The per-row arrays
    are computed once per instance (a step context asks for each several times)."""

    stats: TokenStats
    tokens: float
    candidates: int = 0
    _unions: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def counts(self) -> np.ndarray | None:
        """Rows per entry of the per-row arrays below (None: one row each)."""
        return self.stats.counts

    def _candidate_inclusion(self) -> np.ndarray:
        # per row, or per run where the token statistics come in runs (a large table)
        c = self.counts
        return unique_candidate_inclusion(self.stats.vocab, self.candidates,
                                          None if c is None else c.astype(np.int64).tobytes())

    @cached_property
    def inclusion(self) -> np.ndarray:
        """P(row v is touched by one GPU's step)."""
        miss = np.exp(self.tokens * self.stats._log_miss)
        if self.candidates:
            miss = miss * (1.0 - self._candidate_inclusion())
        return _read_only(1.0 - miss)

    @cached_property
    def reads(self) -> np.ndarray:
        """Expected reads of each row by one GPU's step (tokens with repeats, candidates once)."""
        r = self.tokens * self.stats.probs
        if self.candidates:
            r = r + self._candidate_inclusion()
        return _read_only(r)

    def unique(self) -> float:
        return total(self.inclusion, self.counts)

    def union_inclusion(self, k: int) -> np.ndarray:
        """P(row v is touched by any of k GPUs' steps)."""
        if k not in self._unions:
            self._unions[k] = _read_only(union_inclusion(self.inclusion, k))
        return self._unions[k]

    def union(self, k: int) -> float:
        return total(self.union_inclusion(k), self.counts)

    def next_overlap(self, k: int) -> float:
        """Rows of this step's k-GPU union that the next step's union touches again."""
        u = self.union_inclusion(k)
        return total(u * u, self.counts)

    def read_fraction_next(self, k: int) -> float:
        """Fraction of one GPU's reads whose row the next step (k GPUs) reads again."""
        r = self.reads
        return total(r * self.union_inclusion(k), self.counts) / total(r, self.counts)


def expected_unique(stats: TokenStats, tokens: float) -> float:
    return stats.unique(tokens)


def expected_overlap(stats: TokenStats, tokens_next: float, tokens_this: float) -> float:
    return stats.overlap(tokens_next, tokens_this)


def sample_batches(stats: TokenStats, n_gpus: int, tokens_per_gpu: int, seed: int,
                   steps: int = 1, contiguous: bool = False) -> np.ndarray:
    """Token row ids of shape (steps, n_gpus, tokens_per_gpu); same seed -> same array."""
    for name, value in (("n_gpus", n_gpus), ("tokens_per_gpu", tokens_per_gpu), ("steps", steps)):
        if not isinstance(value, (int, np.integer)) or value <= 0:
            raise InputError(f"{name}: must be a positive integer, got {value!r}")
    rng = np.random.default_rng(seed)
    return stats.sample(rng, (steps, n_gpus, tokens_per_gpu), contiguous=contiguous)


def touched_rows(batch: np.ndarray) -> np.ndarray:
    """Sorted distinct rows a batch (any shape) touches."""
    return np.unique(batch)


def rows_not_needed_next(this_batch: np.ndarray, next_batch: np.ndarray) -> np.ndarray:
    """Rows with a gradient from this batch that the next batch does not read (sorted)."""
    return np.setdiff1d(np.unique(this_batch), np.unique(next_batch), assume_unique=True)


def measured_unique(stats: TokenStats, tokens: int, seed: int, trials: int = 8,
                    contiguous: bool = False) -> float:
    """Brute force: mean distinct rows over `trials` sampled batches (for checking)."""
    batches = sample_batches(stats, 1, tokens, seed, steps=trials, contiguous=contiguous)
    return float(np.mean([np.unique(b).size for b in batches]))


@lru_cache(maxsize=16)
def _zipf(vocab: int, s: float) -> TokenStats:
    """Built once per (vocab, s): every simulation of a model asks for the same one.
    Exact per row up to row_groups.EXACT_ROWS, in runs beyond."""
    probs, counts = zipf_runs(vocab, s)
    return TokenStats(vocab=vocab, s=s, corpus=None, probs=probs, counts=counts)
