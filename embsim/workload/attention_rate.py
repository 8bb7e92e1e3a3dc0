"""What fused (flash) attention kernels achieve: published forward and backward
throughput by implementation, head dimension and sequence length, as a fraction of the
GPU's dense 16-bit tensor peak.

Source: Shah, Bikshandi, Zhang, Thakkar, Ramani, Dao 2024, "FlashAttention-3: Fast and
Accurate Attention with Asynchrony and Low-precision" (arXiv 2407.08608v2), Figures 5
(forward) and 6 (backward): BF16 on one H100 80GB SXM5, batch x sequence = 16k tokens,
hidden 2048 (head dim 64/128/256 -> 32/16/8 heads), TFLOPS counted as 4 x seq^2 x
head_dim x heads forward (half of it with a causal mask), 2.5 x that backward. The
numbers printed above the bars, for FlashAttention-2 (Dao 2023), cuDNN's fused attention
and FlashAttention-3. The paper shows forward without a mask at head dims 64, 128 and 256,
with a causal mask at 128, and backward without a mask at 128.

What the figures do not show is derived, and named here:
- backward at head dim 64/256: that head dim's forward x hd 128's backward/forward ratio;
- a causal backward: the non-causal backward x hd 128's causal/non-causal forward ratio
  (both skip the same masked tiles and pay the same diagonal-tile masking);
- sequences outside 512-16k: the nearest measured length (flagged in the compute source);
- another GPU: the same fraction of its own 16-bit peak. On Hopper (H100, H200: the same
  GH100 die and clocks) that is the measurement. Elsewhere the fraction that the kernel
  written for the architecture reaches on its own: FlashAttention-2 on Ampere/Ada
  (Dao 2023: 50-73 % of A100's peak) is taken at FlashAttention-3's H100 fraction, the
  cuDNN kernel on Blackwell at its H100 fraction. Outputs say so.

Precision: the kernels run in 16-bit. Under an FP8 recipe Transformer Engine keeps dot
product attention in BF16 unless the recipe sets fp8_dpa (NVIDIA/TransformerEngine
transformer_engine/pytorch/attention/dot_product_attention/utils.py,
get_attention_backend: FP8 attention only `if fp8 and fp8_meta["recipe"].fp8_dpa`), so an
fp8 run's attention is charged at the 16-bit rate.

Dao's Triton port (`triton`): MosaicML llm-foundry's attn_impl triton
(llmfoundry/models/layers/flash_attn_triton.py at v0.3.0, a copy of HazyResearch
flash-attention eff9fe6's flash_attn_triton.py on the pre-MLIR Triton of Dec 2022). No
figure is published for it; its own header says its forward + backward is "slightly
slower" than the CUDA FlashAttention of the time (v1), and llm-foundry's TUTORIAL.md (v0.3.0)
that it is "slightly faster" than attn_impl flash (flash-attn 1.0.9, the [gpu] extra's pin):
FlashAttention-1's speed. FlashAttention-2 gives "around 2x" over FlashAttention-1 (Dao
2023, arXiv 2307.08691 abstract: 50-73 % of A100's peak against 25-40 %), so the port runs
at FA2_OVER_FA1 times FlashAttention-2's time. Neither uses Hopper's instructions (the
pre-MLIR compiler predates them; the FA3 paper's FlashAttention-2 figures are the Ampere
kernel on H100), so the ratio holds on H100 as on A100.

Which implementation: Transformer Engine (Megatron, NeMo) gives its FusedAttention (cuDNN)
backend preference over FlashAttention on compute capability 9.0 and newer ("Disabling
FlashAttention to give FusedAttention preference on Hopper+ for performance reasons", the
same function); before Hopper, FlashAttention-2.
"""

from __future__ import annotations

import bisect
import math

SEQS = (512, 1024, 2048, 4096, 8192, 16384)
REF_PEAK_TFLOPS = 989.0      # H100 SXM5 dense BF16 (the dgx-h100 preset's figure)
REF_ARCH = 90                # the figures' GPU: Hopper
IMPLEMENTATIONS = ("cudnn", "fa2", "fa3", "triton")
# FlashAttention-1 (and the Triton port at its speed) takes this many times FlashAttention-2's
# time: "around 2x speedup compared to FlashAttention" (Dao 2023, arXiv 2307.08691, abstract)
FA2_OVER_FA1 = 2.0

# (implementation, pass, causal, head_dim) -> TFLOPS at SEQS (FA3 paper Figs. 5-6)
H100_TFLOPS = {
    ("fa2", "fwd", False, 64): (282, 306, 318, 321, 322, 324),
    ("cudnn", "fwd", False, 64): (335, 373, 395, 408, 412, 413),
    ("fa3", "fwd", False, 64): (333, 392, 460, 476, 496, 497),
    ("fa2", "fwd", False, 128): (309, 350, 362, 368, 370, 370),
    ("cudnn", "fwd", False, 128): (497, 574, 617, 609, 600, 595),
    ("fa3", "fwd", False, 128): (467, 565, 625, 638, 646, 648),
    ("fa2", "fwd", False, 256): (208, 251, 278, 293, 297, 298),
    ("cudnn", "fwd", False, 256): (308, 391, 450, 483, 497, 509),
    ("fa3", "fwd", False, 256): (286, 427, 537, 612, 628, 642),
    ("fa2", "fwd", True, 128): (191, 260, 298, 319, 333, 335),
    ("cudnn", "fwd", True, 128): (315, 410, 484, 518, 529, 539),
    ("fa3", "fwd", True, 128): (292, 423, 521, 579, 602, 616),
    ("fa2", "bwd", False, 128): (214, 260, 291, 310, 318, 322),
    ("cudnn", "bwd", False, 128): (305, 408, 465, 499, 518, 516),
    ("fa3", "bwd", False, 128): (316, 424, 501, 542, 559, 561),
}
HEAD_DIMS = (64, 128, 256)


