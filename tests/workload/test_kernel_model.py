"""The kernel compute model: each kernel class a pure function of shape and GPU."""

import pytest

from embsim.errors import InputError
from embsim.topology import load_topology
from embsim.workload import load_model
from embsim.workload.compute import model_times
from embsim.workload.gpu_compute import for_gpu
from embsim.workload.kernel_time import kernel_time
from embsim.workload.gpu_props import MECHANISM_EFFICIENCY
from embsim.workload.kernels import COLUMN, LAYER, RNG, STREAM, gemm, stream
from embsim.workload.precision import precision


def gpu(preset):
    return for_gpu(load_topology(preset).node.gpu)


A100, H100, B200, RTX = gpu("dgx-a100"), gpu("dgx-h100"), gpu("dgx-b200"), gpu("pcie-rtx3090")
V100 = gpu("dgx1-v100")
CPU_LIKE = gpu("local-cpu")
FP16, TF32, FP32 = precision("fp16"), precision("tf32"), precision("fp32")


def tflops(g, shape, prec=FP16, batch=1):
    k = gemm("x", *shape, batch=batch)
    return k.flops / kernel_time(k, g, prec, prec.storage_bytes).gpu_s / 1e12


def test_large_gemm_runs_at_the_measured_fraction_of_peak():
    # the preset's measurement: 256.5 TFLOPS FP16 at 16384^3
    assert tflops(A100, (16384, 16384, 16384)) == pytest.approx(256.5, rel=0.01)
    # TF32 at its own fraction: the FP16 cube x the CUTLASS team's TF32/FP16 peaks (0.789)
    assert tflops(A100, (16384, 16384, 16384), TF32) == pytest.approx(156 * 0.789, rel=0.01)
    assert tflops(A100, (8192, 8192, 8192), FP32) <= 19.5


def test_small_dimensions_and_wave_quantisation_cost_efficiency():
    big = tflops(A100, (8192, 4096, 1024))
    lstm_step = tflops(A100, (128, 4096, 1024))       # batch-128 recurrent GEMM
    assert lstm_step < 0.7 * big
    # one more row than fills whole tiles and waves: lower throughput for no less work
    # (cuBLAS-like choice of tile and split-K softens it, so a few per cent)
    assert tflops(A100, (108 * 256 + 1, 128, 4096)) < 0.98 * tflops(A100, (108 * 256, 128, 4096))


def test_gemm_time_is_monotone_in_size():
    times = [kernel_time(gemm("x", m, 1024, 1024), A100, FP16, 2).gpu_s for m in (64, 512, 4096, 32768)]
    assert times == sorted(times)


def test_tiny_gemm_is_bound_by_memory_or_launch_not_flops():
    k = gemm("x", 1, 1024, 1024)
    t = kernel_time(k, A100, FP16, 2)
    assert t.gpu_s >= 1024 * 1024 * 2 / A100.hbm_bps      # at least the weights' read


def test_precision_rates_per_gpu():
    assert A100.rates["tf32"] == 156e12 and A100.rates["fp16"] == 312e12
    assert H100.rates["fp8"] == pytest.approx(2 * H100.rates["bf16"], rel=1e-3)
    # GeForce: FP16 with FP32 accumulate (what AMP uses) at half the FP16-accumulate 142
    assert RTX.rates["fp16"] == 71e12
    with pytest.raises(InputError, match="fp8"):
        A100.gemm_peak(precision("fp8"))
    with pytest.raises(InputError, match="--dtype"):
        precision("fp4")


