"""How fast a framework's memory-bound kernels run, fitted on one named data set.

Data: spcl/substation's published timings of one BERT-large encoder layer, forward +
backward in FP16 on a V100 SXM2 (copied to
embsim/validation_data/kernels/substation-v100-bert-layer.csv with its source): eager
PyTorch (torch.nn.TransformerEncoderLayer, every elementwise op, dropout, softmax and
LayerNorm its own kernel) at batch 8 x seq 512 and batch 96 x seq 128.

Finding: with the GEMMs on the DeepBench-fitted tile model (embsim.workload.gemm_fit), the
layer's memory-bound kernels (softmax, dropout, LayerNorm, bias gradients, residual adds,
head transposes) take ~2.6x what their bytes at the GPU's copy bandwidth (peak x
hbm_fraction) would: they reach a fraction of it (Ivanov et al. 2021, the paper of that
repository: "training has now become memory-bound", with suboptimal data layouts and
kernels far from the bandwidth roofline). The fraction is fitted once, by least squares in
log time over the eager-PyTorch rows (both shapes give nearly the same value); the
fused-kernel rows (DeepSpeed, Substation) are the check.

The fitted value lives as a constant (embsim.workload.gpu_props.FRAMEWORK_STREAM_EFFICIENCY)
so the simulator does not re-fit at import; `fit()` re-derives it and
tests/workload/test_stream_fit.py checks that they agree. It applies to the activation
kernels of every layer on every GPU (no per-GPU data). Not to: parameter-sized passes of an
optimizer step (large contiguous tensors, the access pattern of the copy the bandwidth
figure is measured with) and library-internal recurrent kernels (cuDNN's per-timestep gate
kernels carry their own fitted per-step overhead, embsim.workload.recurrent_fit).
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, replace
from pathlib import Path

from .costs import Shape
from .gemm_fit import V100
from .gpu_props import GpuCompute
from .kernel_time import kernels_time
from .kernels_layers import transformer_block
from .precision import precision

SOURCE = ("spcl/substation README.md (commit 2d93ff08): BERT-large encoder layer, forward + "
          "backward, FP16, V100 SXM2 (Ivanov et al., MLSys 2021)")
DATA = (Path(__file__).resolve().parent.parent / "validation_data" / "kernels"
        / "substation-v100-bert-layer.csv")
# BERT-large's encoder layer, as the benchmark builds it
LAYER = {"dim": 1024, "heads": 16, "ffn": 4096}
FITTED = "pytorch"                         # eager framework kernels: what the fit explains
GRID = [i / 100 for i in range(5, 101)]     # candidate efficiencies


@dataclass(frozen=True)
class LayerRow:
    implementation: str
    batch: int
    seq: int
    seconds: float


@dataclass(frozen=True)
class StreamFit:
    efficiency: float
    rows: int
    errors: tuple[float, ...]              # simulated/measured - 1 of the fitted rows
    check_errors: tuple[float, ...]        # the fused-kernel rows at the fitted efficiency


def load_rows(path: Path = DATA) -> list[LayerRow]:
    with open(path, newline="") as f:
        lines = [line for line in f if not line.startswith("#")]
    return [LayerRow(r["implementation"], int(r["batch"]), int(r["seq"]), float(r["ms"]) * 1e-3)
            for r in csv.DictReader(lines)]


def _block(row: LayerRow):
    """The benchmark's layer. The model is FP16 throughout (.half(): norms and softmax write
    16-bit outputs); the fused implementations run the fused elementwise kernels."""
    fused = row.implementation != FITTED
    return transformer_block({**LAYER, "fused_elementwise": fused}, Shape(row.batch, row.seq, 2, 2),
                             cross=False)


def layer_kernels(row: LayerRow) -> tuple:
    """The benchmark's layer, forward then backward."""
    lk = _block(row)
    return lk.fwd + lk.bwd


def layer_seconds(row: LayerRow, efficiency: float, gpu: GpuCompute = V100) -> float:
    """The kernel model's forward + backward of the benchmark's layer at this efficiency."""
    lk = _block(row)
    g = replace(gpu, stream_efficiency=efficiency)
    p = precision("fp16")
    return kernels_time(lk.fwd, g, p, 2) + kernels_time(lk.bwd, g, p, 2)


def errors(rows: list[LayerRow], efficiency: float) -> list[float]:
    return [layer_seconds(r, efficiency) / r.seconds - 1 for r in rows]


def fit(rows: list[LayerRow] | None = None) -> StreamFit:
    """The grid efficiency with the least squared log error over the eager rows."""
    rows = rows or load_rows()
    fitted = [r for r in rows if r.implementation == FITTED]
    best = min(GRID, key=lambda e: sum(math.log1p(x) ** 2 for x in errors(fitted, e)))
    checks = [r for r in rows if r.implementation != FITTED]
    return StreamFit(best, len(fitted), tuple(errors(fitted, best)), tuple(errors(checks, best)))


if __name__ == "__main__":      # python -m embsim.workload.stream_fit: refit and compare
    from ..toolargs import no_arguments
    no_arguments("embsim.workload.stream_fit", __doc__)
    from .gpu_props import FRAMEWORK_STREAM_EFFICIENCY
    f = fit()
    print(f"memory-bound kernel fraction: {f.efficiency:g} (shipped: {FRAMEWORK_STREAM_EFFICIENCY:g}) "
          f"on {f.rows} {FITTED} rows of {SOURCE}; errors "
          + ", ".join(f"{e:+.1%}" for e in f.errors) + "; unfitted rows "
          + ", ".join(f"{e:+.1%}" for e in f.check_errors))
    print("size-aware alternatives on the same rows: python -m embsim.workload.stream_alternatives")
    print("per-kernel GEMM vs memory-bound separation: python -m embsim.workload.kernel_check")
