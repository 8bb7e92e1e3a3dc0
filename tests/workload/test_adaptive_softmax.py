"""Adaptive embedding and projected adaptive log-softmax (embsim.workload.adaptive_softmax)."""

import pytest

from embsim.errors import InputError
from embsim.workload.adaptive_softmax import (adaptive_embedding_kernels, adaptive_softmax_cost,
                                              adaptive_softmax_kernels, cluster_tokens, clusters,
                                              embedding_params, softmax_params, zipf_shares)
from embsim.workload.costs import Shape

CUT = [19997, 39997, 199997]
BASE = {"vocab": 267735, "dim": 512, "proj": 512, "cutoffs": CUT, "div_val": 1,
        "tie_projs": [False, True, True, True]}
LARGE = {**BASE, "dim": 1024, "proj": 1024, "div_val": 4}
SH = Shape(batch=8, seq=192, dtype_bytes=2, op_bytes=2, fp16=True)


def test_clusters_and_widths():
    assert clusters(BASE) == [(0, 19997, 512), (19997, 20000, 512), (39997, 160000, 512),
                              (199997, 67738, 512)]
    assert [w for _, _, w in clusters(LARGE)] == [1024, 256, 64, 16]


def test_zipf_shares_sum_to_one_and_fall_with_rank():
    s = zipf_shares(267735, tuple(CUT))
    assert sum(s) == pytest.approx(1.0)
    assert s[0] > 0.8 and s[1] < s[0]
    assert sum(cluster_tokens(BASE, 1536)) == pytest.approx(1536, abs=2)


def test_params():
    assert embedding_params(BASE) == 267735 * 512                  # one table, no projection
    assert softmax_params(BASE) == 3 * 512 + 3 + 267735             # tied: biases and clusters
    emb = 19997 * 1024 + 20000 * 256 + 160000 * 64 + 67738 * 16 + 1024 * (1024 + 256 + 64 + 16)
    assert embedding_params(LARGE) == emb
    # the head projection is untied (tie_projs[0] false): its own 1024 x 1024
    assert softmax_params(LARGE) == 3 * 1024 + 3 + 267735 + 1024 * 1024
    assert softmax_params({**BASE, "tied_weights": False}) == softmax_params(BASE) + 267735 * 512


def test_head_for_every_token_tails_for_their_own():
    kl = adaptive_softmax_kernels(BASE, SH)
    n = SH.tokens
    head = next(k for k in kl.fwd if k.name == "head.logits")
    assert (head.m, head.n, head.k) == (n, 19997 + 3, 512)
    toks = cluster_tokens(BASE, n)
    for i in (1, 2, 3):
        tail = next(k for k in kl.fwd if k.name == f"c{i}.logits")
        assert (tail.m, tail.n) == (toks[i], clusters(BASE)[i][1])


def test_projected_clusters_run_two_gemms():
    kl = adaptive_softmax_kernels(LARGE, SH)
    names = [k.name for k in kl.fwd]
    assert "c2.proj" in names and "c2.bias_add" in names
    assert "c2.proj" not in [k.name for k in adaptive_softmax_kernels(BASE, SH).fwd]


def test_div_val_1_slices_one_table():
    kl = adaptive_softmax_kernels(BASE, SH)
    grad_sum = next(k for k in kl.bwd if k.name == "weight.grad_sum")
    assert grad_sum.count == 4        # four slices + the embedding's gradient meet


def test_adaptive_embedding_per_cluster_lookups():
    kl = adaptive_embedding_kernels(LARGE, SH)
    names = [k.name for k in kl.fwd]
    assert {"emb.c0.proj", "emb.c3.proj", "emb.zeros", "emb.scale"} <= set(names)
    base = [k.name for k in adaptive_embedding_kernels(BASE, SH).fwd]
    assert "emb.gather" in base and not any(".proj" in n for n in base)


def test_cost_positive():
    c = adaptive_softmax_cost(LARGE, SH)
    assert c.fwd_flops > 2 * SH.tokens * 20000 * 1024 and c.bwd_bytes > 0


def test_spec_checks_cutoffs():
    from embsim.workload.spec import layer_shape_problem, layer_value_problem
    assert layer_value_problem("adaptive_softmax", "cutoffs", [5, 3])
    assert layer_value_problem("adaptive_softmax", "tie_projs", [1, 0])
    assert layer_shape_problem("adaptive_softmax", {**BASE, "cutoffs": [300000]})
    assert layer_shape_problem("adaptive_softmax", {**BASE, "tie_projs": [True]})
    assert layer_shape_problem("adaptive_softmax", BASE) is None


def test_zoo_file_refuses_bad_cutoffs(tmp_path):
    from embsim.workload.spec import load_model_spec
    f = tmp_path / "m.yaml"
    f.write_text("name: m\nsource: s\ndefaults: {batch: 1, seq: 8, dtype: fp32, optimizer: adam}\n"
                 "layers:\n  - {name: e, kind: adaptive_embedding, vocab: 100, dim: 8, proj: 8,"
                 " cutoffs: [50, 20]}\n")
    with pytest.raises(InputError, match="increasing"):
        load_model_spec(f)


FULL = {**BASE, "cutoffs": [], "tie_projs": [False]}


def test_no_cutoffs_is_the_full_softmax_branch():
    """cutoffs [] = train.py without --adaptive (Lambda's benchmark runs): one cluster, the
    n_clusters == 0 branch: logits over the whole vocabulary, log_softmax, gather; no cat,
    no selection, no cluster weight / bias."""
    from embsim.workload.spec import layer_shape_problem, layer_value_problem
    assert layer_value_problem("adaptive_softmax", "cutoffs", []) is None
    assert layer_shape_problem("adaptive_softmax", FULL) is None
    kl = adaptive_softmax_kernels(FULL, SH)
    names = [k.name for k in kl.fwd]
    assert not any("cat" in x or "nonzero" in x or "index_select" in x for x in names)
    logits = next(k for k in kl.fwd if k.name == "head.logits")
    assert (logits.m, logits.n, logits.k) == (SH.tokens, 267735, 512)
    assert kl.param_tensors == 1                      # the bias; the weight is the embedding's
    assert softmax_params(FULL) == 267735
    # Lambda's logs: "#params = 191948759" (base, 16 layers) with this head and one table
    assert embedding_params(FULL) == 267735 * 512


def test_autocast_log_probabilities_and_their_gradients_are_fp32():
    """Under autocast log_softmax writes FP32 (at::log_softmax(half, dtype=float): the
    half_to_float kernel): the gathers, the head rows' index_select and the zero-filled
    gradients of gather / index_select are FP32 passes; under apex O2 (op_bytes == dtype
    bytes) nothing changes."""
    auto = Shape(batch=8, seq=192, dtype_bytes=2, op_bytes=4, fp16=True)
    n, v = auto.tokens, 267735
    by = {k.name: k.nbytes for k in adaptive_softmax_kernels(FULL, auto).bwd}
    assert by["head.gather_bwd"] == n * v * 4
    assert by["head.log_softmax_bwd"] == n * v * (2 * 4 + 2)
    kl = adaptive_softmax_kernels(BASE, auto)
    by = {k.name: k.nbytes for k in kl.fwd + kl.bwd}
    head, ni = 19997 + 3, cluster_tokens(BASE, n)
    assert by["c1.select_bwd"] == ni[1] * head * 4
    assert by["c1.head_rows"] == 2 * ni[1] * head * 4
    assert by["c1.head_rows_bwd"] == (n + 3 * ni[1]) * head * 4
    assert by["c2.gather_bwd"] == ni[2] * 160000 * 4