def test_stream_kernel_at_achievable_bandwidth():
    # an optimizer's parameter pass at the copy bandwidth; a transformer block's activation
    # kernel at the whole-layer fraction (embsim.workload.stream_fit); any other memory-bound
    # kernel at its mechanism's per-kernel fraction (embsim.workload.kernel_check)
    t = kernel_time(stream("x", 1e9, param_pass=True), A100, FP16, 2).gpu_s
    assert t == pytest.approx(1e9 / (2000e9 * 0.84) + A100.kernel_gap_s)
    t = kernel_time(stream("x", 1e9, mechanism=LAYER), A100, FP16, 2).gpu_s
    assert t == pytest.approx(1e9 / (2000e9 * 0.84 * A100.stream_efficiency) + A100.kernel_gap_s)
    for mech in (STREAM, RNG, COLUMN):
        t = kernel_time(stream("x", 1e9, mechanism=mech), A100, FP16, 2).gpu_s
        frac = MECHANISM_EFFICIENCY[mech]
        assert t == pytest.approx(1e9 / (2000e9 * 0.84 * frac) + A100.kernel_gap_s)
    # slowest to fastest: a column reduction, the layer fit, a dropout mask, a plain stream
    assert (MECHANISM_EFFICIENCY[COLUMN] < A100.stream_efficiency < MECHANISM_EFFICIENCY[RNG]
            < MECHANISM_EFFICIENCY[STREAM])
    # a CPU device runs every class at its calibrated rate
    assert CPU_LIKE.memory_fraction(RNG) == 1.0


def test_missing_data_is_named_in_the_label():
    assert "GEMM efficiency per dtype for fp32 (" in A100.label       # FP16/BF16 measured, TF32 derived
    assert "memory bandwidth" not in A100.label
    assert "LSTM step (DeepBench V100 fit" in A100.label        # no A100 recurrent data
    assert "no data for B200" in B200.label and "L2 bandwidth" in B200.label
    assert "memory bandwidth" not in B200.label     # the GB200 read-only figure, see the preset
    assert "spec" in A100.label


def test_lstm_is_sequential_steps():
    t = [sum(x.fwd_s + x.bwd_s for x in model_times(load_model("gnmt", batch=128, seq=s, dtype="fp16"),
                                                     A100).values()) for s in (12, 24, 48)]
    assert t[0] < t[1] < t[2]
    layer = load_model("gnmt", batch=128, seq=24).layer("encoder_1")
    assert any(k.count == 24 and k.ops == 0 for k in layer.kernels.fwd)   # cuDNN per-step kernels


def test_flash_attention_beats_unfused_at_long_sequences():
    from embsim.workload.overrides import apply_overrides
    from embsim.workload import load_spec
    from embsim.workload.build import build_model
    spec = load_spec("bert-large")
    flash = build_model(apply_overrides(spec, {"layers": {"encoder": {"flash_attention": True}}}),
                        8, 2048, dtype="bf16")
    plain = build_model(spec, 8, 2048, dtype="bf16")
    ft, pt = model_times(flash, H100)["encoder.0"], model_times(plain, H100)["encoder.0"]
    assert ft.fwd_s + ft.bwd_s < 0.8 * (pt.fwd_s + pt.bwd_s)


def test_embedding_dense_gradient_grows_with_vocab_sparse_does_not():
    from embsim.workload.overrides import apply_overrides
    from embsim.workload import load_spec
    from embsim.workload.build import build_model
    spec = load_spec("lstm-lm1b")
    table = spec.tables[0].name
    small = build_model(spec, 32, 20)
    big = build_model(apply_overrides(spec, {"tables": {table: {"vocab": 4 * spec.tables[0].vocab}}}), 32, 20)
    name = next(l.name for l in small.layers if l.kind == "embedding")
    ts, tb = model_times(small, A100)[name], model_times(big, A100)[name]
    assert tb.bwd_s > 2 * ts.bwd_s
    assert tb.bwd_sparse_s == pytest.approx(ts.bwd_sparse_s)
    assert ts.bwd_sparse_s < ts.bwd_s


def test_amp_keeps_fp32_master_weights_and_halves_activations():
    fp32, amp = load_model("bert-base", dtype="fp32"), load_model("bert-base", dtype="bf16")
    assert fp32.optimizer.master_bytes_per_param == 0 and amp.optimizer.master_bytes_per_param == 4
    assert amp.optimizer.state_bytes_per_param == fp32.optimizer.state_bytes_per_param == 8
    assert sum(l.activation_bytes for l in amp.layers) < 0.6 * sum(l.activation_bytes for l in fp32.layers)


