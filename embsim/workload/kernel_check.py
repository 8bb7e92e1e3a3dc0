"""The kernel model, kernel by kernel, against one measured encoder layer.

Data: every kernel of spcl/substation's fused BERT-large encoder layer (B=8, seq 512, FP16)
as nvprof timed it on a V100 SXM2 (embsim/validation_data/kernels/
substation-v100-encoder-kernels.csv, with its source): the cuBLAS GEMMs of each einsum in the
layouts substation chose (the 128-way batched head products QK^T, AV and their gradients
included), the fused memory-bound kernels (softmax, bias+dropout+residual+LayerNorm,
bias+activation+dropout and their backwards) and the test script's eager ATen kernels
(parameter-gradient accumulation, the loss's sum).

What it separates: the memory-bound fraction (embsim.workload.gpu_props.
FRAMEWORK_STREAM_EFFICIENCY) is fitted on whole-layer times (embsim.workload.stream_fit), so
whatever the GEMM model misses lands in it. Here each GEMM is timed against the GEMM model
alone, and each memory-bound kernel's bytes against its own time, so the two errors are seen
apart. Nothing here feeds the simulator: `separated_fit` re-solves the eager row's
fraction with the GEMMs at their measured times, for the record (docs/compute.md).

`python -m embsim.workload.kernel_check` prints the per-kernel table and the mean/max
|simulated/measured - 1| for GEMMs (dense and batched head products) and for memory-bound
kernels, and what the GEMM error does to the whole-layer fit.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, replace
from pathlib import Path

from .gemm_fit import V100
from .gpu_props import FRAMEWORK_STREAM_EFFICIENCY, GpuCompute
from .kernel_time import gemm_s, kernel_time, kernels_time
from .kernels import LAYER, gemm, stream
from .precision import precision
from .stream_fit import FITTED, GRID, LayerRow, layer_kernels
from .stream_fit import load_rows as load_layer_rows

SOURCE = ("spcl/substation pytorch_module/test_module.prof (commit e3b19ec6): nvprof, fused "
          "BERT-large encoder layer B=8 seq 512 FP16, Tesla V100-SXM2-16GB")
DATA = (Path(__file__).resolve().parent.parent / "validation_data" / "kernels"
        / "substation-v100-encoder-kernels.csv")
ELEM_BYTES = 2                  # FP16 throughout
HEAD_BATCH = 128                # B x H: the batched per-head products
SMALL_BYTES = 1e6               # below this a kernel's time is its minimum duration, not bytes
# What bounds each of substation's memory-bound kernels (block_*.cuh of the commit above):
# - stream: one pass, a row reduction at most (softmax, LayerNorm backward, ReLU/dropout
#   backward, the input-gradient sum);
# - rng: draws a dropout mask with curand XORWOW, per-thread state init included (bias +
#   dropout + residual + LayerNorm, bias + activation + dropout);
# - column: reduces over the 4096 rows for the scale/bias gradients, 128 blocks of 32
#   threads (4096 threads on 80 SMs: too few loads in flight to reach the bandwidth).
MECHANISM = {"softmax": "stream", "bs": "stream", "blnrd": "stream", "bdrlb": "stream",
             "bei": "stream", "bdrln": "rng", "bad": "rng", "bsb": "column", "ebsb": "column"}


@dataclass(frozen=True)
class KernelRow:
    op: str
    kind: str                   # "gemm" | "stream" (substation's kernels) | "harness" (eager ATen)
    kernel: str
    m: int = 0
    n: int = 0
    k: int = 0
    batch: int = 1
    tensors: int = 0            # memory-bound: activation-sized tensors read + written
    elems: int = 0
    exact: bool = True
    seconds: float = 0.0

    @property
    def nbytes(self) -> float:
        return float(self.tensors * self.elems * ELEM_BYTES)

    @property
    def batched(self) -> bool:
        return self.kind == "gemm" and self.batch > 1


def _int(s: str) -> int:
    return int(s) if s else 0


def load_rows(path: Path = DATA) -> list[KernelRow]:
    with open(path, newline="") as f:
        lines = [line for line in f if not line.startswith("#")]
    return [KernelRow(r["op"], r["kind"], r["kernel"], _int(r["m"]), _int(r["n"]), _int(r["k"]),
                      _int(r["batch"]) or 1, _int(r["tensors"]), _int(r["elems"]),
                      r["exact"] != "no", float(r["us"]) * 1e-6)
            for r in csv.DictReader(lines)]


def copy_bps(gpu: GpuCompute = V100) -> float:
    """The copy bandwidth every memory-bound rate is a fraction of (peak x hbm_fraction)."""
    return gpu.hbm_bps * gpu.hbm_fraction


def model_s(row: KernelRow, gpu: GpuCompute = V100,
            efficiency: float = FRAMEWORK_STREAM_EFFICIENCY) -> float:
    """The kernel model's time for one launch, without the inter-kernel gap (nvprof's
    end - start is the kernel alone). Substation's fused kernels are activation kernels
    (charged at `efficiency` of the copy bandwidth); the harness's gradient accumulation is
    an optimizer-style pass over parameter-sized tensors (the full copy bandwidth)."""
    p = precision("fp16")
    if row.kind == "gemm":
        return gemm_s(gemm(row.op, row.m, row.n, row.k, row.batch), gpu, p, ELEM_BYTES)
    kr = stream(row.op, row.nbytes, param_pass=row.kernel == "aten_add", mechanism=LAYER)
    g = replace(gpu, stream_efficiency=efficiency, kernel_gap_s=0.0)
    return kernel_time(kr, g, p, ELEM_BYTES).gpu_s


def fraction_of_copy(row: KernelRow, gpu: GpuCompute = V100) -> float:
    """The measured kernel's bytes / time as a fraction of the copy bandwidth."""
    return row.nbytes / row.seconds / copy_bps(gpu)


