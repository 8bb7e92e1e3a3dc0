"""Sample lengths when no corpus file is at hand, `--lengths`:
    NAME                 a measured length histogram shipped with embsim
                         (embsim/workload/datasets/NAME.yaml, e.g. wikipedia: BERT's
                         pre-training samples at max_seq_length 512)
    lognormal:MEAN:SD[:MAX]  a published mean and standard deviation of tokens per sentence
    ...,ratio:SIGMA      (after either) translation pairs: each source length times
                         exp(Normal(0, SIGMA)) is its target's (--jitter maxtokens)

For the log-normal, MEAN and SD are the corpus's published mean and standard deviation of
tokens per sentence; the log-normal with those moments (sigma^2 = ln(1 + (SD/MEAN)^2),
mu = ln MEAN - sigma^2 / 2) stands for it, the usual shape of sentence-length
distributions (right-skewed, positive). MAX drops longer sentences, as a training script's
length filter does. SAMPLE sentences are drawn with the run's --seed (deterministic), rounded
to whole tokens, at least one; a named histogram is sampled the same way for --jitter's
corpus forms, and used exactly by --padding (embsim.workload.padding).

`,ratio:SIGMA` makes them sentence pairs, so a pair's sides differ as real translations do
(a fairseq token-budget batch is sized on the longer side, and the shorter one computes
less). The pairs' target draw is its own seeded stream: the source lengths are the same
with or without it. MAX then drops a pair whose longer side exceeds it.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import InputError
from ..workload.length_data import list_datasets, load_histogram

FORMS = ("lognormal",)
SAMPLE = 200_000
# Bounds that keep the draws finite integers: a sentence has at least one token and no corpus
# a million (MEAN, SD; more is a units typo); a target/source log-sd of 1 is already a target
# 2.7x its source at one sd (WMT'14 en-de's is 0.15), and a wider one overflows the lengths
# or times thousands of batch shapes for --jitter maxtokens.
MAX_TOKENS = 1_000_000
MAX_RATIO_SIGMA = 1.0


def parse_lengths(text: str | None) -> tuple | None:
    """("dataset", NAME) or ("lognormal", MEAN, SD, MAX or None); None without --lengths.
    A `,ratio:SIGMA` suffix (ratio_sigma) is checked and left out of the result."""
    if text is None:
        return None
    if not text.strip():
        raise InputError("--lengths '': expected a data set, lognormal:MEAN:SD or lognormal:MEAN:SD:MAX")
    ratio_sigma(text)
    text = text.split(",")[0]
    if text in list_datasets():
        return ("dataset", text)
    kind, *values = text.split(":")
    if kind not in FORMS or len(values) not in (2, 3):
        raise InputError(f"--lengths {text!r}: expected a data set ({', '.join(list_datasets())}), "
                         f"lognormal:MEAN:SD or lognormal:MEAN:SD:MAX")
    try:
        nums = [float(v) for v in values]
    except ValueError:
        raise InputError(f"--lengths {text!r}: MEAN, SD and MAX must be numbers") from None
    if not all(math.isfinite(v) and v > 0 for v in nums):
        raise InputError(f"--lengths {text!r}: MEAN, SD and MAX must be positive")
    mean, sd = nums[0], nums[1]
    top = nums[2] if len(nums) == 3 else None
    if top is not None and top < 1:
        raise InputError(f"--lengths {text!r}: MAX must be at least one token")
    if not (1 <= mean <= MAX_TOKENS and sd <= MAX_TOKENS):
        raise InputError(f"--lengths {text!r}: MEAN must be 1..{MAX_TOKENS:,} tokens and SD at most "
                         f"{MAX_TOKENS:,}")
    return kind, mean, sd, top


def ratio_sigma(text: str | None) -> float | None:
    """The `,ratio:SIGMA` suffix's SIGMA (log-sd of target over source length), or None."""
    if not text or "," not in text:
        return None
    _, _, tail = text.partition(",")
    key, _, value = tail.partition(":")
    try:
        sigma = float(value)
    except ValueError:
        sigma = -1.0
    if key != "ratio" or not 0 <= sigma <= MAX_RATIO_SIGMA:
        raise InputError(f"--lengths {text!r}: expected ...,ratio:SIGMA (SIGMA 0..{MAX_RATIO_SIGMA:g}, "
                         f"the log-sd of target over source length)")
    return sigma


def drawn_pairs(text: str, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(source, target) lengths of sentence pairs: drawn_lengths's sentences as the source,
    each target its source times exp(Normal(0, SIGMA)) (`,ratio:SIGMA`; without it the
    target is the source), pairs whose longer side exceeds MAX dropped."""
    src = drawn_lengths(text, seed)
    sigma = ratio_sigma(text)
    if not sigma:
        return src, src
    factor = np.exp(np.random.default_rng([seed, 1]).normal(0.0, sigma, src.size))
    tgt = np.maximum(np.rint(src * factor), 1).astype(np.int64)
    parsed = parse_lengths(text)
    top = parsed[3] if parsed[0] == "lognormal" else None
    if top is not None:
        keep = tgt <= top
        src, tgt = src[keep], tgt[keep]
    return src, tgt


def drawn_lengths(text: str, seed: int) -> np.ndarray:
    """SAMPLE sentence lengths (tokens) from the --lengths distribution."""
    parsed = parse_lengths(text)
    rng = np.random.default_rng(seed)
    if parsed[0] == "dataset":
        hist = load_histogram(parsed[1])
        probs = hist.probabilities(hist.max_length)
        return rng.choice(np.arange(1, probs.size + 1), size=SAMPLE, p=probs).astype(np.int64)
    _, mean, sd, top = parsed
    sigma = math.sqrt(math.log1p((sd / mean) ** 2))
    mu = math.log(mean) - sigma * sigma / 2
    drawn = np.maximum(np.rint(rng.lognormal(mu, sigma, SAMPLE)), 1).astype(np.int64)
    if top is not None:
        drawn = drawn[drawn <= top]
        if drawn.size == 0:
            raise InputError(f"--lengths {text!r}: no sentence is at most MAX tokens long")
    return drawn
