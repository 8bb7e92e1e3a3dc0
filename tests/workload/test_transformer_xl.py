"""Transformer-XL's decoder layer (embsim.workload.transformer_xl): the memory-extended
QKV GEMM, the AC and BD score products over mem + seq keys, the relative shift, and
the zoo models built from it."""

import pytest

from embsim.errors import InputError
from embsim.workload import load_model
from embsim.workload.costs import Shape
from embsim.workload.transformer_xl import (rel_block_cost, rel_block_kernels, rel_block_params,
                                            rel_position_cost)

BASE = {"dim": 512, "heads": 8, "head_dim": 64, "ffn": 2048, "mem": 192}
SH = Shape(batch=4, seq=192, dtype_bytes=2, op_bytes=2, fp16=True)


def _gemm(kl, name):
    return next(k for k in kl.fwd + kl.bwd if k.name == name)


def test_params_are_the_modules_tensors():
    # qkv_net 512 x 1536, r_net 512 x 512, o_net 512 x 512 (no biases), FF 512-2048-512
    # with biases, two LayerNorms: 3,412,480 per layer (mem_transformer.py)
    assert rel_block_params(BASE) == 512 * 1536 + 512 * 512 * 2 + 2 * 512 * 2048 + 2048 + 512 + 4 * 512
    assert rel_block_params(BASE) == 3_412_480


def test_qkv_runs_over_memory_and_segment_rows():
    kl = rel_block_kernels(BASE, SH)
    qkv = _gemm(kl, "attn.qkv")
    assert (qkv.m, qkv.n, qkv.k) == (4 * (192 + 192), 3 * 512, 512)
    # the backward GEMMs too: autograd pads dq to the concatenation
    assert _gemm(kl, "attn.qkv.dgrad").m == 4 * 384 and _gemm(kl, "attn.qkv.wgrad").k == 4 * 384
    # the r projection has no batch dimension: klen rows
    assert _gemm(kl, "attn.r_net").m == 384
    assert not any(k.name == "attn.r_net.dgrad" for k in kl.bwd)    # pos_emb needs no grad


def test_scores_are_queries_by_memory_plus_segment_keys():
    kl = rel_block_kernels(BASE, SH)
    ac, bd = _gemm(kl, "attn.ac"), _gemm(kl, "attn.bd")
    assert (ac.m, ac.n, ac.k, ac.batch) == (192, 384, 64, 4 * 8)
    # BD: one bmm per head over (query, batch) rows
    assert (bd.m, bd.n, bd.k, bd.batch) == (4 * 192, 384, 64, 8)
    assert 2 * ac.m * ac.n * ac.k * ac.batch == 2 * bd.m * bd.n * bd.k * bd.batch
    shift = next(k for k in kl.fwd if k.name == "attn.rel_shift")
    scores = 4 * 8 * 192 * 384
    assert shift.nbytes == (2 * scores + 4 * 8 * 192) * 2


def test_memory_length_scales_the_attention_not_the_ffn():
    short, long_ = rel_block_cost({**BASE, "mem": 0}, SH), rel_block_cost({**BASE, "mem": 384}, SH)
    assert long_.fwd_flops > short.fwd_flops and long_.params == short.params
    kl0, kl1 = rel_block_kernels({**BASE, "mem": 0}, SH), rel_block_kernels({**BASE, "mem": 384}, SH)
    assert _gemm(kl0, "ff.up.gemm") == _gemm(kl1, "ff.up.gemm")


def test_attention_dropout_only_when_dropatt():
    names = [k.name for k in rel_block_kernels(BASE, SH).fwd]
    assert "attn.dropatt" not in names
    names = [k.name for k in rel_block_kernels({**BASE, "attn_dropout": True}, SH).fwd]
    assert "attn.dropatt" in names


def test_memory_update_copies_each_layers_input():
    stack = next(k for k in rel_block_kernels(BASE, SH).fwd if k.name == "mems.stack")
    assert stack.nbytes == 2 * 4 * 192 * 512 * 2


def test_rel_position_holds_the_two_shared_biases():
    c = rel_position_cost({"dim": 512, "heads": 8, "head_dim": 64, "mem": 192}, SH)
    assert c.params == 2 * 8 * 64 and c.fwd_bytes > 0


def test_zoo_models_param_counts():
    # every nn.Parameter of MemTransformerLM with the wt103 configs (hand count in the
    # zoo files' sources): base 191.95M, large 285.17M
    base, large = load_model("transformer-xl-base"), load_model("transformer-xl-large")
    assert base.params == 267735 * 512 + 16 * 3_412_480 + 2 * 512 + 267735 + 3 * 512 + 3
    assert large.params == pytest.approx(285.17e6, rel=1e-4)
    assert (base.batch, base.seq, large.batch, large.seq) == (32, 192, 16, 384)
    assert base.optimizer.name == "lamb" and base.optimizer.implementation == "per-tensor"
    assert base.optimizer.clip_grad_norm


def test_memory_length_is_overridable():
    from embsim.workload import load_spec
    from embsim.workload.overrides import apply_overrides
    spec = apply_overrides(load_spec("transformer-xl-base"),
                           {"layers": {"layers": {"mem": 64}, "rel_position": {"mem": 64}}})
    assert next(ls for ls in spec.layers if ls.name == "layers").params["mem"] == 64
    with pytest.raises(InputError):
        apply_overrides(load_spec("transformer-xl-base"), {"layers": {"layers": {"mem": 0}}})


def test_one_memory_length_for_the_position_inputs_and_every_block():
    """mem_len is one setting in DLE's train.py: an override that changes it on the position
    layer alone (or the blocks alone) is refused, naming both values; both together pass."""
    from embsim.workload import load_spec
    from embsim.workload.overrides import apply_overrides
    spec = load_spec("transformer-xl-large")
    with pytest.raises(InputError, match=r"layers\.layers\.mem: 384 here but 256 in layer 'rel_position'"):
        apply_overrides(spec, {"layers": {"rel_position": {"mem": 256}}}, "runs[0].embsim")
    both = apply_overrides(spec, {"layers": {"rel_position": {"mem": 256}, "layers": {"mem": 256}}}, "r")
    assert {l.params["mem"] for l in both.layers if "mem" in l.params} == {256}
