"""Memory-bound kernels by what bounds them: per-kernel classes outside transformer blocks,
the whole-layer fit inside them; eager layers counted as their reference code runs them."""

import pytest

from embsim.topology import load_topology
from embsim.workload import load_model
from embsim.workload.gpu_compute import for_gpu
from embsim.workload.kernels import COLUMN, LAYER, RNG, STREAM


def _streams(kernels):
    return [k for k in kernels if k.kind == "stream" and not (k.copy or k.param_pass or k.recurrent)]


def test_transformer_blocks_keep_the_layer_fit_everything_else_has_a_class():
    m = load_model("bert-large", batch=8, seq=128, dtype="fp16")
    block = m.layer("encoder.0").kernels
    assert {k.mechanism for k in _streams(block.fwd + block.bwd)} == {LAYER}
    head = m.layer("mlm_transform").kernels
    assert {k.mechanism for k in _streams(head.fwd + head.bwd)} <= {STREAM, RNG, COLUMN}


def test_linear_classes_dropout_draws_and_bias_gradient_reduces():
    kl = load_model("ncf-ml20m", batch=1024, seq=1).layer("mlp0").kernels
    by_name = {k.name: k.mechanism for k in kl.fwd + kl.bwd if k.kind == "stream"}
    assert by_name["linear.dropout"] == RNG                # Philox mask in the forward
    assert by_name["linear.dropout_bwd"] == STREAM         # the backward only reads the mask
    assert by_name["linear.act"] == by_name["linear.act_bwd"] == STREAM
    assert by_name["linear.bias_grad"] == COLUMN


def test_cpu_device_ignores_the_classes():
    cpu = for_gpu(load_topology("local-cpu").node.gpu)
    assert {cpu.memory_fraction(m) for m in (STREAM, RNG, COLUMN, LAYER)} == {1.0}


def test_additive_attention_passes_as_dle_gnmt_runs_them():
    b, s, u = 4, 10, 1024
    kl = load_model("gnmt", batch=b, seq=s, dtype="fp32").layer("attention").kernels
    pairs, n = b * s * s, b * s
    big = pairs * u * 4
    fwd = {k.name: k.nbytes for k in kl.fwd if k.kind == "stream"}
    bwd = {k.name: k.nbytes for k in kl.bwd if k.kind == "stream"}
    # broadcast sum written, + normalize_bias, tanh, the score vector product: 6 passes
    assert fwd["attn.add"] + fwd["attn.bias_add"] + fwd["attn.tanh"] + fwd["attn.score_dot"] \
        == 6 * big + 2 * n * u * 4 + pairs * 4       # + the projections read, the scores written
    # outer product, the vector's gradient, tanh backward, bias and the two operand sums
    big_bwd = [n for n in bwd if not n.startswith("attn.softmax")]
    assert sum(bwd[k] for k in big_bwd) == 8 * big + 2 * pairs * 4 + 2 * n * u * 4
    # without normalisation there is no bias pass either way
    plain = load_model("gnmt", batch=b, seq=s, dtype="fp32",
                       overrides={"layers": {"attention": {"normalize": False}}}).layer("attention").kernels
    names = {k.name for k in plain.fwd + plain.bwd}
    assert "attn.bias_add" not in names and "attn.bias_grad" not in names
    assert plain.param_tensors == 3 and kl.param_tensors == 5


def _loss_bwd_bytes(model, style=None):
    overrides = {"layers": {"loss": {"label_smoothing": style}}} if style else None
    m = load_model(model, batch=4, seq=10, dtype="fp32", overrides=overrides)
    return sum(k.nbytes for k in m.layer("loss").kernels.bwd)


def test_label_smoothing_adds_the_eager_gradient_passes():
    elems = 4 * 10 * 32320
    # GNMT's mean: the divided gradient written, the gather's zeros, their sum
    assert _loss_bwd_bytes("gnmt") - _loss_bwd_bytes("gnmt", "none") == elems * (4 + 4 + 12)
    # fairseq's sum: an expanded view, so only the zeros and one read + write to add it
    assert _loss_bwd_bytes("gnmt", "sum") - _loss_bwd_bytes("gnmt", "none") == elems * (4 + 8)