def error(row: KernelRow, gpu: GpuCompute = V100,
          efficiency: float = FRAMEWORK_STREAM_EFFICIENCY) -> float:
    return model_s(row, gpu, efficiency) / row.seconds - 1


@dataclass(frozen=True)
class Summary:
    label: str
    rows: int
    mean_abs: float
    max_abs: float
    total_error: float          # sum(simulated) / sum(measured) - 1


def summarise(label: str, rows: list[KernelRow], gpu: GpuCompute = V100,
              efficiency: float = FRAMEWORK_STREAM_EFFICIENCY) -> Summary:
    errs = [error(r, gpu, efficiency) for r in rows]
    total = sum(model_s(r, gpu, efficiency) for r in rows) / sum(r.seconds for r in rows) - 1
    return Summary(label, len(rows), sum(abs(e) for e in errs) / len(errs),
                   max(abs(e) for e in errs), total)


def gemms(rows: list[KernelRow]) -> list[KernelRow]:
    return [r for r in rows if r.kind == "gemm"]


def memory_bound(rows: list[KernelRow], exact_only: bool = False) -> list[KernelRow]:
    return [r for r in rows if r.kind == "stream" and (r.exact or not exact_only)]


def summaries(rows: list[KernelRow] | None = None, gpu: GpuCompute = V100) -> list[Summary]:
    rows = rows or load_rows()
    g = gemms(rows)
    return [summarise("GEMM, all", g, gpu),
            summarise("GEMM, dense (projections, FFN)", [r for r in g if not r.batched], gpu),
            summarise(f"GEMM, batched head products (x{HEAD_BATCH}, head dim 64)",
                      [r for r in g if r.batched], gpu),
            summarise(f"memory-bound at the shipped fraction {FRAMEWORK_STREAM_EFFICIENCY:g}",
                      memory_bound(rows), gpu),
            summarise("memory-bound at the full copy bandwidth", memory_bound(rows), gpu, 1.0),
            summarise("eager ATen parameter-gradient adds over 1 MB (full copy bandwidth)",
                      [r for r in rows if r.kernel == "aten_add" and r.nbytes >= SMALL_BYTES], gpu)]


def mechanism_fractions(rows: list[KernelRow] | None = None, gpu: GpuCompute = V100) -> dict:
    """Bytes-weighted fraction of the copy bandwidth per MECHANISM class."""
    rows = memory_bound(rows or load_rows())
    out = {}
    for cls in dict.fromkeys(MECHANISM.values()):
        sel = [r for r in rows if MECHANISM[r.kernel] == cls]
        out[cls] = sum(r.nbytes for r in sel) / copy_bps(gpu) / sum(r.seconds for r in sel)
    return out


