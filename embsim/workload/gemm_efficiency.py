"""Large-GEMM fraction of peak per GPU and dtype, derived from the published measurements
the presets cite (the presets' gpu.gemm_fractions hold the results; `derive()` recomputes
them and tests/workload/test_gemm_efficiency.py checks that they agree).

What the kernel model needs (embsim.workload.kernel_time): the fraction a GPU reaches on a
large square product (FRACTION_REF_K deep), where tile and wave quantisation cost nothing;
the model charges quantisation for every other shape itself.

Two kinds of published figure:
- CUBE: Azure's AI-benchmarking-guide, cuBLASLt on one fixed large cube (16384^3 or
  32768^3), random data, 10,000 warm-up iterations (a sustained, power-limited rate):
  exactly the quantity the model expects, but for one dtype per GPU.
- MAMF: stas00's "Maximum Achievable Matmul FLOPS" table (ml-engineering,
  compute/accelerator/README.md): per GPU and dtype, the best mean over a brute-force
  search of shapes, 100 iterations after 50 warm-up. A maximum over shapes: the search
  picks shapes where the real kernel escapes quantisation (Hopper's persistent/stream-K
  kernels), so inverting the model at the best shape double-counts (H100 FP8 at
  1024x9216x14336 would need 0.96 of peak, H200 FP8 1.08), and taking it as the cube figure
  overstates it (MAMF / cube in the same dtype: H100 FP8 1.016, H200 FP8 1.064, A100 16-bit
  1.057, GB200 FP8 1.244).
So MAMF figures are used only as ratios within one search (one GPU, one torch/CUDA build,
dtype against dtype), where the selection bias is common to both, anchored on a CUBE
figure: fraction(gpu, d) = cube(gpu, d0) x mamf(gpu, d) / mamf(gpu, d0).
- CUTLASS: NVIDIA's CUTLASS team's A100 peaks with the CUDA 11.3 compiler, FP16 and
  TF32 stated together (one GPU, one toolkit, each dtype's best kernel: the same kind of
  figure as MAMF, so used the same way, as a ratio). The only published A100 TF32 large-GEMM
  figure that pairs with a 16-bit one from the same build.
"""

from __future__ import annotations

from dataclasses import dataclass

AZURE = ("Azure/AI-benchmarking-guide Azure_Results/ND_*_results.md (cuBLASLt, random data, "
         "10,000 warm-up iterations)")
STAS00 = ("stas00/ml-engineering compute/accelerator/README.md 'Maximum Achievable Matmul FLOPS "
          "comparison table' (mirror commit 744d01e1)")
CUTLASS_SRC = ("github.com/NVIDIA/cutlass/discussions/241 (CUTLASS team, 2021-04-19): with CUDA 11.3 "
               "'298TFLOPS ... CUTLASS FP16 GEMM on A100' and 'FP32(via TF32) GEMM ... can reach "
               "143TFLOPS'")


@dataclass(frozen=True)
class Measured:
    gpu: str
    dtype: str
    tflops: float
    peak: float
    shape: tuple[int, int, int]
    build: str          # software it ran on

    @property
    def fraction(self) -> float:
        return self.tflops / self.peak


# Fixed-cube cuBLASLt measurements (the presets' long-standing gemm_fraction figures).
CUBE = (
    Measured("A100", "fp16", 256.5, 312, (16384,) * 3, "Azure NDm A100 v4"),
    Measured("H100", "fp8", 1382.2, 1979, (32768,) * 3, "Azure ND H100 v5, CUDA 12.6"),
    Measured("H200", "fp8", 1366.3, 1979, (32768,) * 3, "Azure ND H200 v5"),
    Measured("GB200", "fp8", 2906.9, 5000, (16384,) * 3, "Azure ND GB200 v6, CUDA 12.8"),
)

# Best-shape searches (mean of 100 iterations at the best shape found).
MAMF = (
    Measured("A100", "bf16", 271.2, 312, (1024, 10240, 5120), "torch 2.6.0+cu126"),
    Measured("H100", "bf16", 794.5, 989, (2048, 2048, 13312), "torch 2.7.0+cu126"),
    Measured("H100", "fp8", 1402.6, 1979, (1024, 9216, 14336), "torch 2.7.0+cu126"),
    Measured("H200", "fp8", 1453.4, 1979, (1280, 4096, 12032), "torch 2.7.1+cu128"),
    Measured("B200", "bf16", 1745.0, 2250, (1792, 16128, 3072), "torch 2.7.1+cu128"),
    Measured("B200", "fp8", 3432.5, 4500, (15360, 4096, 3072), "torch 2.7.1+cu128"),
    Measured("GB200", "bf16", 1822.0, 2500, (4096, 9728, 2048), "torch 2.10.0.dev20250916+cu130"),
    Measured("GB200", "fp8", 3615.6, 5000, (19456, 5120, 1536), "torch 2.10.0.dev20250916+cu130"),
)


# The CUTLASS team's A100 peaks, both dtypes on one toolkit (CUTLASS_SRC; shape not stated).
CUTLASS = (
    Measured("A100", "fp16", 298.0, 312, (0, 0, 0), "CUTLASS profiler, CUDA 11.3"),
    Measured("A100", "tf32", 143.0, 156, (0, 0, 0), "CUTLASS profiler, CUDA 11.3"),
)


@dataclass(frozen=True)
class Derived:
    fraction: float
    how: str


def _one(table, gpu: str, dtype: str) -> Measured:
    return next(m for m in table if m.gpu == gpu and m.dtype == dtype)


