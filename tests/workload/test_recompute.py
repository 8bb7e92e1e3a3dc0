"""Activation recomputation (workload/recompute.py): which blocks, what it costs, what it saves."""

import pytest

from embsim.engine.config import SimulationConfig
from embsim.engine.run import simulate
from embsim.errors import InputError
from embsim.workload import load_model
from embsim.workload.compute import model_times
from embsim.workload.gpu_compute import for_gpu
from embsim.workload.memory import memory_per_gpu
from embsim.workload.recompute import Recompute
from embsim.topology import load_topology


@pytest.mark.parametrize("text, every", [(None, 0), ("none", 0), ("full", 1), ("FULL", 1),
                                         ("every:1", 1), ("every:2", 2), ("every:4", 4)])
def test_forms(text, every):
    assert Recompute.parse(text).every == every


@pytest.mark.parametrize("text", ["op", "every:0", "every:x", "every:-1", "half", "selective:2"])
def test_bad_forms_name_the_flag(text):
    with pytest.raises(InputError, match=r"--recompute .*none, full, every:K .* or selective"):
        Recompute.parse(text)


def test_selective_is_its_own_form():
    rc = Recompute.parse("Selective")
    assert rc.selective and rc.every == 0 and rc.on and str(rc) == "selective"
    assert not Recompute.parse("full").selective


def test_every_k_takes_the_kth_blocks_as_torchtitan_counts_them():
    m = load_model("llama3-8b", batch=1, seq=512, recompute="every:2")
    blocks = [l.name for l in m.layers if l.kind == "transformer_decoder"]
    assert m.recomputed == tuple(blocks[1::2]) and len(m.recomputed) == 16
    assert load_model("llama3-8b", batch=1, seq=512, recompute="full").recomputed == tuple(blocks)
    assert load_model("llama3-8b", batch=1, seq=512).recomputed == ()


def test_a_checkpointed_block_runs_its_forward_again_and_nothing_else_changes():
    gpu = for_gpu(load_topology("dgx-h100:1x1").node.gpu)
    plain = model_times(load_model("gpt2", batch=4, seq=1024, dtype="bf16"), gpu)
    full = model_times(load_model("gpt2", batch=4, seq=1024, dtype="bf16", recompute="full"), gpu)
    for name, t in plain.items():
        assert full[name].fwd_s == t.fwd_s
        want = t.bwd_s + t.fwd_s if name.startswith("decoder.") else t.bwd_s
        assert full[name].bwd_s == pytest.approx(want, rel=1e-12)


def test_memory_keeps_inputs_and_one_live_block():
    plain = load_model("llama3-8b", batch=1, seq=4096, dtype="bf16")
    full = load_model("llama3-8b", batch=1, seq=4096, dtype="bf16", recompute="full")
    blocks = [l for l in plain.layers if l.kind == "transformer_decoder"]
    others = sum(l.activation_bytes for l in plain.layers if l.kind != "transformer_decoder")
    want = others + sum(l.input_bytes for l in blocks) + max(l.activation_bytes for l in blocks)
    assert memory_per_gpu(full).activations == want < memory_per_gpu(plain).activations
    assert blocks[0].input_bytes == 1 * 4096 * 4096 * 2


def test_a_model_without_blocks_is_refused():
    with pytest.raises(InputError, match="lstm-lm1b has no transformer blocks"):
        load_model("lstm-lm1b", recompute="full")


def test_simulated_step_is_slower_and_says_why():
    base = dict(model="gpt2", topology="dgx-h100:1x8", batch=8, seq=1024, dtype="bf16", iterations=2)
    plain, full = simulate(SimulationConfig(**base)), simulate(SimulationConfig(**base, recompute="full"))
    assert full.metrics.step_time > plain.metrics.step_time
    assert "activation recompute full: 12 of 12 transformer blocks" in full.compute_source
    assert "recompute" not in plain.compute_source


def test_measured_trace_adds_the_measured_forward_once():
    base = dict(model="bert-base", topology="local-cpu", trace="traces/cpu-gloo-bert-base.yaml",
                iterations=2, efficiency_baseline=False)
    plain, full = simulate(SimulationConfig(**base)), simulate(SimulationConfig(**base, recompute="full"))
    grow = full.metrics.step_time - plain.metrics.step_time
    # the encoder blocks' forward once more (~a quarter of this step; twice would be ~half)
    assert 0.1 * plain.metrics.step_time < grow < 0.4 * plain.metrics.step_time


