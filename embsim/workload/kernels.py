"""The GPU kernels one layer launches: the kernel compute model's input.

A layer's forward and backward are lists of Kernel records, each a pure function of the
layer's shapes, the batch, the sequence length and the stored element size. Classes:
- gemm: an (m x k) @ (k x n) product, `batch` independent ones in one launch (batched
  attention products; the two directions of a bidirectional LSTM step);
- stream: a memory-bound kernel (elementwise, norm, softmax, dropout, reductions)
  moving `nbytes` through HBM;
- gather / scatter: `rows` random row accesses of `row_bytes` each (embedding lookup,
  its gradient's segment sums and row writes; `passes` HBM passes per row);
- attention: a fused (flash) attention pass over `batch` (sample, head) pairs of m queries,
  head dim n, written as the GEMM of k-depth 2 x keys (forward) or 5 x keys (backward)
  it performs; timed from published kernel throughput (embsim.workload.attention_rate).
`count` repeats a kernel back to back (an LSTM's per-timestep kernels); `ops` is how
many of those launches go through the framework's Python dispatcher (0 for kernels a
library such as cuDNN launches internally, e.g. per timestep).

Backward of Y = X W (X: m x k, W: k x n): dX = dY W^T -> gemm(m, k, n);
dW = X^T dY -> gemm(k, n, m).
"""

from __future__ import annotations

from dataclasses import dataclass

from .model import INDEX_BYTES

MASK_BYTES = 1       # dropout keeps a 1-byte mask per element
# What bounds a memory-bound kernel (Kernel.mechanism), each timed at its own fraction of
# the copy bandwidth (embsim.workload.gpu_props.MECHANISM_EFFICIENCY, measured per kernel):
STREAM = "stream"    # one pass, at most a row reduction (maps, softmax, norms, fills)
RNG = "rng"          # draws random numbers per element (dropout's mask)
COLUMN = "column"    # reduces over the rows (bias / norm-parameter gradients)
# a transformer block's activation kernels: the whole-layer fraction fitted on such layers
# (FRAMEWORK_STREAM_EFFICIENCY), which also holds their time no per-kernel class places
LAYER = "layer"
# Mixed precision as torch.autocast runs it: softmax, log-softmax, LayerNorm and losses
# are FP32 ops (autocast's float32 list): they write FP32 outputs (f = 4 bytes), and a
# cast back to 16-bit feeds the next GEMM (and the reverse in backward). With a 16-bit
# model (apex O2, model.half()) they compute in FP32 inside but read and write 16-bit
# (f = e); only the loss's log-softmax is upcast (frameworks do .float() on the logits).
FP32 = 4


def fp32_cast(name: str, elems: float, e: int, f: int = FP32) -> list:
    """The cast of an f-byte op output back to the model's e-byte dtype (none if equal)."""
    return [stream(f"{name}.cast", elems * (f + e), copy=True)] if e < f else []


@dataclass(frozen=True)
class Kernel:
    kind: str                 # "gemm" | "stream" | "gather" | "scatter" | "attention"
    m: int = 0
    n: int = 0
    k: int = 0
    batch: int = 1
    nbytes: float = 0.0       # stream: HBM bytes read + written
    rows: float = 0.0         # gather/scatter: random rows accessed
    row_bytes: int = 0        # gather/scatter: bytes per row
    # gather/scatter: HBM passes per row (0: the kind's own, gather 2 = read + write,
    # scatter 3 = read + read/write); 1 for a kernel that only reads or only writes rows
    passes: int = 0
    # back-to-back repetitions (timesteps); fractional for a layer's share of a
    # whole-model multi-tensor step's launches (embsim.workload.lamb)
    count: float = 1
    ops: float = 1            # framework (Python) dispatches for all `count` launches
    name: str = ""
    recurrent: bool = False   # an RNN timestep's gate kernel: pays the per-step overhead
    param_pass: bool = False  # an optimizer's pass over parameter-sized contiguous tensors
    # a plain contiguous copy (a dtype cast, torch.cat's batched copy, .contiguous() of a
    # slice): ATen's copy_, one contiguous read and write per element, the access pattern
    # of the streaming copy that gpu.hbm_fraction measures
    copy: bool = False
    # a pointwise map (activation, dropout, residual add, product, fill; a mask or
    # positional table may broadcast): ATen's TensorIterator elementwise kernel, the grid
    # copy_ runs on, no reduction. Timed like any activation kernel; the classification is
    # what embsim.workload.stream_alternatives tests (maps at copy bandwidth: rejected)
    pointwise: bool = False
    mechanism: str = STREAM   # memory-bound: what bounds it (STREAM, RNG, COLUMN or LAYER)
    # attention: a causal mask, the backward pass, the library ("" = the GPU's default)
    causal: bool = False
    backward: bool = False
    impl: str = ""
    # stream: bytes of an FP8 transpose written (and, for a transpose-only kernel with
    # nbytes 0, read) only where FP8 GEMMs take just the TN layout (before Blackwell;
    # embsim.workload.fp8_quant); elsewhere not moved, and a transpose-only kernel not run
    transpose_bytes: float = 0.0
    # gemm: a product the FP8 recipes leave in 16-bit (the output layer,
    # kernels_layers.output_layer_16bit): under --dtype fp8 it runs at the BF16 rate
    unquantized: bool = False

    @property
    def flops(self) -> float:
        if self.kind not in ("gemm", "attention"):
            return 0.0
        return 2.0 * self.m * self.n * self.k * self.batch * self.count


