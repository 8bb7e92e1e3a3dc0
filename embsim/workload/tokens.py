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
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..yamlio import check_regular_file

MAX_CORPUS_BYTES = 1 << 30      # read whole into memory: a larger file is refused, not swapped

DEFAULT_ZIPF_S = 1.05
WORD = re.compile(r"[^\W\d_]+")     # runs of letters (any script); everything else splits


@dataclass(frozen=True, eq=False)
class TokenStats:
    """A unigram token distribution over `vocab` rows (Zipf exponent `s` or a `corpus`)."""

    vocab: int
    s: float | None
    corpus: str | None
    probs: np.ndarray = field(repr=False)
    stream: np.ndarray | None = field(default=None, repr=False)   # corpus as row ids
    _log_miss: np.ndarray = field(init=False, repr=False)          # log(1 - p_v)
    _cdf: np.ndarray = field(init=False, repr=False)

    def __post_init__(self):
        object.__setattr__(self, "_log_miss", np.log1p(-self.probs))
        cdf = np.cumsum(self.probs)
        object.__setattr__(self, "_cdf", cdf / cdf[-1])
        for a in (self.probs, self._log_miss, self._cdf, self.stream):
            if a is not None:
                a.setflags(write=False)   # shared (zipf is cached): nobody may edit it

    # ----- constructors
    @classmethod
    def zipf(cls, vocab: int, s: float = DEFAULT_ZIPF_S) -> "TokenStats":
        if not isinstance(vocab, int) or vocab <= 0:
            raise InputError(f"vocab: must be a positive integer, got {vocab!r}")
        if not s > 0:
            raise InputError(f"zipf s: must be positive, got {s!r}")
        return _zipf(vocab, float(s))

    @classmethod
    def from_corpus(cls, path: str | Path, vocab: int | None = None) -> "TokenStats":
        """Empirical unigram statistics of a text file (lower-cased, split on non-letters).

        With a model vocabulary larger than the words seen, the extra rows are never
        touched (probability 0); with fewer rows than distinct words, the vocab-1 most
        frequent words keep their rows and the rest share an <unk> row, as a word-level
        vocabulary does."""
        path = check_regular_file(path, "corpus", max_bytes=MAX_CORPUS_BYTES)   # no pipes
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise InputError(f"{path}: cannot read corpus: {exc}") from None
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
        freq = np.bincount(stream, minlength=vocab).astype(np.float64)
        return cls(vocab=vocab, s=None, corpus=str(path), probs=freq / freq.sum(),
                   stream=stream)

    # ----- exact expectations
    def unique(self, tokens: float) -> float:
        """Expected distinct rows touched by `tokens` independent draws."""
        return float(np.sum(-np.expm1(tokens * self._log_miss)))

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
        return float(np.sum(touched_this * touched_next))

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
        ids = np.searchsorted(self._cdf, rng.random(shape), side="right")
        return np.minimum(ids, self.vocab - 1)


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
    """Built once per (vocab, s): every simulation of a model asks for the same one."""
    weights = np.arange(1, vocab + 1, dtype=np.float64) ** -s
    return TokenStats(vocab=vocab, s=s, corpus=None, probs=weights / weights.sum())
