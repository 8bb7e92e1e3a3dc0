"""Build the kernel model's GpuCompute for a GPU: from a topology's gpu: section
(spec-sheet peaks and published measurements, each cited in the preset) or from a
calibration trace's measured table (calibrate's compute: section).

    gpu = for_gpu(topology.node.gpu)
    gpu = from_measurement(topology.node.gpu, trace.compute, "traces/x.yaml")
"""

from __future__ import annotations

from typing import Any

from .gpu_props import (A100_L2_MEASURED_BPS, A100_L2_SPEC_BPS, A100_TILE_SIDE_FULL,
                        DEFAULT_GEMM_FRACTION, DEFAULT_HBM_FRACTION, DEFAULT_KERNEL_GAP_S,
                        FRAMEWORK_STREAM_EFFICIENCY, MECHANISM_EFFICIENCY, GpuCompute)
from .recurrent_fit import recurrent_step_s

__all__ = ["GpuCompute", "for_gpu", "from_measurement", "measured_step_overhead"]


def for_gpu(gpu: Any) -> GpuCompute:
    """From a topology GpuSpec (or any object with its fields)."""
    gaps = []
    peak16 = float(gpu.bf16_tflops) * 1e12
    rates = {k: float(v) * 1e12 for k, v in (getattr(gpu, "tensor_tflops", ()) or ())}
    is_cpu = getattr(gpu, "arch", 1) == 0
    fp32 = getattr(gpu, "fp32_tflops", None)
    if is_cpu:
        # a CPU has no tensor cores: every dtype at its measured matmul rate, and --dtype
        # changes the bytes moved, not the matmul rate: the label says so
        rate = float(fp32 or gpu.bf16_tflops) * 1e12
        rates = {k: rate for k in ("fp32", "tf32", "bf16", "fp16")}
        gaps.append("per-dtype matmul rates (the measured one used for fp32, tf32, bf16 and fp16)")
    else:
        if not rates:
            gaps.append("per-dtype tensor rates (bf16_tflops used for 16-bit)")
            rates = {"bf16": peak16, "fp16": peak16}
        if fp32:
            rates["fp32"] = float(fp32) * 1e12
        else:
            gaps.append("fp32 CUDA-core rate (1/16 of bf16 used)")
            rates["fp32"] = peak16 / 16
    sms = getattr(gpu, "sms", None)
    if sms is None and not is_cpu:
        gaps.append("SM count (no wave quantisation)")
    gemm_fraction, fractions = _gemm_fractions(gpu, rates, is_cpu, gaps)
    borrowed = getattr(gpu, "fractions_from", None)
    if borrowed:
        # another GPU's measurements stand in for this one's (topology gpu.fractions_from)
        gaps.append(f"{BORROWED_GAP}({borrowed} figures used)")
    hbm_fraction = getattr(gpu, "hbm_fraction", None)
    if hbm_fraction is None:
        gaps.append(f"measured memory bandwidth ({DEFAULT_HBM_FRACTION} of peak used)")
        hbm_fraction = DEFAULT_HBM_FRACTION
    tile_side = {}
    l2_bps = _l2_bps(gpu)
    for key, rate in rates.items():
        if sms and l2_bps:
            # per-SM FLOP/clk over per-SM L2 B/clk: the clock and SM count cancel
            tile_side[key] = 2 * rate / l2_bps * _elem_scale(key)
        else:
            tile_side[key] = A100_TILE_SIDE_FULL if key != "fp32" else 0.0
    if not is_cpu and not l2_bps:
        gaps.append("L2 bandwidth (A100's tile-intensity threshold used)")
    steps = {} if is_cpu else _recurrent_steps(rates)
    step16 = steps.get("fp16", steps.get("bf16", 0.0))
    if not is_cpu and getattr(gpu, "arch", None) != 70:
        # the fit's own GPU (Volta GV100) has the data; every other GPU derives it
        per_dtype = ", ".join(f"{k} {v * 1e6:.0f}" for k, v in steps.items())
        gaps.append(f"LSTM step (DeepBench V100 fit scaled by tensor rate: {per_dtype} µs/step used)")
    return GpuCompute(name=gpu.model, rates=rates, hbm_bps=float(gpu.hbm_gbps) * 1e9, sms=sms,
               gemm_fraction=float(gemm_fraction), hbm_fraction=float(hbm_fraction),
               tile_side_full=tile_side, gaps=tuple(gaps), synchronous=is_cpu,
               kernel_gap_s=0.0 if is_cpu else DEFAULT_KERNEL_GAP_S,
               recurrent_step_s=step16, recurrent_steps=steps,
               stream_efficiency=1.0 if is_cpu else FRAMEWORK_STREAM_EFFICIENCY,
               mechanism_efficiency={} if is_cpu else dict(MECHANISM_EFFICIENCY),
               gemm_fractions=fractions, arch=getattr(gpu, "arch", None))


# the gap naming the dtypes without their own GEMM fraction; a run's label keeps its own dtype
GEMM_DTYPE_GAP = "measured GEMM efficiency per dtype for "
# the gap of a GPU whose measured fractions are another GPU's (gpu.fractions_from); it starts
# "measured ", so a calibration trace's measurements drop it as they drop the defaults' gaps
BORROWED_GAP = "measured GEMM and memory efficiency "


