"""Transformer-XL's decoder layer with segment-level recurrence and relative positions
(Dai et al. 2019, arXiv 1901.02860, sec. 3.2-3.3), as NVIDIA DeepLearningExamples'
PyTorch implementation runs it eagerly (PyTorch/LanguageModeling/Transformer-XL/pytorch/
mem_transformer.py at 729963dd: RelPartialLearnableMultiHeadAttn :229-305,
RelMultiHeadAttn._rel_shift :210-223, PositionwiseFF :48-81, MemTransformerLM._forward
:684-777 and _update_mems :652-682).

One layer, `seq` = tgt_len queries per sequence and `mem` cached positions:
- cat([mems, w]) (:239) and ONE qkv_net GEMM over all mem + seq rows (:243; Q of the
  memory rows is computed and dropped, :248): the memory's K/V projections run forward
  every step; the memory itself is detached (no gradient), but the backward's GEMMs run
  over the whole concatenation (autograd's slice/cat backward pads the gradient).
- r_net: the sinusoidal embedding of the klen = mem + seq relative positions projected
  to heads x head_dim (:244, no batch dimension).
- AC = (q + r_w_bias) k^T and BD = (q + r_r_bias) r^T (:263-267), each einsum as a
  batched GEMM over made-contiguous permuted operands; _rel_shift pads BD with a zero
  column (torch.cat: a full copy) and reads it back shifted as a view; add_and_scale
  (TorchScript, one kernel), masked_fill_, softmax, dropatt (when > 0), the context
  einsum and its .contiguous() (:286-291), o_net (no bias), dropout, residual, post-LN.
- PositionwiseFF: Linear + ReLU (in place) + Dropout, Linear + Dropout, residual, post-LN.
- _update_mems: torch.stack of the layers' inputs (hids) into the next step's memory
  (mem_len == tgt_len: the stack is the new memory), one copy of seq tokens per layer.

The costs (FLOPs, bytes) are summed from the same kernel list the kernel model times.
"""

from __future__ import annotations

from .costs import NORM_FLOPS_PER_ELEMENT, SOFTMAX_FLOPS_PER_ELEMENT, LayerCost, Shape
from .kernels import (COLUMN, MASK_BYTES, Kernel, dropout_residual, gemm, linear_fwd_bwd,
                      norm_fwd_bwd, stream)
from .kernel_costs import cost_from_kernels, kernel_bytes
from .kernels_layers import LayerKernels, layer_fitted


def rel_block_params(p: dict) -> int:
    """qkv_net (d x 3 n_head d_head), r_net (d x n_head d_head), o_net (n_head d_head x
    d), all without bias (:165-172, :233); the FF's two biased linears; two LayerNorms."""
    h, ad, f = p["dim"], p["heads"] * p["head_dim"], p["ffn"]
    return h * 3 * ad + h * ad + ad * h + (h * f + f) + (f * h + h) + 2 * 2 * h


def _copy(name: str, elems: float, e: int) -> Kernel:
    return stream(name, 2 * elems * e, copy=True)


