"""Per-layer cost rules (pure functions of shapes, batch, seq and dtype).

Conventions, used by every layer kind:
- FLOPs count a multiply-add as 2; a (m x k) @ (k x n) product costs 2*m*k*n.
- Backward = 2 x forward FLOPs for layers with weights and inputs that need gradients
  (one product for the input gradient, one for the weight gradient; Kaplan et al. 2020,
  "Scaling Laws", sec. 2.1). Embedding lookups are the exception: forward is a gather
  (0 FLOPs), backward a scatter-add of one row per lookup (lookups*dim adds).
- Bytes: forward reads the weights and input activations and writes the outputs;
  backward reads the weights, the saved activations and the output gradient, and writes
  the input gradient and the weight gradient: ~2x weights + 2x activation traffic.
- Activations saved for backward follow Korthikanti et al. 2022 ("Reducing Activation
  Recomputation in Large Transformer Models", sec. 4.1), generalised to any dtype.
- "tokens" = batch * seq for per-token layers, batch for per-sample layers.
"""

from __future__ import annotations

from dataclasses import dataclass

from .model import INDEX_BYTES  # int64 row indices
NORM_FLOPS_PER_ELEMENT = 8   # mean, variance, normalise, scale, shift (~5-8 per element)
SOFTMAX_FLOPS_PER_ELEMENT = 5  # max, subtract, exp, sum, divide


@dataclass(frozen=True)
class Shape:
    batch: int
    seq: int
    dtype_bytes: int
    op_bytes: int = 4       # output bytes of softmax/LayerNorm kernels (mixed precision style)
    fp16: bool = False      # FP16, not BF16: ATen upcasts FP16 inside its softmax kernels (half_to_float)
    # element bytes of embedding tables and their looked-up rows (precision.table_bytes);
    # 0 = the model's dtype_bytes
    table_dtype_bytes: int = 0
    # element bytes of stored dense parameters and their gradients (precision.param_bytes:
    # FP32 under autocast); 0 = the model's dtype_bytes
    param_dtype_bytes: int = 0
    # FP8 training (Transformer Engine): transformer blocks quantize their GEMM inputs
    # (embsim.workload.fp8_quant)
    fp8: bool = False
    # whose embedding-gradient kernels (embsim.workload.model.FRAMEWORKS)
    framework: str = "pytorch"

    @property
    def tokens(self) -> int:
        return self.batch * self.seq

    @property
    def table_bytes(self) -> int:
        return self.table_dtype_bytes or self.dtype_bytes

    @property
    def param_bytes(self) -> int:
        return self.param_dtype_bytes or self.dtype_bytes


@dataclass(frozen=True)
class LayerCost:
    params: int
    fwd_flops: int
    bwd_flops: int
    fwd_bytes: int
    bwd_bytes: int
    grad_bytes: int
    activation_bytes: int
    sparse: bool = False
    fwd_kernels: int = 1
    bwd_kernels: int = 2
    # a transformer block: the part of activation_bytes its attention cores save (the
    # scores' softmax, dropout mask and output), which selective recomputation drops
    core_saved: int = 0


def dense_cost(params: int, fwd_flops: int, act_traffic: int, saved: int, d: int,
               fwd_kernels: int = 1, bwd_kernels: int = 2) -> LayerCost:
    """The common rule for a layer with dense weights (see module docstring)."""
    return LayerCost(
        params=params, fwd_flops=fwd_flops, bwd_flops=2 * fwd_flops,
        fwd_bytes=d * (params + act_traffic), bwd_bytes=d * (2 * params + 2 * act_traffic),
        grad_bytes=d * params, activation_bytes=saved,
        fwd_kernels=fwd_kernels, bwd_kernels=bwd_kernels)


def tokens_for(p: dict, sh: Shape) -> int:
    """Rows a per-token or per-sample layer works on. `token_fraction`: a head applied only
    to that fraction of the tokens, gathered first (BERT's MLM head on the masked
    positions: Devlin et al. 2019 sec. 3.1 mask 15 %; google-research/bert and NVIDIA
    DeepLearningExamples gather those positions before the head)."""
    if p.get("per", "token") == "sample":
        return sh.batch
    frac = p.get("token_fraction")
    return sh.tokens if frac is None else max(1, int(round(sh.tokens * frac)))


