"""Per-GPU compute-time variation, so synchronous data parallelism waits for its slowest GPU.

`--jitter` forms (each GPU's compute is multiplied by its factor):
    normal:CV         factor ~ Normal(1, CV)
    lognormal:SIGMA   factor ~ LogNormal with mean 1 and log-sd SIGMA
    uniform:H         factor ~ Uniform(1 - H, 1 + H)
    seq:W             each GPU's padded sequence length ~ Uniform(seq - W/2, seq + W/2)
                      (bucketed translation batches); its factor is the compute model's
                      time at that length over the time at --seq
    trace             the --trace's measured rank skew: its slowest rank, slower by the
                      measured factor
Deterministic: GPU i of N gets the distribution's expected i-th order statistic (Blom's
(i + 1 - 0.375) / (N + 0.25) quantile), assigned to ranks in a permutation drawn from
--seed; so N GPUs wait for the expected slowest of N, and one GPU runs at the median.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Callable

import numpy as np

from ..errors import InputError
from .simulation import RankClass

FORMS = ("normal", "lognormal", "uniform", "seq", "trace")
MIN_FACTOR = 0.1


def parse_jitter(text: str | None) -> tuple[str, float] | None:
    if not text:
        return None
    kind, _, value = text.partition(":")
    if kind not in FORMS:
        raise InputError(f"--jitter {text!r}: form must be one of {', '.join(f + ':X' for f in FORMS[:-1])} or trace")
    if kind == "trace":
        if value:
            raise InputError(f"--jitter {text!r}: 'trace' takes no value")
        return kind, 0.0
    try:
        x = float(value)
    except ValueError:
        raise InputError(f"--jitter {text!r}: expected {kind}:NUMBER") from None
    if not (x >= 0 and math.isfinite(x)) or (kind == "uniform" and x >= 1):
        raise InputError(f"--jitter {text!r}: the spread must be >= 0{' and < 1' if kind == 'uniform' else ''}")
    return kind, x


def quantiles(n: int) -> np.ndarray:
    """Expected order statistics' quantiles of n draws (Blom 1958)."""
    return (np.arange(n) + 1 - 0.375) / (n + 0.25)


def jitter_factors(text: str | None, n_gpus: int, seed: int, seq: int | None = None,
                   compute_at_seq: Callable[[int], float] | None = None,
                   trace_skew: float | None = None) -> np.ndarray:
    """Per-rank compute factors (ones without jitter)."""
    spec = parse_jitter(text)
    if spec is None or n_gpus < 1:
        return np.ones(n_gpus)
    kind, x = spec
    if kind == "trace":
        out = np.ones(n_gpus)
        if trace_skew is None:
            raise InputError("--jitter trace: needs a --trace with a measured rank skew")
        if n_gpus > 1:
            out[-1] = trace_skew
        return out
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
    perm = np.random.default_rng(seed).permutation(n_gpus)
    return f[perm]


def with_jitter(classes: tuple[RankClass, ...], factors: np.ndarray) -> tuple[RankClass, ...]:
    """Split the rank classes so every rank's slowdown includes its jitter factor; ranks
    with equal slowdowns stay one class (the engine simulates one stream per class)."""
    if np.all(factors == 1.0):
        return classes
    groups: dict[float, list[int]] = {}
    for c in classes:
        for r in c.ranks:
            groups.setdefault(float(c.slowdown * factors[r]), []).append(r)
    return tuple(RankClass(f"jitter-{i}" if s != 1.0 else "all", tuple(sorted(ranks)), s)
                 for i, (s, ranks) in enumerate(sorted(groups.items())))
