"""Wall time of simulated nccl-tests sweeps (plans per second) at 8, 128 and 1024 ranks.

    .venv/bin/python benchmarks/nccl_tests_speed.py
"""

from __future__ import annotations

import time

from embsim.collectives import CollectiveModel
from embsim.collectives import nccl_tests as nt
from embsim.topology import load_topology

SPECS = ("dgx-h100:1x8", "dgx-h100:16x8", "dgx-h100:128x8")
OPS = ("all_reduce", "all_gather", "alltoall")


def main() -> None:
    sizes = nt.sweep_sizes(8, 8 << 30, 2)
    for spec in SPECS:
        topo = load_topology(spec)
        for op in OPS:
            model = CollectiveModel(topo)
            t0 = time.perf_counter()
            rows = nt.run(model, op, sizes)
            cold = time.perf_counter() - t0
            t0 = time.perf_counter()
            nt.run(model, op, sizes)
            warm = time.perf_counter() - t0
            print(f"{spec:<16} {topo.n_gpus:>5} ranks {op:<11} {len(rows):>3} plans  "
                  f"cold {cold:7.3f} s ({len(rows) / cold:9.1f} plans/s)  cached {warm:7.4f} s")


if __name__ == "__main__":
    main()