def gemm(name: str, m: int, n: int, k: int, batch: int = 1, count: int = 1, ops: int | None = None) -> Kernel:
    return Kernel("gemm", m=m, n=n, k=k, batch=batch, count=count,
                  ops=count if ops is None else ops, name=name)


def attention(name: str, s: int, hd: int, keys: int, batch: int, backward: bool,
              causal: bool, impl: str = "") -> Kernel:
    """One flash-attention pass (one launch, one framework op): `keys` visited per query
    (fewer than s under a causal mask: the skipped tiles)."""
    return Kernel("attention", m=s, n=hd, k=(5 if backward else 2) * keys, batch=batch,
                  ops=1, name=name, causal=causal, backward=backward, impl=impl)


def stream(name: str, nbytes: float, count: float = 1, ops: float | None = None,
           recurrent: bool = False, param_pass: bool = False, copy: bool = False,
           pointwise: bool = False, mechanism: str = STREAM) -> Kernel:
    return Kernel("stream", nbytes=float(nbytes), count=count,
                  ops=count if ops is None else ops, name=name, recurrent=recurrent,
                  param_pass=param_pass, copy=copy, pointwise=pointwise, mechanism=mechanism)


def linear_fwd_bwd(name: str, n: int, fin: int, fout: int, e: int, bias: bool = True,
                   act: bool = False, dropout: bool = False,
                   fused_bias_grad: bool = False) -> tuple[list, list]:
    """nn.Linear (bias folded into the GEMM epilogue), an optional activation and an
    optional dropout on the output (fused dropout: read x, write y and the 1-byte mask;
    backward reads the gradient and the mask, writes the gradient). `fused_bias_grad`:
    the activation's backward also sums the bias gradient in the same pass (apex's fused
    MLP, csrc/mlp_cuda.cu biasAddRelu_bprop: reads y and dy, writes dx, reduces db in FP32
    registers and per-block partials), so no separate bias-gradient kernel reads dy again."""
    fwd = [gemm(f"{name}.gemm", n, fout, fin)]
    bwd = [gemm(f"{name}.dgrad", n, fin, fout), gemm(f"{name}.wgrad", fin, fout, n)]
    if act:
        fwd.append(stream(f"{name}.act", 2 * n * fout * e, pointwise=True))
        bwd.insert(0, stream(f"{name}.act_bwd", 3 * n * fout * e, pointwise=True))
    if dropout:
        fwd.append(stream(f"{name}.dropout", n * fout * (2 * e + MASK_BYTES), pointwise=True,
                          mechanism=RNG))
        bwd.insert(0, stream(f"{name}.dropout_bwd", n * fout * (2 * e + MASK_BYTES), pointwise=True))
    if bias and not (fused_bias_grad and act):
        bwd.append(stream(f"{name}.bias_grad", n * fout * e, mechanism=COLUMN))
    return fwd, bwd


def norm_fwd_bwd(name: str, n: int, dim: int, e: int, f: int = FP32) -> tuple[list, list]:
    """LayerNorm/RMSNorm (an FP32 op under AMP): read x, write y (+ per-row FP32
    statistics), cast y back; backward reads x and the FP32 dy, writes dx, then reduces
    the scale/shift gradients."""
    elems = n * dim
    fwd = [stream(f"{name}", elems * (e + f) + 8 * n)] + fp32_cast(name, elems, e, f)
    bwd = (fp32_cast(f"{name}.bwd", elems, e, f)
           + [stream(f"{name}.bwd", elems * (f + 2 * e) + 8 * n),
              stream(f"{name}.param_grad", elems * e, mechanism=COLUMN)])
    return fwd, bwd


def dropout_residual(name: str, n: int, dim: int, e: int, dropout: bool) -> tuple[list, list]:
    """Dropout on a sublayer output, then the residual add."""
    fwd, bwd = [stream(f"{name}.residual", 3 * n * dim * e, pointwise=True)], []
    if dropout:
        fwd.insert(0, stream(f"{name}.dropout", n * dim * (2 * e + MASK_BYTES), pointwise=True,
                             mechanism=RNG))
        bwd.append(stream(f"{name}.dropout_bwd", n * dim * (2 * e + MASK_BYTES), pointwise=True))
    return fwd, bwd
