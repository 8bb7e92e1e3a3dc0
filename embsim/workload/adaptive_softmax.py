"""Adaptive input embedding and projected adaptive log-softmax (Grave et al. 2017,
"Efficient softmax approximation for GPUs", arXiv 1609.04309; Baevski & Auli 2019,
arXiv 1809.10853), as NVIDIA DeepLearningExamples' Transformer-XL runs them
(PyTorch/LanguageModeling/Transformer-XL/pytorch at 729963dd: mem_transformer.py
AdaptiveEmbedding :453-513, utils/proj_adaptive_softmax.py ProjectedAdaptiveLogSoftmax
:34-208).

The vocabulary (frequency-sorted) is cut at `cutoffs` into a head (the shortlist) and
tail clusters; cluster i has width dim // div_val**i (div_val 1: one vocab x dim table
sliced per cluster). Keys:
- adaptive_embedding {vocab, dim, proj, cutoffs, div_val}: div_val 1 is one nn.Embedding
  (+ a projection when proj != dim); else per cluster: mask, nonzero, index_select of the
  cluster's tokens, their lookup, F.linear to proj, index_copy_ into a zero-filled output;
  then mul_ by sqrt(proj) (:484-513). nn.Embedding(sparse=False): dense gradients.
- adaptive_softmax {vocab, dim, proj, cutoffs, div_val, tied_weights, tie_projs}: the head logits
  (shortlist + one column per tail cluster, torch.cat of the weights :158-162) for EVERY
  token and their log_softmax; then per cluster the tokens whose target falls in it
  (mask, nonzero, index_select :179-186): the head log-probs of those rows are gathered
  (index_select of the whole head row), and a tail cluster computes its logits and
  log_softmax only for its own tokens (:193-196). `tied_weights`: the output weights are the
  embedding's tables (train.py --not_tied unset); `tie_projs`: DLE's [False, True, ...]
  for wt103 (train.py:811-812): tail projections shared with the embedding's.

Tokens per cluster: the cluster's share of a Zipf(s) unigram distribution over the
frequency-sorted vocabulary (embsim.workload.tokens: s = 1.05, natural-language word
frequencies), i.e. sum_{v in cluster} (v+1)^-s / sum_v (v+1)^-s.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from .costs import SOFTMAX_FLOPS_PER_ELEMENT, LayerCost, Shape
from .embedding_kernels import embedding_kernels
from .kernels import INDEX_BYTES, MASK_BYTES, RNG, gemm, stream
from .kernel_costs import cost_from_kernels
from .kernels_layers import LayerKernels
from .tokens import DEFAULT_ZIPF_S


def clusters(p: dict) -> list[tuple[int, int, int]]:
    """(first row, rows, width) of each cluster, head first."""
    ends = [0, *p["cutoffs"], p["vocab"]]
    div = p.get("div_val", 1)
    return [(ends[i], ends[i + 1] - ends[i], p["dim"] // (div ** i) if div > 1 else p["dim"])
            for i in range(len(ends) - 1)]


@lru_cache(maxsize=64)
def zipf_shares(vocab: int, cutoffs: tuple[int, ...], s: float = DEFAULT_ZIPF_S) -> tuple[float, ...]:
    """Fraction of tokens in each cluster under Zipf(s) over `vocab` ranked words."""
    w = np.arange(1, vocab + 1, dtype=np.float64) ** -s
    c = np.concatenate([[0.0], np.cumsum(w)])
    ends = [0, *cutoffs, vocab]
    return tuple(float((c[ends[i + 1]] - c[ends[i]]) / c[-1]) for i in range(len(ends) - 1))


def cluster_tokens(p: dict, tokens: int) -> list[int]:
    """Tokens falling in each cluster (at least 1 each: every cluster runs its kernels)."""
    return [max(1, int(round(tokens * f))) for f in zipf_shares(p["vocab"], tuple(p["cutoffs"]))]


def embedding_params(p: dict) -> int:
    h = p["proj"]
    if p.get("div_val", 1) == 1:
        return p["vocab"] * p["dim"] + (h * p["dim"] if h != p["dim"] else 0)
    return sum(rows * w + h * w for _, rows, w in clusters(p))


def softmax_params(p: dict) -> int:
    """Cluster weight (n_clusters x dim) and bias, the per-token biases, the untied
    projections, and the output weights when not tied to the embedding."""
    cl = clusters(p)
    nc = len(cl) - 1
    h, d = p["proj"], p["dim"]
    tie_projs = p.get("tie_projs") or [False] * len(cl)
    weights = 0 if p.get("tied_weights", True) else sum(rows * w for _, rows, w in cl)
    if p.get("div_val", 1) == 1:
        projs = sum(h * d for t in tie_projs if not t) if h != d else 0
    else:
        projs = sum(h * w for (_, _, w), t in zip(cl, tie_projs) if not t)
    return nc * d + nc + p["vocab"] + weights + projs


def _dropout(name: str, elems: int, e: int):
    return stream(name, elems * (2 * e + MASK_BYTES), pointwise=True, mechanism=RNG)


def _select(name: str, n: int, ni: int) -> list:
    """mask = (t >= lo) & (t < hi), nonzero, index_select of the cluster's indices."""
    return [stream(f"{name}.mask", n * (2 * INDEX_BYTES + 3), count=3),
            stream(f"{name}.nonzero", n + ni * INDEX_BYTES),
            stream(f"{name}.index_select", 2 * ni * INDEX_BYTES)]