def linear_cost(p: dict, sh: Shape) -> LayerCost:
    n, d = tokens_for(p, sh), sh.dtype_bytes
    fin, fout = p["in"], p["out"]
    params = fin * fout + (fout if p.get("bias", True) else 0)
    act_fn = p.get("activation", "none") != "none"
    drop = p.get("dropout", False)
    flops = 2 * n * fin * fout + (n * fout if p.get("bias", True) else 0)
    # an activation function reads and writes the output once more and saves it; dropout
    # reads and writes it again and saves a 1-byte mask per element
    traffic = n * fin + n * fout + (2 * n * fout if act_fn else 0) + (2 * n * fout if drop else 0)
    saved = d * n * fin + (d * n * fout if act_fn else 0) + (n * fout if drop else 0)
    return dense_cost(params, flops, traffic, saved, d, 1 + act_fn + drop, 2 + act_fn + drop)


def norm_params(kind: str, dim: int) -> int:
    return dim if kind == "rmsnorm" else 2 * dim   # rmsnorm: scale only; layernorm: +shift


def norm_cost(p: dict, sh: Shape) -> LayerCost:
    n, d, dim = tokens_for(p, sh), sh.dtype_bytes, p["dim"]
    params = norm_params(p.get("norm", "layernorm"), dim)
    return dense_cost(params, NORM_FLOPS_PER_ELEMENT * n * dim, 2 * n * dim, d * n * dim, d)


def embedding_cost(p: dict, sh: Shape, vocab: int, dim: int, owns_table: bool) -> LayerCost:
    """Gather of `lookups` rows per sample; the gradient is one (index, row) per lookup.
    Rows and gradient in the table's precision (FP32 under autocast). With `pooling` the
    sample's rows are summed into one output vector (lookups x dim adds), and backward
    reads that one gradient row per sample."""
    d = sh.table_bytes
    rows = sh.batch * p["lookups"]
    gathered = rows * dim * d
    pooled = "pooling" in p
    output = sh.batch * dim * d if pooled else gathered        # the output / its gradient
    return LayerCost(
        params=vocab * dim if owns_table else 0,
        fwd_flops=rows * dim if pooled else 0, bwd_flops=rows * dim,
        fwd_bytes=gathered + output + rows * INDEX_BYTES,      # read rows, write output
        bwd_bytes=output + 2 * gathered + rows * INDEX_BYTES,  # read grad, read+write rows
        grad_bytes=gathered + rows * INDEX_BYTES,
        activation_bytes=rows * INDEX_BYTES, sparse=True, fwd_kernels=1, bwd_kernels=2)


def positional_cost(p: dict, sh: Shape) -> LayerCost:
    """Learned position / segment embeddings added to the input: every used row gets a
    gradient each step, so the gradient is dense. Sinusoidal ones have no parameters."""
    d, dim = sh.dtype_bytes, p["dim"]
    params = p["rows"] * dim if p.get("learned", True) else 0
    n = sh.tokens
    return dense_cost(params, n * dim, 3 * n * dim, 0, d, 1, 1)


def output_projection_cost(p: dict, sh: Shape, vocab: int, tied: bool) -> LayerCost:
    """Hidden -> vocabulary logits. With `samples` (sampled softmax, Jozefowicz et al.
    2016) only the sampled candidates plus each token's target are scored, so the
    weight gradient touches those rows only and is sparse. `tied`: the weight is the
    lookup's table (owned there); an own `table:` (a sampled softmax's) is owned here, and
    its gradient rows, like a tied one's, are the table's."""
    n, d, dim = tokens_for(p, sh), sh.dtype_bytes, p["dim"]
    bias = p.get("bias", False)
    samples = p.get("samples")
    cols = min(vocab, samples + n) if samples else vocab
    weight = 0 if tied else vocab * dim
    params = weight + (vocab if bias else 0)
    flops = 2 * n * dim * cols
    touched = cols * dim + (cols if bias else 0)
    traffic = n * dim + n * cols
    cost = LayerCost(
        params=params, fwd_flops=flops, bwd_flops=2 * flops,
        fwd_bytes=d * (touched + traffic), bwd_bytes=d * (2 * touched + 2 * traffic),
        # a tied weight's gradient rows are the table's (its precision: FP32 under autocast)
        grad_bytes=(sh.table_bytes if tied or "table" in p else d) * touched
        + (cols * INDEX_BYTES if samples else 0),
        activation_bytes=d * n * dim, sparse=bool(samples))
    return cost