def scaled(anchor_gpu: str, anchor_dtype: str, ratio_gpu: str, dtype: str,
           base_gpu: str | None = None, table: tuple = MAMF) -> Derived:
    """cube(anchor_gpu, anchor_dtype) x best(ratio_gpu, dtype) / best(base_gpu or ratio_gpu,
    anchor_dtype): the anchor's sustained cube rate moved by one search's ratio (`table`:
    MAMF, or CUTLASS's peaks)."""
    cube = _one(CUBE, anchor_gpu, anchor_dtype)
    num = _one(table, ratio_gpu, dtype)
    den = _one(table, base_gpu or ratio_gpu, anchor_dtype)
    if num.build != den.build and (base_gpu or ratio_gpu) == ratio_gpu:
        raise ValueError(f"{ratio_gpu}: {dtype} and {anchor_dtype} searched on different builds")
    kind = "MAMF" if table is MAMF else "CUTLASS"
    how = (f"{anchor_gpu} {anchor_dtype} cube {cube.fraction:.3f} x {kind} {num.gpu} {dtype} "
           f"{num.fraction:.3f} / {den.gpu} {anchor_dtype} {den.fraction:.3f}")
    return Derived(cube.fraction * num.fraction / den.fraction, how)


def derive() -> dict[str, dict[str, Derived]]:
    """Per preset GPU model, per dtype: the fraction and how it was obtained.

    - H100: FP8 the Azure cube; BF16 = that x H100's BF16/FP8 MAMF (one torch build).
    - H200 (same GH100 die and clocks; stas00: "H200 is the same" in BF16): FP8 its own
      Azure cube; BF16 = that x H100's BF16/FP8 MAMF ratio (H200's FP8 MAMF comes from a
      different torch build than any H200/H100 BF16 figure, so it is not used).
    - GB200: FP8 the Azure cube; BF16 = that x GB200's BF16/FP8 MAMF.
    - B200 (no cube figure): GB200's FP8 cube x B200/GB200 FP8 MAMF (the same Blackwell
      die; the two searches ran on different torch builds, a stated mismatch); BF16 = B200
      FP8 x B200's BF16/FP8 MAMF.
    - A100: FP16 the Azure cube; TF32 = that x the CUTLASS team's TF32/FP16 peaks on CUDA
      11.3 (0.917 / 0.955 of each peak: TF32 reaches 0.96 of FP16's fraction); no MAMF pair
      on one build.
    FP16 and BF16 take each other's figure (same datapath and peak). FP32, and TF32 beyond
    A100, have no published large-GEMM figure on these GPUs: the preset's single
    gemm_fraction.
    """
    h100_fp8 = Derived(_one(CUBE, "H100", "fp8").fraction, "H100 fp8 cube (Azure)")
    h200_fp8 = Derived(_one(CUBE, "H200", "fp8").fraction, "H200 fp8 cube (Azure)")
    gb200_fp8 = Derived(_one(CUBE, "GB200", "fp8").fraction, "GB200 fp8 cube (Azure)")
    b200_fp8 = scaled("GB200", "fp8", "B200", "fp8", base_gpu="GB200")
    b200_ratio = _one(MAMF, "B200", "bf16").fraction / _one(MAMF, "B200", "fp8").fraction
    h100_bf16 = scaled("H100", "fp8", "H100", "bf16")
    h100_ratio = h100_bf16.fraction / h100_fp8.fraction
    out = {
        "A100": {"fp16": Derived(_one(CUBE, "A100", "fp16").fraction, "A100 fp16 cube (Azure)"),
                 "tf32": scaled("A100", "fp16", "A100", "tf32", table=CUTLASS)},
        "H100": {"fp8": h100_fp8, "bf16": h100_bf16},
        "H200": {"fp8": h200_fp8,
                 "bf16": Derived(h200_fp8.fraction * h100_ratio,
                                 f"H200 fp8 cube x H100 bf16/fp8 MAMF {h100_ratio:.3f}")},
        "GB200": {"fp8": gb200_fp8, "bf16": scaled("GB200", "fp8", "GB200", "bf16")},
        "B200": {"fp8": b200_fp8,
                 "bf16": Derived(b200_fp8.fraction * b200_ratio,
                                 f"B200 fp8 ({b200_fp8.how}) x B200 bf16/fp8 MAMF {b200_ratio:.3f}")},
    }
    # FP16 and BF16 share the tensor-core datapath and the peak on Ampere and later: a
    # figure measured in one stands for the other.
    for per in out.values():
        for have, other in (("bf16", "fp16"), ("fp16", "bf16")):
            if have in per and other not in per:
                per[other] = Derived(per[have].fraction, f"as {have} (same tensor-core path and peak)")
    return out


def cube_over_mamf() -> dict[str, float]:
    """MAMF / cube where one GPU has both (the best-shape search's overstatement)."""
    pairs = {"A100": ("bf16", "fp16"), "H100": ("fp8", "fp8"), "H200": ("fp8", "fp8"),
             "GB200": ("fp8", "fp8")}
    return {g: _one(MAMF, g, dm).fraction / _one(CUBE, g, dc).fraction
            for g, (dm, dc) in pairs.items()}


if __name__ == "__main__":     # python -m embsim.workload.gemm_efficiency
    from ..toolargs import no_arguments
    no_arguments("embsim.workload.gemm_efficiency", __doc__)
    for gpu, per in derive().items():
        for dtype, d in per.items():
            print(f"{gpu:6s} {dtype:5s} {d.fraction:.3f}  {d.how}")
    print("MAMF / cube:", ", ".join(f"{g} {r:.3f}" for g, r in cube_over_mamf().items()))
