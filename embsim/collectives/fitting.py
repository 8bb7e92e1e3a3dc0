"""What every collective fit does: set one model constant, score ONE curve, keep the best.

fit_sync, fit_p2p and fit_net each fit a single named constant on a single named curve;
only the constant, the curve, the grid and which of its points count differ.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

from .validation import MIN_SIZE, PointError, curve_errors


@contextmanager
def patched(module: ModuleType, name: str, value: Any):
    """`module.name` = value for the duration (the model reads it at call time)."""
    saved = getattr(module, name)
    setattr(module, name, value)
    try:
        yield
    finally:
        setattr(module, name, saved)


def mean_curve_error(curve: Path, counts: Callable[[PointError], bool] = lambda p: True) -> float:
    """Mean |simulated/measured - 1| over the curve's points >= 64 KiB that `counts` keeps
    (inf when none does)."""
    errs = [abs(p.error) for p in curve_errors(curve).points if p.size >= MIN_SIZE and counts(p)]
    return sum(errs) / len(errs) if errs else float("inf")


def grid_minimum(grid: Iterable, error: Callable[[Any], float]):
    """The grid value with the least error; ties go to the smaller value."""
    return min(grid, key=lambda v: (error(v), v))
