"""Transformer Engine's FP8 quantize kernels around a transformer block's FP8 GEMMs."""

import pytest

from embsim.errors import InputError
from embsim.topology import load_topology
from embsim.workload.costs import Shape
from embsim.workload.fp8_quant import quantize
from embsim.workload.gpu_compute import for_gpu
from embsim.workload.kernel_time import fp8_tn_only, kernel_time, kernels_time
from embsim.workload.kernels_layers import transformer_block
from embsim.workload.precision import precision

H100 = for_gpu(load_topology("dgx-h100:1x1").node.gpu)
B200 = for_gpu(load_topology("dgx-b200:1x1").node.gpu)
FP8 = precision("fp8")
LLAMA3_8B = {"dim": 4096, "heads": 32, "ffn": 14336, "kv_heads": 8, "ffn_kind": "swiglu",
             "bias": False, "norm": "rmsnorm", "flash_attention": True, "dropout": False,
             "fused_elementwise": True}


def fp8_kernels(p, sh):
    lk = transformer_block(p, sh, cross=False, causal=True)
    return [k for k in lk.fwd + lk.bwd if k.name.startswith("fp8.")]


def moved(kernels, tn_only):
    return sum(k.nbytes + (k.transpose_bytes if tn_only else 0) for k in kernels)


def test_llama3_8b_layer_current_scaling_bytes_by_hand():
    n, h, f = 8192, 4096, 14336            # one 8192-token micro-batch (Megatron-Bridge H100)
    qkv, fc1 = 4096 + 2 * 1024, 2 * f      # QKV output (8 KV heads of 128), gated FC1 output
    ks = fp8_kernels(LLAMA3_8B, Shape(1, n, 2, 2, fp8=True))
    # per tensor of E BF16 elements: amax reads 2E, cast reads 2E and writes E (+ E transpose
    # on Hopper); a norm-fed input (QKV, FC1) computes its amax in the norm kernel
    hopper = n * (4 * h + 6 * h + 4 * h + 6 * f          # forward: qkv_in, out_in, fc1_in, fc2_in
                  + 6 * qkv + 6 * h + 6 * fc1 + 6 * h)   # backward: the four output gradients
    scales = 8 * 8                                        # eight scale kernels, 8 bytes each
    assert moved(ks, tn_only=True) == hopper + scales == 3_288_334_400
    transposes = n * (h + h + h + f + qkv + h + fc1 + h)
    assert moved(ks, tn_only=False) == hopper + scales - transposes
    assert sum(1 for k in ks if k.name.endswith(".amax")) == 6


def test_quantize_only_under_fp8():
    assert fp8_kernels(LLAMA3_8B, Shape(1, 8192, 2, 2)) == []


def test_delayed_scaling_fuses_amax_into_the_cast():
    n, h = 8192, 4096
    ks = quantize("x", n * h, 2, "delayed")
    assert [k.name for k in ks] == ["x.cast_transpose"]
    assert ks[0].nbytes == 3 * n * h and ks[0].transpose_bytes == n * h
    # the norm wrote FP8 itself: only the weight gradient's transpose, and only on Hopper
    (t,) = quantize("y", n * h, 2, "delayed", norm_fed=True)
    assert t.nbytes == 0 and t.transpose_bytes == 2 * n * h
    assert kernel_time(t, B200, FP8, 2).gpu_s == 0.0 and kernel_time(t, B200, FP8, 2).host_s == 0.0
    assert kernel_time(t, H100, FP8, 2).gpu_s > 0.0
    with pytest.raises(InputError, match="fp8_recipe"):
        quantize("x", 1, 2, "hybrid")


def test_transpose_only_before_blackwell():
    assert fp8_tn_only(H100) and not fp8_tn_only(B200)
    sh = Shape(2, 8192, 2, 2, fp8=True)
    ks = fp8_kernels(LLAMA3_8B, sh)
    bw = B200.hbm_bps * B200.hbm_fraction
    # copies at the full streaming bandwidth, plus the per-kernel gap
    expect = moved(ks, tn_only=False) / bw + len(ks) * B200.kernel_gap_s
    assert kernels_time(ks, B200, FP8, 2) == pytest.approx(expect, rel=1e-9)
