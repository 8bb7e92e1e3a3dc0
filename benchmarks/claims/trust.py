"""The resolution paragraph (<!-- trust:start/end -->): how far to trust a ranking, from
docs/validation.md's headlines; the gap below which the page calls an order "not resolved by
the model" is embsim.compare's TRAINING_MEAN_ERROR, which must be validation.md's training mean."""

from __future__ import annotations

from .data import validation
from .judging import RES, RESOLUTION, need
from .words import span


def trust() -> str:
    v = validation()
    need(abs(v["training"][0] / 100 - RESOLUTION) < 0.0005, "embsim.compare's TRAINING_MEAN_ERROR is validation.md's training mean")
    return (
        "**How far to trust a ranking.** The simulator's validation (docs/validation.md) puts its published training "
        f"throughputs at a mean |simulated/measured − 1| of {v['training'][0]:.1f} % (max {v['training'][1]:.1f} %, "
        f"{v['training'][2]} runs) and its collective curves at {v['curves'][0]:.1f} % mean (max {v['curves'][1]:.1f} %; "
        "`embsim validate --nccl-tests`). The curves nearest the H100 cluster (AWS p5, 16 nodes of 8 H100s) are "
        f"{span(v['p5'], '{:.1f}')} % off on average (AllGather, AlltoAll, AllReduce); no RTX 3090 run and no 16-GPU "
        "PCIe cluster is among the validation sets (the nearest collective curves, two RTX 2080 Ti without "
        f"peer-to-peer, are {span(v['2080ti'], '{:.0f}')} % off on AllReduce and AllGather). The only measured comparison "
        "of strategies on one setup, the CPU/gloo traces, puts allreduce, allgather and embrace within "
        f"{v['gloo']['bert-base']:.1f} (bert-base) and {v['gloo']['tiny-lm']:.1f} (tiny-lm) percentage points of each "
        f"other's error. So this page calls a ranking **not resolved by the model** where the steps differ by less "
        f"than {RES}: the mechanism behind such a gap is what the simulator does, but the order itself could flip on "
        f"real hardware. `results_figures.py` prints, per cell, how many rows sit within {RES} of the best.\n")
