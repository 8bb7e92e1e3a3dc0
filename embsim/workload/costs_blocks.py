"""Costs of composite blocks: transformer encoder/decoder layers, LSTMs, additive attention.

Same conventions as embsim.workload.costs. A block is costed as the sum of its GEMMs,
attention products, norms and elementwise ops, so FLOPs and bytes follow its shapes.
"""

from __future__ import annotations

from dataclasses import replace

from .costs import (NORM_FLOPS_PER_ELEMENT, SOFTMAX_FLOPS_PER_ELEMENT, LayerCost, Shape,
                    dense_cost, norm_params)


def attention_params(h: int, heads: int, kv_heads: int, bias: bool) -> int:
    """Q and O are h x h; K and V are h x (kv_heads * head_dim) (grouped-query attention,
    Ainslie et al. 2023; kv_heads == heads is ordinary multi-head attention)."""
    kv = kv_heads * (h // heads)
    return 2 * h * h + 2 * h * kv + ((2 * h + 2 * kv) if bias else 0)


def ffn_params(h: int, f: int, kind: str, bias: bool) -> int:
    if kind == "swiglu":                 # gate, up, down (Shazeer 2020, as in LLaMA)
        return 3 * h * f + ((2 * f + h) if bias else 0)
    return 2 * h * f + ((f + h) if bias else 0)


def transformer_block_cost(p: dict, sh: Shape, cross_attention: bool) -> LayerCost:
    """One pre/post-norm transformer layer: self-attention (+ cross-attention over an
    encoder output of the same length for a seq2seq decoder), FFN, one norm per sublayer.

    Eager attention materialises the (heads x S x S) scores in HBM; flash attention
    (Dao et al. 2022) keeps them on chip, so neither their traffic nor their memory counts.

    p["tp"] (workload.tensor_parallel): one tensor-parallel rank's share: its GEMMs,
    attention core and their activations are 1/tp of the block's; the norms (whole on every
    rank), their residuals and dropout stay whole unless p["sp"] (sequence parallelism:
    1/tp of the tokens). Korthikanti et al. 2022 eqs. 2-3: sbh(10 + 24/t + 5as/(ht)) saved
    bytes without sequence parallelism, sbh(34/t + 5as/(ht)) with it.

    p["cp"] (workload.context_parallel): sh.seq is one context-parallel rank's s / cp
    tokens, whose queries meet the keys of the whole sequence (s x cp of them): the
    attention products are s x (s cp) per head; everything else is the rank's tokens'.
    """
    tp = p.get("tp", 1)
    if tp > 1:
        return _tensor_parallel_share(p, sh, cross_attention, tp, bool(p.get("sp")))
    b, s, d = sh.batch, sh.seq, sh.dtype_bytes
    n = sh.tokens
    h, a, f = p["dim"], p["heads"], p["ffn"]
    kvh = p.get("kv_heads", a)
    kv = kvh * (h // a)
    bias = p.get("bias", True)
    ffn_kind = p.get("ffn_kind", "gelu")
    flash = p.get("flash_attention", False)
    dropout = p.get("dropout", True)
    attn_dropout = p.get("attn_dropout", dropout)
    norm = p.get("norm", "layernorm")
    n_attn = 2 if cross_attention else 1
    n_norms = n_attn + 1

    p_attn = attention_params(h, a, kvh, bias)
    p_ffn = ffn_params(h, f, ffn_kind, bias)
    params = n_attn * p_attn + p_ffn + n_norms * norm_params(norm, h)

    keys = s * p.get("cp", 1)
    scores = b * a * s * keys
    ffn_mats = 3 if ffn_kind == "swiglu" else 2
    flops_attn = 2 * n * p_attn + 4 * n * keys * h + SOFTMAX_FLOPS_PER_ELEMENT * scores
    flops = (n_attn * flops_attn + 2 * n * ffn_mats * h * f
             + n_norms * NORM_FLOPS_PER_ELEMENT * n * h + n_norms * n * h)  # + residual adds

    # HBM activation traffic, op by op (reads + writes)
    t_scores = 0 if flash else 4 * scores          # write scores, softmax r+w, read in AV
    t_attn = (n * h + n * (h + 2 * kv)             # QKV GEMM
              + (n * (h + 2 * kv) + n * h)         # attention core: read Q,K,V, write context
              + t_scores
              + 2 * n * h)                         # output projection
    t_ffn = (n * h + (ffn_mats - 1) * n * f        # up (and gate) GEMMs
             + (3 * n * f if ffn_kind == "swiglu" else 2 * n * f)   # activation / gating
             + n * f + n * h)                      # down GEMM
    traffic = n_attn * t_attn + t_ffn + n_norms * (2 * n * h + 3 * n * h)  # norms + residuals

    # Saved activations (Korthikanti et al. 2022, sec. 4.1), dtype d, 1-byte dropout masks
    mask = 1 if dropout else 0
    s_scores = 0 if flash else (d * scores + (scores + d * scores if attn_dropout else 0))
    s_attn = (d * n * h                           # QKV input
              + d * n * (h + kv)                  # Q, K for the scores
              + d * n * kv                        # V
              + s_scores
              + d * n * h + mask * n * h)         # out-projection input, dropout mask
    s_ffn = (d * n * h + (ffn_mats - 1) * d * n * f   # input, pre-activation(s)
             + d * n * f + mask * n * h)          # activation output, dropout mask
    saved = n_attn * s_attn + s_ffn + n_norms * d * n * h
    kernels = n_attn * (6 if flash else 8) + (5 if ffn_kind == "swiglu" else 4) + 2 * n_norms
    return replace(dense_cost(params, flops, traffic, saved, d, kernels, 2 * kernels),
                   core_saved=n_attn * s_scores)


def _tensor_parallel_share(p: dict, sh: Shape, cross: bool, tp: int, sp: bool) -> LayerCost:
    """One TP rank's block: the whole block's cost with its GEMM/attention terms over tp
    and its norm/residual/dropout terms over tp only with sequence parallelism (their
    split from the cost at tp = 1 against the same block without GEMMs: see the parts)."""
    whole = transformer_block_cost({**p, "tp": 1}, sh, cross)
    rest = _norm_part(p, sh, cross)        # norms, residual adds, their dropout masks
    k = tp if sp else 1
    h = p["dim"]
    norm_params_ = (3 if cross else 2) * norm_params(p.get("norm", "layernorm"), h)

    def share(total, norm):
        return (total - norm) / tp + norm / k
    params = int(round((whole.params - norm_params_) / tp)) + norm_params_
    return LayerCost(params=params, fwd_flops=int(share(whole.fwd_flops, rest[0])),
                     bwd_flops=int(share(whole.bwd_flops, 2 * rest[0])),
                     fwd_bytes=int(share(whole.fwd_bytes, rest[1])),
                     bwd_bytes=int(share(whole.bwd_bytes, 2 * rest[1])),
                     grad_bytes=int(round(whole.grad_bytes * params / whole.params)),
                     activation_bytes=int(share(whole.activation_bytes, rest[2])),
                     fwd_kernels=whole.fwd_kernels, bwd_kernels=whole.bwd_kernels,
                     # the (b x heads x s x s) tensors selective recompute drops: a / tp heads
                     core_saved=int(whole.core_saved / tp))


def _norm_part(p: dict, sh: Shape, cross: bool) -> tuple[float, float, float]:
    """(forward FLOPs, forward bytes, saved bytes) of the block's norms and residuals:
    the terms transformer_block_cost charges per norm (n x h each)."""
    n, h, d = sh.tokens, p["dim"], sh.dtype_bytes
    norms = (3 if cross else 2)
    mask = 1 if p.get("dropout", True) else 0
    flops = norms * NORM_FLOPS_PER_ELEMENT * n * h + norms * n * h
    traffic = norms * (2 * n * h + 3 * n * h) * d
    saved = norms * d * n * h + (1 + (2 if cross else 1)) * mask * n * h
    return flops, traffic, saved


def lstm_params(fin: int, hidden: int, proj: int | None, bias: str) -> int:
    """One direction: 4 gates over [input, recurrent state] plus biases, plus the
    projection of LSTMP (Sak et al. 2014). bias "double" = PyTorch/cuDNN (b_ih and b_hh),
    "single" = TensorFlow's LSTMCell."""
    r = proj or hidden
    biases = {"double": 8 * hidden, "single": 4 * hidden, "none": 0}[bias]
    return 4 * hidden * (fin + r) + biases + (hidden * r if proj else 0)


def lstm_cost(p: dict, sh: Shape) -> LayerCost:
    """A (bi)LSTM layer over seq steps. The input GEMM runs once over all steps; the
    recurrent GEMM runs step by step and re-reads its weights from HBM at every step
    (they do not fit on chip at these sizes), which is what makes LSTMs slow at small batch."""
    s, d = sh.seq, sh.dtype_bytes
    n = sh.tokens
    fin, hidden = p["in"], p["hidden"]
    proj = p.get("proj")
    r = proj or hidden
    dirs = 2 if p.get("bidirectional", False) else 1
    per_dir = lstm_params(fin, hidden, proj, p.get("bias", "double"))
    params = dirs * per_dir
    recurrent = 4 * hidden * r + (hidden * r if proj else 0)   # weights used every step
    matrices = 4 * hidden * (fin + r) + (hidden * r if proj else 0)
    flops = dirs * n * (2 * matrices + 10 * hidden)   # + gate nonlinearities, cell update
    traffic = (dirs * (s - 1) * recurrent     # recurrent weights re-read each step
               + n * fin + dirs * n * (4 * hidden + 2 * hidden + r))
    saved = d * n * fin + dirs * d * n * (4 * hidden + hidden + r)   # input, gates, c, h
    kernels = dirs * (2 * s + 1)
    return dense_cost(params, flops, traffic, saved, d, kernels, 2 * kernels)


def additive_attention_cost(p: dict, sh: Shape) -> LayerCost:
    """Bahdanau attention of each decoder step over seq encoder states (GNMT v2 uses the
    normalised form: linear_q, linear_k, a score vector, a scalar and a bias)."""
    s, d = sh.seq, sh.dtype_bytes
    n = sh.tokens
    q, k, u = p["query"], p["key"], p["units"]
    params = q * u + k * u + u + (u + 1 if p.get("normalize", True) else 0)
    pairs = n * s                           # (decoder step, encoder position) pairs
    flops = 2 * n * q * u + 2 * n * k * u + pairs * (3 * u + SOFTMAX_FLOPS_PER_ELEMENT) + 2 * pairs * k
    traffic = n * q + 2 * n * k + 2 * pairs * u + 3 * pairs + n * k
    saved = d * (n * q + n * k + pairs * u + pairs)
    return dense_cost(params, flops, traffic, saved, d, 6, 12)
