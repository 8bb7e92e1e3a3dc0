"""Eager PyTorch's RMSNorm, rotary embeddings and SwiGLU as the kernels they launch
(embsim.workload.eager_ops), charged only in a block that is not fused_elementwise."""

from embsim.topology import load_topology
from embsim.workload import load_model
from embsim.workload.compute import model_times
from embsim.workload.costs import Shape
from embsim.workload.eager_ops import (rmsnorm_eager_fwd_bwd, rope_eager_fwd_bwd,
                                       swiglu_eager_fwd_bwd)
from embsim.workload.gpu_compute import for_gpu
from embsim.workload.kernels import norm_fwd_bwd
from embsim.workload.kernels_layers import transformer_block

H100 = for_gpu(load_topology("dgx-h100:1x1").node.gpu)
LLAMA3_8B = {"dim": 4096, "heads": 32, "ffn": 14336, "kv_heads": 8, "ffn_kind": "swiglu",
             "bias": False, "norm": "rmsnorm", "flash_attention": True, "dropout": False,
             "rope": True}
N = 8192


def nbytes(ks):
    return sum(k.nbytes for k in ks)


def block(**p):
    return transformer_block({**LLAMA3_8B, **p}, Shape(1, N, 2, 2), cross=False, causal=True)


def names(ks, part):
    return [k.name for k in ks if part in k.name]


def test_rmsnorm_eager_pass_counts_and_bytes_by_hand():
    n, d, x = N, 4096, N * 4096
    fwd, bwd = rmsnorm_eager_fwd_bwd("norm", n, d, 2, 2)       # BF16 model (o2 / megatron)
    # x.float(), pow, mean, + eps, rsqrt, * rstd, type_as, * weight
    assert len(fwd) == 8
    # * weight's two gradients (+ the weight's row sum), type_as, * rstd's two (+ row sum),
    # rsqrt's three, mean, pow's three, the accumulation of x.float()'s two gradients, the cast
    assert len(bwd) == 16
    assert nbytes(fwd) == 36 * x + 24 * n + 2 * d
    assert nbytes(bwd) == 92 * x + 40 * n + 4 * d
    lib_f, lib_b = norm_fwd_bwd("norm", n, d, 2, 2)           # the fused library kernel
    assert (len(lib_f), len(lib_b)) == (1, 2)
    assert nbytes(lib_f) == 4 * x + 8 * n and nbytes(lib_b) == 8 * x + 8 * n
    # casts are plain copies (copy bandwidth); the rest block activation kernels
    assert [k.name for k in fwd if k.copy] == ["norm.x_float.cast", "norm.type_as.cast"]


def test_rmsnorm_eager_fp32_has_no_casts_and_autocast_casts_the_output():
    fwd, bwd = rmsnorm_eager_fwd_bwd("norm", N, 4096, 4, 4)     # FP32 training: .float() is a no-op
    assert len(fwd) == 6 and not any(k.copy for k in fwd)
    assert [k.name for k in bwd if k.copy] == ["norm.pow_bwd_copy"]   # pow(1.0) is copy_
    fa, ba = rmsnorm_eager_fwd_bwd("norm", N, 4096, 2, 4)       # autocast: FP32 product, cast down
    assert len(fa) == 9 and fa[-1].name == "norm.cast" and ba[0].name == "norm.bwd.cast"


def test_rope_and_swiglu_eager_pass_counts_and_bytes_by_hand():
    x = N * 4096
    fwd, bwd = rope_eager_fwd_bwd("rope_q", N, 4096, 2)
    assert len(fwd) == len(bwd) == 3                  # .float(), complex product, type_as
    assert nbytes(fwd) == nbytes(bwd) == 20 * x
    f = 14336
    fwd, bwd = swiglu_eager_fwd_bwd("ffn.act", N, f, 2)
    assert len(fwd) == 2 and len(bwd) == 3            # silu, mul; mul's two gradients, silu_backward
    assert nbytes(fwd) == 10 * N * f and nbytes(bwd) == 18 * N * f


