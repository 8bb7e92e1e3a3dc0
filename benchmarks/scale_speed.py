"""Wall time and peak memory of `embsim simulate` from the command line, as a user runs it,
for every strategy at 16x8, 128x8, 512x8 and 2048x8 GPUs (dgx-h100), every scheduler at
2048x8, and 128x8 with every GPU distinct; then the growth exponent of wall time and
memory between 512x8 and 2048x8 (1.0 = linear in the GPU count).

    python benchmarks/scale_speed.py [--sizes 16x8,128x8] [--iterations 2] [--quick]

Each run is its own process (start-up included); peak RSS is that process's ru_maxrss.
Targets (issue 13): 2048x8 under 10 s and 1.5 GB for every strategy and scheduler, 128x8
under 2 s, 128x8 all-distinct under 15 s for 4 iterations, growth at most linear.

Then (not with --quick) a recommender at scale: Merlin's synthetic jumbo model (1,022
tables; 742 collectives a step under allreduce/fifo) at 2048x8 for every strategy under
fifo, and under ByteScheduler's priority (10^5 partitions a step) at 128x8. Target: under
60 s and 1.5 GB each. Measured 2026-12-06 (thirtieth session) on 2 cores (others' work beside
it): allreduce 3.3 s / 0.44 GB, allgather 3.5 s / 0.45 GB, s2reducer 3.7 s / 0.43 GB, embrace
4.8 s / 0.52 GB, ps 10.3 s / 2.6 GB (memory over target); priority at 128x8 14.8 s / 0.74 GB.
Then (thirty-first session, same day and cores) ps 7.7-12 s / 0.64 GB, priority at 128x8
16-18 s / 0.72 GB (unchanged, the machine busier): ps's node copies (1,022 tables x push and
pull, ~27,000 entries each at 2,048 nodes) no longer hold their own link ids and bytes, nor a
second "normalised" copy of both (~0.9 GB each); ps's peak is now the servers' row shares
while it plans (workload.sharding).
Earlier the same day: allreduce 15 s, allgather 32 s, ps 40 s, embrace 52 s, priority at 128x8
~200 s (before partitions were one family and a lone transfer's link bytes were booked as
scalars); before that day's runtime changes: allreduce 55 s / 1.46 GB, ps 83 s, and priority
at 2048x8 was killed at 14 GB.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import subprocess
import sys
import time

STRATEGIES = ("allreduce", "allgather", "ps", "s2reducer", "embrace")
SCHEDULERS = {"priority": STRATEGIES, "embrace-2d": ("allgather", "ps", "embrace")}
SIZES = ("16x8", "128x8", "512x8", "2048x8")

# Every GPU its own class without --jitter on this build: per-GPU factors through the
# engine's automatic grouping (embsim.engine.classes.group_ranks), in a fresh process.
DISTINCT_SNIPPET = """
import sys, numpy as np
import embsim.engine.run as run
from embsim.engine.classes import group_ranks
f = 1.0 + 0.05 * np.random.default_rng(0).random(int(sys.argv[2]))
run.rank_classes = lambda n, gpn, s: group_ranks(f[:n]) if n == f.size else group_ranks(np.ones(n))
from embsim.cli import main
sys.exit(main(["simulate", "--topology", sys.argv[1], "--iterations", "4", "--strategy", sys.argv[3], "--json"]))
"""


def embsim_command() -> list[str]:
    exe = shutil.which("embsim", path=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    return [exe] if exe else [sys.executable, "-m", "embsim"]


def measure(cmd: list[str]) -> tuple[float, float, int]:
    """(wall s, peak RSS GB, exit status) of one child process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        sys.stderr.write(proc.stderr.read().decode()[-2000:])
    proc.stderr.close()
    return wall, usage.ru_maxrss * 1024 / 1e9, proc.returncode   # ru_maxrss is KiB on Linux


def has_jitter(embsim: list[str]) -> bool:
    out = subprocess.run(embsim + ["simulate", "--help"], capture_output=True, text=True).stdout
    return "--jitter" in out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default=",".join(SIZES))
    ap.add_argument("--iterations", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="strategies only, no scheduler rows")
    args = ap.parse_args()
    sizes = args.sizes.split(",")
    embsim = embsim_command()
    rows: dict[tuple[str, str, str], tuple[float, float, int]] = {}
    print(f"{'strategy':<10} {'scheduler':<11} {'topology':>8} {'GPUs':>6} {'wall s':>7} {'peak GB':>8}")

    def run(strategy: str, scheduler: str, size: str, cmd: list[str], model: str = "") -> None:
        wall, rss, rc = measure(cmd)
        rows[(strategy, scheduler, size) + ((model,) if model else ())] = (wall, rss, rc)
        n, g = (int(x) for x in size.split("x"))
        flag = "" if rc == 0 else f"  FAILED (exit {rc})"
        print(f"{strategy:<10} {scheduler:<11} {size:>8} {n * g:>6} {wall:>7.2f} {rss:>8.3f}{flag}", flush=True)

    for strategy in STRATEGIES:
        for size in sizes:
            run(strategy, "fifo", size, embsim + ["simulate", "--topology", size, "--strategy", strategy,
                                                   "--iterations", str(args.iterations), "--json"])
    if not args.quick:
        big = sizes[-1]
        for scheduler, strategies in SCHEDULERS.items():
            for strategy in strategies:
                run(strategy, scheduler, big, embsim + ["simulate", "--topology", big, "--strategy", strategy,
                                                        "--scheduler", scheduler, "--iterations",
                                                        str(args.iterations), "--json"])
    jitter = has_jitter(embsim)
    how = "--jitter normal:0.05" if jitter else "per-GPU factors via group_ranks"
    print(f"\n128x8, every GPU distinct ({how}), 4 iterations:")
    for strategy in STRATEGIES:
        if jitter:
            cmd = embsim + ["simulate", "--topology", "128x8", "--strategy", strategy, "--iterations", "4",
                            "--jitter", "normal:0.05", "--json"]
        else:
            cmd = [sys.executable, "-c", DISTINCT_SNIPPET, "128x8", "1024", strategy]
        run(strategy, "distinct", "128x8", cmd)

    if not args.quick:
        print("\nmerlin-synthetic-jumbo (recommender at scale), 2 iterations:")
        jumbo = ["--model", "merlin-synthetic-jumbo", "--iterations", "2", "--json"]
        for strategy in STRATEGIES:
            run(strategy, "fifo", "2048x8", embsim + ["simulate", "--topology", "2048x8",
                                                       "--strategy", strategy] + jumbo, "jumbo")
        run("allreduce", "priority", "128x8", embsim + ["simulate", "--topology", "128x8",
                                                         "--scheduler", "priority"] + jumbo, "jumbo")

    if "512x8" in sizes and "2048x8" in sizes:
        print("\ngrowth 512x8 -> 2048x8 (exponent of GPU count; 1.0 = linear):")
        for strategy in STRATEGIES:
            (w1, m1, _), (w2, m2, _) = rows[(strategy, "fifo", "512x8")], rows[(strategy, "fifo", "2048x8")]
            print(f"{strategy:<10} wall {math.log(w2 / w1) / math.log(4):5.2f}   "
                  f"memory {math.log(m2 / m1) / math.log(4):5.2f}")


if __name__ == "__main__":
    main()