def _gemm_fractions(gpu: Any, rates: dict, is_cpu: bool, gaps: list) -> tuple[float, dict]:
    """(the single large-GEMM fraction, {dtype: its own measured fraction}); a dtype the
    GPU runs without its own figure is named in `gaps` with the figure it uses instead."""
    single = getattr(gpu, "gemm_fraction", None)
    fractions = {k: float(v) for k, v in (getattr(gpu, "gemm_fractions", ()) or ())}
    if single is None and not fractions:
        gaps.append(f"measured GEMM efficiency ({DEFAULT_GEMM_FRACTION} used)")
        return DEFAULT_GEMM_FRACTION, {}
    fallback = float(single) if single is not None else DEFAULT_GEMM_FRACTION
    missing = [k for k in rates if k not in fractions]
    if is_cpu or not missing:
        pass
    elif not fractions:
        gaps.append(f"measured GEMM efficiency per dtype (one {fallback:g} for every dtype)")
    else:
        gaps.append(f"{GEMM_DTYPE_GAP}{', '.join(missing)} ({fallback:g} used)")
    return fallback, fractions


def _l2_bps(gpu: Any) -> float | None:
    """L2 -> SM bandwidth on the whitepaper basis the tile threshold is defined on: the
    published B/clk x clock, else a measured figure scaled by A100's whitepaper/measured
    ratio (embsim.workload.gpu_props), else None."""
    l2, clock = getattr(gpu, "l2_bytes_per_clk", None), getattr(gpu, "clock_mhz", None)
    if l2 and clock:
        return float(l2) * float(clock) * 1e6
    measured = getattr(gpu, "l2_gbps", None)
    if measured:
        return float(measured) * 1e9 * A100_L2_SPEC_BPS / A100_L2_MEASURED_BPS
    return None


def _recurrent_steps(rates: dict) -> dict:
    """Per-timestep RNN overhead for each GEMM dtype (embsim.workload.recurrent_fit): a
    tensor-core dtype at its own rate, FP32 (CUDA cores) at the GPU's 16-bit rate."""
    rate16 = rates.get("fp16") or rates.get("bf16")
    return {key: recurrent_step_s(rate16 if key == "fp32" and rate16 else rate)
            for key, rate in rates.items()}



def _elem_scale(key: str) -> float:
    """Operand bytes per element relative to 16-bit: the tile-intensity threshold is in
    elements, and a 4-byte TF32/FP32 operand costs twice the L2 bytes of a 16-bit one."""
    return {"fp32": 2.0, "tf32": 2.0, "fp8": 0.5}.get(key, 1.0)


def from_measurement(gpu: Any, compute: Any, trace_name: str) -> GpuCompute:
    """The kernel model on the device a trace measured: its GEMM table, streaming and
    gather bandwidth and launch overhead replace the spec-derived figures."""
    from dataclasses import replace
    from .gemm_table import GemmTable
    base = for_gpu(gpu)
    table = GemmTable.from_points(compute.gemm)
    gaps = tuple(g for g in base.gaps if not g.startswith(("measured GEMM", "measured memory",
                                                           "SM count", "L2 bandwidth", "LSTM step")))
    if compute.lstm is None and base.recurrent_step_s:
        gaps += tuple(g for g in base.gaps if g.startswith("LSTM step"))
    measured = GpuCompute(
        name=base.name, rates=base.rates, hbm_bps=compute.stream_gbps * 1e9, sms=base.sms,
        gemm_fraction=1.0, gemm_fractions={}, hbm_fraction=1.0, tile_side_full=base.tile_side_full,
        op_dispatch_s=compute.launch_s, launch_s=compute.launch_s,
        kernel_gap_s=base.kernel_gap_s, synchronous=base.synchronous,
        gather_fraction=compute.gather_gbps / compute.stream_gbps, gaps=gaps,
        basis=f"measured: {trace_name} (GEMM {'/'.join(table.dtypes())})", gemm_table=table,
        recurrent_step_s=base.recurrent_step_s, recurrent_steps=base.recurrent_steps,
        stream_efficiency=base.stream_efficiency, mechanism_efficiency=base.mechanism_efficiency,
        arch=base.arch)
    if compute.lstm is not None:     # measured on this device: every dtype uses it
        measured = replace(measured, recurrent_step_s=measured_step_overhead(measured, compute.lstm),
                           recurrent_steps={})
    return measured


def measured_step_overhead(gpu: GpuCompute, lstm: Any) -> float:
    """Per-timestep overhead on this device: the measured LSTM layer's time per step
    minus the kernel model's (GEMMs and gates, no overhead), at least 0."""
    from .costs import Shape
    from .kernel_time import kernels_time
    from .kernels_layers import lstm as lstm_kernels
    from .precision import precision
    from dataclasses import replace
    bare = replace(gpu, recurrent_step_s=0.0, recurrent_steps={})
    k = lstm_kernels({"in": lstm.hidden, "hidden": lstm.hidden}, Shape(lstm.batch, lstm.steps, 4))
    p = precision("fp32")
    model = kernels_time(k.fwd, bare, p, 4) + kernels_time(k.bwd, bare, p, 4)
    return max(0.0, lstm.fwd_s + lstm.bwd_s - model / lstm.steps)
