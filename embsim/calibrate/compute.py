"""Measure what the kernel compute model needs on this device (trace `compute:`):
GEMM throughput over a grid of shapes per dtype, streaming and random-row gather
bandwidth, per-op launch overhead, and one LSTM timestep forward and backward.

Every rank measures at once (as in training, ranks share the machine); rank 0's numbers
go in the trace.
"""

from __future__ import annotations

import itertools

import torch

from embsim.trace.compute import ComputeMeasurement, GemmPoint, LstmStep

from .timing import time_phases

# Shapes: rows m (tokens or a recurrent batch) from small to large, square-ish weights.
GRID_CPU = {"m": (16, 128, 1024), "n": (256, 1024), "k": (256, 1024)}
GRID_CPU_QUICK = {"m": (32, 256), "n": (256, 1024), "k": (256,)}
GRID_GPU = {"m": (64, 128, 512, 2048, 8192), "n": (1024, 4096, 16384), "k": (1024, 4096)}
LAUNCH_OPS = 200


def _dtypes(device: torch.device) -> dict:
    """dtype name -> (torch dtype, allow_tf32). CPU: FP32 only (no tensor cores)."""
    if device.type != "cuda":
        return {"fp32": (torch.float32, False)}
    out = {"fp32": (torch.float32, False), "tf32": (torch.float32, True), "fp16": (torch.float16, False)}
    if torch.cuda.is_bf16_supported():
        out["bf16"] = (torch.bfloat16, False)
    return out


def measure_gemms(device: torch.device, quick: bool, warmup: int, reps: int) -> list[GemmPoint]:
    grid = GRID_GPU if device.type == "cuda" else (GRID_CPU_QUICK if quick else GRID_CPU)
    points = []
    for name, (dtype, tf32) in _dtypes(device).items():
        if device.type == "cuda":
            torch.backends.cuda.matmul.allow_tf32 = tf32
        for m, n, k in itertools.product(grid["m"], grid["n"], grid["k"]):
            a = torch.randn(m, k, device=device, dtype=dtype)
            b = torch.randn(k, n, device=device, dtype=dtype)

            def step(w, a=a, b=b):
                marks = [w.mark()]
                torch.mm(a, b)
                marks.append(w.mark())
                return marks
            stat, = time_phases(step, device, warmup, reps)
            points.append(GemmPoint(name, m, n, k, stat.median_s))
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
    return points


def measure_stream_gather(device: torch.device, quick: bool, warmup: int, reps: int) -> tuple[float, float]:
    """(copy, gather) bandwidth in GB/s of bytes read + written."""
    elems = (1 << 28) if device.type == "cuda" else ((1 << 22) if quick else (1 << 24))
    src = torch.randn(elems, device=device)
    dst = torch.empty_like(src)
    dim = 64
    table = src.view(-1, dim)
    rows = table.shape[0] // 4
    idx = torch.randint(0, table.shape[0], (rows,), device=device)

    def step(w):
        marks = [w.mark()]
        dst.copy_(src)
        marks.append(w.mark())
        torch.index_select(table, 0, idx)
        marks.append(w.mark())
        return marks
    copy, gather = time_phases(step, device, warmup, reps)
    return (2 * elems * 4 / copy.median_s / 1e9,
            2 * rows * dim * 4 / gather.median_s / 1e9)


def measure_launch(device: torch.device, warmup: int, reps: int) -> float:
    """Seconds per tiny op issued back to back (framework dispatch + launch)."""
    x = torch.zeros(16, device=device)

    def step(w):
        marks = [w.mark()]
        for _ in range(LAUNCH_OPS):
            x.add_(1.0)
        marks.append(w.mark())
        return marks
    stat, = time_phases(step, device, warmup, reps)
    return stat.median_s / LAUNCH_OPS


def measure_lstm_step(device: torch.device, quick: bool, warmup: int, reps: int) -> LstmStep:
    """One nn.LSTM layer (input = hidden) over a few timesteps, forward and backward,
    per timestep: the kernel model subtracts its own estimate to get the per-step
    overhead of the library's recurrent kernels on this device."""
    batch, hidden, steps = (32, 256, 8) if (quick or device.type != "cuda") else (128, 1024, 25)
    lstm = torch.nn.LSTM(hidden, hidden).to(device)
    x = torch.randn(steps, batch, hidden, device=device, requires_grad=True)

    def step(w):
        marks = [w.mark()]
        out, _ = lstm(x)
        marks.append(w.mark())
        out.sum().backward()
        marks.append(w.mark())
        return marks
    fwd, bwd = time_phases(step, device, warmup, reps)
    return LstmStep(batch, hidden, fwd.median_s / steps, bwd.median_s / steps, steps)


def measure_compute(device: torch.device, quick: bool, warmup: int, reps: int) -> ComputeMeasurement:
    gemm = measure_gemms(device, quick, warmup, reps)
    stream, gather = measure_stream_gather(device, quick, warmup, reps)
    return ComputeMeasurement(gemm=tuple(gemm), stream_gbps=stream, gather_gbps=gather,
                              launch_s=measure_launch(device, warmup, reps),
                              lstm=measure_lstm_step(device, quick, warmup, reps))
