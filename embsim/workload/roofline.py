"""Roofline compute time: the labelled fallback when no calibration trace covers a GPU.

time(kernel group) = max(FLOPs / (peak * compute_efficiency),
                         bytes / (HBM bandwidth * memory_efficiency)) + kernels * launch overhead

Pure functions on plain numbers. The GPU is any object with `peak_tflops` (or the
topology's `bf16_tflops`) and `hbm_gbps`; this module does not import the topology layer.
Every result carries source="roofline estimate" so reports can say it was not measured.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .model import Layer, Model

SOURCE = "roofline estimate"

# Defaults, with the reason for each:
# - 0.5 of peak: large-model training on A100 sustains ~52% of peak FLOPs end to end
#   (Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters
#   Using Megatron-LM", sec. 5.1); single GEMMs do better, small odd shapes worse.
# - 0.7 of HBM: elementwise/gather kernels in PyTorch reach ~70-90% of the HBM bandwidth
#   a STREAM-like copy achieves; 0.7 is the conservative end.
# - 5 µs per kernel: CUDA kernel launch + framework dispatch for eager PyTorch is a few µs
#   to ~10 µs per op (PyTorch performance-tuning guide recommends CUDA graphs for this).
# - fp32 math at 1/16 of the bf16 rate: PyTorch >= 1.12 disables TF32 for matmuls by
#   default (torch.backends.cuda.matmul.allow_tf32 = False), so fp32 GEMMs run on CUDA
#   cores: A100 19.5 vs 312 TFLOPS, H100 SXM 67 vs 989 (NVIDIA datasheets). Use 0.5 for TF32.
DEFAULT_COMPUTE_EFFICIENCY = 0.5
DEFAULT_MEMORY_EFFICIENCY = 0.7
DEFAULT_LAUNCH_OVERHEAD_S = 5e-6
DEFAULT_FP32_RATIO = 1 / 16
ADAM_FLOPS_PER_PARAM = 12       # moments, bias correction, sqrt, divide, update


@dataclass(frozen=True)
class ComputeSpec:
    """What the roofline needs to know about a GPU."""

    peak_tflops: float            # dense bf16/fp16 tensor-core peak, TFLOPS
    hbm_gbps: float               # HBM bandwidth, GB/s
    fp32_ratio: float = DEFAULT_FP32_RATIO

    @classmethod
    def from_gpu(cls, gpu: Any, fp32_ratio: float = DEFAULT_FP32_RATIO) -> "ComputeSpec":
        """From any GPU-like object (peak_tflops or bf16_tflops, and hbm_gbps)."""
        peak = getattr(gpu, "peak_tflops", None) or getattr(gpu, "bf16_tflops")
        fp32 = getattr(gpu, "fp32_tflops", None)
        if fp32:
            # the GPU's own FP32 rate beats a generic ratio (consumer GPUs run FP32 at
            # half their FP16-tensor rate, datacenter GPUs at ~1/15)
            fp32_ratio = float(fp32) / float(peak)
        return cls(float(peak), float(gpu.hbm_gbps), fp32_ratio)

    def flops_per_s(self, dtype_bytes: int) -> float:
        rate = self.peak_tflops * 1e12
        return rate * self.fp32_ratio if dtype_bytes >= 4 else rate


@dataclass(frozen=True)
class RooflineParams:
    compute_efficiency: float = DEFAULT_COMPUTE_EFFICIENCY
    memory_efficiency: float = DEFAULT_MEMORY_EFFICIENCY
    launch_overhead_s: float = DEFAULT_LAUNCH_OVERHEAD_S


@dataclass(frozen=True)
class LayerTime:
    name: str
    fwd_s: float
    bwd_s: float
    fwd_bound: str                # "compute" or "memory": which roof limits the forward
    bwd_bound: str
    source: str = SOURCE


@dataclass(frozen=True)
class StepTime:
    seconds: float
    bound: str
    source: str = SOURCE


def roofline_time(flops: float, nbytes: float, flops_per_s: float, bytes_per_s: float,
                  kernels: int = 1, compute_efficiency: float = DEFAULT_COMPUTE_EFFICIENCY,
                  memory_efficiency: float = DEFAULT_MEMORY_EFFICIENCY,
                  launch_overhead_s: float = DEFAULT_LAUNCH_OVERHEAD_S) -> tuple[float, str]:
    """(seconds, "compute"|"memory") for `kernels` kernels doing `flops` and moving `nbytes`."""
    if flops_per_s <= 0 or bytes_per_s <= 0:
        raise ValueError("flops_per_s and bytes_per_s must be positive")
    if not (0 < compute_efficiency <= 1 and 0 < memory_efficiency <= 1):
        raise ValueError("efficiencies must be in (0, 1]")
    compute = flops / (flops_per_s * compute_efficiency)
    memory = nbytes / (bytes_per_s * memory_efficiency)
    return max(compute, memory) + kernels * launch_overhead_s, \
        ("compute" if compute >= memory else "memory")


def layer_time(layer: Layer, gpu: ComputeSpec, dtype_bytes: int,
               params: RooflineParams = RooflineParams()) -> LayerTime:
    rate, bw = gpu.flops_per_s(dtype_bytes), gpu.hbm_gbps * 1e9
    kw = dict(compute_efficiency=params.compute_efficiency,
              memory_efficiency=params.memory_efficiency,
              launch_overhead_s=params.launch_overhead_s)
    fwd, fb = roofline_time(layer.fwd_flops, layer.fwd_bytes, rate, bw, layer.fwd_kernels, **kw)
    bwd, bb = roofline_time(layer.bwd_flops, layer.bwd_bytes, rate, bw, layer.bwd_kernels, **kw)
    return LayerTime(layer.name, fwd, bwd, fb, bb)


def model_times(model: Model, gpu: ComputeSpec,
                params: RooflineParams = RooflineParams()) -> list[LayerTime]:
    """Per-layer forward/backward estimates, in forward order."""
    return [layer_time(layer, gpu, model.dtype_bytes, params) for layer in model.layers]


def optimizer_bytes_per_element(dtype_bytes: int, state_bytes: int, master_bytes: int) -> int:
    """Read param + grad, read+write state and master copy, write param."""
    return 3 * dtype_bytes + 2 * state_bytes + 2 * master_bytes


def optimizer_step_time(elements: int, model: Model, gpu: ComputeSpec,
                        params: RooflineParams = RooflineParams(), kernels: int = 1,
                        index_bytes: int = 0) -> StepTime:
    """Update `elements` parameters: a dense tensor (all its parameters) or, for a sparse
    embedding gradient, only the touched rows (rows * dim elements, plus `index_bytes`
    of row indices). One fused multi-tensor kernel by default (torch foreach/fused)."""
    opt = model.optimizer
    nbytes = elements * optimizer_bytes_per_element(
        model.dtype_bytes, opt.state_bytes_per_param, opt.master_bytes_per_param) + index_bytes
    flops = elements * (ADAM_FLOPS_PER_PARAM if opt.state_bytes_per_param else 2)
    seconds, bound = roofline_time(
        flops, nbytes, gpu.flops_per_s(4), gpu.hbm_gbps * 1e9, kernels,
        params.compute_efficiency, params.memory_efficiency, params.launch_overhead_s)
    return StepTime(seconds, bound)


def sparse_optimizer_step_time(rows: float, dim: int, model: Model, gpu: ComputeSpec,
                               params: RooflineParams = RooflineParams()) -> StepTime:
    """Update only the `rows` touched rows of a `dim`-wide table (8-byte indices)."""
    return optimizer_step_time(int(round(rows)) * dim, model, gpu, params, kernels=2,
                               index_bytes=8 * int(round(rows)))
