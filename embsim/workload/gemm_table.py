"""GEMM throughput measured by calibrate on a grid of shapes, looked up by shape.

Throughput is interpolated in log space over the measured (m, n, k) grid (multilinear
in log m, log n, log k; clamped at the grid's edges), so it follows the measured
small-dimension fall-off instead of a spec sheet. A batched GEMM is looked up as one
with batch x m rows. A dtype calibrate did not measure takes the measured dtype's table
(named in the compute label).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class GemmTable:
    axes: dict          # dtype -> (ms, ns, ks) sorted unique sizes
    log_rate: dict      # dtype -> array [len(ms), len(ns), len(ks)] of log FLOP/s (nan: not measured)

    @classmethod
    def from_points(cls, points) -> "GemmTable":
        axes, rates = {}, {}
        for dtype in sorted({p.dtype for p in points}):
            pts = [p for p in points if p.dtype == dtype]
            ms, ns, ks = (tuple(sorted({getattr(p, a) for p in pts})) for a in "mnk")
            grid = np.full((len(ms), len(ns), len(ks)), np.nan)
            for p in pts:
                grid[ms.index(p.m), ns.index(p.n), ks.index(p.k)] = np.log(p.flops_per_s)
            if np.isnan(grid).any():      # a hole in the grid: the mean of what was measured
                grid[np.isnan(grid)] = np.nanmean(grid)
            axes[dtype], rates[dtype] = (ms, ns, ks), grid
        return cls(axes, rates)

    def dtypes(self) -> tuple[str, ...]:
        return tuple(self.axes)

    def rate(self, dtype: str, m: int, n: int, k: int, batch: int = 1) -> float:
        """Measured FLOP/s of an (m x k) @ (k x n) product (`batch` of them)."""
        if dtype not in self.axes:
            dtype = "fp32" if "fp32" in self.axes else next(iter(self.axes))
        grid = self.log_rate[dtype]
        for axis, x in zip(self.axes[dtype], (m * batch, n, k)):
            grid = _interp_axis(grid, axis, x)
        return float(np.exp(grid))


def _interp_axis(grid: np.ndarray, axis: tuple, x: float) -> np.ndarray:
    """Linear interpolation in log(size) along the first axis of `grid`."""
    if len(axis) == 1:
        return grid[0]
    lx, la = np.log(max(x, 1)), np.log(np.asarray(axis, dtype=float))
    lx = min(max(lx, la[0]), la[-1])
    i = int(np.clip(np.searchsorted(la, lx) - 1, 0, len(axis) - 2))
    w = (lx - la[i]) / (la[i + 1] - la[i])
    return (1 - w) * grid[i] + w * grid[i + 1]