def softmax_loss_cost(p: dict, sh: Shape, classes: int) -> LayerCost:
    """Softmax + cross-entropy over `classes` logits per token (or sigmoid BCE when
    classes == 1). Forward reads logits, writes probabilities; backward writes dlogits."""
    n, d = tokens_for(p, sh), sh.dtype_bytes
    elems = n * classes
    return LayerCost(
        params=0, fwd_flops=SOFTMAX_FLOPS_PER_ELEMENT * elems, bwd_flops=2 * elems,
        fwd_bytes=2 * d * elems, bwd_bytes=2 * d * elems, grad_bytes=0,
        activation_bytes=d * elems, fwd_kernels=2, bwd_kernels=1)


def fm_interaction_cost(p: dict, sh: Shape) -> LayerCost:
    """DeepFM's factorisation machine: first-order sum of weights plus the second-order
    term 0.5 * ((sum_f v_f)^2 - sum_f v_f^2) per sample (Guo et al. 2017, eq. 2)."""
    b, d, f, k = sh.batch, p.get("elem_bytes", sh.dtype_bytes), p["fields"], p["dim"]
    flops = b * (4 * f * k + 2 * k + f)
    traffic = b * (f * k + f + 1)
    return LayerCost(params=0, fwd_flops=flops, bwd_flops=2 * flops,
                     fwd_bytes=d * traffic, bwd_bytes=2 * d * traffic, grad_bytes=0,
                     activation_bytes=d * b * f * k, fwd_kernels=3, bwd_kernels=3)


def combine_cost(p: dict, sh: Shape) -> LayerCost:
    """Per-sample elementwise product (NCF's GMF branch: He et al. 2017, eq. 9), sum (a
    reduce_sum or average pool over `inputs` vectors) or concatenation of `inputs` vectors
    of width `dim`. No parameters. Product: forward
    reads every input and writes one vector; backward writes each input's gradient from
    the output gradient and the other inputs. Concat: forward copies every input into the
    joined tensor; backward copies each input's gradient slice out contiguous.
    `elem_bytes` (set by build): FP32 looked-up rows among its inputs (autocast) make it
    FP32 by type promotion."""
    b, d, k, w = sh.batch, p.get("elem_bytes", sh.dtype_bytes), p["inputs"], p["dim"]
    if p["op"] == "sum":
        # a reduction over k inputs (tf.reduce_sum, an average pool of stride k): its
        # gradient is the output gradient broadcast to every input, one kernel, no saved input
        return LayerCost(params=0, fwd_flops=(k - 1) * b * w, bwd_flops=0,
                         fwd_bytes=d * (k + 1) * b * w, bwd_bytes=d * (k + 1) * b * w,
                         grad_bytes=0, activation_bytes=0, fwd_kernels=1, bwd_kernels=1)
    if p["op"] == "product":
        return LayerCost(params=0, fwd_flops=(k - 1) * b * w, bwd_flops=k * (k - 1) * b * w,
                         fwd_bytes=d * (k + 1) * b * w, bwd_bytes=d * k * (k + 1) * b * w,
                         grad_bytes=0, activation_bytes=d * k * b * w, fwd_kernels=1, bwd_kernels=k)
    return LayerCost(params=0, fwd_flops=0, bwd_flops=0, fwd_bytes=2 * d * k * b * w,
                     bwd_bytes=2 * d * k * b * w, grad_bytes=0, activation_bytes=0,
                     fwd_kernels=1, bwd_kernels=k)


def dot_interaction_cost(p: dict, sh: Shape) -> LayerCost:
    """DLRM's dot interaction (Naumov et al. 2019, sec. 2.1.3; NVIDIA DLE
    dlrm/nn/interactions.py): Z = X X^T for the (vectors x dim) stack X of each sample,
    whose lower triangle, after the first vector (the bottom MLP's output), is written as
    `out` features (zero-padded to a multiple of 8). Backward: dX = (dZ + dZ^T) X."""
    b, d, v, w, out = sh.batch, sh.dtype_bytes, p["vectors"], p["dim"], p["out"]
    flops = 2 * b * v * v * w
    return LayerCost(params=0, fwd_flops=flops, bwd_flops=2 * flops,
                     fwd_bytes=d * b * (v * w + out), bwd_bytes=d * b * (out + 2 * v * w),
                     grad_bytes=0, activation_bytes=d * b * v * w, fwd_kernels=1, bwd_kernels=1)

