"""Training precision as users run it: what --dtype means for every kernel and byte.

fp32: everything in FP32; GEMMs on CUDA cores (PyTorch >= 1.12 default, TF32 off).
tf32: FP32 storage; GEMMs on tensor cores at the TF32 rate (torch allow_tf32 / the
      NVIDIA containers' default, as DeepLearningExamples' "TF32" rows run).
bf16, fp16: automatic mixed precision (Micikevicius et al. 2018, "Mixed Precision
      Training"): GEMMs and attention products in 16-bit on tensor cores, weights,
      activations and gradients stored in 16-bit, reductions (softmax, LayerNorm
      statistics, the loss) accumulated in FP32 inside their kernels, an FP32 master copy
      of the weights and FP32 optimizer state.
fp8:  as bf16, with the GEMMs at the FP8 tensor rate (Transformer Engine keeps the
      tensors between kernels in 16-bit; only GEMM inputs are cast to FP8, by the
      quantize kernels of embsim.workload.fp8_quant).

Three mixed-precision styles (--amp): "autocast" (torch.cuda.amp, the default): softmax,
LayerNorm and the loss are FP32 ops with FP32 outputs cast back to 16-bit; "o2" (apex
O2, model.half() with FP32 master weights, as NVIDIA DeepLearningExamples run): those
kernels read and write 16-bit (FP32 math inside), and only the loss is upcast;
"megatron" (Megatron-Core, as NeMo and Megatron-Bridge run it): a 16-bit model as under
o2 (Float16Module casts the module to bf16, megatron/core/transformer/module.py; NeMo's
megatron_amp_O2, Megatron-Bridge's bf16_mixed params_dtype bf16 with autocast off), FP32
master weights in the distributed optimizer, and an FP32 main_grad per parameter that the
weight-gradient GEMM accumulates into itself (gradient_accumulation_fusion, TE's
fuse_wgrad_accumulation): no per-micro-batch gradient pass of its own, where apex O2
unscales each micro-batch's 16-bit gradients into stashed FP32 ones
(embsim.engine.accumulate.master_accumulate_s). Its gradients are reduced in FP32 when the
run says so (grad_reduce_in_fp32, the optimizer option fp32_gradients).

Parameters follow the style (param_bytes and table_bytes, the one place it is decided).
Under autocast (torch.cuda.amp) the model is never cast: every parameter stays FP32, so
its gradient is FP32 (DDP all-reduces FP32 gradients) and there is no separate master
copy (the optimizer steps the FP32 parameters, after the loss scaler unscales their
gradients). Each forward casts a weight to 16-bit where an op on autocast's float16 list
uses it (one cast per weight per forward, cached for the rest of that forward: the
torch.autocast weight cast cache), and the cast's backward casts its 16-bit gradient up
again. Under o2 (apex O2: model.half()) parameters and gradients are 16-bit, the FP32
master weights live in the optimizer and the gradient all-reduce is 16-bit.

Embedding tables follow the same rule. autocast
casts only the ops on its lists: embedding is on neither the "CUDA Ops that can autocast
to float16" list (GEMMs, convolutions, RNN cells) nor the float32 one (PyTorch docs,
torch.amp "Autocast Op Reference"), so an nn.Embedding runs in its weight's dtype, FP32:
the table, its lookups, its gradient (dense scatter-add or sparse rows), their
all-reduce/all-to-all and its optimizer step are FP32, with no separate master copy.
Elementwise ops on the looked-up rows (a product, a concatenation) stay FP32 by type
promotion until a GEMM casts its input. Under o2 (model.half(), apex O2 casts the model's
parameters to 16-bit and keeps FP32 master weights in the optimizer) the tables are
16-bit like every other parameter.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InputError

FP32_BYTES = 4


@dataclass(frozen=True)
class Precision:
    name: str
    gemm_rate: str          # "fp32" = CUDA-core FP32, else a gpu.tensor_tflops key
    storage_bytes: int      # weights, activations and gradients as the model holds them

    @property
    def mixed(self) -> bool:
        """AMP: a 16-bit model with FP32 master weights."""
        return self.storage_bytes < FP32_BYTES

    @property
    def master_bytes(self) -> int:
        return FP32_BYTES if self.mixed else 0


PRECISIONS = {
    "fp32": Precision("fp32", "fp32", 4),
    "tf32": Precision("tf32", "tf32", 4),
    "bf16": Precision("bf16", "bf16", 2),
    "fp16": Precision("fp16", "fp16", 2),
    "fp8": Precision("fp8", "fp8", 2),
}
DTYPES = tuple(PRECISIONS)
# other spellings of the same precisions (PyTorch's dtype names, upper case); AMP is not one:
# it does not say whether FP16 or BF16 runs
_DTYPE_SPELLINGS = {"float32": "fp32", "float": "fp32", "float16": "fp16", "half": "fp16",
                    "bfloat16": "bf16", "float8": "fp8"}


def unquantized(prec: Precision) -> Precision:
    """The precision of a GEMM an FP8 recipe leaves out (Kernel.unquantized): fp8's
    16-bit storage dtype, BF16 (Transformer Engine and torchao keep the tensors between
    FP8 GEMMs in BF16); any other precision is its own."""
    return PRECISIONS["bf16"] if prec.name == "fp8" else prec


def canonical_dtype(name: str) -> str:
    """`TF32`, `BF16`, `float16`, `bfloat16` as --dtype names them; anything else unchanged,
    for precision() to refuse."""
    key = str(name).strip().lower()
    key = _DTYPE_SPELLINGS.get(key, key)
    return key if key in PRECISIONS else name


AMP_STYLES = ("autocast", "o2", "megatron")


def canonical_amp(name):
    """`O2` (apex's spelling), `Autocast` as --amp names them; anything else unchanged, for
    check_amp_style to refuse."""
    key = str(name).strip().lower()
    return key if key in AMP_STYLES else name


def check_amp_style(amp) -> str:
    if amp not in AMP_STYLES:
        raise InputError(f"--amp {amp!r}: must be one of {', '.join(AMP_STYLES)}")
    return amp


def op_bytes(dtype_bytes: int, amp: str = "autocast") -> int:
    """Output bytes of softmax/LayerNorm kernels: FP32 under autocast, else the model's."""
    check_amp_style(amp)
    return FP32_BYTES if amp == "autocast" else dtype_bytes


def param_bytes(dtype_bytes: int, amp: str = "autocast") -> int:
    """Bytes per element of stored parameters and their gradients: FP32 under autocast
    (the model is not cast; FP32 or TF32 training is FP32 either way), else the model's
    storage (apex O2's model.half())."""
    op_bytes(dtype_bytes, amp)                # one-line error for an unknown style
    return FP32_BYTES if amp == "autocast" else dtype_bytes


def table_bytes(dtype_bytes: int, amp: str = "autocast") -> int:
    """Bytes per element of embedding tables, their looked-up rows and their gradients:
    the parameters' (param_bytes): nn.Embedding is not autocast, so its rows stay FP32
    under autocast."""
    return param_bytes(dtype_bytes, amp)


def weight_cast_bytes(dtype_bytes: int, amp: str = "autocast") -> int:
    """Bytes a forward's weight cast reads and writes per parameter element (FP32 read,
    16-bit write; the same again for its backward): autocast with a 16-bit compute dtype
    only, 0 otherwise."""
    p = param_bytes(dtype_bytes, amp)
    return p + dtype_bytes if dtype_bytes < p else 0


def check_amp_flags(dtype: str | None, amp: str | None) -> None:
    """--amp names a mixed-precision style: with an explicit FP32/TF32 --dtype it would be
    silently ignored (a full-precision run has no 16-bit copy to keep)."""
    if amp is not None and dtype is not None and not precision(dtype).mixed:
        raise InputError(f"--amp {amp} with --dtype {dtype}: --amp is a mixed-precision style "
                         f"(for --dtype bf16, fp16 or fp8)")


def precision(name: str, flag: str = "--dtype") -> Precision:
    try:
        return PRECISIONS[name]
    except KeyError:
        # published tables write "AMP": mixed precision, whose 16-bit type they leave unsaid
        amp = ("; AMP is mixed precision: fp16 (apex / torch.cuda.amp's default) or bf16, with "
               "--amp for the style" if str(name).strip().lower() in ("amp", "mixed") else "")
        raise InputError(f"{flag} {name!r}: must be one of {', '.join(DTYPES)}{amp}") from None
