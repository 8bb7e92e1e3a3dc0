"""Per-GPU compute-time variation, so synchronous data parallelism waits for its slowest GPU.

`--jitter` forms (each GPU's compute is multiplied by its factor; without --jitter, the
model zoo file's `defaults: jitter` if it has one; `none`: no variation):
    normal:CV         factor ~ Normal(1, CV)
    lognormal:SIGMA   factor ~ LogNormal with mean 1 and log-sd SIGMA
    uniform:H         factor ~ Uniform(1 - H, 1 + H)
    seq:W             each GPU's padded sequence length ~ Uniform(seq - W/2, seq + W/2)
                      (bucketed translation batches); its factor is the compute model's
                      time at that length over the time at --seq
    trace             the --trace's measured rank skew: its slowest rank, slower by the
                      measured factor
    bucket:K          sentence lengths from --corpus (tokens per line of a pre-tokenized
                      file), batched as DeepLearningExamples GNMT's BucketingSampler does:
                      K equal-width length buckets, every step's global batch from one
                      bucket (chosen in proportion to its sentences), each GPU's --batch
                      sentences padded to its own longest
    shuffle           lengths from --corpus, each GPU's batch drawn from the whole corpus
                      and padded to its longest (no bucketing)
    maxtokens         lengths from --corpus, batched as fairseq's --max-tokens does
                      (DeepLearningExamples Transformer, fairseq/data/csrc/make_batches.cpp):
                      sentences sorted by length, each batch grown while sentences x its
                      longest <= --batch x --seq tokens, cut to a multiple of 8 sentences;
                      the batches are shuffled and every GPU takes its own each step, so
                      sentence counts and lengths differ per GPU. The factor is the step
                      time over the time at --batch x --seq (the token budget); the
                      throughput counts the batches' real target tokens (budget_fill).
                      Sentence pairs (--lengths ...,ratio:SIGMA) are ordered by source
                      then target length and budgeted on the longer side; each side is
                      timed at its own padded length (an encoder-decoder's layers before
                      its second embedding read the source)
The corpus forms read sentence lengths from --corpus, or draw them from a published
distribution, --lengths lognormal:MEAN:SD[:MAX] (embsim.engine.lengths).
Deterministic: GPU i of N gets the distribution's expected i-th order statistic (Blom's
(i + 1 - 0.375) / (N + 0.25) quantile), assigned to ranks in a permutation drawn from
--seed; so N GPUs wait for the expected slowest of N, and one GPU runs at the median.
The corpus forms take the expected order statistics of the GPUs' step times over
LENGTH_STEPS simulated steps drawn with --seed, relative to the time at --seq (so --seq is
the real mean length a throughput counts, and padding shows up as a factor above 1); bucket
and shuffle time each padded length L at L x --seq / (the corpus's real mean), so a corpus
whose mean is not --seq contributes its padding ratio, not its length.
"""

from __future__ import annotations

import functools
import math
from statistics import NormalDist
from typing import Callable

import numpy as np

from ..errors import InputError
from .classes import group_ranks
from .lengths import drawn_lengths, drawn_pairs
from .simulation import RankClass

NONE = "none"      # no variation, even where the model's zoo file names a jitter
FORMS = ("normal", "lognormal", "uniform", "seq", "bucket", "trace", "shuffle", "maxtokens")
VALUELESS = ("trace", "shuffle", "maxtokens")
CORPUS_FORMS = ("bucket", "shuffle", "maxtokens")
BATCH_MULTIPLE = 8      # fairseq's --required-batch-size-multiple default (DLE train.py passes 8)
MIN_FACTOR = 0.1
# Largest spreads taken. Input bounds, not model constants: a normal CV above 1 puts a
# sixth of the GPUs' factors below zero (floored at MIN_FACTOR); a mean-1 lognormal of
# SIGMA 3 has its median at exp(-4.5) = 1 % of the mean, so beyond it every GPU but the
# slowest sits at the floor (and SIGMA^2 overflows near 1e154: NaN step times); seq:W
# is a width in tokens, at most --seq's own bound.
MAX_SPREAD = {"normal": 1.0, "lognormal": 3.0, "seq": 1_000_000}
LENGTH_STEPS = 256
TOKEN_BATCH_STEPS = 2048   # maxtokens: every GPU's own batch each step, so more steps to settle the mean