def test_selective_recomputes_each_blocks_attention_core_and_nothing_else():
    """Megatron's selective granularity: every block's backward gains its attention core's
    forward (scores GEMM, softmax, context GEMM), which is less than the whole forward."""
    gpu = for_gpu(load_topology("dgx-a100:1x1").node.gpu)
    plain = model_times(load_model("bert-large", batch=8, seq=512, dtype="fp16"), gpu)
    sel = load_model("bert-large", batch=8, seq=512, dtype="fp16", recompute="selective")
    times = model_times(sel, gpu)
    blocks = [l for l in sel.layers if l.kind == "transformer_encoder"]
    assert sel.core_recomputed == tuple(l.name for l in blocks) and sel.recomputed == ()
    assert [k.name for k in blocks[0].kernels.core_fwd] == [
        "self_attn.scores", "self_attn.softmax_fused", "self_attn.context"]
    for name, t in plain.items():
        assert times[name].fwd_s == t.fwd_s
        if name in sel.core_recomputed:
            assert 0 < times[name].bwd_s - t.bwd_s == pytest.approx(t.core_fwd_s, rel=1e-12)
            assert t.core_fwd_s < 0.5 * t.fwd_s
        else:
            assert times[name].bwd_s == t.bwd_s


def test_selective_memory_drops_the_scores_as_korthikanti_counts_them():
    """Korthikanti et al. 2022 (sec. 4.1, 5): a block saves s*b*h*(34 + 5*a*s/h) bytes at
    16 bits; selective recomputation keeps the 34*s*b*h and drops the 5*a*s^2*b."""
    b, s, h, a = 8, 512, 1024, 16
    plain = load_model("bert-large", batch=b, seq=s, dtype="fp16")
    sel = load_model("bert-large", batch=b, seq=s, dtype="fp16", recompute="selective")
    blk = next(l for l in sel.layers if l.kind == "transformer_encoder")
    assert blk.activation_bytes == s * b * h * (34 + 5 * a * s // h)
    assert blk.core_saved == 5 * a * s * s * b
    n = sum(1 for l in sel.layers if l.kind == "transformer_encoder")
    drop = memory_per_gpu(plain).activations - memory_per_gpu(sel).activations
    assert drop == (n - 1) * blk.core_saved         # one block's scores live while it recomputes


def test_selective_with_flash_attention_saves_nothing_and_still_reruns_the_kernel():
    gpu = for_gpu(load_topology("dgx-h100:1x1").node.gpu)
    plain = load_model("gpt2", batch=4, seq=1024, dtype="bf16")
    sel = load_model("gpt2", batch=4, seq=1024, dtype="bf16", recompute="selective")
    assert memory_per_gpu(sel).activations == memory_per_gpu(plain).activations
    blk = next(l for l in sel.layers if l.kind == "transformer_decoder")
    assert [k.name for k in blk.kernels.core_fwd] == ["self_attn.flash"]
    assert model_times(sel, gpu)[blk.name].bwd_s > model_times(plain, gpu)[blk.name].bwd_s


def test_selective_is_said_and_measured_trace_adds_the_cores_share():
    base = dict(model="bert-base", topology="local-cpu", trace="traces/cpu-gloo-bert-base.yaml",
                iterations=2, efficiency_baseline=False)
    plain = simulate(SimulationConfig(**base))
    sel = simulate(SimulationConfig(**base, recompute="selective"))
    full = simulate(SimulationConfig(**base, recompute="full"))
    assert plain.metrics.step_time < sel.metrics.step_time < full.metrics.step_time
    assert "activation recompute selective: the attention core of 12 transformer" in sel.compute_source


def test_selective_label_says_when_it_frees_nothing():
    flash = load_model("gpt2", batch=4, seq=1024, dtype="bf16", recompute="selective")
    eager = load_model("bert-large", batch=8, seq=512, dtype="fp16", recompute="selective")
    assert "frees no memory here" in flash.recompute.label(flash.layers)
    assert "frees no memory" not in eager.recompute.label(eager.layers)
