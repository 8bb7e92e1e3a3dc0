"""Small numeric rules shared by several layers (no simulator imports here)."""

from __future__ import annotations

import math

import numpy as np

# a perfect point would make the log of an error undefined
ERROR_FLOOR = 1e-6


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


def geomean_abs(errors) -> float:
    """Geometric mean of |error| (the headline of every validation), NaN when empty."""
    errs = [max(abs(e), ERROR_FLOOR) for e in errors]
    return math.exp(sum(map(math.log, errs)) / len(errs)) if errs else float("nan")