def parse_jitter(text: str | None) -> tuple[str, float] | None:
    if not text or text == NONE:
        return None
    kind, _, value = text.partition(":")
    if kind not in FORMS:
        raise InputError(f"--jitter {text!r}: form must be one of "
                         f"{', '.join(f + ':X' for f in FORMS if f not in VALUELESS)}, "
                         f"{', '.join(VALUELESS)}, {NONE}")
    if kind in VALUELESS:
        if value:
            raise InputError(f"--jitter {text!r}: {kind!r} takes no value")
        return kind, 0.0
    try:
        x = float(value)
    except ValueError:
        raise InputError(f"--jitter {text!r}: expected {kind}:NUMBER") from None
    if kind == "bucket":
        if not (math.isfinite(x) and x >= 1 and x == int(x)):      # int(inf) would overflow
            raise InputError(f"--jitter {text!r}: the bucket count must be an integer >= 1")
        return kind, x
    if not (x >= 0 and math.isfinite(x)) or (kind == "uniform" and x >= 1):
        raise InputError(f"--jitter {text!r}: the spread must be >= 0{' and < 1' if kind == 'uniform' else ''}")
    if x > MAX_SPREAD.get(kind, math.inf):
        raise InputError(f"--jitter {text!r}: the spread must be at most {MAX_SPREAD[kind]:g}")
    return kind, x


def quantiles(n: int) -> np.ndarray:
    """Expected order statistics' quantiles of n draws (Blom 1958)."""
    return (np.arange(n) + 1 - 0.375) / (n + 0.25)


