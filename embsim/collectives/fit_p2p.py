"""Fit the p2p copy rate per fabric warp (p2p.P2P_WARP_GBPS) on ONE point.

    python -m embsim.collectives.fit_p2p

The point is the 4-GPU H100 AlltoAll of NVIDIA/nccl#2169 (NCCL 2.30.4, 500 MB per rank,
1174.14 µs; validation_data/single-points.yaml): on 4 ranks NCCL splits each peer's op over
8 channels, one work per channel, so 10 send warps per channel write across NVLink and the
op runs below the link rate. The rate that makes the simulated time equal the measured one
is found by bisection and rounded to 0.01 GB/s. Every other p2p point is a prediction.
"""

from __future__ import annotations

from contextlib import contextmanager

from . import p2p
from .validation import DATA_DIR, single_point_errors

POINTS = DATA_DIR / "single-points.yaml"
SOURCE = "github.com/NVIDIA/nccl/issues/2169"


@contextmanager
def _rate(value: float):
    saved = p2p.P2P_WARP_GBPS
    p2p.P2P_WARP_GBPS = value
    try:
        yield
    finally:
        p2p.P2P_WARP_GBPS = saved


def _error(value: float) -> float:
    with _rate(value):
        (c,) = [c for c in single_point_errors(POINTS) if SOURCE in _sources()[c.name]]
    return c.points[0].error


def _sources() -> dict[str, str]:
    from embsim.yamlio import load_yaml
    pts = load_yaml(POINTS).data["points"]
    return {f"single-points[{i}]": str(p.get("source", "")) for i, p in enumerate(pts)}


def fit() -> float:
    lo, hi = 0.1, 20.0              # GB/s per warp: error > 0 (too slow) at lo, < 0 at hi
    for _ in range(60):
        mid = (lo + hi) / 2
        if _error(mid) > 0:
            lo = mid
        else:
            hi = mid
    return round((lo + hi) / 2, 2)


if __name__ == "__main__":
    print(f"P2P_WARP_GBPS: {fit()} GB/s per warp (shipped: {p2p.P2P_WARP_GBPS})")