def adaptive_embedding_kernels(p: dict, sh: Shape) -> LayerKernels:
    e, n, h = sh.dtype_bytes, sh.tokens, p["proj"]
    fwd, bwd = [], []
    if p.get("div_val", 1) == 1:
        f, dense, _ = embedding_kernels("emb", n, p["dim"], p["vocab"], e)
        fwd += f
        bwd += dense
        tensors = 1
        if h != p["dim"]:
            fwd.append(gemm("emb.proj", n, h, p["dim"]))
            bwd = [gemm("emb.proj.dgrad", n, p["dim"], h), gemm("emb.proj.wgrad", p["dim"], h, n)] + bwd
            tensors = 2
    else:
        fwd.append(stream("emb.zeros", n * h * e, pointwise=True))
        for i, ((_, rows, w), ni) in enumerate(zip(clusters(p), cluster_tokens(p, n))):
            f, dense, _ = embedding_kernels(f"emb.c{i}", ni, w, rows, e)
            fwd += _select(f"emb.c{i}", n, ni) + f + [
                gemm(f"emb.c{i}.proj", ni, h, w),
                stream(f"emb.c{i}.index_copy", 2 * ni * h * e + ni * INDEX_BYTES)]
            bwd += [stream(f"emb.c{i}.index_copy_bwd", 2 * ni * h * e + ni * INDEX_BYTES),
                    gemm(f"emb.c{i}.proj.dgrad", ni, w, h), gemm(f"emb.c{i}.proj.wgrad", w, h, ni)] + dense
        tensors = 2 * len(clusters(p))
    fwd.append(stream("emb.scale", 2 * n * h * e, pointwise=True))
    bwd.insert(0, stream("emb.scale_bwd", 2 * n * h * e, pointwise=True))
    if p.get("dropout", False):    # MemTransformerLM._forward: self.drop(word_emb)
        fwd.append(_dropout("emb.dropout", n * h, e))
        bwd.insert(0, stream("emb.dropout_bwd", n * h * (2 * e + MASK_BYTES), pointwise=True))
    return LayerKernels(tuple(fwd), tuple(bwd), param_tensors=tensors)