@dataclass(frozen=True)
class SeparatedFit:
    efficiency: float           # the eager row's fraction with the GEMMs at measured times
    error: float                # that row's simulated/measured - 1 at it
    model_error: float          # the same row at that fraction with the GEMM model's times


def separated_fit(rows: list[KernelRow] | None = None, layer: LayerRow | None = None,
                  gpu: GpuCompute = V100) -> SeparatedFit:
    """The memory-bound fraction the eager whole-layer row (B=8, seq 512, the profile's
    shape) needs when the layer's GEMMs take their measured per-kernel times instead of
    the GEMM model's: the part of FRAMEWORK_STREAM_EFFICIENCY's distance from 1 that is
    not the GEMM model's. Every GEMM keeps the model's inter-kernel gap (the profile's
    times are the kernels alone)."""
    rows = rows or load_rows()
    layer = layer or next(r for r in load_layer_rows()
                          if r.implementation == FITTED and (r.batch, r.seq) == (8, 512))
    p = precision("fp16")
    ks = layer_kernels(layer)
    measured_gemm = sum(r.seconds for r in gemms(rows))
    model_gemm = sum(kernel_time(k, gpu, p, ELEM_BYTES).gpu_s for k in ks if k.kind == "gemm")
    gaps = sum(k.count * gpu.kernel_gap_s for k in ks if k.kind == "gemm")

    def err(eff: float, measured: bool) -> float:
        t = kernels_time(ks, replace(gpu, stream_efficiency=eff), p, ELEM_BYTES)
        if measured:
            t += measured_gemm + gaps - model_gemm
        return t / layer.seconds - 1

    best = min(GRID, key=lambda e: abs(err(e, True)))
    return SeparatedFit(best, err(best, True), err(best, False))


def _report() -> str:
    rows = load_rows()
    out = [f"per-kernel check of the kernel model (V100, FP16) on {SOURCE}", "",
           f"{'kernel':30s} {'shape / bytes':>24s} {'measured':>10s} {'model':>10s} {'error':>8s} {'of copy bw':>10s}"]
    for r in rows:
        shape = (f"{r.m}x{r.n}x{r.k}" + (f" b{r.batch}" if r.batch > 1 else "") if r.kind == "gemm"
                 else f"{r.nbytes / 1e6:.1f} MB" + ("" if r.exact else " (~)"))
        frac = "" if r.kind == "gemm" or not r.nbytes else f"{fraction_of_copy(r):.2f}"
        out.append(f"{r.op:30s} {shape:>24s} {r.seconds * 1e6:8.1f}us {model_s(r) * 1e6:8.1f}us "
                   f"{error(r):+8.1%} {frac:>10s}")
    out.append("")
    for s in summaries(rows):
        out.append(f"{s.label}: {s.rows} kernels, mean |error| {s.mean_abs:.1%}, max {s.max_abs:.1%}, "
                   f"summed time {s.total_error:+.1%}")
    small = [r.seconds for r in rows if r.kind == "harness" and r.nbytes < SMALL_BYTES]
    out.append(f"harness kernels under {SMALL_BYTES / 1e6:g} MB: {min(small) * 1e6:.1f}-{max(small) * 1e6:.1f}us "
               f"each (a kernel's minimum duration; the model charges a {V100.kernel_gap_s * 1e6:g}us gap)")
    out.append("memory-bound fraction of copy bandwidth by what bounds the kernel (bytes-weighted): "
               + ", ".join(f"{k} {v:.2f}" for k, v in mechanism_fractions(rows).items()))
    f = separated_fit(rows)
    out.append(f"eager-PyTorch layer (B=8, seq 512) with its GEMMs at these measured times: memory-bound "
               f"fraction {f.efficiency:g} (whole-layer fit, GEMM model: {FRAMEWORK_STREAM_EFFICIENCY:g}); "
               f"at {f.efficiency:g} with the GEMM model's times the row is {f.model_error:+.1%}")
    return "\n".join(out)


if __name__ == "__main__":      # python -m embsim.workload.kernel_check
    from ..toolargs import no_arguments
    no_arguments("embsim.workload.kernel_check", __doc__)
    print(_report())
