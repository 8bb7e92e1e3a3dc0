"""Wall time per simulated iteration and events/s of `embsim simulate`.

    python benchmarks/simulate_speed.py [--iterations K]

Targets (issue: training-step simulation): 16x8 under 1 s per simulated iteration,
128x8 under 10 s, cost growing no faster than linearly with GPUs. Prints a table;
with --straggler the symmetry shortcut is partly off (two classes of GPUs). The last row
is a many-table recommender (Merlin's synthetic Jumbo: 1022 tables, 1097 lookup layers,
model parallel over 128 GPUs with its column slicing). 2026-12-04, `embsim simulate` of it
(YAML parse and the one-GPU baseline included): 84 s before tables of one config shared
their token statistics, 8.5 s after; here, 3 iterations in 2.7 s.
"""

from __future__ import annotations

import argparse
import time

from embsim.engine.run import SimulationConfig, simulate


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iterations", type=int, default=5)
    ap.add_argument("--straggler", action="store_true", help="make GPU 0 1.2x slower")
    args = ap.parse_args()
    print(f"{'model':<12} {'topology':>8} {'GPUs':>6} {'wall s':>8} {'s/iter':>8} "
          f"{'events':>8} {'events/s':>10} {'step ms':>9}")
    for model in ("bert-large", "lstm-lm1b"):
        for topo in ("1x8", "16x8", "128x8"):
            cfg = SimulationConfig(topology=topo, model=model, iterations=args.iterations,
                                   efficiency_baseline=False,
                                   straggler="gpu:0:1.2" if args.straggler else None)
            t0 = time.perf_counter()
            r = simulate(cfg)
            wall = time.perf_counter() - t0
            print(f"{model:<12} {topo:>8} {r.n_gpus:>6} {wall:>8.3f} {wall / args.iterations:>8.4f} "
                  f"{r.events:>8} {r.events / wall:>10.0f} {r.step_time * 1e3:>9.2f}")
    cfg = SimulationConfig(topology="dgx-a100:16x8", model="merlin-synthetic-jumbo", batch=512, dtype="tf32",
                           strategy="embrace", iterations=args.iterations, efficiency_baseline=False,
                           strategy_options={"shard": "tables", "placement": "memory_balanced",
                                             "column_slice_threshold": 1280 * 1048576, "input": "model"})
    t0 = time.perf_counter()
    r = simulate(cfg)
    wall = time.perf_counter() - t0
    print(f"{'jumbo (1022 tables)':<12} {'16x8':>8} {r.n_gpus:>6} {wall:>8.3f} {wall / args.iterations:>8.4f} "
          f"{r.events:>8} {r.events / wall:>10.0f} {r.step_time * 1e3:>9.2f}")


if __name__ == "__main__":
    main()
