"""Dense parameters follow the mixed-precision style (precision.param_bytes): FP32
parameters and gradients with no master copy under autocast, plus one weight cast per
weight tensor each forward (and its backward); 16-bit with FP32 masters under o2."""

import pytest

from embsim.engine.run import SimulationConfig, simulate
from embsim.errors import InputError
from embsim.workload import load_model
from embsim.workload.memory import memory_per_gpu
from embsim.workload.precision import param_bytes, weight_cast_bytes


def test_param_bytes_per_style():
    assert param_bytes(2, "autocast") == 4 and param_bytes(2, "o2") == 2
    assert param_bytes(4, "autocast") == param_bytes(4, "o2") == 4
    assert weight_cast_bytes(2, "autocast") == 6
    assert weight_cast_bytes(2, "o2") == weight_cast_bytes(4, "autocast") == 0
    with pytest.raises(InputError, match="--amp"):
        param_bytes(2, "o3")


def _tiny(amp, dtype="fp16"):
    return load_model("tiny-lm", dtype=dtype, amp=amp)


def test_dense_memory_autocast_vs_o2():
    auto, o2 = _tiny("autocast"), _tiny("o2")
    dense = auto.dense_params
    a, b = memory_per_gpu(auto), memory_per_gpu(o2)
    assert auto.param_bytes(auto.layers[-1]) == 4 and o2.param_bytes(o2.layers[-1]) == 2
    assert a.master_weights == 0 and b.master_weights == 4 * o2.params
    assert a.params == 4 * auto.params and b.params == 2 * o2.params
    assert a.grads - b.grads == 2 * auto.params
    # plain SGD (no state): FP32 param + grad against 16-bit param + grad + FP32 master
    assert auto.optimizer.state_bytes_per_param == 0
    assert a.by_component["dense"] == dense * (4 + 4)
    assert b.by_component["dense"] == dense * (2 + 2 + 4)


def test_dense_all_reduce_payload_autocast_vs_o2():
    def grads(amp):
        r = simulate(SimulationConfig(topology="dgx-a100:1x8", model="tiny-lm", dtype="fp16", amp=amp,
                                      iterations=2, efficiency_baseline=False))
        return {c.name: c.nbytes for c in r.run.comm if c.iteration == 1}
    auto, o2 = grads("autocast"), grads("o2")
    params = _tiny("autocast").params
    assert sum(o2.values()) == pytest.approx(2 * params)
    assert sum(auto.values()) == pytest.approx(4 * params)


def test_fp32_gradients_is_redundant_under_autocast_and_kept_for_o2():
    from dataclasses import replace
    for amp, plain, forced in [("autocast", 4, 4), ("o2", 2, 4)]:
        m = _tiny(amp)
        f = replace(m, optimizer=replace(m.optimizer, fp32_gradients=True))
        lin = m.layers[-2]
        assert m.grad_elem_bytes(lin) == plain and f.grad_elem_bytes(lin) == forced


def test_weight_casts_once_per_tensor_each_forward_under_autocast_only():
    auto, o2, fp32 = _tiny("autocast"), _tiny("o2"), _tiny("autocast", "fp32")
    for layer in auto.layers:
        fwd = {k.name: k for k in layer.kernels.fwd}
        bwd = {k.name: k for k in layer.kernels.bwd}
        # lookups are not autocast; a tied projection's weight is the table (its own cast)
        if layer.kind in ("embedding", "output_projection") or layer.params == 0:
            assert "amp.weight_cast" not in fwd
            continue
        cast, back = fwd["amp.weight_cast"], bwd["amp.weight_grad_cast"]
        assert cast.copy and cast.count == layer.kernels.param_tensors
        assert cast.nbytes * cast.count == pytest.approx(layer.params * (4 + 2))
        assert back.nbytes == cast.nbytes and back.count == cast.count
    for m in (o2, fp32):
        assert not [k for layer in m.layers for k in layer.kernels.fwd + layer.kernels.bwd
                    if k.name.startswith("amp.weight")]


def test_megatron_style_is_a_16_bit_model_without_casts():
    # Megatron-Core's Float16Module: 16-bit parameters and norm outputs as under o2, FP32
    # masters in the optimizer, no autocast weight casts
    assert param_bytes(2, "megatron") == 2 and weight_cast_bytes(2, "megatron") == 0
    meg, o2 = _tiny("megatron"), _tiny("o2")
    assert memory_per_gpu(meg).master_weights == memory_per_gpu(o2).master_weights == 4 * meg.params
    assert not [k for layer in meg.layers for k in layer.kernels.fwd + layer.kernels.bwd
                if k.name.startswith("amp.weight")]
    assert [k.nbytes for layer in meg.layers for k in layer.kernels.fwd] == \
        [k.nbytes for layer in o2.layers for k in layer.kernels.fwd]
