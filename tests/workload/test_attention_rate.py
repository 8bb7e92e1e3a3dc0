import pytest

from embsim.errors import InputError
from embsim.topology import load_topology
from embsim.workload.attention_rate import (H100_TFLOPS, REF_PEAK_TFLOPS, SEQS, attention_fraction,
                                            default_implementation, describe, h100_tflops)
from embsim.workload.costs import Shape
from embsim.workload.gpu_compute import for_gpu
from embsim.workload.kernel_time import kernel_time
from embsim.workload.kernels import attention
from embsim.workload.kernels_layers import transformer_block
from embsim.workload.precision import precision


def gpu(preset):
    return for_gpu(load_topology(f"{preset}:1x1").node.gpu)


A100, H100, H200, B200 = gpu("dgx-a100"), gpu("dgx-h100"), gpu("dgx-h200"), gpu("dgx-b200")


def test_measured_points_are_returned_exactly():
    for (impl, pas, causal, hd), row in H100_TFLOPS.items():
        for s, v in zip(SEQS, row):
            if pas == "fwd" and not causal:
                assert h100_tflops(impl, False, False, hd, s) == pytest.approx(v)
    assert h100_tflops("cudnn", True, False, 128, 8192) == pytest.approx(518)
    assert h100_tflops("fa3", False, True, 128, 2048) == pytest.approx(521)


def test_between_and_beyond_the_measured_lengths():
    lo, hi = h100_tflops("fa3", False, False, 128, 4096), h100_tflops("fa3", False, False, 128, 8192)
    assert lo < h100_tflops("fa3", False, False, 128, 6000) < hi
    assert h100_tflops("fa3", False, False, 128, 128) == h100_tflops("fa3", False, False, 128, 512)
    # head dim 96 lies between the 64 and 128 figures
    a, b = h100_tflops("cudnn", False, False, 64, 2048), h100_tflops("cudnn", False, False, 128, 2048)
    assert min(a, b) < h100_tflops("cudnn", False, False, 96, 2048) < max(a, b)


def test_causal_backward_is_derived_from_the_forward_ratio():
    nc = h100_tflops("cudnn", True, False, 128, 8192)
    ratio = 529 / 600        # cuDNN forward causal / non-causal at 8k
    assert h100_tflops("cudnn", True, True, 128, 8192) == pytest.approx(nc * ratio)


def test_default_kernel_follows_transformer_engine():
    assert default_implementation(90) == default_implementation(100) == "cudnn"
    assert default_implementation(80) == "fa2"


def test_other_architectures_use_their_native_kernels_fraction():
    # FA2 on A100 at FA3's H100 fraction (FA2 on H100 does not use Hopper's instructions)
    assert attention_fraction("fa2", 80, False, False, 128, 2048) == pytest.approx(625 / REF_PEAK_TFLOPS)
    assert attention_fraction("fa2", 90, False, False, 128, 2048) == pytest.approx(362 / REF_PEAK_TFLOPS)
    assert "no data for B200" in describe("cudnn", 100, "B200", {8192})
    assert "H100 figures" in describe("cudnn", 90, "H100", {8192})
    assert "outside the measured" in describe("cudnn", 90, "H100", {128})


def test_kernel_time_is_flops_over_the_published_rate():
    k = attention("x.flash", 8192, 128, 8192, 16, backward=False, causal=False)
    t = kernel_time(k, H100, precision("bf16"), 2).gpu_s - H100.kernel_gap_s
    assert 4 * 8192 ** 2 * 128 * 16 / t == pytest.approx(600e12, rel=1e-3)
    # H200: the same die and clocks, the same time
    assert kernel_time(k, H200, precision("bf16"), 2).gpu_s == pytest.approx(kernel_time(k, H100, precision("bf16"), 2).gpu_s)


def test_fp8_runs_attention_at_the_16bit_rate():
    k = attention("x.flash_bwd", 4096, 128, 4096, 32, backward=True, causal=True)
    assert kernel_time(k, H100, precision("fp8"), 2).gpu_s == kernel_time(k, H100, precision("bf16"), 2).gpu_s


def test_causal_pass_counts_half_the_square():
    full = attention("f", 8192, 128, 8192, 32, False, False)
    causal = attention("c", 8192, 128, 8192 * 65 // 128, 32, False, True)
    tf = kernel_time(full, H100, precision("bf16"), 2).gpu_s
    tc = kernel_time(causal, H100, precision("bf16"), 2).gpu_s
    assert tc == pytest.approx(tf / 2 * 600 / 529, rel=1e-3)


def test_short_attention_is_never_faster_than_its_operands():
    k = attention("x.flash", 16, 128, 16, 4096, False, False)
    t = kernel_time(k, H100, precision("bf16"), 2).gpu_s - H100.kernel_gap_s
    assert t >= 4096 * (16 * 128 * 2 * 4 + 8 * 16) / (H100.hbm_bps * H100.hbm_fraction) * 0.999


def test_a_named_kernel_reaches_the_layer():
    p = {"dim": 4096, "heads": 32, "ffn": 11008, "flash_attention": "fa2"}
    lk = transformer_block(p, Shape(1, 4096, 2), cross=False, causal=True)
    ks = [k for k in lk.fwd + lk.bwd if k.kind == "attention"]
    assert len(ks) == 2 and all(k.impl == "fa2" and k.causal for k in ks)
    slow = sum(kernel_time(k, H100, precision("bf16"), 2).gpu_s for k in ks)
    p["flash_attention"] = True
    fast = sum(kernel_time(k, H100, precision("bf16"), 2).gpu_s
               for k in transformer_block(p, Shape(1, 4096, 2), False, True).fwd
               + transformer_block(p, Shape(1, 4096, 2), False, True).bwd if k.kind == "attention")
    assert fast < 0.8 * slow        # cuDNN on H100 beats FlashAttention-2 by 1.4-1.7x


def test_an_unknown_kernel_name_is_refused():
    from embsim.workload import load_spec
    from embsim.workload.overrides import apply_overrides
    with pytest.raises(InputError, match="flash_attention"):
        apply_overrides(load_spec("llama3-8b"), {"layers": {"decoder": {"flash_attention": "fa9"}}})
    spec = apply_overrides(load_spec("llama3-8b"), {"layers": {"decoder": {"flash_attention": "fa3"}}})
    assert spec.layers[1].params["flash_attention"] == "fa3"


def test_the_triton_port_runs_at_flashattention_1s_speed():
    """llm-foundry's attn_impl triton: FlashAttention-2's time x FA2_OVER_FA1 on any GPU
    (neither kernel uses Hopper's instructions), named as such in the compute source."""
    from embsim.workload.attention_rate import FA2_OVER_FA1
    for arch in (80, 90):
        for bwd, causal in ((False, False), (True, True)):
            fa2 = attention_fraction("fa2", arch, bwd, causal, 128, 4096)
            assert attention_fraction("triton", arch, bwd, causal, 128, 4096) == pytest.approx(fa2 / FA2_OVER_FA1)
    assert FA2_OVER_FA1 == 2.0
    text = describe("triton", 80, "A100", {2048})
    assert "FlashAttention-1's speed" in text and "no data for A100" in text
    k = attention("x.flash_bwd", 4096, 128, 4096, 16, backward=True, causal=True, impl="triton")
    k2 = attention("x.flash_bwd", 4096, 128, 4096, 16, backward=True, causal=True, impl="fa2")
    t, t2 = (kernel_time(x, A100, precision("bf16"), 2).gpu_s - A100.kernel_gap_s for x in (k, k2))
    assert t == pytest.approx(2 * t2, rel=1e-6)
