"""Recommender layer pieces: the `combine` kind (NCF's GMF product and concatenations),
DLRM's `dot_interaction`, dropout on a linear layer, and per-sample batches of 2^20
(NVIDIA DLE NCF)."""

import pytest

from embsim.errors import InputError
from embsim.workload import load_model
from embsim.workload.costs import Shape, combine_cost, dot_interaction_cost, linear_cost
from embsim.workload.kernels_layers import layer_kernels

SH = Shape(batch=1000, seq=1, dtype_bytes=4)


def _stream_bytes(kernels):
    return sum(k.nbytes for k in kernels if k.kind == "stream")


@pytest.mark.parametrize("op", ["product", "concat", "sum"])
def test_combine_kernels_move_the_bytes_the_cost_rule_counts(op):
    p = {"op": op, "inputs": 2, "dim": 64}
    c, kl = combine_cost(p, SH), layer_kernels("combine", p, SH)
    assert c.params == 0 and c.grad_bytes == 0
    assert _stream_bytes(kl.fwd) == c.fwd_bytes and _stream_bytes(kl.bwd) == c.bwd_bytes
    # one gradient kernel per input, except a sum's: one broadcast to every input
    assert len(kl.bwd) == (1 if op == "sum" else 2) and kl.param_tensors == 0


def test_sum_reads_every_input_once_each_way_and_saves_nothing():
    k = 20                                 # an average pool of stride 20
    c = combine_cost({"op": "sum", "inputs": k, "dim": 64}, SH)
    assert c.fwd_bytes == c.bwd_bytes == 4 * (k + 1) * 1000 * 64
    assert c.activation_bytes == 0
    product = combine_cost({"op": "product", "inputs": k, "dim": 64}, SH)
    assert product.bwd_bytes == k * c.bwd_bytes               # a product's k gradients each read all


def test_product_reads_both_inputs_and_writes_one():
    c = combine_cost({"op": "product", "inputs": 2, "dim": 64}, SH)
    assert c.fwd_bytes == 4 * 3 * 1000 * 64 and c.fwd_flops == 1000 * 64
    assert c.activation_bytes == 4 * 2 * 1000 * 64           # both inputs saved


def test_linear_dropout_adds_a_pass_each_way_and_a_mask():
    p = {"in": 256, "out": 128, "activation": "relu"}
    plain, drop = linear_cost(p, SH), linear_cost({**p, "dropout": True}, SH)
    assert drop.fwd_bytes - plain.fwd_bytes == 4 * 2 * 1000 * 128
    assert drop.activation_bytes - plain.activation_bytes == 1000 * 128   # 1-byte mask
    names = [k.name for k in layer_kernels("linear", {**p, "dropout": True}, SH).bwd]
    assert names[0] == "linear.dropout_bwd"                   # first in backward


def test_ncf_is_neumf_at_the_dle_defaults():
    m = load_model("ncf-ml20m")
    assert m.batch == 1 << 20
    users, items = 138_493, 26_744
    mlp = (256 * 256 + 256) + (256 * 128 + 128) + (128 * 64 + 64) + (128 + 1)
    assert m.embedding_params == (users + items) * (64 + 128)
    assert m.dense_params == mlp
    assert all(t.lookups_per_sample == 1 for t in m.tables)
    # nn.Embedding's default: DDP all-reduces every table's gradient
    assert not any(m.dense_gradient(t.name) for t in m.tables)


def test_batch_cap_is_the_tokens_cap():
    assert load_model("ncf-ml20m", batch=1 << 24).batch == 1 << 24
    with pytest.raises(InputError, match="batch"):
        load_model("ncf-ml20m", batch=(1 << 24) + 1)


def test_dot_interaction_kernels_move_the_bytes_the_cost_rule_counts():
    p = {"vectors": 27, "dim": 128, "out": 480}
    c, kl = dot_interaction_cost(p, SH), layer_kernels("dot_interaction", p, SH)
    assert c.params == 0 and c.fwd_flops == 2 * 1000 * 27 * 27 * 128
    assert _stream_bytes(kl.fwd) == c.fwd_bytes and _stream_bytes(kl.bwd) == c.bwd_bytes
    # memory-bound: fewer FLOPs per byte than A100's FP32 CUDA cores can use (19.5 T / 1.56 T)
    assert c.fwd_flops / c.fwd_bytes < 19.5 / 1.555


