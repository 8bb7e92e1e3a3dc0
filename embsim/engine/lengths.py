"""Sentence lengths for the corpus forms of --jitter, when no corpus file is at hand:
a published length distribution, `--lengths lognormal:MEAN:SD[:MAX]`.

MEAN and SD are the corpus's published mean and standard deviation of tokens per
sentence; the log-normal with those moments (sigma^2 = ln(1 + (SD/MEAN)^2),
mu = ln MEAN - sigma^2 / 2) stands for it, the usual shape of sentence-length
distributions (right-skewed, positive). MAX drops longer sentences, as a training script's
length filter does. SAMPLE sentences are drawn with the run's --seed (deterministic), rounded
to whole tokens, at least one.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import InputError

FORMS = ("lognormal",)
SAMPLE = 200_000


def parse_lengths(text: str | None) -> tuple[str, float, float, float | None] | None:
    if not text:
        return None
    kind, *values = text.split(":")
    if kind not in FORMS or len(values) not in (2, 3):
        raise InputError(f"--lengths {text!r}: expected lognormal:MEAN:SD or lognormal:MEAN:SD:MAX")
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
    return kind, mean, sd, top


def drawn_lengths(text: str, seed: int) -> np.ndarray:
    """SAMPLE sentence lengths (tokens) from the --lengths distribution."""
    _, mean, sd, top = parse_lengths(text)
    sigma = math.sqrt(math.log1p((sd / mean) ** 2))
    mu = math.log(mean) - sigma * sigma / 2
    drawn = np.maximum(np.rint(np.random.default_rng(seed).lognormal(mu, sigma, SAMPLE)), 1).astype(np.int64)
    if top is not None:
        drawn = drawn[drawn <= top]
        if drawn.size == 0:
            raise InputError(f"--lengths {text!r}: no sentence is at most MAX tokens long")
    return drawn
