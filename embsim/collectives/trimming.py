"""A small collective on a trimmed launch: NCCL runs fewer channels x threads than the
search graph holds (enqueue.cc), so the transfer takes longer than the model's bandwidth
formula assumes. Sits above both channels (what runs) and nccl_model (the formula)."""

from __future__ import annotations

from dataclasses import replace

from .channels import Graphs, runtime_fraction
from .nccl_model import bandwidth, graph_for


def trimmed_slowdown(op: str, nbytes: float, algo: str, proto: str, shape, graphs: Graphs,
                     consts) -> float:
    """How much longer the transfer takes on the trimmed launch than the model assumes.

    The trimmed launch is the model's bandwidth formula evaluated with the share of
    channels x threads that really run (in the search graph's channel units). Its caps
    (llMaxBw, per-channel LL128/Tree caps) still apply, so where a cap limits the full
    launch, losing channels costs less than proportionally.
    """
    frac = runtime_fraction(nbytes, algo, proto, shape.n_ranks, graphs)
    if frac >= 1.0:
        return 1.0
    full = bandwidth(op, algo, proto, shape, graphs, consts)
    g = graph_for(algo, graphs)
    field = {"Ring": "ring", "PAT": "ring", "Tree": "tree", "NVLS": "nvls", "NVLSTree": "nvls"}[algo]
    # NVLS needs two channels to run at all; keep the formula's (n-1)/n term at its
    # full-launch value and scale the channel count only through the bus bandwidth.
    channels = g.n_channels * frac
    if algo in ("NVLS", "NVLSTree"):
        return 1.0 / frac
    trimmed = bandwidth(op, algo, proto, shape, replace(graphs, **{field: replace(g, n_channels=channels)}), consts)
    if trimmed <= 0 or full <= 0:
        return 1.0 / frac
    return max(1.0, full / trimmed)
