"""The quantize kernels Transformer Engine runs around a transformer block's FP8 GEMMs.

An FP8 GEMM takes FP8 operands with a per-tensor scale; the tensors between kernels stay
in BF16 (embsim.workload.precision), so every GEMM input is quantized first. Read from
NVIDIA/TransformerEngine (transformer_engine/pytorch/csrc/quantizer.cpp,
extensions/normalization.cpp, common/transformer_engine.cpp), per GEMM input of E
elements held in e-byte BF16:

current scaling (Float8CurrentScaling; Megatron-Bridge/NeMo "fp8cs"):
  Float8CurrentScalingQuantizer::quantize_impl runs nvte_compute_amax (reads E*e),
  nvte_compute_scale_from_amax (one scalar) and nvte_quantize_v2, the cast (reads E*e,
  writes E FP8 bytes and, where needed, their E-byte transpose). A LayerNorm/RMSNorm that
  feeds the GEMM (LayerNormLinear) computes the amax inside the norm kernel
  (Impl::FUSED_NORM_AMAX_FP8: the norm still writes its BF16 output), so only the scale
  and the cast run after it.
delayed scaling (DelayedScaling, TE's default before 2.x; NeMo 24.07): the scale comes
  from the amax history, so the norm writes FP8 itself (Impl::FULLY_FUSED) and a
  standalone input or gradient takes one fused cast(+transpose) kernel that records its
  amax on the way (reads E*e, writes E + the transpose). The norm-fed input's transpose
  for the weight gradient is a separate FP8 transpose (reads E, writes E). The
  once-per-step amax-history update is one multi-tensor kernel over a few scalars per
  tensor: not charged. (The fused norm's FP8 output, E bytes smaller than the BF16 one
  embsim's norm kernel writes, is not credited.)

The transpose: FP8 GEMMs before Blackwell take only the TN layout, so the weight
gradient (X^T dY) needs X and dY transposed in FP8; TE writes that copy only where
nvte_is_non_tn_fp8_gemm_supported() is false (compute capability < 100, or 120-129).
Kernel.transpose_bytes carries it and the kernel model charges it by the GPU's arch.

Per block and micro-batch (Megatron-core: TE linears for QKV (norm-fed), the attention
output projection, FC1 (norm-fed), FC2; the activation and attention are BF16 kernels):
forward quantizes the four GEMM inputs, backward the four output gradients (every one a
standalone quantize). Weights are quantized once per optimizer step and cached across
micro-batches (TE's is_first_microbatch, which Megatron-core sets): not charged per
micro-batch here (about 2 x 218M elements per Llama-3-8B layer per step, < 0.5 % of a
step at 8 or more micro-batches).

These are TE's vectorised streaming kernels, one contiguous read and write per element
like a dtype cast: timed as copies (kernel_time: the full streaming bandwidth).
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import InputError
from .kernels import Kernel, stream

FP8_BYTES = 1
RECIPES = ("current", "delayed")
DEFAULT_RECIPE = "current"
SCALE_BYTES = 8          # the amax read and the FP32 scale written by the scale kernel


def check_recipe(recipe: str) -> str:
    if recipe not in RECIPES:
        raise InputError(f"layers: fp8_recipe {recipe!r}: must be one of {', '.join(RECIPES)}")
    return recipe


def quantize(name: str, elems: float, e: int, recipe: str, norm_fed: bool = False) -> list[Kernel]:
    """The kernels that turn one e-byte GEMM input of `elems` elements into FP8 (with the
    transpose where the GPU needs it)."""
    check_recipe(recipe)
    cast = elems * (e + FP8_BYTES)          # read the BF16 tensor, write its FP8 copy
    if recipe == "current":
        ks = [] if norm_fed else [stream(f"{name}.amax", elems * e, copy=True)]
        return ks + [stream(f"{name}.scale", SCALE_BYTES, copy=True),
                     _with_transpose(stream(f"{name}.cast", cast, copy=True), elems)]
    if norm_fed:       # the norm wrote FP8 already; the weight gradient needs its transpose
        return [_transpose_only(f"{name}.transpose", elems)]
    return [_with_transpose(stream(f"{name}.cast_transpose", cast, copy=True), elems)]


def _with_transpose(k: Kernel, elems: float) -> Kernel:
    return replace(k, transpose_bytes=elems * FP8_BYTES)


def _transpose_only(name: str, elems: float) -> Kernel:
    """Reads the FP8 tensor and writes its transpose; nothing at all where the GEMM takes
    any layout (the kernel is not launched there either: its count is in transpose_bytes)."""
    return replace(stream(name, 0.0, copy=True), transpose_bytes=2 * elems * FP8_BYTES)


def block_quantize(n: int, h: int, qkv_out: int, fc1_out: int, ffn: int, e: int,
                   recipe: str, cross: bool = False) -> tuple[list[Kernel], list[Kernel]]:
    """(forward, backward) quantize kernels of one transformer block of n tokens: hidden
    h, QKV output width qkv_out, FC1 output width fc1_out (2 x ffn with a gated
    activation), FC2 input width ffn. A decoder's cross attention is charged like its
    self-attention (norm-fed input, standalone output-projection input)."""
    fwd, bwd = [], []
    for tag in (("self", "cross") if cross else ("self",)):
        fwd += quantize(f"fp8.{tag}.qkv_in", n * h, e, recipe, norm_fed=True)
        fwd += quantize(f"fp8.{tag}.out_in", n * h, e, recipe)
        bwd += quantize(f"fp8.{tag}.qkv_dgrad_out", n * qkv_out, e, recipe)
        bwd += quantize(f"fp8.{tag}.out_dgrad_out", n * h, e, recipe)
    fwd += quantize("fp8.fc1_in", n * h, e, recipe, norm_fed=True)
    fwd += quantize("fp8.fc2_in", n * ffn, e, recipe)
    bwd += quantize("fp8.fc1_dgrad_out", n * fc1_out, e, recipe)
    bwd += quantize("fp8.fc2_dgrad_out", n * h, e, recipe)
    return fwd, bwd
