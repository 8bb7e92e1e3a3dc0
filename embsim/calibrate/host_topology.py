"""A topology file for the calibrated CPU host, its links fitted to the measured sweep.

Each rank is a "device" on a `host` fabric. The link model is the ring/alpha-beta one:
    t(op, S) = steps(op, N) * alpha + bus_bytes(op, N, S) / B
with steps and bus-byte factors from the ring algorithm (as nccl-tests' busbw factors:
all_reduce 2(N-1)/N, all_gather / reduce_scatter / alltoall (N-1)/N, broadcast 1).
B is least-squares fitted on the large sizes (bandwidth-bound regime), then alpha on the
small sizes with B fixed (latency-bound regime). Device compute and memory figures are
measured here too (a fp32 matmul and a copy), not typed in.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import torch
import yaml

from embsim.atomic import atomic_write_text
from embsim.collectives.busbw import busbw_factor
from embsim.errors import InputError
from embsim.trace import CollectiveCurve

LARGE_BYTES = 1 << 20      # at and above: bandwidth regime
SMALL_BYTES = 64 << 10     # at and below: latency regime


def ring_steps(op: str, n: int) -> int:
    return 2 * (n - 1) if op == "all_reduce" else n - 1


def fit_links(curves: list[CollectiveCurve]) -> tuple[float, float]:
    """(bandwidth B/s, per-step latency s) fitted to every op's curve."""
    rows_large, rows_small = [], []
    for c in curves:
        for size, t in zip(c.sizes, c.median_s):
            row = (ring_steps(c.op, c.ranks), busbw_factor(c.op, c.ranks) * size, t)
            if size >= LARGE_BYTES:
                rows_large.append(row)
            if size <= SMALL_BYTES:
                rows_small.append(row)
    if not rows_large:                      # a --quick sweep: use its upper half
        every = sorted((r for c in curves for r in [(ring_steps(c.op, c.ranks),
                        busbw_factor(c.op, c.ranks) * s, t) for s, t in zip(c.sizes, c.median_s)]),
                       key=lambda r: r[1])
        rows_large = every[len(every) // 2:]
    a = np.array([[r[0], r[1]] for r in rows_large], dtype=float)
    t = np.array([r[2] for r in rows_large], dtype=float)
    w = 1.0 / t                              # relative error: every size counts alike
    (_, inv_bw), *_ = np.linalg.lstsq(a * w[:, None], t * w, rcond=None)
    inv_bw = float(inv_bw)
    if not np.isfinite(inv_bw) or inv_bw <= 0:
        # time not growing with size: the sweep measured noise (a loaded machine, a sweep
        # too short); a bandwidth made up from it would be written as if measured
        raise InputError(f"calibrate: the link fit is unusable (time per byte {inv_bw:.3g} s "
                         f"over {len(rows_large)} points: time does not grow with size); "
                         f"re-run on a quieter machine or with a larger --max-bytes")
    small = rows_small or rows_large
    steps = np.array([r[0] for r in small], dtype=float)
    resid = np.array([r[2] - r[1] * inv_bw for r in small], dtype=float)
    ws = 1.0 / np.array([r[2] for r in small])
    alpha = float(np.sum(ws ** 2 * steps * resid) / np.sum(ws ** 2 * steps ** 2))
    return 1.0 / inv_bw, max(alpha, 0.0)


def measure_device(device: torch.device) -> tuple[float, float]:
    """(TFLOPS of a 512^3 fp32 matmul, GB/s of a 64 MB copy) on one rank's thread."""
    a = torch.randn(512, 512, device=device)
    src = torch.empty(16 << 20, device=device)
    dst = torch.empty_like(src)

    def best(fn, n=5):
        times = []
        for _ in range(n):
            t0 = time.perf_counter()
            fn()
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            times.append(time.perf_counter() - t0)
        return min(times)
    tflops = 2 * 512 ** 3 / best(lambda: a @ a) / 1e12
    gbps = 2 * src.numel() * 4 / best(lambda: dst.copy_(src)) / 1e9   # read + write
    return tflops, gbps


def host_topology_doc(name: str, cpu_model: str, ranks: int, mem_gb: float, tflops: float,
                      mem_gbps: float, bandwidth: float, latency: float, trace_name: str,
                      interference: tuple[float, float] | None = None) -> dict:
    """The calibrated host as a topology document (embedded in the trace, or a file)."""
    doc = {
        "name": name,
        "description": (f"The calibrated CPU host ({cpu_model}): {ranks} gloo ranks, one thread "
                        f"each. Links fitted by embsim calibrate to the gloo sweep in {trace_name} "
                        "(ring alpha-beta least squares; host_latency_us is half a ring step, one link); compute and memory measured per rank "
                        "(fp32 matmul and copy; bf16_tflops and fp32_tflops both hold the fp32 figure)."
                        + (" fabric.interference / comm_interference: compute and all_reduce "
                           "slowdowns measured running together." if interference is not None else "")),
        "gpu": {"model": "cpu", "arch": 0, "count": ranks, "bf16_tflops": round(tflops, 5),
                "fp32_tflops": round(tflops, 5),
                "hbm_gb": round(mem_gb, 1), "hbm_gbps": round(mem_gbps, 2)},
        "fabric": {"kind": "host", "host_gbps": round(bandwidth / 1e9, 4),
                   # A ring step crosses two links (rank -> host -> rank): half each.
                   "host_latency_us": round(latency * 1e6 / 2, 3)},
        "nics": {"count": 0},
    }
    if interference is not None:
        # measured: a layer timed alone and beside a running all_reduce (calibrate/interference.py)
        doc["fabric"]["interference"] = round(interference[0], 4)
        doc["fabric"]["comm_interference"] = round(interference[1], 4)
    return doc


def write_host_topology(path: str | Path, doc: dict) -> Path:
    header = "# Written by `embsim calibrate`: the machine that was measured, not a preset.\n"
    return atomic_write_text(path, header + yaml.safe_dump(doc, sort_keys=False, width=100))
