"""Fit the net proxy's hand-off per network crossing (multinode.PROXY_HANDOFF_US) on ONE curve.

    python -m embsim.collectives.fit_net

The curve is the Nebius 2x8 H100 InfiniBand AllReduce (validation_data); the value
minimising the mean |simulated/measured - 1| over its Tree/LL and Tree/LL128 points
(sizes >= 64 KiB) is found on a 0.5 µs grid. One value serves every protocol; every other
multi-node curve is a prediction.
"""

from __future__ import annotations

from . import multinode
from .fitting import grid_minimum, mean_curve_error, patched
from .validation import DATA_DIR

CURVE = DATA_DIR / "nebius-h100-2node-allreduce.yaml"
GRID = [0.5 * i for i in range(0, 41)]


def mean_error(value: float) -> float:
    """Mean |error| of the curve's Tree points >= 64 KiB with this hand-off cost."""
    with patched(multinode, "PROXY_HANDOFF_US", value):
        return mean_curve_error(CURVE, lambda p: p.algo == "Tree")


def fit() -> float:
    return grid_minimum(GRID, mean_error)


if __name__ == "__main__":
    from ..toolargs import no_arguments
    no_arguments("embsim.collectives.fit_net", __doc__)
    print(f"proxy hand-off: {fit()} µs per network crossing (shipped: {multinode.PROXY_HANDOFF_US})")
