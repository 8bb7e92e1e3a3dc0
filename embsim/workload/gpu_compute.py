"""What the kernel compute model knows about one GPU, and where each number came from.

Built from a topology's gpu: section (spec-sheet peaks and published measurements, each
cited in the preset) or from a calibration trace's measured table. A property with no
data falls back to a stated default, and `gaps` names it so every output can say so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import InputError
from .precision import Precision

# Defaults where a GPU has no published figure (named in `gaps` when used):
# - large-GEMM fraction of peak: cuBLASLt on A100 reaches 0.82 (the dgx-a100 preset's
#   measurement); the lowest measured fraction among the presets (GB200 FP8, 0.58) and
#   the highest bound it.  0.7 ~ the H100/H200 measurements.
# - streaming fraction of HBM bandwidth: 0.84-0.91 measured on A100/H100/H200; 0.85.
DEFAULT_GEMM_FRACTION = 0.7
DEFAULT_HBM_FRACTION = 0.85
# Per-kernel costs. Host: eager PyTorch dispatches an op in ~5-10 µs of CPU time
# (PyTorch performance tuning guide: "CUDA graphs ... eliminate CPU launch overhead";
# the simulator's long-standing 5 µs); a library-internal launch (cuDNN's per-timestep
# kernels) costs the CUDA launch alone. GPU: a dependent kernel cannot start before its
# predecessor drains, ~1-2 µs of idle SMs between back-to-back kernels.
# calibrate measures these on the device it runs on (trace compute.launch_s).
DEFAULT_OP_DISPATCH_S = 5e-6
DEFAULT_LAUNCH_S = 2.5e-6
DEFAULT_KERNEL_GAP_S = 1.5e-6
# An SM's share of L2 bandwidth feeds a GEMM tile's operands; a tile whose arithmetic
# intensity falls short of peak/L2-share runs below peak. Without an L2 figure, the
# A100's ratio (5120 B/clk for 108 SMs at 2048 FP16 FLOP/clk/SM) is used: a GEMM tile
# needs a harmonic-mean side of ~87 elements to run at full rate.
A100_TILE_SIDE_FULL = 2 * 2048 / (5120 / 108)


@dataclass(frozen=True)
class GpuCompute:
    name: str
    rates: dict                     # gemm_rate key ("fp32", "tf32", ...) -> peak FLOP/s
    hbm_bps: float                  # peak device-memory bandwidth, B/s
    sms: int | None
    gemm_fraction: float
    hbm_fraction: float
    tile_side_full: dict            # gemm_rate key -> tile harmonic side for full rate
    op_dispatch_s: float = DEFAULT_OP_DISPATCH_S
    launch_s: float = DEFAULT_LAUNCH_S
    kernel_gap_s: float = DEFAULT_KERNEL_GAP_S
    gather_fraction: float | None = None   # random-row gather bandwidth / peak, if measured
    gaps: tuple[str, ...] = ()      # properties without data for this GPU (defaults used)
    basis: str = "spec"             # "spec" or "measured: <trace>"
    gemm_table: Any = field(default=None, compare=False)   # measured GEMM table, if any
    synchronous: bool = False       # a CPU device: the host runs the kernels, times add up
    recurrent_step_s: float = 0.0   # fixed cost of one RNN timestep, forward + backward

    def gemm_peak(self, prec: Precision) -> float:
        try:
            return self.rates[prec.gemm_rate]
        except KeyError:
            have = ", ".join(k for k in self.rates) or "none"
            raise InputError(f"--dtype {prec.name}: {self.name} has no {prec.gemm_rate} "
                             f"tensor-core rate (it has: {have})") from None

    @property
    def label(self) -> str:
        text = f"kernel model, {self.name} {self.basis}"
        if self.gaps:
            text += f" (no data for {self.name}: {', '.join(self.gaps)}; defaults used)"
        return text

    @classmethod
    def from_gpu(cls, gpu: Any) -> "GpuCompute":
        """From a topology GpuSpec (or any object with its fields)."""
        gaps = []
        peak16 = float(gpu.bf16_tflops) * 1e12
        rates = {k: float(v) * 1e12 for k, v in (getattr(gpu, "tensor_tflops", ()) or ())}
        is_cpu = getattr(gpu, "arch", 1) == 0
        fp32 = getattr(gpu, "fp32_tflops", None)
        if is_cpu:
            # a CPU has no tensor cores: every dtype at its measured matmul rate
            rate = float(fp32 or gpu.bf16_tflops) * 1e12
            rates = {k: rate for k in ("fp32", "tf32", "bf16", "fp16")}
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
        gemm_fraction = getattr(gpu, "gemm_fraction", None)
        if gemm_fraction is None:
            gaps.append(f"measured GEMM efficiency ({DEFAULT_GEMM_FRACTION} used)")
            gemm_fraction = DEFAULT_GEMM_FRACTION
        hbm_fraction = getattr(gpu, "hbm_fraction", None)
        if hbm_fraction is None:
            gaps.append(f"measured memory bandwidth ({DEFAULT_HBM_FRACTION} of peak used)")
            hbm_fraction = DEFAULT_HBM_FRACTION
        tile_side = {}
        l2, clock = getattr(gpu, "l2_bytes_per_clk", None), getattr(gpu, "clock_mhz", None)
        for key, rate in rates.items():
            if sms and l2 and clock:
                per_sm_flops_per_clk = rate / (sms * clock * 1e6)
                tile_side[key] = 2 * per_sm_flops_per_clk / (l2 / sms) * _elem_scale(key)
            else:
                tile_side[key] = A100_TILE_SIDE_FULL if key != "fp32" else 0.0
        if not is_cpu and not (l2 and clock):
            gaps.append("L2 bandwidth (A100's tile-intensity threshold used)")
        from .recurrent_fit import RECURRENT_STEP_S
        if not is_cpu:
            gaps.append(f"LSTM step (DeepBench V100 fit, {RECURRENT_STEP_S * 1e6:.0f} µs/step used)")
        return cls(name=gpu.model, rates=rates, hbm_bps=float(gpu.hbm_gbps) * 1e9, sms=sms,
                   gemm_fraction=float(gemm_fraction), hbm_fraction=float(hbm_fraction),
                   tile_side_full=tile_side, gaps=tuple(gaps), synchronous=is_cpu,
                   kernel_gap_s=0.0 if is_cpu else DEFAULT_KERNEL_GAP_S,
                   recurrent_step_s=0.0 if is_cpu else RECURRENT_STEP_S)


def _elem_scale(key: str) -> float:
    """Operand bytes per element relative to 16-bit: the tile-intensity threshold is in
    elements, and a 4-byte TF32/FP32 operand costs twice the L2 bytes of a 16-bit one."""
    return {"fp32": 2.0, "tf32": 2.0, "fp8": 0.5}.get(key, 1.0)


def from_measurement(gpu: Any, compute: Any, trace_name: str) -> GpuCompute:
    """The kernel model on the device a trace measured: its GEMM table, streaming and
    gather bandwidth and launch overhead replace the spec-derived figures."""
    from dataclasses import replace
    from .gemm_table import GemmTable
    base = GpuCompute.from_gpu(gpu)
    table = GemmTable.from_points(compute.gemm)
    gaps = tuple(g for g in base.gaps if not g.startswith(("measured GEMM", "measured memory",
                                                           "SM count", "L2 bandwidth", "LSTM step")))
    if compute.lstm is None and base.recurrent_step_s:
        gaps += tuple(g for g in base.gaps if g.startswith("LSTM step"))
    measured = GpuCompute(
        name=base.name, rates=base.rates, hbm_bps=compute.stream_gbps * 1e9, sms=base.sms,
        gemm_fraction=1.0, hbm_fraction=1.0, tile_side_full=base.tile_side_full,
        op_dispatch_s=compute.launch_s, launch_s=compute.launch_s,
        kernel_gap_s=base.kernel_gap_s, synchronous=base.synchronous,
        gather_fraction=compute.gather_gbps / compute.stream_gbps, gaps=gaps,
        basis=f"measured: {trace_name} (GEMM {'/'.join(table.dtypes())})", gemm_table=table,
        recurrent_step_s=base.recurrent_step_s)
    if compute.lstm is not None:
        measured = replace(measured, recurrent_step_s=measured_step_overhead(measured, compute.lstm))
    return measured


def measured_step_overhead(gpu: GpuCompute, lstm: Any) -> float:
    """Per-timestep overhead on this device: the measured LSTM layer's time per step
    minus the kernel model's (GEMMs and gates, no overhead), at least 0."""
    from .costs import Shape
    from .kernel_time import kernels_time
    from .kernels_layers import lstm as lstm_kernels
    from .precision import precision
    from dataclasses import replace
    bare = replace(gpu, recurrent_step_s=0.0)
    k = lstm_kernels({"in": lstm.hidden, "hidden": lstm.hidden}, Shape(lstm.batch, lstm.steps, 4))
    p = precision("fp32")
    model = kernels_time(k.fwd, bare, p, 4) + kernels_time(k.bwd, bare, p, 4)
    return max(0.0, lstm.fwd_s + lstm.bwd_s - model / lstm.steps)