def rel_block_kernels(p: dict, sh: Shape) -> LayerKernels:
    """Forward and backward kernels of one Transformer-XL layer (module docstring)."""
    b, s, e, opb = sh.batch, sh.seq, sh.dtype_bytes, sh.op_bytes
    m = p["mem"]
    k = m + s                                  # klen: keys per query
    h, a, dh, f = p["dim"], p["heads"], p["head_dim"], p["ffn"]
    ad = a * dh
    n, nk = b * s, b * k                       # query rows, key rows (mem + current)
    scores = b * a * s * k
    drop, dropatt = p.get("dropout", True), p.get("attn_dropout", False)
    fwd = [_copy("attn.cat_mems", nk * h, e),
           gemm("attn.qkv", nk, 3 * ad, h),
           gemm("attn.r_net", k, ad, h),
           stream("attn.q_plus_r_w_bias", 2 * n * ad * e, pointwise=True),
           stream("attn.q_plus_r_r_bias", 2 * n * ad * e, pointwise=True),
           # AC: einsum('ibnd,jbnd->bnij') -> bmm over (b n) of contiguous copies
           _copy("attn.ac_q_permute", n * ad, e), _copy("attn.ac_k_permute", nk * ad, e),
           gemm("attn.ac", s, k, dh, batch=b * a),
           # BD: einsum('ibnd,jnd->bnij') -> bmm over n of (i b) x d and d x j
           _copy("attn.bd_q_permute", n * ad, e), _copy("attn.bd_r_permute", k * ad, e),
           gemm("attn.bd", n, k, dh, batch=a),
           # _rel_shift: torch.cat([zero column, BD], dim=3) writes the padded copy
           stream("attn.rel_shift", (2 * scores + b * a * s) * e, copy=True),
           stream("attn.add_and_scale", 3 * scores * e, pointwise=True),
           stream("attn.masked_fill", 2 * scores * e, pointwise=True),
           stream("attn.softmax", scores * (e + opb))]
    if dropatt:
        fwd.append(stream("attn.dropatt", scores * (2 * opb + MASK_BYTES), pointwise=True))
    fwd += [_copy("attn.v_permute", nk * ad, e),
            gemm("attn.context", s, dh, k, batch=b * a),
            _copy("attn.context_contiguous", n * ad, e),
            gemm("attn.o_net", n, h, ad)]
    bwd_attn = [gemm("attn.o_net.dgrad", n, ad, h), gemm("attn.o_net.wgrad", ad, h, n),
                _copy("attn.context_grad_permute", n * ad, e),
                gemm("attn.context_dgrad", s, k, dh, batch=b * a),
                gemm("attn.context_vgrad", k, dh, s, batch=b * a),
                _copy("attn.v_grad_permute", nk * ad, e)]
    if dropatt:
        bwd_attn.append(stream("attn.dropatt_bwd", scores * (2 * opb + MASK_BYTES), pointwise=True))
    bwd_attn += [stream("attn.softmax_bwd", scores * (2 * opb + e)),
                 stream("attn.masked_fill_bwd", 2 * scores * e, pointwise=True),
                 stream("attn.add_and_scale_bwd", 3 * scores * e, pointwise=True),
                 # narrow/view backward: a zero-filled padded tensor, the gradient copied in;
                 # the cat's backward slice is strided: made contiguous for the bmm
                 stream("attn.rel_shift_bwd", (3 * scores + b * a * s) * e, copy=True),
                 _copy("attn.bd_grad_contiguous", scores, e),
                 gemm("attn.bd_qgrad", n, dh, k, batch=a),
                 gemm("attn.bd_rgrad", dh, k, n, batch=a),
                 gemm("attn.ac_qgrad", s, dh, k, batch=b * a),
                 gemm("attn.ac_kgrad", k, dh, s, batch=b * a),
                 _copy("attn.qk_grad_permute", 2 * n * ad + nk * ad + k * ad, e),
                 # r_w_bias and r_r_bias gradients: sums of dq over (i, b); dq summed
                 stream("attn.r_bias_grads", 2 * n * ad * e, count=2, mechanism=COLUMN),
                 stream("attn.q_grad_sum", 3 * n * ad * e, pointwise=True),
                 # chunk backward: dq padded to the klen rows, the three cat into dw_heads
                 stream("attn.qkv_grad_assemble", (nk * ad + 2 * n * ad + 2 * 3 * nk * ad) * e,
                        copy=True),
                 gemm("attn.qkv.dgrad", nk, h, 3 * ad), gemm("attn.qkv.wgrad", h, 3 * ad, nk),
                 gemm("attn.r_net.wgrad", h, ad, k),     # pos_emb needs no gradient
                 # the input's two gradients (residual path, cat slice) summed
                 stream("attn.input_grad_sum", 3 * n * h * e, pointwise=True)]
    fr, br = dropout_residual("attn", n, h, e, drop)
    fn, bn = norm_fwd_bwd("attn.norm", n, h, e, opb)
    fwd += fr + fn
    up_f, up_b = linear_fwd_bwd("ff.up", n, h, f, e, True, act=True, dropout=drop)
    dn_f, dn_b = linear_fwd_bwd("ff.down", n, f, h, e, True, dropout=drop)
    ffr, ffbr = dropout_residual("ff", n, h, e, False)
    ffn_, ffbn = norm_fwd_bwd("ff.norm", n, h, e, opb)
    fwd += up_f + dn_f + ffr + ffn_
    # _update_mems: torch.stack(hids) copies this layer's input into the next memory
    fwd.append(_copy("mems.stack", n * h, e))
    bwd = ffbn + ffbr + dn_b + up_b + bn + br + bwd_attn
    return LayerKernels(layer_fitted(fwd), layer_fitted(bwd), param_tensors=9)