def test_dlrm_is_dle_main_defaults():
    m = load_model("dlrm-criteo-f15")
    assert m.batch == 65536 and m.table("categorical").lookups_per_sample == 26
    assert m.embedding_params == 32_709_138 * 128
    widths = [13, 512, 256, 128]
    top = [480, 1024, 1024, 512, 256, 1]
    dense = sum(a * b + b for a, b in zip(widths, widths[1:])) + sum(a * b + b for a, b in zip(top, top[1:]))
    assert m.dense_params == dense
    # the interaction output: 27 x 26 / 2 pairs + the 128-wide bottom output, padded to 8
    pairs = 27 * 26 // 2 + 128
    assert m.layer("top_mlp0").kernels.fwd[0].k == pairs + (-pairs) % 8


def test_fused_bias_grad_drops_the_separate_bias_reduction():
    p = {"in": 64, "out": 128, "activation": "relu"}
    plain = [k.name for k in layer_kernels("linear", p, SH).bwd]
    fused = [k.name for k in layer_kernels("linear", {**p, "fused_bias_grad": True}, SH).bwd]
    assert "linear.bias_grad" in plain and "linear.bias_grad" not in fused
    assert set(fused) == set(plain) - {"linear.bias_grad"}
    # without an activation there is no fused kernel to carry the bias gradient
    no_act = {"in": 64, "out": 128, "fused_bias_grad": True}
    assert "linear.bias_grad" in [k.name for k in layer_kernels("linear", no_act, SH).bwd]


def test_dlrm_mlps_are_apex_fused_and_its_output_layer_is_not():
    m = load_model("dlrm-criteo-f15")
    fused = {l.name for l in m.layers if l.kind == "linear"
             and not any(k.name == "linear.bias_grad" for k in l.kernels.bwd)}
    assert fused == {f"bottom_mlp{i}" for i in range(3)} | {f"top_mlp{i}" for i in range(4)}


def test_dense_embedding_backward_reads_each_lookup_once_and_writes_distinct_rows():
    from embsim.workload.embedding_kernels import embedding_kernels
    fwd, dense, _ = embedding_kernels("e", rows=1_000_000, dim=128, vocab=26_744, e=4)
    assert [k.kind for k in fwd] == ["gather", "stream"] and fwd[0].passes == 0   # read + write
    seg = next(k for k in dense if k.name == "e.segment_sum")
    out = next(k for k in dense if k.name == "e.row_write")
    assert seg.rows == 1_000_000 and seg.passes == 1
    assert out.rows == 26_744 and out.passes == 1        # one row per distinct index
    partials = next(k for k in dense if k.name == "e.partials")
    assert partials.nbytes == 2 * (100_000 + 26_744) * 128 * 4


def test_fused_cast_gathers_fp32_rows_and_writes_half_in_one_kernel():
    amp = load_model("dlrm-criteo-f15", dtype="fp16")
    emb = amp.layer("embedding").kernels
    names = [k.name for k in emb.fwd]
    assert "embedding.rows.cast" not in names and "embedding.write_cast" in names
    rows = amp.batch * 26
    write = next(k for k in emb.fwd if k.name == "embedding.write_cast")
    assert write.nbytes == rows * 128 * 2                  # half rows out
    gather = next(k for k in emb.fwd if k.name == "embedding.gather")
    assert gather.passes == 1 and gather.row_bytes == 128 * 4   # FP32 rows in
    # the same layer without fused_cast casts in a separate pass
    plain = load_model("dlrm-criteo-f15", dtype="fp16",
                       overrides={"layers": {"embedding": {"fused_cast": False}}})
    assert "embedding.rows.cast" in [k.name for k in plain.layer("embedding").kernels.fwd]
