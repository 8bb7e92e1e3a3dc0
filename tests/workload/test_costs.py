"""Per-layer cost rules: FLOPs, bytes, gradients, activations; parameter counts checked
against PyTorch's own modules where PyTorch has the same layer."""

import pytest

from embsim.workload.costs import Shape, embedding_cost, linear_cost, output_projection_cost
from embsim.workload.costs_blocks import lstm_cost, lstm_params, transformer_block_cost

SH = Shape(batch=4, seq=16, dtype_bytes=4)


def test_linear_flops_bytes_and_backward_rule():
    c = linear_cost({"in": 128, "out": 256, "bias": False}, SH)
    n = SH.batch * SH.seq
    assert c.fwd_flops == 2 * n * 128 * 256
    assert c.bwd_flops == 2 * c.fwd_flops
    assert c.params == 128 * 256 and c.grad_bytes == 4 * 128 * 256
    assert c.fwd_bytes == 4 * (128 * 256 + n * 128 + n * 256)
    assert c.activation_bytes == 4 * n * 128
    per_sample = linear_cost({"in": 128, "out": 256, "bias": False, "per": "sample"}, SH)
    assert per_sample.fwd_flops * SH.seq == c.fwd_flops


def test_embedding_is_a_sparse_gather():
    c = embedding_cost({"lookups": 16}, SH, vocab=1000, dim=32, owns_table=True)
    rows = SH.batch * 16
    assert c.sparse and c.params == 1000 * 32
    assert c.fwd_flops == 0 and c.bwd_flops == rows * 32
    assert c.grad_bytes == rows * (32 * 4 + 8)            # uncoalesced (index, row) pairs
    assert embedding_cost({"lookups": 16}, SH, 1000, 32, owns_table=False).params == 0


def test_output_projection_full_vs_sampled():
    full = output_projection_cost({"dim": 64}, SH, vocab=50_000, tied=True)
    assert not full.sparse and full.params == 0
    assert full.grad_bytes == 4 * 50_000 * 64              # a tied full softmax: dense
    sampled = output_projection_cost({"dim": 64, "samples": 100}, SH, vocab=50_000, tied=True)
    assert sampled.sparse and sampled.fwd_flops < full.fwd_flops / 100


def test_transformer_flops_scale_linearly_in_batch_quadratic_part_in_seq():
    p = {"dim": 256, "heads": 4, "ffn": 1024}
    a = transformer_block_cost(p, Shape(2, 64, 2), False)
    b = transformer_block_cost(p, Shape(4, 64, 2), False)
    assert b.fwd_flops == 2 * a.fwd_flops
    # with 2 x seq the per-token part doubles and the scores part quadruples
    c = transformer_block_cost(p, Shape(2, 128, 2), False)
    assert 2 * a.fwd_flops < c.fwd_flops < 4 * a.fwd_flops
    # flash attention removes the S^2 score tensors from HBM traffic and saved activations
    f = transformer_block_cost({**p, "flash_attention": True}, Shape(2, 128, 2), False)
    assert f.fwd_flops == c.fwd_flops
    assert f.fwd_bytes < c.fwd_bytes and f.activation_bytes < c.activation_bytes
    # the matmul part dominates: ~2 * params * tokens
    assert a.fwd_flops > 2 * a.params * 2 * 64


def test_activation_memory_matches_korthikanti_for_16_bit():
    # Korthikanti et al. 2022: s*b*h*(34 + 5*a*s/h) bytes per layer (16-bit, dropout, ffn 4h)
    s, b, h, a = 128, 2, 512, 8
    c = transformer_block_cost({"dim": h, "heads": a, "ffn": 4 * h}, Shape(b, s, 2), False)
    assert c.activation_bytes == s * b * h * 34 + 5 * a * s * s * b


def test_lstm_flops_per_token():
    c = lstm_cost({"in": 64, "hidden": 128}, SH)
    n = SH.batch * SH.seq
    assert c.fwd_flops == n * (2 * 4 * 128 * (64 + 128) + 10 * 128)
    bi = lstm_cost({"in": 64, "hidden": 128, "bidirectional": True}, SH)
    assert bi.params == 2 * c.params and bi.fwd_flops == 2 * c.fwd_flops


torch = pytest.importorskip("torch")


@pytest.mark.parametrize("fin,hidden,proj,bi", [(1024, 1024, None, True), (2048, 1024, None, False),
                                                 (512, 2048, 512, False), (64, 64, None, False)])
def test_lstm_params_match_pytorch(fin, hidden, proj, bi):
    lstm = torch.nn.LSTM(fin, hidden, proj_size=proj or 0, bidirectional=bi)
    ours = lstm_params(fin, hidden, proj, "double") * (2 if bi else 1)
    assert ours == sum(p.numel() for p in lstm.parameters())


@pytest.mark.parametrize("decoder", [False, True])
def test_transformer_params_match_pytorch(decoder):
    h, a, f = 256, 4, 1024
    if decoder:
        ref = torch.nn.TransformerDecoderLayer(h, a, f)
    else:
        ref = torch.nn.TransformerEncoderLayer(h, a, f)
    ours = transformer_block_cost({"dim": h, "heads": a, "ffn": f, "ffn_kind": "relu"},
                                  SH, cross_attention=decoder)
    assert ours.params == sum(p.numel() for p in ref.parameters())
