"""Fit the batch time of a p2p copy warp (p2p.P2P_BATCH_CYCLES) on ONE curve.

    python -m embsim.collectives.fit_p2p

The curve is the 8-GPU H100 SendRecv of xxrjun/nccl-tests-cluster (NCCL 2.29.2,
validation_data/h100-slurm-1x8-sendrecv.yaml): at 32-256 MiB NCCL runs each op on 4, 8
and 16 channels of 10 send warps that write across NVLink, so the rate is the warps' and
the steps between the channel counts pin the per-warp rate. The value minimising the mean
|simulated/measured - 1| over the curve's points (sizes >= 64 KiB) on a 10-cycle grid is
kept. Every other p2p point and curve is a prediction.
"""

from __future__ import annotations

from . import p2p
from .fitting import grid_minimum, mean_curve_error, patched
from .validation import DATA_DIR

CURVE = DATA_DIR / "h100-slurm-1x8-sendrecv.yaml"
GRID = range(1000, 8001, 10)


def mean_error(value: float) -> float:
    with patched(p2p, "P2P_BATCH_CYCLES", value):
        return mean_curve_error(CURVE)


def fit() -> int:
    return grid_minimum(GRID, mean_error)


if __name__ == "__main__":
    from ..toolargs import no_arguments
    no_arguments("embsim.collectives.fit_p2p", __doc__)
    best = fit()
    print(f"P2P_BATCH_CYCLES: {best} cycles (mean |error| {mean_error(best):.2%} on {CURVE.name}; "
          f"shipped: {p2p.P2P_BATCH_CYCLES})")