def rel_block_cost(p: dict, sh: Shape, kl: LayerKernels | None = None) -> LayerCost:
    """Params, FLOPs, bytes and saved activations of one layer (module docstring)."""
    kl = rel_block_kernels(p, sh) if kl is None else kl     # build passes the kernels it already made
    b, s, d = sh.batch, sh.seq, sh.dtype_bytes
    k = p["mem"] + s
    h, a, dh, f = p["dim"], p["heads"], p["head_dim"], p["ffn"]
    ad = a * dh
    n, nk = b * s, b * k
    scores = b * a * s * k
    drop, dropatt = p.get("dropout", True), p.get("attn_dropout", False)
    elementwise = (SOFTMAX_FLOPS_PER_ELEMENT * scores + 2 * scores + 2 * n * ad
                   + 2 * NORM_FLOPS_PER_ELEMENT * n * h + 2 * n * h + n * f)
    mask = MASK_BYTES
    # saved for backward: the concatenated qkv input, q (twice, with each bias), k, v, r,
    # the softmax output (+ dropatt mask and output), the context, the o_net input and
    # dropout mask, both norms' inputs, the FF's input, ReLU output, masks, down input
    saved = (d * nk * h + d * 2 * n * ad + d * 2 * nk * ad + d * k * ad + d * scores
             + ((mask + d) * scores if dropatt else 0) + d * n * ad
             + (mask * n * h if drop else 0) + 2 * d * n * h + d * n * h + d * n * f
             + ((mask * n * f + mask * n * h) if drop else 0) + d * n * f)
    return cost_from_kernels(kl, rel_block_params(p), d, elementwise, saved)


def rel_position_cost(p: dict, sh: Shape, kl: LayerKernels | None = None) -> LayerCost:
    """The model-level relative-position inputs (mem_transformer.py :614-617, :707-716):
    the sinusoidal embedding of klen positions (torch.ger, sin, cos, cat) and its
    dropout, plus the two (n_head x d_head) biases r_w_bias and r_r_bias every layer adds
    to its queries (their gradients are summed by the layers' kernels)."""
    kl = rel_position_kernels(p, sh) if kl is None else kl     # build passes the kernels it already made
    d = sh.dtype_bytes
    params = 2 * p["heads"] * p["head_dim"]
    return LayerCost(params=params, fwd_flops=4 * (p["mem"] + sh.seq) * p["dim"], bwd_flops=0,
                     fwd_bytes=int(kernel_bytes(kl.fwd, d)), bwd_bytes=1, grad_bytes=d * params,
                     activation_bytes=0, fwd_kernels=len(kl.fwd), bwd_kernels=0)


def rel_position_kernels(p: dict, sh: Shape) -> LayerKernels:
    e = sh.dtype_bytes
    k, h = p["mem"] + sh.seq, p["dim"]
    half = k * h // 2
    fwd = (stream("pos.ger", half * e, pointwise=True), stream("pos.sin", 2 * half * e, pointwise=True),
           stream("pos.cos", 2 * half * e, pointwise=True), stream("pos.cat", 2 * k * h * e, copy=True))
    if p.get("dropout", True):
        fwd += (stream("pos.dropout", k * h * (2 * e + MASK_BYTES), pointwise=True),)
    return LayerKernels(fwd, (), param_tensors=2)
