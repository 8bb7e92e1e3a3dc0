"""How fast the flow-level network recomputes max-min rates.

Keeps N transfers in flight over 8192 links (each touching a random half of them, with
random per-link bytes, so bottlenecks differ) and replaces each one as it completes;
every start or end instant triggers one vectorised recomputation. Prints
recomputations per second of wall time for N = 1, 10, 50.

    .venv/bin/python benchmarks/network_speed.py [--links 8192] [--touch 4096] [--events 200]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import simpy

from embsim.network import Demand, Network


def measure(concurrent: int, n_links: int, touch: int, events: int, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    env = simpy.Environment()
    capacity = rng.uniform(25e9, 450e9, n_links)  # NIC-to-NVLink range of B/s
    net = Network(env, capacity)
    pool = [
        Demand(
            links=rng.choice(n_links, size=touch, replace=False),
            bytes=rng.uniform(1e6, 1e8, touch),
        )
        for _ in range(2 * concurrent + 8)
    ]

    def stream(index: int):
        k = index
        while True:
            yield net.transfer(pool[k % len(pool)])
            k += concurrent

    for i in range(concurrent):
        env.process(stream(i))
    start = time.perf_counter()
    while net.recomputations < events:
        env.step()
    wall = time.perf_counter() - start
    return {
        "concurrent": concurrent,
        "recomputations": net.recomputations,
        "wall_s": wall,
        "per_s": net.recomputations / wall,
        "ms_each": 1e3 * wall / net.recomputations,
        "rounds_each": net.filling_rounds / net.recomputations,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--links", type=int, default=8192)
    parser.add_argument("--touch", type=int, default=4096, help="links per transfer")
    parser.add_argument("--events", type=int, default=200, help="recomputations to time")
    parser.add_argument("--concurrent", type=int, nargs="+", default=[1, 10, 50])
    args = parser.parse_args()
    print(f"{args.links} links, {args.touch} links per transfer, {args.events} recomputations")
    print(f"{'in flight':>10} {'recomp/s':>10} {'ms each':>9} {'fill rounds':>12}")
    for n in args.concurrent:
        r = measure(n, args.links, args.touch, args.events)
        print(f"{n:>10} {r['per_s']:>10.0f} {r['ms_each']:>9.3f} {r['rounds_each']:>12.1f}")


if __name__ == "__main__":
    main()