def test_amp_and_tf32_are_faster_than_fp32_on_a100():
    t = {d: sum(x.fwd_s + x.bwd_s for x in model_times(load_model("bert-large", batch=32, dtype=d), A100).values())
         for d in ("fp32", "tf32", "fp16")}
    assert t["fp16"] < t["tf32"] < t["fp32"]
    assert t["fp32"] / t["tf32"] > 3          # 19.5 vs 156 TFLOPS, less where memory-bound


def test_same_inputs_same_times():
    a = model_times(load_model("transformer-wmt", dtype="fp16"), A100)
    b = model_times(load_model("transformer-wmt", dtype="fp16"), A100)
    assert a == b


def test_recurrent_step_overhead_is_fitted_on_deepbench_only():
    from embsim.workload.recurrent_fit import (RECURRENT_LATENCY_S, RECURRENT_STEP_S,
                                               latency_excess_s, step_excess_s)
    excess = step_excess_s()
    assert len(excess) == 4 and min(excess) > 0          # cuDNN is slower than GEMM + gates
    assert RECURRENT_STEP_S == sorted(excess)[1] / 2 + sorted(excess)[2] / 2
    lat = sorted(latency_excess_s())
    assert len(lat) == 12 and lat[5] / 2 + lat[6] / 2 == RECURRENT_LATENCY_S
    assert 30e-6 < RECURRENT_LATENCY_S < 60e-6 < RECURRENT_STEP_S
    # V100 (the fit's own GPU) keeps the fitted value, in FP16 and FP32 alike
    assert V100.recurrent_step(FP16) == pytest.approx(RECURRENT_STEP_S)
    assert V100.recurrent_step(precision("fp32")) == pytest.approx(RECURRENT_STEP_S)
    step = A100.recurrent_step(FP16)
    layer = load_model("gnmt", batch=128, seq=24, dtype="fp16").layer("encoder_1")
    from embsim.workload.compute import layer_time
    from dataclasses import replace
    with_step = layer_time(layer, load_model("gnmt", batch=128, seq=24, dtype="fp16"), A100)
    without = layer_time(layer, load_model("gnmt", batch=128, seq=24, dtype="fp16"),
                         replace(A100, recurrent_step_s=0.0, recurrent_steps={}))
    assert (with_step.fwd_s + with_step.bwd_s) - (without.fwd_s + without.bwd_s) == \
        pytest.approx(24 * step, rel=1e-6)


def test_recurrent_step_scales_with_the_tensor_rate():
    """The latency part stays, the tensor part shrinks with the dtype's tensor rate:
    A100 FP16 (2.5x V100's rate) pays less than A100 TF32 (1.25x), both less than V100."""
    from embsim.workload.recurrent_fit import RECURRENT_LATENCY_S, RECURRENT_TENSOR_S
    a16, a32 = A100.recurrent_step(FP16), A100.recurrent_step(precision("tf32"))
    assert a16 == pytest.approx(RECURRENT_LATENCY_S + RECURRENT_TENSOR_S * 125 / 312)
    assert a32 == pytest.approx(RECURRENT_LATENCY_S + RECURRENT_TENSOR_S * 125 / 156)
    assert RECURRENT_LATENCY_S < a16 < a32 < V100.recurrent_step(FP16)
    assert B200.recurrent_step(FP16) < A100.recurrent_step(FP16)
    assert "scaled by tensor rate: tf32 114, bf16 80, fp16 80, fp32 80 µs/step used" in A100.label


def test_amp_styles_differ_only_in_16_bit():
    def total(dtype, amp):
        m = load_model("transformer-wmt", batch=16, seq=128, dtype=dtype, amp=amp)
        return sum(t.fwd_s + t.bwd_s for t in model_times(m, A100).values())
    assert total("fp16", "o2") < total("fp16", "autocast")       # FP32 softmax/LN outputs cost
    assert total("tf32", "o2") == total("tf32", "autocast")
    with pytest.raises(InputError, match="--amp"):
        load_model("tiny-lm", dtype="fp16", amp="o3")


MLM_HEAD = ("mlm_transform", "mlm_norm", "mlm_output", "mlm_loss")


def _bert(**layers):
    return load_model("bert-large", batch=32, seq=512, dtype="fp16", amp="o2",
                      overrides={"layers": layers} if layers else None)


