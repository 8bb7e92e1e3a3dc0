"""Fit the per-step synchronisation cost of each protocol (pipeline.SYNC_US) on ONE curve.

    python -m embsim.collectives.fit_sync

The curve is the Azure ND A100 v4 AllReduce (NCCL 2.18.5, validation_data). For each
protocol, the cost minimising the mean |simulated/measured - 1| over the curve's points
(sizes >= 64 KiB) where NCCL runs that protocol is found on a 0.1 µs grid: LL's per-step
cost, and Simple's P2P-read round trip (on top of NCCL's per-hop latency, which every
Simple step pays and which is not fitted). Every other curve is a prediction. LL128 is not
fitted: its A100 points (2-16 MiB, 15 steps each) run at ~0.66 of NCCL's LL128 bandwidth
at every size, a rate that no per-step cost reproduces (the candidates checked against NCCL's
source: ll128_rate.py and collective_notes.md).
"""

from __future__ import annotations

from types import MappingProxyType

from . import pipeline
from .fitting import grid_minimum, mean_curve_error, patched
from .validation import DATA_DIR

CURVE = DATA_DIR / "azure-nd-a100-v4-allreduce.yaml"
FITTED = ("LL", "Simple")
GRID = [round(0.1 * i, 1) for i in range(0, 101)]


def _mean_error(proto: str, value: float, base: dict) -> float:
    with patched(pipeline, "SYNC_US", MappingProxyType({**base, proto: value})):
        return mean_curve_error(CURVE, lambda p: p.proto == proto)


def fit() -> dict[str, float]:
    base = dict(pipeline.SYNC_US)
    out = {}
    for proto in FITTED:
        best = grid_minimum(GRID, lambda v: _mean_error(proto, v, base))
        out[proto] = best
        base[proto] = best
    return out


if __name__ == "__main__":
    from ..toolargs import no_arguments
    no_arguments("embsim.collectives.fit_sync", __doc__)
    for proto, value in fit().items():
        print(f"{proto}: {value} µs per step (shipped: {pipeline.SYNC_US[proto]})")
