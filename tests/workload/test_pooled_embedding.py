"""Pooled (bag) lookups, `pooling: sum|mean` on an embedding layer: one vector per sample
out of K rows read (nn.EmbeddingBag, FBGEMM TBE, TF embedding_lookup_sparse)."""

import re

import pytest

from embsim.errors import InputError
from embsim.workload import load_model
from embsim.workload.costs import Shape, embedding_cost
from embsim.workload.kernels_layers import layer_kernels

B, K, DIM, VOCAB = 1000, 20, 64, 100_000
FP32 = Shape(batch=B, seq=1, dtype_bytes=4)
AMP = Shape(batch=B, seq=1, dtype_bytes=2, table_dtype_bytes=4)   # FP32 rows, 16-bit model

MODEL = """\
name: bag
source: test
defaults: {{batch: {batch}, seq: 1, dtype: fp32, optimizer: sgd}}
tables:
  - {{name: t0, vocab: {vocab}, dim: {dim}, input: f0}}
layers:
  - {{name: emb, kind: embedding, table: t0, lookups: {k}{extra}}}
  - {{name: mlp, kind: linear, in: {dim}, out: 1}}
"""


def write(tmp_path, k=K, extra=", pooling: sum", name="bag.yaml"):
    path = tmp_path / name
    path.write_text(MODEL.format(batch=B, vocab=VOCAB, dim=DIM, k=k, extra=extra))
    return str(path)


def kernels(p, sh=FP32):
    return layer_kernels("embedding", {"table": "t0", "lookups": K, **p}, sh, vocab=VOCAB, dim=DIM)


def written(kl_fwd):
    """Bytes the forward's kernels write out (a gather of 2 passes writes its rows)."""
    out = 0.0
    for kr in kl_fwd:
        if kr.kind == "gather" and (kr.passes or 2) == 2:
            out += kr.rows * kr.row_bytes
        elif kr.name.endswith(("bag_write", "write_cast")) or kr.name.endswith(".cast"):
            out += kr.nbytes
    return out


@pytest.mark.parametrize("pooling", ["sum", "mean"])
def test_model_file_accepts_sum_and_mean(tmp_path, pooling):
    m = load_model(write(tmp_path, extra=f", pooling: {pooling}"))
    emb = m.layer("emb")
    assert emb.pooled and m.rows_read(emb) == B * K
    assert m.vectors_out(emb) == B                          # one vector per sample
    plain = load_model(write(tmp_path, extra="", name="plain.yaml"))
    assert not plain.layer("emb").pooled and plain.vectors_out(plain.layer("emb")) == B * K


@pytest.mark.parametrize("value", ["max", "1", "true"])
def test_model_file_refuses_other_pooling(tmp_path, value):
    path = write(tmp_path, extra=f", pooling: {value}")
    with pytest.raises(InputError) as exc:
        load_model(path)
    msg = str(exc.value)
    assert msg.startswith(path) and "layers.0.pooling" in msg and "(line 7)" in msg, msg
    assert "\n" not in msg


def test_pooled_forward_reads_the_same_rows_and_writes_one_vector_per_sample():
    plain, bag = kernels({}), kernels({"pooling": "sum"})
    rows = lambda kl: sum(kr.rows for kr in kl.fwd if kr.kind == "gather")
    assert rows(plain) == rows(bag) == B * K
    assert written(plain.fwd) == B * K * DIM * 4
    assert written(bag.fwd) == B * DIM * 4
    # the cost rule: read K rows per sample, write one row per sample (+ the indices)
    c0 = embedding_cost({"lookups": K}, FP32, VOCAB, DIM, True)
    c1 = embedding_cost({"lookups": K, "pooling": "sum"}, FP32, VOCAB, DIM, True)
    assert c0.fwd_bytes - c1.fwd_bytes == (B * K - B) * DIM * 4
    assert c0.bwd_bytes - c1.bwd_bytes == (B * K - B) * DIM * 4    # the gradient read once per sample
    assert c1.grad_bytes == c0.grad_bytes                            # still one gradient row per lookup
    assert c1.fwd_flops == B * K * DIM and c0.fwd_flops == 0         # the sum's adds


def test_pooled_backward_expands_the_pooled_gradient_for_the_sparse_path():
    plain, bag = kernels({}), kernels({"pooling": "mean"})
    assert bag.bwd == plain.bwd        # dense: the same scatter-add of K x B rows
    expand = [kr for kr in bag.bwd_sparse if kr.name == "embedding.bag_grad_expand"]
    assert len(expand) == 1 and expand[0].nbytes == (B + B * K) * DIM * 4   # read B rows, write B*K
    assert bag.bwd_sparse[1:] == plain.bwd_sparse


@pytest.mark.parametrize("fused", [False, True])
def test_cast_output_casts_the_pooled_output(fused):
    p = {"cast_output": True, "fused_cast": fused}
    plain, bag = kernels(p, AMP), kernels({**p, "pooling": "sum"}, AMP)
    casts = lambda kl: [kr for kr in kl.fwd if "cast" in kr.name]
    c0, c1 = casts(plain), casts(bag)
    assert len(c0) == len(c1) == 1
    assert c0[0].nbytes == K * c1[0].nbytes
    assert c1[0].nbytes == B * DIM * (2 if fused else 2 + 4)        # fused: writes 16-bit only
    up = [kr for kr in bag.bwd if kr.name.startswith("embedding.rows_grad")]
    assert sum(kr.nbytes for kr in up) == B * DIM * (2 + 4)
    if fused:      # one kernel reads the FP32 rows and writes the 16-bit sums
        assert [kr.name for kr in bag.fwd][:2] == ["embedding.bag_gather", "embedding.write_cast"]
        assert not any(re.search(r"bag_write", kr.name) for kr in bag.fwd)


def test_a_run_override_may_pool_a_layer_and_is_held_to_the_same_enum(tmp_path):
    from embsim.workload import load_spec
    from embsim.workload.overrides import apply_overrides

    spec = load_spec(write(tmp_path, extra="", name="plain.yaml"))
    pooled = apply_overrides(spec, {"layers": {"emb": {"pooling": "mean"}}})
    assert pooled.layers[0].params["pooling"] == "mean"
    with pytest.raises(InputError, match="pooling.*must be one of sum, mean"):
        apply_overrides(spec, {"layers": {"emb": {"pooling": "max"}}})
