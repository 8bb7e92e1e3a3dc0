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


@pytest.mark.parametrize("text", ["selective", "every:0", "every:x", "every:-1", "half"])
def test_bad_forms_name_the_flag(text):
    with pytest.raises(InputError, match=r"--recompute .*none, full or every:K"):
        Recompute.parse(text)


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