def test_token_fraction_runs_the_head_on_the_masked_tokens_only():
    # the zoo default is the masked positions (15 %); token_fraction 1 is a head on every
    # token (Hugging Face style)
    masked = model_times(_bert(), A100)
    full = model_times(_bert(**{n: {"token_fraction": 1} for n in MLM_HEAD}), A100)
    for name in MLM_HEAD:
        ratio = (masked[name].fwd_s + masked[name].bwd_s) / (full[name].fwd_s + full[name].bwd_s)
        assert ratio < 0.3, name            # ~15 % of the work, plus fixed launch costs
    assert masked["encoder.0"] == full["encoder.0"]
    m = _bert(mlm_output={"token_fraction": 1})
    assert m.params == _bert().params       # same weights, fewer rows


def test_zoo_bert_heads_default_to_the_masked_fraction():
    for name in ("bert-base", "bert-large"):
        default = {x.name: x for x in load_model(name, batch=4, seq=128).layers}
        every = {x.name: x for x in load_model(
            name, batch=4, seq=128,
            overrides={"layers": {n: {"token_fraction": 1} for n in MLM_HEAD}}).layers}
        for layer in ("mlm_transform", "mlm_output"):
            ratio = default[layer].fwd_flops / every[layer].fwd_flops
            assert ratio == pytest.approx(77 / 512, rel=1e-3), (name, layer)   # round(512 x 0.15)


def test_token_fraction_is_checked():
    with pytest.raises(InputError, match="token_fraction"):
        _bert(mlm_loss={"token_fraction": 1.5})
    with pytest.raises(InputError, match="token_fraction"):
        _bert(encoder={"token_fraction": 0.5})      # not a key of a transformer block


def test_fused_elementwise_moves_fewer_bytes_same_gemms():
    eager, fused = _bert(encoder={"fused_elementwise": False}), _bert()    # zoo bert: fused
    le, lf = eager.layer("encoder.0").kernels, fused.layer("encoder.0").kernels

    def total(ks, kind, field):
        return sum(getattr(k, field) * k.count for k in ks if k.kind == kind)

    for part in ("fwd", "bwd"):
        assert total(getattr(lf, part), "gemm", "flops") == total(getattr(le, part), "gemm", "flops")
        assert total(getattr(lf, part), "stream", "nbytes") < 0.8 * total(getattr(le, part), "stream", "nbytes")
        assert len(getattr(lf, part)) < len(getattr(le, part))
    te, tf = model_times(eager, A100)["encoder.0"], model_times(fused, A100)["encoder.0"]
    assert tf.fwd_s < te.fwd_s and tf.bwd_s < te.bwd_s


def test_compute_source_names_the_elementwise_style():
    from embsim.workload.compute import elementwise_style
    assert elementwise_style(_bert()) == "fused"
    assert elementwise_style(_bert(encoder={"fused_elementwise": False})) == "eager"
    assert elementwise_style(load_model("deepfm-criteo", batch=4)) is None
    mixed = load_model("transformer-wmt", batch=4, seq=16,
                       overrides={"layers": {"encoder": {"fused_elementwise": True}}})
    assert elementwise_style(mixed) == "fused in encoder, eager in decoder"


def test_causal_flash_attention_skips_the_masked_key_tiles():
    from embsim.workload.costs import Shape
    from embsim.workload.kernels_layers import causal_keys, transformer_block
    assert causal_keys(8192) == 8192 * 65 // 128          # 64 tiles: (64 + 1) / (2 * 64)
    assert causal_keys(128) == 128                         # one tile: nothing to skip
    p = {"dim": 1024, "heads": 16, "ffn": 4096, "flash_attention": True}
    sh = Shape(1, 8192, 2)
    flops = lambda lk: sum(k.flops for k in lk.fwd + lk.bwd if "flash" in k.name)
    full, causal = transformer_block(p, sh, cross=False), transformer_block(p, sh, cross=False, causal=True)
    assert flops(causal) == pytest.approx(flops(full) * 65 / 128, rel=1e-3)
    # unfused attention computes every score before masking: no saving
    q = {**p, "flash_attention": False}
    assert (sum(k.flops for k in transformer_block(q, sh, False, causal=True).fwd)
            == sum(k.flops for k in transformer_block(q, sh, False).fwd))