def adaptive_softmax_kernels(p: dict, sh: Shape) -> LayerKernels:
    """Forward: head weight/bias cat, head logits (+ projection), log_softmax; per cluster
    the selection, the head log-prob rows gathered; per tail cluster its hidden rows,
    logits, log_softmax and target gather. Backward mirrors it, with autograd's
    zero-filled full-size gradients for index_select / column select / weight slices and
    the sums where several paths meet (head log-probs; a tied weight's gradient)."""
    e, opb, n, h = sh.dtype_bytes, sh.op_bytes, sh.tokens, p["proj"]
    # opb: the log-probabilities' dtype. Under autocast FP32: log_softmax is an autocast
    # fp32_set_opt_dtype op, and at::log_softmax(half, dtype=float) runs _log_softmax with
    # half_to_float (reads FP16, writes FP32); its gradient is FP32 too. So are the passes
    # over them: the head rows' index_select, the gathers, the zero-filled gradients of
    # gather / index_select and their sums. Apex O2 (the DLE and Lambda runs): opb == e.
    cl = clusters(p)
    nc = len(cl) - 1
    div1 = p.get("div_val", 1) == 1
    tied = p.get("tied_weights", True)
    tie_projs = p.get("tie_projs") or [False] * len(cl)
    # einsum through a projection, unless one table of the model's width (div_val 1)
    proj = [not (div1 and h == p["dim"])] * len(cl)
    toks = cluster_tokens(p, n)
    _, v0, w0 = cl[0]
    head = v0 + nc
    fwd = [_dropout("hidden.dropout", n * h, e)] if p.get("dropout", False) else []
    if nc == 0:
        return _full_softmax_kernels(p, sh, fwd, proj[0], tied, tie_projs)
    fwd += [stream("head.weight_cat", 2 * head * w0 * e, copy=True),
           stream("head.bias_cat", 2 * head * e, copy=True)]
    bwd_head = []

    def logits(tag: str, rows: int, cols: int, w: int, with_proj: bool) -> tuple[list, list]:
        if not with_proj:          # F.linear with bias: one GEMM
            return ([gemm(f"{tag}.logits", rows, cols, w)],
                    [gemm(f"{tag}.logits.dgrad", rows, w, cols), gemm(f"{tag}.logits.wgrad", w, cols, rows),
                     stream(f"{tag}.bias_grad", rows * cols * e)])
        # einsum('bd,de,ev->bv'): (hidden @ proj) @ weight^T, then + bias
        return ([gemm(f"{tag}.proj", rows, w, h), gemm(f"{tag}.logits", rows, cols, w),
                 stream(f"{tag}.bias_add", 2 * rows * cols * e, pointwise=True)],
                [stream(f"{tag}.bias_grad", rows * cols * e),
                 gemm(f"{tag}.logits.dgrad", rows, w, cols), gemm(f"{tag}.logits.wgrad", w, cols, rows),
                 gemm(f"{tag}.proj.dgrad", rows, h, w), gemm(f"{tag}.proj.wgrad", h, w, rows)])

    f, b = logits("head", n, head, w0, proj[0])
    fwd += f + [stream("head.log_softmax", n * head * (e + opb)),
                stream("nll.zeros", n * e, pointwise=True)]
    bwd_head = [stream("head.logprob_grad_sum", 3 * n * head * opb, count=nc, pointwise=True),
                stream("head.log_softmax_bwd", n * head * (2 * opb + e))] + b
    bwd_tail = []
    for i, ((_, rows, w), ni) in enumerate(zip(cl, toks)):
        tag = f"c{i}"
        fwd += _select(tag, n, ni) + [stream(f"{tag}.head_rows", 2 * ni * head * opb, copy=True)]
        # index_select backward: a zero (n x head) gradient with the rows added in; the
        # gather / column select before it: a zero (ni x head) one with one element each
        bwd_tail += [stream(f"{tag}.select_bwd", ni * head * opb, pointwise=True),
                     stream(f"{tag}.head_rows_bwd", n * head * opb + 3 * ni * head * opb)]
        if i == 0:
            fwd.append(stream(f"{tag}.gather", ni * (2 * opb + INDEX_BYTES)))
        else:
            f, b = logits(tag, ni, rows, w, proj[i])
            fwd += [stream(f"{tag}.hidden_rows", 2 * ni * h * e, copy=True)] + f + [
                stream(f"{tag}.log_softmax", ni * rows * (e + opb)),
                stream(f"{tag}.gather", ni * (2 * opb + INDEX_BYTES)),
                stream(f"{tag}.add", 3 * ni * opb, pointwise=True)]
            bwd_tail += [stream(f"{tag}.gather_bwd", ni * rows * opb, pointwise=True),
                         stream(f"{tag}.log_softmax_bwd", ni * rows * (2 * opb + e))] + b + [
                         stream(f"{tag}.hidden_rows_bwd", n * h * e + 3 * ni * h * e)]
        fwd.append(stream(f"{tag}.nll_copy", ni * (opb + e), copy=True))
    # the hidden state's gradient: the head's plus each tail cluster's, summed
    bwd = bwd_tail + bwd_head + [stream("hidden_grad_sum", 3 * n * h * e, count=nc, pointwise=True)]
    if p.get("dropout", False):   # the model's last self.drop(core_out)
        bwd.append(stream("hidden.dropout_bwd", n * h * (2 * e + MASK_BYTES), pointwise=True))
    # weight gradients: head cat backward hands out slices; with div_val 1 every cluster's
    # weight is a slice of the one table (slice backward: a zero-filled table-size tensor),
    # and the table's gradient sums those with the embedding's own
    if div1:
        table = p["vocab"] * p["dim"] * e
        paths = len(cl) + (1 if tied else 0)
        bwd += [stream("weight.slice_bwd", table + 2 * table / len(cl), count=len(cl), pointwise=True),
                stream("weight.grad_sum", 3 * table, count=paths - 1, pointwise=True)]
    elif tied:
        for i, (_, rows, w) in enumerate(cl):
            extra = (h * w if tie_projs[i] else 0)
            bwd.append(stream(f"c{i}.weight.grad_sum", 3 * (rows * w + extra) * e, pointwise=True))
    per = 1 if div1 else len(cl)       # bias (and weight) tensors
    tensors = 2 + per * (1 if tied else 2) + sum(1 for t, q in zip(tie_projs, proj) if q and not t)
    return LayerKernels(tuple(fwd), tuple(bwd), param_tensors=tensors)


