"""Kernel lists of every layer kind of the zoo dialect (see embsim.workload.kernels).

The same shapes as the FLOP/byte rules of costs.py and costs_blocks.py, split into the
kernels PyTorch (eager, cuBLAS, cuDNN) launches for them, so the kernel model can time
each by its own shape. Returns (forward, backward) lists; an embedding layer also has a
sparse-gradient backward (LayerKernels.bwd_sparse).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial

from .costs import Shape, tokens_for
from .fp8_quant import DEFAULT_RECIPE, block_quantize
from .eager_ops import rmsnorm_eager_fwd_bwd, rope_eager_fwd_bwd, swiglu_eager_fwd_bwd
from .embedding_kernels import bag_kernels, embedding_kernels
from .kernels import (COLUMN, FP32, LAYER, MASK_BYTES, Kernel, attention, dropout_residual,
                      fp32_cast, gemm, linear_fwd_bwd, norm_fwd_bwd, stream)
from .torch_cp_kernels import backward_accumulates, forward_merges


FLASH_TILE = 128      # FlashAttention-2's key/query tile (Dao 2023: block sizes 64-128)


@dataclass(frozen=True)
class LayerKernels:
    fwd: tuple[Kernel, ...]
    bwd: tuple[Kernel, ...]
    bwd_sparse: tuple[Kernel, ...] = ()     # embedding: the sparse-gradient variant
    # parameter tensors (nn.Parameter objects) the layer owns: a per-tensor optimizer
    # (torch.optim's for-loop) launches its kernels once for each
    param_tensors: int = 1
    # a transformer block: whether its elementwise chains run fused (None: no such chains)
    fused_elementwise: bool | None = None
    # a transformer block: its attention cores' forward kernels (scores to context, or the
    # fused flash kernel), which selective recomputation runs again in backward
    core_fwd: tuple[Kernel, ...] = ()
    # a transformer block: the key + value elements per token one rank holds (2 kv_dim /
    # TP), what context parallelism's ring passes on (engine.cp_plan)
    kv_width: int = 0


def causal_keys(s: int) -> int:
    """Keys a causal flash-attention kernel visits per query, on average: it skips the key
    tiles wholly above the diagonal, so a query tile sees (i + 1) of nb tiles
    (FlashAttention-2, Dao 2023, sec. 3.1.1 'causal masking': skip blocks whose column
    indices are all more than the row indices; FLASH_TILE-wide tiles)."""
    nb = -(-s // FLASH_TILE)
    return -(-s * (nb + 1) // (2 * nb))


def _attention(name: str, b: int, s: int, h: int, a: int, kv: int, e: int, flash: bool,
               dropout: bool, opb: int = FP32, fused: bool = False, bias: bool = True,
               causal: bool = False, impl: str = "", tp: int = 1,
               cp: int = 1, rope: bool = False, cp_impl: str = "te") -> tuple[list, list, list]:
    """(forward, backward, the core's forward) kernels of multi-head attention of s
    queries over s keys: QKV projection, the core, output projection. Unfused, the
    (b*a, s, s) scores go through HBM: scale+mask, softmax,
    dropout (a causal mask only adds to the scores: every product is still computed);
    fused (flash attention, Dao et al. 2022) they stay on chip, backward recomputes them
    (5 products instead of 4) and a causal kernel skips the masked key tiles.
    `tp`: a tensor-parallel rank's share (workload.tensor_parallel): a / tp heads, kv / tp
    key/value width, the QKV GEMM's columns and the output GEMM's rows split tp ways.
    `cp`: a context-parallel rank's share (workload.context_parallel): s is its s / cp
    tokens, and its flash core is one kernel per ring step (_ring_steps); `cp_impl`: whose
    ring (workload.torch_cp_kernels: PyTorch's adds its merge and gradient-accumulation kernels).
    `rope`: eager rotary embeddings on q and k between the QKV GEMM and the core
    (eager_ops.rope_eager_fwd_bwd; outside the core, which selective recompute reruns)."""
    n, hd = b * s, h // a
    a, kv, hq = a // tp, kv // tp, h // tp
    fwd, bwd = [], []
    f, g = linear_fwd_bwd(f"{name}.qkv", n, h, hq + 2 * kv, e, bias)
    fwd += f
    rope_b = []
    if rope:
        for part, width in (("q", hq), ("k", kv)):
            rf, rb = rope_eager_fwd_bwd(f"{name}.rope_{part}", n, width, e)
            fwd += rf
            rope_b = rb + rope_b
    core_start = len(fwd)
    scores = b * a * s * s
    if flash and cp > 1:
        ring = partial(_ring_steps, s=s, hd=hd, batch=b * a, causal=causal, impl=impl, cp=cp,
                       cp_impl=cp_impl, n_out=n * hq, e=max(e, 2), fused=fused)
        fwd += ring(f"{name}.flash", bwd=False)
        bwd_core = ring(f"{name}.flash_bwd", bwd=True)
    elif flash:
        keys = causal_keys(s) if causal else s
        # one fused kernel each way: forward's two products per key tile, backward's five
        # (recomputing the scores); timed from published kernel throughput
        fwd.append(attention(f"{name}.flash", s, hd, keys, b * a, False, causal, impl))
        bwd_core = [attention(f"{name}.flash_bwd", s, hd, keys, b * a, True, causal, impl)]
    elif fused:
        # one generated kernel (TorchScript/nvFuser) for scale + mask + softmax + dropout:
        # reads the scores, writes the saved probabilities, the dropped ones and the mask;
        # backward reads the gradient, mask and probabilities and writes dscores once
        drop = (e + 1) if dropout else 0
        fwd += [gemm(f"{name}.scores", s, s, hd, batch=b * a),
                stream(f"{name}.softmax_fused", scores * (e + opb + drop)),
                gemm(f"{name}.context", s, hd, s, batch=b * a)]
        bwd_core = [gemm(f"{name}.context_dgrad", s, s, hd, batch=b * a),
                    gemm(f"{name}.context_vgrad", s, hd, s, batch=b * a),
                    stream(f"{name}.softmax_fused_bwd", scores * (2 * e + opb + (1 if dropout else 0))),
                    gemm(f"{name}.scores_qgrad", s, hd, s, batch=b * a),
                    gemm(f"{name}.scores_kgrad", s, hd, s, batch=b * a)]
    else:
        # softmax is an FP32 op under AMP: its output, the dropout on it and the cast
        # back for the context GEMM move 4-byte elements
        fwd += [gemm(f"{name}.scores", s, s, hd, batch=b * a),
                stream(f"{name}.scale_mask", 2 * scores * e, pointwise=True),
                stream(f"{name}.softmax", scores * (e + opb))]
        if dropout:
            fwd.append(stream(f"{name}.attn_dropout", scores * (2 * opb + 1), pointwise=True))
        fwd += fp32_cast(f"{name}.probs", scores, e, opb)
        fwd.append(gemm(f"{name}.context", s, hd, s, batch=b * a))
        bwd_core = [gemm(f"{name}.context_dgrad", s, s, hd, batch=b * a),
                    gemm(f"{name}.context_vgrad", s, hd, s, batch=b * a)]
        bwd_core += fp32_cast(f"{name}.probs_bwd", scores, e, opb)
        if dropout:
            bwd_core.append(stream(f"{name}.attn_dropout_bwd", scores * (2 * opb + 1), pointwise=True))
        bwd_core += [stream(f"{name}.softmax_bwd", scores * (2 * opb + e)),
                     stream(f"{name}.scale_bwd", 2 * scores * e, pointwise=True),
                     gemm(f"{name}.scores_qgrad", s, hd, s, batch=b * a),
                     gemm(f"{name}.scores_kgrad", s, hd, s, batch=b * a)]
    core = fwd[core_start:]
    # head split/merge copies (transpose + contiguous) around the core
    fwd.append(stream(f"{name}.heads_copy", 2 * n * hq * e))
    f2, g2 = linear_fwd_bwd(f"{name}.out", n, hq, h, e, bias)
    fwd += f2
    bwd += g2 + [stream(f"{name}.heads_copy_bwd", 2 * n * hq * e)] + bwd_core + rope_b + g
    return fwd, bwd, core


def _ring_steps(name: str, s: int, hd: int, batch: int, bwd: bool, causal: bool, impl: str,
                cp: int, cp_impl: str = "te", n_out: int = 0, e: int = 2,
                fused: bool = False) -> list:
    """A CP rank's flash attention as the ring runs it, one kernel per step, named
    <name>.cp<i> (engine.cp_plan times and places each with the kernels named
    <name>.cp<i>.<what> after it): causal, step 0 is the rank's own 2 chunks under the
    causal mask and steps 1 .. cp-1 are unmasked (s / 2 keys: half of a received chunk
    pair, or half the queries over all of it, the same products); non-causal, every step is
    s queries over s keys (workload.context_parallel). PyTorch's (cp_impl torch-*): the same
    calls, each step's output merged or gradients accumulated in FP32 (workload.torch_cp_kernels;
    `n_out` query-width elements, K and V at that width too)."""
    out = []
    for i in range(cp):
        if causal and i == 0:
            out.append(attention(f"{name}.cp0", s, hd, causal_keys(s), batch, bwd, True, impl))
        else:
            keys = s // 2 if causal else s
            out.append(attention(f"{name}.cp{i}", s, hd, keys, batch, bwd, False, impl))
        if cp_impl != "te":
            extra = backward_accumulates if bwd else forward_merges
            out += extra(f"{name}.cp{i}", i, cp, n_out, n_out, e, fused, cp_impl)
    return out


def transformer_block(p: dict, sh: Shape, cross: bool, causal: bool = False) -> LayerKernels:
    """`causal`: a decoder's self-attention (each position attends to those before it).
    p["tp"] (tensor parallelism, workload.tensor_parallel): one TP rank's share of the
    block, 1/tp of the heads and FFN width; p["sp"] (sequence parallelism): the norms,
    dropout and residuals on 1/tp of the tokens."""
    b, s, e = sh.batch, sh.seq, sh.dtype_bytes
    n = b * s
    tp = p.get("tp", 1)
    nn = -(-n // tp) if p.get("sp") else n      # tokens of the norms, dropout, residuals
    h, a, f = p["dim"], p["heads"], p["ffn"] // tp
    kv = p.get("kv_heads", a) * (h // a)
    flash, dropout = p.get("flash_attention", False), p.get("dropout", True)
    # the attention probabilities' own dropout: PyTorch's F.dropout at p = 0 returns its
    # input without a kernel (ATen _dropout_impl), as BART's attention_dropout 0.0 runs it
    attn_dropout = p.get("attn_dropout", dropout)
    impl = flash if isinstance(flash, str) else ""      # "": the GPU's default library kernel
    fused = p.get("fused_elementwise", False)
    swiglu = p.get("ffn_kind", "gelu") == "swiglu"
    bias = p.get("bias", True)
    # Eager (fused_elementwise false), a Llama-style block's RMSNorm, rotary embeddings
    # (`rope`) and SwiGLU run as the ops eager PyTorch launches (embsim.workload.eager_ops);
    # `fused_norm`: its RMSNorm is one library kernel even so (torchtitan's Triton
    # fused_rmsnorm). Fused (torch.compile, Transformer Engine, Megatron's fusions), each is
    # one kernel: the fused add+norm, the fused SwiGLU below, RoPE not charged apart.
    # LayerNorm is one ATen kernel (native_layer_norm) either way.
    composite_norm = (not fused and p.get("norm", "layernorm") == "rmsnorm"
                      and not p.get("fused_norm", False))
    rope = not fused and p.get("rope", False)
    add_norm = _fused_add_norm if fused else partial(_add_norm, composite=composite_norm)
    fwd, bwd, core = [], [], []
    for i in range(2 if cross else 1):
        tag = "cross" if i else "self"
        fa, ba, ca = _attention(f"{tag}_attn", b, s, h, a, kv, e, bool(flash), attn_dropout, sh.op_bytes, fused,
                                bias, causal=causal and not i, impl=impl, tp=tp, cp=p.get("cp", 1),
                                rope=rope and not i, cp_impl=p.get("cp_impl", "te"))
        fn, bn = add_norm(f"{tag}_attn", nn, h, e, dropout, sh.op_bytes)
        fwd += fa + fn
        bwd = bn + ba + bwd
        core += ca
    # FFN: up (and gate) GEMM(s), activation (bias fused), down GEMM
    up_f, up_b = linear_fwd_bwd("ffn.up", n, h, (2 if swiglu else 1) * f, e, bias)
    if swiglu and not fused:
        act_f, act_b = swiglu_eager_fwd_bwd("ffn.act", n, f, e)
    else:
        act_f = [stream("ffn.act", (3 if swiglu else 2) * n * f * e, pointwise=True)]
        act_b = [stream("ffn.act_bwd", (5 if swiglu else 3) * n * f * e, pointwise=True)]
    dn_f, dn_b = linear_fwd_bwd("ffn.down", n, f, h, e, bias)
    fn, bn = add_norm("ffn", nn, h, e, dropout, sh.op_bytes)
    fwd += up_f + act_f + dn_f + fn
    bwd = bn + dn_b + act_b + up_b + bwd
    if sh.fp8:
        # Transformer Engine quantizes each FP8 GEMM's input and output gradient (copy
        # kernels at full streaming bandwidth, so layer_fitted leaves them alone)
        qf, qb = block_quantize(n, h, (h + 2 * kv) // tp, (2 if swiglu else 1) * f, f, e,
                                p.get("fp8_recipe", DEFAULT_RECIPE), cross)
        fwd += qf
        bwd += qb
    return LayerKernels(layer_fitted(fwd), layer_fitted(bwd),
                        param_tensors=transformer_tensors(p, cross), fused_elementwise=fused,
                        core_fwd=layer_fitted(core),     # PyTorch's CP: K, V at query width
                        kv_width=2 * (h if p.get("cp_impl", "te") != "te" else kv) // tp)


def output_layer_16bit(kernels: list) -> tuple:
    """The output layer's GEMMs, which no FP8 recipe quantizes: under --dtype fp8 they run
    at the BF16 rate (Kernel.unquantized; their operands are the model's 16-bit tensors, as
    every fp8 run's are, and the layer gets no FP8 quantize kernels).
    - Megatron-Core (NeMo, Megatron-Bridge): the output layer is a plain
      tensor_parallel.ColumnParallelLinear (a torch.matmul, not a Transformer Engine FP8
      module): NVIDIA/Megatron-LM megatron/core/models/gpt/gpt_model.py:118 at
      f2e5db402c44ae309aa6448bcb4ae87e8ae0f5f4; at d98e8a64ddf34856e74b24714e3bedb2f5a39553
      (:272-277) only an MXFP8 recipe with fp8_output_proj (default False,
      transformer_config.py:635) swaps in TELMHeadColumnParallelLinear.
    - torchtitan (torchao Float8Linear): the converter skips the output layer:
      torchtitan/float8.py:99 `module_filter_fn=lambda mod, fqn: fqn != "output"` at
      9dec370ad26b5f8e9a7333a0e36165018262644b (the Dec-2024 H100 benchmark's commit);
      `filter_fqns = ["output"]` in torchtitan/models/llama3/train_configs/llama3_8b.toml:62
      at 2887250bbd9103d0bc997ea2efb3a525b5e5dbc0 (the mx converter's default,
      config_manager.py:515); llama3_405b's filter_fqns=["lm_head"] (the layer's later
      name) in torchtitan/models/llama3/config_registry.py:314 at
      b5bcd76c66d0acb1a08b176d9639425bc55e0b2a."""
    return tuple(replace(k, unquantized=True) if k.kind == "gemm" else k for k in kernels)


def layer_fitted(kernels: list) -> tuple:
    """A transformer block's activation kernels run at the whole-layer fraction fitted on
    such blocks (embsim.workload.stream_fit), not at their per-kernel classes: the fit
    also holds block time the per-kernel data cannot place (embsim.workload.kernel_check)."""
    return tuple(replace(k, mechanism=LAYER)
                 if k.kind == "stream" and not (k.copy or k.param_pass or k.recurrent) else k
                 for k in kernels)


def transformer_tensors(p: dict, cross: bool) -> int:
    """nn.Parameters of one block as PyTorch modules hold them: Q, K, V and output
    projections per attention (weight + bias each), the FFN's 2 (3 with SwiGLU) linears,
    one norm per sublayer (LayerNorm weight + bias, RMSNorm weight)."""
    per_linear = 2 if p.get("bias", True) else 1
    attn = 2 if cross else 1
    ffn = 3 if p.get("ffn_kind", "gelu") == "swiglu" else 2
    per_norm = 1 if p.get("norm", "layernorm") == "rmsnorm" else 2
    return attn * 4 * per_linear + ffn * per_linear + (attn + 1) * per_norm


def _add_norm(name: str, n: int, h: int, e: int, dropout: bool, opb: int,
              composite: bool = False) -> tuple[list, list]:
    """Eager PyTorch: dropout, residual add and LayerNorm as separate kernels; `composite`:
    an RMSNorm written as tensor ops, each its own kernel (eager_ops.rmsnorm_eager_fwd_bwd)."""
    fr, br = dropout_residual(name, n, h, e, dropout)
    norm = rmsnorm_eager_fwd_bwd if composite else norm_fwd_bwd
    fn, bn = norm(f"{name}.norm", n, h, e, opb)
    return fr + fn, bn + br


def _fused_add_norm(name: str, n: int, h: int, e: int, dropout: bool, opb: int) -> tuple[list, list]:
    """Dropout + residual add + LayerNorm as one generated kernel (TorchScript/nvFuser,
    or apex's fused LayerNorm fed by a fused bias-dropout-add): forward reads the
    sublayer output and the residual, writes the mask, the saved sum and the normed
    output (+ FP32 row statistics); backward reads the sum, the output gradient and the
    mask, writes the input gradient (to both branches: one tensor), then reduces the
    scale/shift gradients."""
    elems = n * h
    mask = MASK_BYTES if dropout else 0
    fwd = [stream(f"{name}.add_norm_fused", elems * (2 * e + mask + e + opb) + 8 * n)]
    bwd = [stream(f"{name}.add_norm_fused_bwd", elems * (e + opb + mask + e) + 8 * n),
           stream(f"{name}.norm.param_grad", elems * e)]
    return fwd, bwd


def lstm(p: dict, sh: Shape) -> LayerKernels:
    """cuDNN LSTM (one call per layer): the input GEMM for all timesteps at once, then per
    timestep the recurrent GEMM and the fused gate kernel, launched by cuDNN itself. The
    two directions of a bidirectional layer run their steps side by side (batch 2).
    Backward walks the steps in reverse (gate backward, recurrent dgrad GEMM), then the
    input dgrad and both weight gradients as whole-sequence GEMMs."""
    b, s, e = sh.batch, sh.seq, sh.dtype_bytes
    n = b * s
    fin, hd = p["in"], p["hidden"]
    proj = p.get("proj")
    r = proj or hd
    dirs = 2 if p.get("bidirectional", False) else 1
    g4 = 4 * hd
    gate_bytes = b * (g4 * e + 2 * g4 * e + 3 * hd * e) * dirs   # read both gate halves, write c, h
    fwd = [gemm("lstm.input", n, dirs * g4, fin),
           gemm("lstm.recurrent", b, g4, r, batch=dirs, count=s, ops=0),
           stream("lstm.gates", gate_bytes, count=s, ops=0, recurrent=True)]
    bwd = [stream("lstm.gates_bwd", gate_bytes + b * g4 * e * dirs, count=s, ops=0, recurrent=True),
           gemm("lstm.recurrent_dgrad", b, r, g4, batch=dirs, count=s, ops=0)]
    if proj:
        fwd.append(gemm("lstm.proj", b, r, hd, batch=dirs, count=s, ops=0))
        bwd.append(gemm("lstm.proj_dgrad", b, hd, r, batch=dirs, count=s, ops=0))
        bwd.append(gemm("lstm.proj_wgrad", hd, r, n, batch=dirs))
    bwd += [gemm("lstm.input_dgrad", n, fin, dirs * g4),
            gemm("lstm.input_wgrad", fin, g4, n, batch=dirs),
            gemm("lstm.recurrent_wgrad", r, g4, n, batch=dirs)]
    per_dir = 4 + (1 if proj else 0)      # w_ih, w_hh, b_ih, b_hh (+ w_hr)
    return LayerKernels(tuple(fwd), tuple(bwd), param_tensors=dirs * per_dir)


def additive_attention(p: dict, sh: Shape) -> LayerKernels:
    """Bahdanau attention of every decoder step over the encoder states, batched over
    steps (teacher forcing), as DeepLearningExamples' GNMT runs it eagerly
    (seq2seq/models/attention.py, calc_score): key/query projections; the broadcast sum
    q + k written as a (b, t, s, units) tensor, plus the normalised form's bias (another
    pass), tanh, the score vector product (a matrix-vector product over that tensor),
    softmax and the context bmm. Backward: the vector product's two gradients (an outer
    product written over the tensor, a product reading it), tanh's backward, the bias
    gradient and the two broadcast operands' gradients (each a sum over one step axis)."""
    b, s, e, f = sh.batch, sh.seq, sh.dtype_bytes, sh.op_bytes
    n = b * s
    q, k, u = p["query"], p["key"], p["units"]
    pairs = b * s * s
    big = pairs * u * e                 # one pass over the (b, t, s, units) tensor
    norm = p.get("normalize", True)
    fq, bq = linear_fwd_bwd("attn.query", n, q, u, e, bias=False)
    fk, bk = linear_fwd_bwd("attn.key", n, k, u, e, bias=False)
    fwd = (fq + fk + [stream("attn.add", big + 2 * n * u * e, pointwise=True)]
           + ([stream("attn.bias_add", 2 * big, pointwise=True)] if norm else [])
           + [stream("attn.tanh", 2 * big, pointwise=True),
              stream("attn.score_dot", big + pairs * e),
              stream("attn.softmax", pairs * (e + f))]
           + fp32_cast("attn.probs", pairs, e, f) + [gemm("attn.context", s, k, s, batch=b)])
    bwd = ([gemm("attn.context_dgrad", s, s, k, batch=b), gemm("attn.context_vgrad", s, k, s, batch=b),
            *fp32_cast("attn.probs_bwd", pairs, e, f),
            stream("attn.softmax_bwd", pairs * (2 * f + e)),
            stream("attn.score_dot_bwd", big + pairs * e),
            stream("attn.score_vector_grad", big + pairs * e, mechanism=COLUMN),
            stream("attn.tanh_bwd", 3 * big, pointwise=True)]
           + ([stream("attn.bias_grad", big, mechanism=COLUMN)] if norm else [])
           + [stream("attn.query_grad_sum", big + n * u * e, mechanism=COLUMN),
              stream("attn.key_grad_sum", big + n * u * e, mechanism=COLUMN)] + bq + bk)
    # query and key projections, the score vector (+ the normalised form's scalar and bias)
    return LayerKernels(tuple(fwd), tuple(bwd), param_tensors=5 if norm else 3)


def _smoothing_grads(p: dict, elems: int) -> list:
    """An eager label-smoothing loss: the NLL of the target (-logprobs.gather) plus a
    smoothing term over every class of the FP32 log-probabilities. Autograd writes the
    gather's gradient as a zero-filled (tokens, classes) FP32 tensor and adds the smoothing
    term's gradient to it before the log-softmax backward. "mean" (DeepLearningExamples GNMT
    seq2seq/train/smoothing.py, -logprobs.mean(-1)): the mean's backward divides the expanded
    gradient, a full FP32 tensor written, then the two are added (read 2, write 1). "sum"
    (DLE Transformer fairseq/criterions.py, -lprobs.sum(-1)): the sum's backward is an
    expanded view, so the add reads one full tensor and writes one."""
    style = p.get("label_smoothing", "none")
    if style == "none":
        return []
    zeros = [stream("loss.gather_grad", elems * FP32, pointwise=True)]
    if style == "mean":
        return zeros + [stream("loss.mean_grad", elems * FP32, pointwise=True),
                        stream("loss.grad_sum", 3 * elems * FP32, pointwise=True)]
    return zeros + [stream("loss.grad_sum", 2 * elems * FP32, pointwise=True)]


def _embedding(p: dict, sh: Shape, vocab: int, dim: int) -> LayerKernels:
    """A lookup layer: one output vector per lookup, or per sample when it pools them
    (`pooling`), which is what any cast of the output moves."""
    rows, e, t = sh.batch * p["lookups"], sh.dtype_bytes, sh.table_bytes
    pooled = "pooling" in p
    out = sh.batch if pooled else rows          # output vectors
    if pooled:
        f, dense, sparse = bag_kernels("embedding", rows, out, dim, vocab, t, sh.framework)
    else:
        f, dense, sparse = embedding_kernels("embedding", rows, dim, vocab, t, sh.framework)
    if p.get("cast_output") and t > e:
        # the output cast to the model's dtype after the lookup, its gradient cast back
        # up before the table's backward
        up = fp32_cast("embedding.rows_grad", out * dim, e, t)
        if p.get("fused_cast"):
            # one kernel reads the t-byte rows and writes the output as e bytes (DLE DLRM's
            # gather_gpu_fused_fwd with amp_train; its backward reads the 16-bit
            # gradient and writes the FP32 values: the up-cast's bytes, one kernel)
            # (a bag's gather already only reads its rows, its write is the cast's)
            gather = f[0] if pooled else Kernel("gather", rows=rows, row_bytes=dim * t, passes=1,
                                                name="embedding.gather")
            f = [gather, stream("embedding.write_cast", out * dim * e, copy=True, ops=0)] + f[1 + pooled:]
            up = [stream("embedding.rows_grad", out * dim * (e + t), copy=True, ops=0)]
        else:
            f += fp32_cast("embedding.rows", out * dim, e, t)
        dense, sparse = up + dense, up + sparse
    return LayerKernels(tuple(f), tuple(dense), tuple(sparse))


def layer_kernels(kind: str, p: dict, sh: Shape, vocab: int | None = None, dim: int | None = None,
                  cols: int | None = None, classes: int | None = None) -> LayerKernels:
    """Kernels of one layer. `vocab`/`dim`: the table of an embedding layer; `cols`: the
    scored columns of an output projection; `classes`: a softmax's classes."""
    e = sh.dtype_bytes
    if kind == "embedding":
        return _embedding(p, sh, vocab, dim)
    if kind == "linear":
        n = tokens_for(p, sh)
        f, b = linear_fwd_bwd("linear", n, p["in"], p["out"], e,
                              p.get("bias", True), p.get("activation", "none") != "none",
                              p.get("dropout", False), p.get("fused_bias_grad", False))
        if p.get("input_bytes", e) > e:
            # autocast casts a wider input (FP32 looked-up rows) down for the GEMM, and
            # the cast's backward casts the input gradient back up
            f = fp32_cast("linear.input", n * p["in"], e, p["input_bytes"]) + f
            b = b + fp32_cast("linear.input_grad", n * p["in"], e, p["input_bytes"])
        return LayerKernels(tuple(f), tuple(b), param_tensors=2 if p.get("bias", True) else 1)
    if kind == "layernorm":
        f, b = norm_fwd_bwd("norm", tokens_for(p, sh), p["dim"], e, sh.op_bytes)
        return LayerKernels(tuple(f), tuple(b),
                            param_tensors=1 if p.get("norm", "layernorm") == "rmsnorm" else 2)
    if kind == "positional_embedding":
        n, d = sh.tokens, p["dim"]
        bwd = [stream("pos.grad", 2 * n * d * e)] if p.get("learned", True) else []
        return LayerKernels((stream("pos.add", 3 * n * d * e, pointwise=True),), tuple(bwd))
    if kind == "output_projection":
        f, b = linear_fwd_bwd("logits", tokens_for(p, sh), p["dim"], cols, e, p.get("bias", False))
        t = sh.table_bytes if p.get("tied") else e
        if t > e:
            # a tied weight is the table (FP32 under autocast): the GEMM casts the rows
            # it scores down and the cast's backward casts their gradient up
            f = fp32_cast("logits.weight", cols * p["dim"], e, t) + f
            b = b + fp32_cast("logits.weight_grad", cols * p["dim"], e, t)
        if p.get("samples"):
            f.insert(0, Kernel("gather", rows=cols, row_bytes=p["dim"] * t, name="logits.sample_rows"))
        # a tied projection's weight is the table's tensor (counted by the embedding)
        tensors = (0 if p.get("tied") else 1) + (1 if p.get("bias", False) else 0)
        return LayerKernels(output_layer_16bit(f), output_layer_16bit(b), param_tensors=tensors)
    if kind == "softmax_loss":
        # log-softmax + NLL, FP32 ops under AMP: the logits are cast up, the gradient
        # (softmax - target) is written in FP32 and cast back down
        elems = tokens_for(p, sh) * classes
        if p.get("fused"):
            # a fused softmax cross-entropy kernel (apex's xentropy, flash-attn's
            # xentropy_cuda_lib): the forward reads the logits in their own dtype (FP32
            # math in registers; a row's second pass hits L2) and writes one loss and one
            # log-sum-exp per row; the backward reads them again and writes the gradient in
            # the logits' dtype. No casts, no FP32 log-probs in memory.
            return LayerKernels((stream("loss.xentropy", elems * e),),
                                (stream("loss.xentropy_bwd", 2 * elems * e),))
        if p.get("upcast_in_kernel") and sh.fp16 and e < FP32:
            # log_softmax(logits, dtype=float32) on FP16 CUDA logits takes ATen's
            # half_to_float path (SoftMax.cpp): one kernel reads the 16-bit logits and writes
            # FP32 log-probs, and its backward writes the 16-bit gradient; BF16 is cast first
            return LayerKernels((stream("loss.log_softmax", elems * (e + FP32)),
                                 stream("loss.nll", elems * FP32)),
                                tuple(_smoothing_grads(p, elems) + [stream("loss.grad", elems * (2 * FP32 + e))]))
        return LayerKernels(tuple(fp32_cast("loss.logits", elems, e)
                                  + [stream("loss.log_softmax", 2 * elems * FP32),
                                     stream("loss.nll", elems * FP32)]),
                            tuple(_smoothing_grads(p, elems) + [stream("loss.grad", 3 * elems * FP32)]
                                  + fp32_cast("loss.grad", elems, e)))
    if kind == "fm_interaction":
        b, f, k, e = sh.batch, p["fields"], p["dim"], p.get("elem_bytes", e)
        t = b * (f * k + f + 1) * e
        return LayerKernels((stream("fm.sum_square", t), stream("fm.first_order", b * f * e),
                             stream("fm.combine", 4 * b * k * e)),
                            (stream("fm.bwd", 2 * t), stream("fm.bwd_first", 2 * b * f * e),
                             stream("fm.bwd_combine", 4 * b * k * e)))
    if kind == "combine":
        b, k, w, e = sh.batch, p["inputs"], p["dim"], p.get("elem_bytes", e)
        if p["op"] == "sum":
            return LayerKernels((stream("combine.sum", (k + 1) * b * w * e, pointwise=True),),
                                (stream("combine.sum_bwd", (k + 1) * b * w * e, pointwise=True),),
                                param_tensors=0)
        if p["op"] == "product":
            return LayerKernels((stream("combine.mul", (k + 1) * b * w * e, pointwise=True),),
                                tuple(stream(f"combine.mul_bwd{i}", (k + 1) * b * w * e, pointwise=True)
                                      for i in range(k)), param_tensors=0)
        # torch.cat's backward hands out strided slices; a consumer that needs contiguous
        # memory (embedding_dense_backward's grad.contiguous(), cuBLAS) copies each
        return LayerKernels((stream("combine.cat", 2 * k * b * w * e, copy=True),),
                            tuple(stream(f"combine.slice{i}", 2 * b * w * e, copy=True)
                                  for i in range(k)),
                            param_tensors=0)
    if kind == "dot_interaction":
        # NVIDIA's custom kernels (dlrm/cuda_src/dot_based_interact): one warp per sample
        # computes its v x v products from shared memory (16x16 tensor-core fragments in
        # 16-bit/TF32), so the HBM traffic bounds them, not cuBLAS tiles: 2 v^2 w FLOPs
        # per (v w + out) elements is 12 FLOP/B (FP32) / 24 (16-bit) for DLRM, below the
        # ridge of every preset GPU (lowest: A100 FP32 CUDA cores, 19.5 TFLOPS / 1.56 TB/s)
        b, v, w, out = sh.batch, p["vectors"], p["dim"], p["out"]
        return LayerKernels((stream("interact.dot", b * (v * w + out) * e),),
                            (stream("interact.dot_bwd", b * (out + 2 * v * w) * e),),
                            param_tensors=0)
    if kind == "lstm":
        return lstm(p, sh)
    if kind == "additive_attention":
        return additive_attention(p, sh)
    if kind == "transformer_encoder":
        return transformer_block(p, sh, cross=False)
    if kind == "transformer_decoder":
        return transformer_block(p, sh, cross=p.get("cross_attention", False), causal=True)
    raise AssertionError(f"layer kind {kind!r} has no kernel rule")
