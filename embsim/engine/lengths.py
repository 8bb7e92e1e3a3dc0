"""Sample lengths when no corpus file is at hand, `--lengths`:
    NAME                 a measured length histogram shipped with embsim
                         (embsim/workload/datasets/NAME.yaml, e.g. wikipedia: BERT's
                         pre-training samples at max_seq_length 512)
    lognormal:MEAN:SD[:MAX]  a published mean and standard deviation of tokens per sentence

For the log-normal, MEAN and SD are the corpus's published mean and standard deviation of
tokens per sentence; the log-normal with those moments (sigma^2 = ln(1 + (SD/MEAN)^2),
mu = ln MEAN - sigma^2 / 2) stands for it, the usual shape of sentence-length
distributions (right-skewed, positive). MAX drops longer sentences, as a training script's
length filter does. SAMPLE sentences are drawn with the run's --seed (deterministic), rounded
to whole tokens, at least one; a named histogram is sampled the same way for --jitter's
corpus forms, and used exactly by --padding (embsim.workload.padding).
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import InputError
from ..workload.length_data import list_datasets, load_histogram

FORMS = ("lognormal",)
SAMPLE = 200_000


def parse_lengths(text: str | None) -> tuple | None:
    """("dataset", NAME) or ("lognormal", MEAN, SD, MAX or None); None without --lengths."""
    if not text:
        return None
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
    return kind, mean, sd, top


def drawn_lengths(text: str, seed: int) -> np.ndarray:
    """SAMPLE sentence lengths (tokens) from the --lengths distribution."""
    parsed = parse_lengths(text)
    rng = np.random.default_rng(seed)
    if parsed[0] == "dataset":
        probs = load_histogram(parsed[1]).probabilities(load_histogram(parsed[1]).max_length)
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