def _full_softmax_kernels(p: dict, sh: Shape, fwd: list, with_proj: bool, tied: bool,
                          tie_projs: list) -> LayerKernels:
    """cutoffs [] (train.py without --adaptive: cutoffs, tie_projs = [], [False]): the
    n_clusters == 0 branch of ProjectedAdaptiveLogSoftmax.forward (LambdaLabsML
    DeepLearningExamples c1781a37, utils/proj_adaptive_softmax.py:141-144): logits over the
    whole vocabulary for every token (F.linear with the bias, or the einsum through the
    projection), log_softmax, gather of the target's; no weight / bias cat, no selection.
    Backward: the gather's zero-filled full-size gradient, log_softmax's, the logits'
    GEMMs and bias sum; a tied table's gradient summed with the embedding's."""
    e, opb, n, h = sh.dtype_bytes, sh.op_bytes, sh.tokens, p["proj"]   # opb: as adaptive_softmax_kernels
    v, d = p["vocab"], p["dim"]
    if with_proj:
        f = [gemm("head.proj", n, d, h), gemm("head.logits", n, v, d),
             stream("head.bias_add", 2 * n * v * e, pointwise=True)]
        b = [stream("head.bias_grad", n * v * e), gemm("head.logits.dgrad", n, d, v),
             gemm("head.logits.wgrad", d, v, n), gemm("head.proj.dgrad", n, h, d),
             gemm("head.proj.wgrad", h, d, n)]
    else:
        f = [gemm("head.logits", n, v, d)]
        b = [gemm("head.logits.dgrad", n, d, v), gemm("head.logits.wgrad", d, v, n),
             stream("head.bias_grad", n * v * e)]
    fwd = fwd + f + [stream("head.log_softmax", n * v * (e + opb)),
                     stream("head.gather", n * (2 * opb + INDEX_BYTES))]
    bwd = [stream("head.gather_bwd", n * v * opb, pointwise=True),
           stream("head.log_softmax_bwd", n * v * (2 * opb + e))] + b
    if p.get("dropout", False):   # the model's last self.drop(core_out)
        bwd.append(stream("hidden.dropout_bwd", n * h * (2 * e + MASK_BYTES), pointwise=True))
    if tied:
        bwd.append(stream("weight.grad_sum", 3 * v * d * e, pointwise=True))
    tensors = 1 + (0 if tied else 1) + (1 if with_proj and not tie_projs[0] else 0)
    return LayerKernels(tuple(fwd), tuple(bwd), param_tensors=tensors)


def adaptive_embedding_cost(p: dict, sh: Shape, kl: LayerKernels | None = None) -> LayerCost:
    kl = adaptive_embedding_kernels(p, sh) if kl is None else kl     # build passes the kernels it already made
    n, d = sh.tokens, sh.dtype_bytes
    saved = n * INDEX_BYTES + sum(ni * w * d for (_, _, w), ni in zip(clusters(p), cluster_tokens(p, n)))
    return cost_from_kernels(kl, embedding_params(p), d, n * p["proj"], saved)


def adaptive_softmax_cost(p: dict, sh: Shape, kl: LayerKernels | None = None) -> LayerCost:
    kl = adaptive_softmax_kernels(p, sh) if kl is None else kl     # build passes the kernels it already made
    n, d = sh.tokens, sh.dtype_bytes
    cl = clusters(p)
    head = cl[0][1] + len(cl) - 1
    toks = cluster_tokens(p, n)
    scored = n * head + sum(ni * rows for (_, rows, _), ni in list(zip(cl, toks))[1:])
    # saved: the hidden rows, the head and tail log-probabilities
    saved = d * (n * p["proj"] + scored)
    return cost_from_kernels(kl, softmax_params(p), d, SOFTMAX_FLOPS_PER_ELEMENT * scored, saved)


__all__ = ["clusters", "zipf_shares", "cluster_tokens", "embedding_params", "softmax_params",
           "adaptive_embedding_kernels", "adaptive_softmax_kernels", "adaptive_embedding_cost",
           "adaptive_softmax_cost"]
