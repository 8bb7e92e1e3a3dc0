"""Step time from 8 to 1024 GPUs (dgx-h100 nodes, per-GPU batch fixed) for the baseline
and the best strategies of docs/results.md, as one plot. Run from the repository root:

    .venv/bin/python benchmarks/results_scaling.py lstm-lm1b docs/results/scaling_lstm-lm1b.png
"""

from __future__ import annotations

import json
import sys

from embsim.engine.run import SimulationConfig, simulate
from embsim.report.plots import scaling_plot

GPUS = (8, 16, 32, 64, 128, 256, 512, 1024)
SERIES = ("allreduce/fifo", "allgather/fifo", "ps/fifo", "embrace/fifo", "embrace/embrace-2d", "fsdp/fifo")


def topology(gpus: int) -> str:
    return f"dgx-h100:1x{gpus}" if gpus <= 8 else f"dgx-h100:{gpus // 8}x8"


def main(model: str, png: str) -> None:
    series: dict[str, list[tuple[int, float]]] = {}
    sources = set()
    for label in SERIES:
        strategy, scheduler = label.split("/")
        for g in GPUS:
            r = simulate(SimulationConfig(topology=topology(g), model=model, strategy=strategy,
                                          scheduler=scheduler, iterations=3, efficiency_baseline=False))
            series.setdefault(label, []).append((g, r.step_time))
            sources.add(r.compute_source)
    scaling_plot(series, png, f"{model} on dgx-h100 nodes: simulated step time vs GPU count\n"
                 + "; ".join(sorted(sources)))
    out = {k: [[g, t * 1e3] for g, t in v] for k, v in series.items()}
    out["compute_source"] = sorted(sources)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