def test_eager_block_adds_the_chains_fused_block_does_not():
    eager, fused = block(fused_elementwise=False), block(fused_elementwise=True)
    # two RMSNorms of 8 / 16 kernels in place of 1 / 2; RoPE on q and k 3 + 3 each way;
    # SwiGLU 2 / 3 in place of 1 / 1
    assert len(names(eager.fwd, ".norm")) == 2 * 8 and len(names(eager.bwd, ".norm")) == 2 * 16
    assert len(names(eager.fwd, ".rope_")) == 6 and len(names(eager.bwd, ".rope_")) == 6
    assert len(names(eager.fwd, "ffn.act")) == 2 and len(names(eager.bwd, "ffn.act")) == 3
    assert not names(fused.fwd + fused.bwd, ".rope_")
    assert names(fused.fwd, "ffn.act") == ["ffn.act"] and names(fused.bwd, "ffn.act") == ["ffn.act_bwd"]
    # the same GEMMs and attention either way
    gemms = lambda lk: [(k.name, k.m, k.n, k.k) for k in lk.fwd + lk.bwd if k.kind != "stream"]
    assert gemms(eager) == gemms(fused)
    # RoPE sits outside the attention core that selective recompute reruns
    assert not names(eager.core_fwd, "rope")


def test_fused_blocks_do_not_change():
    # fused (Megatron / TE / NeMo, torch.compile): rope and fused_norm change nothing, and the
    # Llama-3-8B block moves what it moved before eager_ops (bytes pinned from 079ab7b)
    fused = block(fused_elementwise=True)
    assert fused == block(fused_elementwise=True, rope=False)
    assert fused == block(fused_elementwise=True, fused_norm=True)
    m = load_model("llama3-8b", batch=2, seq=8192, dtype="bf16", amp="o2",
                   overrides={"layers": {"decoder": {"flash_attention": "fa2"}}})
    lk = m.layer("decoder.0").kernels
    assert (len(lk.fwd), len(lk.bwd)) == (9, 15)
    assert nbytes(lk.fwd) == 2_751_725_568 and nbytes(lk.bwd) == 3_691_249_664


def test_fused_norm_and_layernorm_stay_one_kernel_in_an_eager_block():
    lib = block(fused_elementwise=False, fused_norm=True)     # torchtitan's Triton fused_rmsnorm
    assert names(lib.fwd, ".norm") == ["self_attn.norm", "ffn.norm"]
    assert len(names(lib.fwd, ".rope_")) == 6                  # RoPE and SwiGLU still eager
    gelu = {"dim": 1024, "heads": 16, "ffn": 4096}             # BERT: LayerNorm, GeLU, no RoPE
    eager = transformer_block({**gelu, "fused_elementwise": False}, Shape(8, 512, 2, 2), cross=False)
    assert names(eager.fwd, ".norm") == ["self_attn.norm", "ffn.norm"]
    assert names(eager.fwd, "ffn.act") == ["ffn.act"] and not names(eager.fwd, "rope")


def test_no_rope_without_the_key():
    assert not names(block(fused_elementwise=False, rope=False).fwd, ".rope_")


def test_eager_llama_block_costs_more_time_only_where_eager():
    def times(fe):
        m = load_model("llama3-8b", batch=2, seq=8192, dtype="bf16", amp="o2",
                       overrides={"layers": {"decoder": {"fused_elementwise": fe, "flash_attention": "fa2"}}})
        return model_times(m, H100, recompute=False)
    eager, fused = times(False), times(True)
    for name in ("decoder.0", "decoder.31"):
        assert eager[name].fwd_s > fused[name].fwd_s and eager[name].bwd_s > fused[name].bwd_s
    for name in ("token_embedding", "lm_head", "lm_loss"):
        assert eager[name] == fused[name]
    # the extra time is the extra bytes' memory-bound time: more than the bytes at the
    # copy bandwidth alone (launch gaps and the activation kernels' fraction add to it)
    e = eager["decoder.0"].fwd_s + eager["decoder.0"].bwd_s
    f = fused["decoder.0"].fwd_s + fused["decoder.0"].bwd_s
    m = load_model("llama3-8b", batch=2, seq=8192, dtype="bf16", amp="o2",
                   overrides={"layers": {"decoder": {"fused_elementwise": False, "flash_attention": "fa2"}}})
    extra = (nbytes(m.layer("decoder.0").kernels.fwd + m.layer("decoder.0").kernels.bwd)
             - 2_751_725_568 - 3_691_249_664)
    assert e - f > extra / (H100.hbm_bps * H100.hbm_fraction)
