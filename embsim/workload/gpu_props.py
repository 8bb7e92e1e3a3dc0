"""What the kernel compute model knows about one GPU, and where each number came from
(the data; embsim.workload.gpu_compute builds it from a topology or a trace).

A property with no data falls back to a stated default, and `gaps` names it so every
output can say so.
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
# - streaming fraction of HBM bandwidth: 0.84-0.91 measured on V100/A100/H100/H200; 0.85.
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
# A GPU with no published B/clk figure but a measured L2 bandwidth is put on the same
# basis as the whitepaper figures the threshold uses: its measurement times the A100's
# whitepaper/measured ratio in the same benchmark. A100 whitepaper: 5120 B/clk at 1410
# MHz; measured: ~5.40 TB/s, the 2-25 MB plateau of te42kyfo/gpu-benches gpu-l2-cache
# (a100_80.txt, an A100-SXM4-80GB; the presets' l2_gbps come from the same benchmark).
A100_L2_SPEC_BPS = 5120 * 1410e6
A100_L2_MEASURED_BPS = 5.40e12
# The fraction of the copy bandwidth (peak x hbm_fraction) a framework's activation
# kernels reach (softmax, dropout, LayerNorm, reductions, transposes, elementwise ops):
# fitted on spcl/substation's eager-PyTorch BERT-large encoder layer timings on V100
# (embsim.workload.stream_fit re-derives it; its test checks this value). Used on every GPU:
# published A100 LayerNorm timings show no per-GPU difference to encode (embsim.workload.norm_check).
FRAMEWORK_STREAM_EFFICIENCY = 0.37
# Every other memory-bound kernel at the fraction of the copy bandwidth its kind reaches
# per kernel (embsim.workload.kernels: STREAM, RNG, COLUMN): bytes-weighted over the
# memory-bound kernels of spcl/substation's nvprof profile of its BERT-large encoder layer
# on V100 (embsim.workload.kernel_check.mechanism_fractions re-derives them; its test
# checks these values). Used on every GPU.
MECHANISM_EFFICIENCY = {"stream": 0.85, "rng": 0.42, "column": 0.22}


@dataclass(frozen=True)
class GpuCompute:
    name: str
    rates: dict                     # gemm_rate key ("fp32", "tf32", ...) -> peak FLOP/s
    hbm_bps: float                  # peak device-memory bandwidth, B/s
    sms: int | None
    gemm_fraction: float            # large-GEMM fraction of peak for a dtype without its own
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
    # per gemm_rate key, where it depends on the dtype (embsim.workload.recurrent_fit);
    # a key left out uses recurrent_step_s
    recurrent_steps: dict = field(default_factory=dict)
    # activation kernels' fraction of the copy bandwidth (FRAMEWORK_STREAM_EFFICIENCY on a
    # GPU; 1 on a CPU, whose calibrated rates already are the framework's own)
    stream_efficiency: float = 1.0
    # the other memory-bound kernels' fraction per Kernel.mechanism (MECHANISM_EFFICIENCY on
    # a GPU); a mechanism left out (every one on a CPU) uses stream_efficiency
    mechanism_efficiency: dict = field(default_factory=dict)
    # large-GEMM fraction of peak per gemm_rate key, where a source measured that dtype
    gemm_fractions: dict = field(default_factory=dict)
    arch: int | None = None         # compute capability x 10 (80 Ampere, 90 Hopper, 100 Blackwell)

    def gemm_peak(self, prec: Precision) -> float:
        try:
            return self.rates[prec.gemm_rate]
        except KeyError:
            have = ", ".join(k for k in self.rates) or "none"
            raise InputError(f"--dtype {prec.name}: {self.name} has no {prec.gemm_rate} "
                             f"tensor-core rate (it has: {have})") from None

    def gemm_fraction_for(self, prec: Precision) -> float:
        """The large-GEMM fraction of this dtype's peak (FP8 and BF16 reach different
        fractions on the same GPU), else the GPU's single figure."""
        return self.gemm_fractions.get(prec.gemm_rate, self.gemm_fraction)

    def memory_fraction(self, mechanism: str) -> float:
        """The fraction of the copy bandwidth a memory-bound kernel of this kind reaches."""
        return self.mechanism_efficiency.get(mechanism, self.stream_efficiency)

    def recurrent_step(self, prec: Precision) -> float:
        """Per-timestep RNN overhead (forward + backward) for this dtype."""
        return self.recurrent_steps.get(prec.gemm_rate, self.recurrent_step_s)

    @property
    def label(self) -> str:
        text = f"kernel model, {self.name} {self.basis}"
        if self.gaps:
            # each gap names what stood in for it (a default or a derived value)
            text += f" (no data for {self.name}: {', '.join(self.gaps)})"
        return text
