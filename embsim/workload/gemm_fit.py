"""The GEMM tile model's per-tile fixed cost, fitted on one named data set.

Data: Baidu DeepBench's V100 training GEMM results (results/train/DeepBench_NV_V100.xlsx,
copied to embsim/validation_data/gemm/deepbench-v100-gemm.csv): 160 shapes from real
models (speech, translation, language models), each timed by cuBLAS on a DGX-1 V100 in
FP32 and in FP16 with FP32 accumulate.

Finding: on the shapes that fill the GPU (at least one wave of the largest tile) the
measured time is not proportional to the tile model's k-loop: shapes with K ~ 1024 run
at 0.76 of the ideal tile rate, K ~ 4096 at 0.88. Each tile pays a fixed cost (filling
the operand pipeline, the epilogue writing the tile), modelled as `TILE_OVERHEAD_K` more
steps of k. Fitted once, jointly with V100's large-GEMM fraction, by least squares in
log time over the FP16 sheet's GPU-filling rows (the tensor-core path every mixed
precision run takes); the FP32 sheet is the check.

The fitted values live as constants (embsim.workload.kernel_time.TILE_OVERHEAD_K, the
dgx1-v100 preset's gemm_fraction) so the simulator does not re-fit at import; `fit()`
re-derives them and tests/workload/test_gemm_fit.py checks that they agree.
The overhead is applied on every GPU (no per-GPU data): a GPU's measured large-GEMM
fraction (Azure cuBLASLt at K = 16384-32768) is used as the asymptote; at those K the
fitted overhead is 0.6-1.2 % of a tile's time.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, replace
from pathlib import Path

from .gpu_props import GpuCompute
from .kernel_time import (FRACTION_REF_K, TILE_OVERHEAD_K, asymptotic_fraction, gemm_compute_s,
                          tile_overhead_k)
from .precision import precision

SOURCE = "DeepBench V100 GEMM results (baidu-research/DeepBench results/train/DeepBench_NV_V100.xlsx)"
DATA = Path(__file__).resolve().parent.parent / "validation_data" / "gemm" / "deepbench-v100-gemm.csv"

# Tesla V100 SXM2 as DeepBench ran it: 125 FP16 tensor TFLOPS, 15.7 FP32, 80 SMs at
# 1530 MHz, HBM2 900 GB/s, L2 2048 B/clk, copy bandwidth 0.862 of peak (the dgx1-v100
# preset's cited figures).
V100_SPEC = GpuCompute(name="V100-SXM2", rates={"fp16": 125e12, "fp32": 15.7e12}, hbm_bps=900e9,
                       sms=80, gemm_fraction=1.0, hbm_fraction=0.862,
                       tile_side_full={"fp16": 2 * 1024 / (2048 / 80), "fp32": 0.0})
V100_GEMM_FRACTION = 0.87  # the fit's large-GEMM fraction (also the dgx1-v100 preset's gemm_fraction)
FULL_WAVE = 256 * 128      # a shape fills the GPU when m x n >= SMs x the largest tile
K0_GRID = range(0, 769, 8)


@dataclass(frozen=True)
class GemmRow:
    precision: str
    m: int
    n: int
    k: int
    seconds: float


@dataclass(frozen=True)
class GemmFit:
    tile_overhead_k: float
    gemm_fraction: float
    rows: int
    mean_abs_error: float
    max_abs_error: float


def load_rows(path: Path = DATA) -> list[GemmRow]:
    with open(path, newline="") as f:
        lines = [line for line in f if not line.startswith("#")]
    return [GemmRow(r["precision"], int(r["m"]), int(r["n"]), int(r["k"]), float(r["ms"]) * 1e-3)
            for r in csv.DictReader(lines)]


def filling(rows: list[GemmRow], gpu: GpuCompute = V100_SPEC) -> list[GemmRow]:
    return [r for r in rows if r.m * r.n >= gpu.sms * FULL_WAVE]


def _ideal_s(r: GemmRow, gpu: GpuCompute, k0: float) -> tuple[float, float]:
    """(tile-model compute seconds at the full peak, HBM floor seconds)."""
    p = precision(r.precision)
    e = 2 if r.precision == "fp16" else 4
    c = gemm_compute_s(r.m, r.n, r.k, 1, gpu.gemm_peak(p), gpu,
                       gpu.tile_side_full.get(p.gemm_rate, 0.0), k0)
    io = (r.m * r.k + r.k * r.n + r.m * r.n) * e / (gpu.hbm_bps * gpu.hbm_fraction)
    return c, io


def errors(rows: list[GemmRow], k0: float, fraction: float,
           gpu: GpuCompute = V100_SPEC) -> list[float]:
    """simulated/measured - 1 per row at this overhead (steps of k at the 16-bit tensor
    rate; a row's dtype pays it in its own steps, embsim.workload.kernel_time.tile_overhead_k)
    and large-GEMM fraction (a preset's gemm_fraction: the fraction of peak at
    FRACTION_REF_K deep)."""
    out = []
    for r in rows:
        k_row = k0 * tile_overhead_k(gpu, precision(r.precision)) / TILE_OVERHEAD_K
        c, io = _ideal_s(r, gpu, k_row)
        out.append(max(c / asymptotic_fraction(fraction, k_row), io) / r.seconds - 1)
    return out


def fit(rows: list[GemmRow] | None = None, dtype: str = "fp16") -> GemmFit:
    """Least squares in log time over the GPU-filling rows of one precision: for each
    overhead on a grid the best fraction is the geometric mean of ideal/measured."""
    rows = filling([r for r in (rows or load_rows()) if r.precision == dtype])
    best = None
    for k0 in K0_GRID:
        ideal = [_ideal_s(r, V100_SPEC, k0)[0] for r in rows]
        rate = min(1.0, math.exp(sum(math.log(i / r.seconds) for i, r in zip(ideal, rows)) / len(rows)))
        frac = rate * FRACTION_REF_K / (FRACTION_REF_K + k0)
        err = errors(rows, k0, frac)
        sq = sum(math.log1p(x) ** 2 for x in err)
        if best is None or sq < best[0]:
            best = (sq, k0, frac, err)
    _, k0, frac, err = best
    return GemmFit(float(k0), round(frac, 2), len(rows), sum(abs(x) for x in err) / len(err),
                   max(abs(x) for x in err))


V100 = replace(V100_SPEC, gemm_fraction=V100_GEMM_FRACTION)   # as the kernel model times it


if __name__ == "__main__":      # python -m embsim.workload.gemm_fit: refit and compare
    from ..toolargs import no_arguments
    no_arguments("embsim.workload.gemm_fit", __doc__)
    f = fit()
    print(f"tile overhead: {f.tile_overhead_k:g} k-steps (shipped: {TILE_OVERHEAD_K:g}); "
          f"V100 large-GEMM fraction: {f.gemm_fraction:g} (shipped: {V100_GEMM_FRACTION:g}); "
          f"{f.rows} rows of {SOURCE}: mean |error| {f.mean_abs_error:.1%}, max {f.max_abs_error:.1%}")