def default_implementation(arch: int | None) -> str:
    """Transformer Engine's pick: cuDNN on Hopper and newer, FlashAttention-2 before."""
    return "cudnn" if (arch or 0) >= REF_ARCH else "fa2"


def _at_seq(values: tuple, seq: float) -> float:
    """Linear in log2(seq) between the measured lengths; the nearest one outside them."""
    if seq <= SEQS[0]:
        return float(values[0])
    if seq >= SEQS[-1]:
        return float(values[-1])
    i = bisect.bisect_right(SEQS, seq) - 1
    t = (math.log2(seq) - math.log2(SEQS[i])) / (math.log2(SEQS[i + 1]) - math.log2(SEQS[i]))
    return values[i] + t * (values[i + 1] - values[i])


def _forward(impl: str, hd: int, seq: float) -> float:
    """Non-causal forward TFLOPS at head dim hd: linear in log2(hd) between 64/128/256."""
    if hd <= HEAD_DIMS[0]:
        return _at_seq(H100_TFLOPS[(impl, "fwd", False, HEAD_DIMS[0])], seq)
    if hd >= HEAD_DIMS[-1]:
        return _at_seq(H100_TFLOPS[(impl, "fwd", False, HEAD_DIMS[-1])], seq)
    lo = HEAD_DIMS[0] if hd < HEAD_DIMS[1] else HEAD_DIMS[1]
    hi = HEAD_DIMS[HEAD_DIMS.index(lo) + 1]
    a = _at_seq(H100_TFLOPS[(impl, "fwd", False, lo)], seq)
    b = _at_seq(H100_TFLOPS[(impl, "fwd", False, hi)], seq)
    return a + (math.log2(hd) - math.log2(lo)) * (b - a)


def h100_tflops(impl: str, backward: bool, causal: bool, hd: int, seq: float) -> float:
    """Achieved TFLOPS on H100 SXM5 (FLOPs counted as the figures count them)."""
    if impl not in IMPLEMENTATIONS:
        raise ValueError(f"unknown attention implementation {impl!r}")
    if impl == "triton":
        return h100_tflops("fa2", backward, causal, hd, seq) / FA2_OVER_FA1
    rate = _forward(impl, hd, seq)
    fwd128 = _at_seq(H100_TFLOPS[(impl, "fwd", False, 128)], seq)
    if backward:
        rate *= _at_seq(H100_TFLOPS[(impl, "bwd", False, 128)], seq) / fwd128
    if causal:
        rate *= _at_seq(H100_TFLOPS[(impl, "fwd", True, 128)], seq) / fwd128
    return rate


def transferred_implementation(impl: str, arch: int | None) -> str:
    """Whose H100 fraction a GPU of another architecture takes: FlashAttention-2 is the
    kernel written for Ampere/Ada, FlashAttention-3 the one for Hopper, so FA2 elsewhere
    runs at FA3's H100 fraction; cuDNN ships a kernel per architecture (its own). The
    Triton port is FlashAttention-2's transfer at FA2_OVER_FA1 times its time."""
    if (arch or 0) == REF_ARCH or impl not in ("fa2", "triton"):
        return impl
    return "fa3"


def attention_fraction(impl: str, arch: int | None, backward: bool, causal: bool, hd: int,
                       seq: float) -> float:
    """Fraction of the GPU's dense 16-bit tensor peak one flash-attention pass reaches."""
    used = transferred_implementation(impl, arch)
    slow = FA2_OVER_FA1 if impl == "triton" and used != "triton" else 1.0
    return h100_tflops(used, backward, causal, hd, seq) / slow / REF_PEAK_TFLOPS


def describe(impl: str, arch: int | None, gpu_name: str, seqs: set) -> str:
    """The compute-source phrase: which kernel, whose data."""
    names = {"cudnn": "cuDNN", "fa2": "FlashAttention-2", "fa3": "FlashAttention-3",
             "triton": "Triton (llm-foundry's pre-MLIR port)"}
    used = transferred_implementation(impl, arch)
    if (arch or 0) == REF_ARCH:
        basis = "FlashAttention-3 paper's H100 figures"
    else:
        basis = (f"no data for {gpu_name}: {names[used]}'s fraction of H100's peak "
                 f"(FlashAttention-3 paper) used")
    if impl == "triton":
        basis = f"FlashAttention-1's speed: {FA2_OVER_FA1:g}x FlashAttention-2's time (Dao 2023); FlashAttention-2: {basis}"
    out = f"flash attention {names[impl]} ({basis})"
    outside = sorted(s for s in seqs if s < SEQS[0] or s > SEQS[-1])
    if outside:
        out += f"; sequence {', '.join(map(str, outside))} outside the measured 512-16k (nearest used)"
    return out