def test_bias_free_blocks_launch_no_bias_gradients():
    from embsim.workload.costs import Shape
    from embsim.workload.kernels_layers import transformer_block
    p = {"dim": 1024, "heads": 16, "ffn": 4096}
    names = lambda q: {k.name for k in transformer_block(q, Shape(2, 128, 2), False).bwd}
    assert any("bias_grad" in n for n in names(p))
    assert not any("bias_grad" in n for n in names({**p, "bias": False}))


def test_flash_attention_runs_in_flashattention2s_published_range_on_a100():
    # FlashAttention-2 (Dao 2023, abstract): 50-73 % of A100's peak, forward + backward
    from embsim.workload.costs import Shape
    from embsim.workload.kernels_layers import transformer_block
    p = precision("bf16")
    lk = transformer_block({"dim": 2048, "heads": 16, "ffn": 4096, "flash_attention": True},
                           Shape(8, 2048, 2), cross=False)
    ks = [k for k in lk.fwd + lk.bwd if "flash" in k.name]
    seconds = sum(kernel_time(k, A100, p, 2).gpu_s for k in ks)
    assert 0.5 < sum(k.flops for k in ks) / seconds / A100.rates["bf16"] < 0.73


@pytest.mark.parametrize("preset, clock", [("aws-p5", 1980), ("gcp-a3-mega", 1980), ("dgx-b200", 1980),
                                           ("aws-p6-b200", 1980), ("gb200-nvl72", 2110),
                                           ("l40s-roce", 2520), ("pcie-rtx2080ti", 1545)])
def test_presets_carry_their_boost_clock(preset, clock):
    # p2p converts its fitted cycle count with gpu.clock_mhz; without one it assumes 1980
    assert load_topology(f"{preset}:1x1").node.gpu.clock_mhz == clock


def test_sourced_properties_close_their_gaps():
    v100 = for_gpu(load_topology("dgx1-v100:1x1").node.gpu)
    assert v100.hbm_fraction == 0.862 and v100.gaps == ()       # the LSTM fit is V100's own
    b200 = for_gpu(load_topology("dgx-b200:1x1").node.gpu)
    assert b200.rates["fp32"] == 75e12 and not any(g.startswith("fp32") for g in b200.gaps)
    for preset in ("aws-p5", "aws-p6-b200", "gcp-a3-mega", "gb200-nvl72", "l40s-roce"):
        g = for_gpu(load_topology(f"{preset}:1x1").node.gpu)
        assert not any(x.startswith(("per-dtype tensor rates", "fp32", "SM count")) for x in g.gaps)


def test_measured_l2_bandwidth_sets_the_tile_threshold():
    """A GPU with a measured L2 figure (no published B/clk) is put on A100's whitepaper
    basis by A100's whitepaper/measured ratio in the same benchmark; the clock cancels."""
    from embsim.workload.gpu_props import A100_L2_MEASURED_BPS, A100_L2_SPEC_BPS
    l2 = 9800e9 * A100_L2_SPEC_BPS / A100_L2_MEASURED_BPS
    assert H100.tile_side_full["bf16"] == pytest.approx(2 * 989e12 / l2)
    assert H100.tile_side_full["tf32"] == pytest.approx(2 * 494.5e12 / l2 * 2)   # 4-byte operands
    # A100's own whitepaper figure gives the threshold the model was built on
    assert A100.tile_side_full["fp16"] == pytest.approx(2 * 312e12 / A100_L2_SPEC_BPS)
    l40s = gpu("l40s-roce")
    assert not any(g.startswith(("L2 bandwidth", "measured memory")) for g in l40s.gaps)
    assert l40s.hbm_fraction == 0.891 and any(g.startswith("measured GEMM") for g in l40s.gaps)
    assert any(g.startswith("L2 bandwidth") for g in B200.gaps)     # no B200 measurement found


def test_turing_has_no_bf16():
    rtx = gpu("pcie-rtx2080ti")
    assert set(rtx.rates) == {"fp16", "fp32"} and not any("tensor rates" in g for g in rtx.gaps)
    with pytest.raises(InputError, match="bf16"):
        rtx.gemm_peak(precision("bf16"))
