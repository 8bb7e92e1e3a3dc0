"""Small numeric rules shared by several layers (no simulator imports here)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


def interp_loglog(sizes, times, nbytes: float) -> float:
    """A measured time at `nbytes`: log-log interpolation between measured sizes, flat
    below the smallest (latency-bound), constant bandwidth above the largest."""
    s, t = np.asarray(sizes, float), np.asarray(times, float)
    order = np.argsort(s)
    s, t = s[order], t[order]
    if nbytes <= s[0]:
        return float(t[0])
    if nbytes >= s[-1]:
        return float(t[-1] * nbytes / s[-1])
    return float(np.exp(np.interp(np.log(nbytes), np.log(s), np.log(t))))


@dataclass(frozen=True)
class ErrorSummary:
    """The headline of every validation: mean and max of |simulated/measured - 1|.

    The arithmetic mean, not a geometric one: a single near-perfect point would drag a
    geometric mean towards zero and hide the bad points of the same curve.
    """

    mean: float     # NaN when there are no points
    max: float
    n: int

    def within(self, mean_bound: float | None, max_bound: float | None) -> bool:
        if self.n == 0:
            return False
        return ((mean_bound is None or self.mean <= mean_bound)
                and (max_bound is None or self.max <= max_bound))


def error_summary(errors) -> ErrorSummary:
    errs = [abs(float(e)) for e in errors]
    if not errs:
        return ErrorSummary(math.nan, math.nan, 0)
    return ErrorSummary(sum(errs) / len(errs), max(errs), len(errs))