def sentence_pairs(corpus: str | None, lengths: str | None, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """maxtokens' (source, target) lengths: a --corpus's lines are both sides; --lengths
    with `,ratio:SIGMA` draws pairs whose sides differ (embsim.engine.lengths)."""
    if corpus or not lengths:
        one = sentence_lengths(corpus, lengths, seed)
        return one, one
    return drawn_pairs(lengths, seed)


def sentence_lengths(corpus: str | None, lengths: str | None, seed: int) -> np.ndarray:
    """The corpus forms' sentence lengths: --corpus's lines, else --lengths's distribution."""
    if corpus:
        return corpus_lengths(corpus)
    if lengths:
        return drawn_lengths(lengths, seed)
    raise InputError("--jitter bucket:K / shuffle / maxtokens: needs --corpus (one tokenized sentence "
                     "per line) or --lengths (a published length distribution)")


def corpus_lengths(path: str | None) -> np.ndarray:
    """Tokens per non-empty line of a pre-tokenized corpus (e.g. BPE output)."""
    if not path:
        raise InputError("--jitter bucket:K / shuffle / maxtokens: needs --corpus (one tokenized sentence per line)")
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lengths = [len(line.split()) for line in f if line.strip()]
    except OSError as exc:
        raise InputError(f"--corpus {path}: cannot read: {exc}") from None
    if not lengths:
        raise InputError(f"--corpus {path}: no sentences")
    return np.asarray(lengths, dtype=np.int64)


def batch_lengths(kind: str, buckets: int, lengths: np.ndarray, n_gpus: int, batch: int,
                  rng: np.random.Generator, steps: int) -> np.ndarray:
    """(steps, n_gpus) padded lengths: each GPU's batch padded to its longest sentence."""
    return batch_draws(kind, buckets, lengths, n_gpus, batch, rng, steps)[0]


def batch_draws(kind: str, buckets: int, lengths: np.ndarray, n_gpus: int, batch: int,
                rng: np.random.Generator, steps: int) -> tuple[np.ndarray, np.ndarray]:
    """batch_lengths' draws: (steps, n_gpus) padded lengths and the real tokens of each
    GPU's batch (the sum of its sentences' lengths, what a trainer counting real tokens
    counts)."""
    if kind == "bucket":
        width = -(-int(lengths.max()) // buckets)            # ceil(max / K), as the sampler
        ids = np.minimum(lengths // width, buckets - 1)
        # the non-empty buckets in order (bucket:1000000 must not scan a million empty ones)
        pools = [lengths[ids == b] for b in np.unique(ids)]
        weights = np.array([len(p) for p in pools], dtype=float)
        # every bucket gets its share of the steps (largest remainder), in a random order:
        # drawing the bucket of each step instead would let a few hundred steps' sampling
        # noise move the mean padded length by several per cent
        exact = steps * weights / weights.sum()
        counts = np.floor(exact).astype(int)
        counts[np.argsort(counts - exact, kind="stable")[:steps - counts.sum()]] += 1
        chosen = rng.permutation(np.repeat(np.arange(len(pools)), counts))
        # one step's draw at a time (all steps at once is steps x GPUs x batch lengths)
        padded = np.empty((len(chosen), n_gpus), dtype=lengths.dtype)
        tokens = np.empty((len(chosen), n_gpus), dtype=np.float64)
        for j, b in enumerate(chosen):
            d = rng.choice(pools[b], size=(n_gpus, batch))
            padded[j], tokens[j] = d.max(axis=1), d.sum(axis=1)
        return padded, tokens
    drawn = rng.choice(lengths, size=(steps, n_gpus, batch))
    return drawn.max(axis=2), drawn.sum(axis=2).astype(np.float64)


def padded_compute(padded: np.ndarray, real: np.ndarray, seq: int,
                   compute_at_seq: Callable[[int], float]) -> np.ndarray:
    """Compute seconds of each drawn padded length. --seq is the real mean the throughput
    counts, so a corpus whose real mean differs (a published distribution cut at a maximum,
    another corpus) pads it by its own padded/real ratio; each distinct length is timed once."""
    at_seq = seq / float(real.mean())
    cache = {int(L): compute_at_seq(max(1, int(round(L * at_seq)))) for L in np.unique(padded)}
    return np.vectorize(cache.__getitem__)(padded)


def token_budget_batches(lengths: np.ndarray, max_tokens: int,
                         multiple: int = BATCH_MULTIPLE) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """fairseq's make_batches over length-sorted sentences: (sentences, padded length, real
    tokens) per batch. A batch grows while (sentences + 1) x longest <= max_tokens; a full
    batch keeps a multiple of `multiple` sentences and the rest start the next."""
    sizes, longest, _, real = pair_budget_batches(lengths, lengths, max_tokens, multiple)
    return sizes, longest, real


def pair_budget_batches(src: np.ndarray, tgt: np.ndarray, max_tokens: int,
                        multiple: int = BATCH_MULTIPLE) -> tuple[np.ndarray, ...]:
    """make_batches.cpp over sentence pairs in fairseq's order (language_pair_dataset.py
    ordered_indices: by source length, ties by target length): each pair counts its longer
    side; a batch grows while (pairs + 1) x the longest so far <= max_tokens, a full batch
    keeps a multiple of `multiple` pairs and the rest start the next. Per batch: pairs,
    padded source length, padded target length (data_utils.collate pads each side to its
    own longest), real target tokens."""
    src, tgt = np.asarray(src, dtype=np.int64), np.asarray(tgt, dtype=np.int64)
    order = np.lexsort((tgt, src))
    src, tgt = src[order], tgt[order]
    keep = np.maximum(src, tgt) <= max_tokens
    src, tgt = src[keep], tgt[keep]
    if src.size == 0:
        raise InputError(f"--jitter maxtokens: every sentence (--corpus or --lengths) is longer than "
                         f"the {max_tokens}-token batch (--batch x --seq)")
    longer = np.maximum(src, tgt)
    sizes, src_long, tgt_long, real = [], [], [], []
    start, n = 0, src.size
    while start < n:
        k, top = 1, longer[start]
        while start + k < n and (k + 1) * max(top, longer[start + k]) <= max_tokens:
            top = max(top, longer[start + k])
            k += 1
        if start + k < n and k >= multiple:
            k = k // multiple * multiple
        sizes.append(k)
        src_long.append(src[start:start + k].max())
        tgt_long.append(tgt[start:start + k].max())
        real.append(tgt[start:start + k].sum())
        start += k
    return np.array(sizes), np.array(src_long), np.array(tgt_long), np.array(real, dtype=np.float64)


@functools.lru_cache(maxsize=16)
def _budget_batches(corpus: str | None, lengths: str | None, seed: int,
                    max_tokens: int) -> tuple[np.ndarray, ...]:
    return pair_budget_batches(*sentence_pairs(corpus, lengths, seed), max_tokens)


def budget_fill(corpus: str | None, lengths: str | None, seed: int, max_tokens: int) -> float:
    """maxtokens: real target tokens per budget token over the epoch's batches (fairseq's
    wpb over --max-tokens: what its log and DeepLearningExamples' tokens/s count)."""
    sizes, _, _, real = _budget_batches(corpus, lengths, seed, max_tokens)
    return float(real.sum() / (sizes.size * max_tokens))


def jitter_factors(text: str | None, n_gpus: int, seed: int, seq: int | None = None,
                   compute_at_seq: Callable[[int], float] | None = None,
                   trace_skew: float | None = None, corpus: str | None = None,
                   batch: int | None = None, micro_batches: int = 1,
                   compute_at: Callable[[int, int], float] | None = None,
                   lengths: str | None = None,
                   compute_sides: Callable[[int, int, int], float] | None = None,
                   speed: np.ndarray | None = None) -> np.ndarray:
    """Per-rank compute factors (ones without jitter). `speed`: each GPU's static
    compute-time factor (engine.gpu_speed), multiplied into its step times before their
    order statistics are taken (without jitter: the factors themselves). `compute_at(batch, seq)`: the compute
    model's step time of another batch shape (maxtokens); `compute_sides(batch, source,
    target)`: the same with the source side at one length and the target side at another
    (maxtokens over sentence pairs whose sides differ; without it, the longer side)."""
    spec = parse_jitter(text)
    speed = np.ones(max(n_gpus, 0)) if speed is None else np.asarray(speed, dtype=np.float64)
    if spec is None or n_gpus < 1:
        return speed.copy()
    kind, x = spec
    if kind == "maxtokens":
        if seq is None or batch is None or compute_at is None:
            raise InputError(f"--jitter {text}: needs the model's batch and sequence length")
        rng = np.random.default_rng(seed)
        sizes, src_long, tgt_long, _ = _budget_batches(corpus, lengths, seed, batch * seq)
        pick = rng.integers(0, sizes.size, size=(TOKEN_BATCH_STEPS, micro_batches, n_gpus))
        if compute_sides is None or np.array_equal(src_long, tgt_long):
            longest = np.maximum(src_long, tgt_long)
            time_of = {(int(b), int(s)): compute_at(int(b), int(s)) for b, s in set(zip(sizes, longest))}
            batch_time = np.array([time_of[(int(b), int(s))] for b, s in zip(sizes, longest)])
        else:
            time_of = {sh: compute_sides(*sh) for sh in sorted(
                {(int(b), int(s), int(t)) for b, s, t in zip(sizes, src_long, tgt_long)})}
            batch_time = np.array([time_of[(int(b), int(s), int(t))]
                                   for b, s, t in zip(sizes, src_long, tgt_long)])
        times = batch_time[pick].mean(axis=1) * speed   # micro-batches back to back, at each GPU's speed
        # expected order statistics of the GPUs' step times, relative to the budget's nominal
        # shape (--batch x --seq): the throughput still counts --batch x --seq tokens per step
        f = np.sort(times, axis=1).mean(axis=0) / compute_at(batch, seq)
        return f[rng.permutation(n_gpus)]
    if kind in CORPUS_FORMS:
        if seq is None or compute_at_seq is None or batch is None:
            raise InputError(f"--jitter {text}: needs the model's batch and sequence length")
        rng = np.random.default_rng(seed)
        real = sentence_lengths(corpus, lengths, seed)
        padded = batch_lengths(kind, int(x), real, n_gpus, batch, rng, LENGTH_STEPS * micro_batches)
        # a GPU's optimizer step is its micro-batches (--accumulate) back to back
        times = padded_compute(padded, real, seq, compute_at_seq).reshape(
            LENGTH_STEPS, micro_batches, n_gpus).mean(axis=1)
        times = times * speed                        # each GPU at its own speed
        # expected order statistics of the GPUs' step times, relative to the time at --seq
        f = np.sort(times, axis=1).mean(axis=0) / compute_at_seq(seq)
        return f[rng.permutation(n_gpus)]
    if kind == "trace":
        out = np.ones(n_gpus)
        if trace_skew is None:
            raise InputError("--jitter trace: needs a --trace with a measured rank skew")
        if n_gpus > 1:
            out[-1] = trace_skew
        return _with_speed(out, speed, np.random.default_rng(seed))
    q = quantiles(n_gpus)
    if kind == "normal":
        f = np.array([1 + x * NormalDist().inv_cdf(p) for p in q])
    elif kind == "lognormal":
        f = np.array([math.exp(x * NormalDist().inv_cdf(p) - x * x / 2) for p in q])
    elif kind == "uniform":
        f = 1 + x * (2 * q - 1)
    else:                                # seq: padded length per GPU
        if seq is None or compute_at_seq is None:
            raise InputError("--jitter seq: needs the model's sequence length")
        base = compute_at_seq(seq)
        lengths = [max(1, int(round(seq + x * (p - 0.5)))) for p in q]
        f = np.array([compute_at_seq(s) / base for s in lengths])
    f = np.maximum(f, MIN_FACTOR)
    rng = np.random.default_rng(seed)
    perm = rng.permutation(n_gpus)
    return _with_speed(f[perm], speed, rng)


def _with_speed(f: np.ndarray, speed: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Static per-rank factors `f` on GPUs of static `speed`: the two are independent, so
    the expected order statistics of their products over LENGTH_STEPS random pairings
    (one pairing would make the slowest GPU's factor depend on which jitter it drew), in
    the rank order of `f`."""
    if np.all(speed == 1.0):
        return f
    products = np.sort([f * speed[rng.permutation(f.size)] for _ in range(LENGTH_STEPS)], axis=1)
    expected = products.mean(axis=0)
    out = np.empty_like(expected)
    out[np.argsort(f, kind="stable")] = expected
    return out


def with_jitter(classes: tuple[RankClass, ...], factors: np.ndarray,
                param: np.ndarray | None = None) -> tuple[RankClass, ...]:
    """Split the rank classes so every rank's slowdown includes its jitter factor; ranks
    with equal slowdowns stay one class (classes.group_ranks: one stream per class).
    `param`: each rank's factor for parameter-sized ops where it is not `factors` (a length
    jitter's factor is the batch's padded or budgeted length, which the optimizer step and
    the DDP bucket passes do not see: for them only the GPU's speed, param_factors)."""
    if np.all(factors == 1.0) and (param is None or np.all(param == 1.0)):
        return classes
    slowdown = np.ones(factors.size)
    for c in classes:
        slowdown[list(c.ranks)] = c.slowdown
    if param is not None and np.array_equal(param, factors):
        param = None
    return group_ranks(slowdown * factors,
                       names=lambda ranks, s: "all" if s == 1.0 else f"jitter-{ranks[0]}",
                       param=None if param is None else slowdown * param)


# forms whose factor is a batch's length (padded, or a token budget's shape), not the GPU
LENGTH_FORMS = ("seq", "bucket", "shuffle", "maxtokens")


def param_factors(text: str | None, factors: np.ndarray, speed: np.ndarray | None) -> np.ndarray:
    """Each rank's factor for parameter-sized ops: its GPU speed (engine.gpu_speed) under a
    length form, which leaves the optimizer and DDP passes alone; `factors` otherwise (a
    whole-GPU variation such as normal:CV moves every kernel)."""
    spec = parse_jitter(text)
    if spec is None or spec[0] not in LENGTH_FORMS:
        return factors
    return np.ones(factors.size) if speed is None else np.asarray(speed, dtype=np.float64)
