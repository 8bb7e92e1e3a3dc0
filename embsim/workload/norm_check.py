"""Does the activation kernels' bandwidth fraction differ by GPU? Published eager-PyTorch
LayerNorm timings on A100 against the kernel model (issue 11, checked 2026-12-02).

The question: the transformer-block fraction (embsim.workload.gpu_props.
FRAMEWORK_STREAM_EFFICIENCY, 0.37) and the per-kernel mechanism fractions
(MECHANISM_EFFICIENCY: stream 0.85, column 0.22) are measured on V100 only and used on every
GPU; A100 training rows come out slow. Would an A100 measurement give A100 other values?

Data (copied with their sources):
- embsim/validation_data/kernels/pytorch-a100-layernorm.csv: pytorch/pytorch pull request
  #87445, torch.nn.LayerNorm forward + backward on an A100, FP32 and FP16, rows 256-8192 x
  features 256-4096, torch.utils.benchmark wall times;
- embsim/validation_data/kernels/olmo-a100-layernorm.csv: allenai/OLMo issue #258, torch
  LayerNorm forward and backward apart, 4096 tokens x 4096 / 8192 features, GB/s in the Triton
  tutorial's byte count.
Neither names the A100 variant (40 GB: 1555 GB/s, 80 GB: 2039 GB/s peak), so every figure is
given on both presets (dgx-a100-40gb, dgx-a100).

Each measurement is set against the kernel model's own LayerNorm kernels (embsim.workload.kernels.
norm_fwd_bwd: forward, the input-gradient pass, the scale/shift-gradient column reduction) on
that GPU, timed (a) at the per-mechanism fractions measured per kernel on V100 and (b) with
every kernel at the transformer-block fraction. Nothing here is fitted and nothing feeds the
simulator; `python -m embsim.workload.norm_check` prints the comparison (docs/compute.md
quotes it).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, replace
from pathlib import Path

from .gpu_props import GpuCompute
from .kernel_time import kernels_time
from .kernels import LAYER, norm_fwd_bwd
from .precision import precision

_DIR = Path(__file__).resolve().parent.parent / "validation_data" / "kernels"
DATA = _DIR / "pytorch-a100-layernorm.csv"
PASS_DATA = _DIR / "olmo-a100-layernorm.csv"
SOURCE = "pytorch/pytorch pull request #87445 (A100, nn.LayerNorm forward + backward)"
PASS_SOURCE = "allenai/OLMo issue #258 (A100, torch LayerNorm forward / backward)"
PRESETS = ("dgx-a100-40gb", "dgx-a100")
# The table's small shapes all take ~100-110 µs, the Timer's host-side forward + backward
# (autograd and launches): a row is GPU time only well above that, at twice it.
HOST_FLOOR_S = 200e-6
ELEM = {"fp32": 4, "fp16": 2}
PASS_ELEM = 2            # the harness's bytes and the model's use one element size (any)


@dataclass(frozen=True)
class NormRow:
    rows: int
    features: int
    dtype: str
    seconds: float          # forward + backward


@dataclass(frozen=True)
class PassRow:
    tokens: int
    features: int
    affine: bool
    backward: bool
    gbps: float             # the harness's bytes / time

    @property
    def seconds(self) -> float:
        """The measured time: the harness counts 2 (forward) or 3 (backward) tensors."""
        return (3 if self.backward else 2) * self.tokens * self.features * PASS_ELEM / (self.gbps * 1e9)


def _csv(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def load_rows(path: Path = DATA) -> list[NormRow]:
    return [NormRow(int(r["rows"]), int(r["features"]), r["dtype"], float(r["us"]) * 1e-6)
            for r in _csv(path)]


def gpu_bound(rows: list[NormRow]) -> list[NormRow]:
    return [r for r in rows if r.seconds >= HOST_FLOOR_S]


def load_pass_rows(path: Path = PASS_DATA) -> list[PassRow]:
    return [PassRow(int(r["tokens"]), int(r["features"]), r["affine"] == "yes",
                    r["pass"] == "backward", float(r["gbps"])) for r in _csv(path)]


def _time(kernels: list, gpu: GpuCompute, e: int, layer: bool) -> float:
    if layer:       # every kernel at the transformer-block fraction
        kernels = [replace(k, mechanism=LAYER) for k in kernels]
    return kernels_time(kernels, gpu, precision("fp32" if e == 4 else "fp16"), e)


def row_model_s(row: NormRow, gpu: GpuCompute, layer: bool = False) -> float:
    """The model's forward + backward of the benchmark's layer: a module in the row's dtype
    reads and writes that dtype (norm_fwd_bwd with f = e)."""
    e = ELEM[row.dtype]
    fwd, bwd = norm_fwd_bwd("ln", row.rows, row.features, e, e)
    return _time(fwd + bwd, gpu, e, layer)


def _pass_kernels(row: PassRow) -> list:
    fwd, bwd = norm_fwd_bwd("ln", row.tokens, row.features, PASS_ELEM, PASS_ELEM)
    if not row.affine:      # no scale/shift: no parameter-gradient reduction
        bwd = [k for k in bwd if not k.name.endswith("param_grad")]
    return bwd if row.backward else fwd


def pass_model_s(row: PassRow, gpu: GpuCompute, layer: bool = False) -> float:
    return _time(_pass_kernels(row), gpu, PASS_ELEM, layer)


def pass_fraction(row: PassRow, gpu: GpuCompute) -> float:
    """A single-pass row (forward, or backward without the affine's reduction: one kernel of
    the model's stream class) as a fraction of the copy bandwidth, by the model's bytes."""
    nbytes = sum(k.nbytes for k in _pass_kernels(row))
    return nbytes / row.seconds / (gpu.hbm_bps * gpu.hbm_fraction)


def single_pass(rows: list[PassRow]) -> list[PassRow]:
    return [r for r in rows if not (r.backward and r.affine)]


def copy_fraction(row: NormRow, gpu: GpuCompute) -> float:
    """The model's bytes for the row / the measured time, as a fraction of the copy bandwidth."""
    e = ELEM[row.dtype]
    fwd, bwd = norm_fwd_bwd("ln", row.rows, row.features, e, e)
    return sum(k.nbytes for k in fwd + bwd) / row.seconds / (gpu.hbm_bps * gpu.hbm_fraction)


@dataclass(frozen=True)
class Summary:
    gpu: str
    rows: int
    errors: tuple[float, ...]        # model / measured - 1 at the per-mechanism fractions
    layer_errors: tuple[float, ...]  # every kernel at the transformer-block fraction
    fractions: tuple[float, ...]     # measured fraction of the copy bandwidth (model bytes)
    pass_errors: tuple[float, ...]   # the OLMo rows at the per-mechanism fractions
    pass_fractions: tuple[float, ...]  # its single-pass rows' fraction of the copy bandwidth

    @property
    def mean_error(self) -> float:
        return sum(self.errors) / len(self.errors)


def summarise(gpu: GpuCompute, rows: list[NormRow] | None = None,
              pass_rows: list[PassRow] | None = None) -> Summary:
    rows = gpu_bound(rows or load_rows())
    pass_rows = pass_rows or load_pass_rows()
    return Summary(gpu.name, len(rows),
                   tuple(row_model_s(r, gpu) / r.seconds - 1 for r in rows),
                   tuple(row_model_s(r, gpu, layer=True) / r.seconds - 1 for r in rows),
                   tuple(copy_fraction(r, gpu) for r in rows),
                   tuple(pass_model_s(r, gpu) / r.seconds - 1 for r in pass_rows),
                   tuple(pass_fraction(r, gpu) for r in single_pass(pass_rows)))


def preset_gpu(name: str) -> GpuCompute:
    from ..topology import load_topology
    from .gpu_compute import for_gpu
    return for_gpu(load_topology(f"{name}:1x1").node.gpu)


def _span(xs) -> str:
    return f"{min(xs):+.0%}..{max(xs):+.0%}"


def report() -> str:
    out = [f"eager LayerNorm on A100 against the kernel model (model time / measured - 1)",
           f"  forward + backward: {SOURCE}, rows >= {HOST_FLOOR_S * 1e6:.0f} µs",
           f"  single passes: {PASS_SOURCE}"]
    for name in PRESETS:
        s = summarise(preset_gpu(name))
        out += [f"{name} ({s.gpu}), copy bandwidth {copy_bps(name) / 1e9:.0f} GB/s:",
                f"  forward + backward, {s.rows} rows: at the V100 per-kernel fractions "
                f"{_span(s.errors)} (mean {s.mean_error:+.1%}); every kernel at the block fraction "
                f"{_span(s.layer_errors)}; measured {min(s.fractions):.2f}-{max(s.fractions):.2f} "
                "of the copy bandwidth (model bytes)",
                f"  OLMo passes at the V100 per-kernel fractions {_span(s.pass_errors)}; its "
                f"single-pass rows (forward, backward without affine) at "
                f"{min(s.pass_fractions):.2f}-{max(s.pass_fractions):.2f} of the copy bandwidth"]
    return "\n".join(out)


def copy_bps(name: str) -> float:
    g = preset_gpu(name)
    return g.hbm_bps * g.hbm_fraction


def main(argv: list[str] | None = None) -> int:
    from ..toolargs import ToolParser
    ToolParser(prog="python -m embsim.workload.norm_check",
               description="Eager LayerNorm on A100, published timings against the kernel model "
                           "(takes no arguments).").parse_args(argv)
    print(report())
    return 0


if __name__ == "__main__":      # python -m embsim.workload.norm_check
    raise SystemExit(main())
