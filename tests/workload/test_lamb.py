"""LAMB as NVIDIA FusedLAMBAMP steps it: passes, bytes per parameter, multi-tensor
launches, and how a run asks for it (zoo default, override, refusals)."""

import math
from dataclasses import replace

import pytest

from embsim.cli import main
from embsim.errors import InputError
from embsim.topology import load_topology
from embsim.workload import load_model
from embsim.workload.compute import model_chunks, optimizer_kernels, optimizer_step_time
from embsim.workload.gpu_compute import for_gpu
from embsim.workload.lamb import CHUNK, MAX_BLOCKS, launches, tensor_chunks
from embsim.workload.memory import memory_per_gpu


def _bert(dtype="fp16", amp="o2", **opt):
    return load_model("bert-large", batch=64, seq=128, dtype=dtype, amp=amp,
                      overrides={"optimizer": opt} if opt else None)


def _per_param(model, elements=1e6, **kw):
    return sum(k.nbytes * k.count for k in optimizer_kernels(elements, model, **kw)) / elements


def test_bert_large_defaults_to_lamb():
    assert _bert().optimizer.name == "lamb"


def test_lamb_bytes_per_parameter_from_the_kernels():
    # FP32/TF32 (no scaler): grad norm 4, param norm 4, stage 1 (g r/w 8, p 4, m v r/w 16),
    # update norm 4, stage 2 (update 4, p r/w 8) = 52 B; fused Adam's 28 B
    assert _per_param(_bert("tf32", None)) == pytest.approx(52)
    assert _per_param(_bert("tf32", None, name="adam")) == pytest.approx(28)
    # O2: scaler's in-place check 4, grad norm 2, master norm 4, stage 1 (g 4, p 4, m v 16),
    # update norm 2, stage 2 (update 2, master r/w 8, 16-bit copy r/w 4) = 50 B
    assert _per_param(_bert()) == pytest.approx(50)
    # autocast: FP32 parameters and gradients, the scaler still checks them: 52 + 8
    assert _per_param(_bert("fp16", "autocast")) == pytest.approx(60)


def test_launches_replay_multi_tensor_apply():
    assert launches((), 4) == 0
    assert launches((1,), 4) == 1
    assert launches((MAX_BLOCKS,), 1) == 1
    assert launches((MAX_BLOCKS + 1,), 1) == 2
    # 36 one-chunk tensors fill a depth-4 launch's tensor table, the 37th opens another
    assert launches((1,) * 36, 4) == 1 and launches((1,) * 37, 4) == 2
    assert launches((1,) * 37, 1) == 1          # depth 1 holds 110
    # a tensor cut by a full block table carries into the next launch
    assert launches((200, 200), 4) == 2
    assert tensor_chunks(3 * CHUNK, 2) == (2, 2)


def test_bert_large_step_launches_by_chunks():
    m = _bert()
    chunks = model_chunks(m)
    # 336 M parameters in 65,536-element chunks: at least chunks / 320 launches a pass
    assert sum(chunks) >= sum(l.params for l in m.layers) / CHUNK
    n = launches(chunks, 4)
    assert math.ceil(sum(chunks) / MAX_BLOCKS) <= n <= math.ceil(sum(chunks) / MAX_BLOCKS) + 5
    # each layer's share adds up to the whole step's launches, stage by stage
    total = 0.0
    for layer in m.layers:
        if layer.params > 0:
            ks = optimizer_kernels(layer.params, m, tensors=layer.kernels.param_tensors,
                                   table=layer.kind == "embedding")
            total += sum(k.count for k in ks if k.name == "lamb.stage1")
    assert total == pytest.approx(n)


def test_lamb_costs_milliseconds_over_adam_on_a100():
    gpu = for_gpu(load_topology("dgx-a100:1x8").node.gpu)
    for dtype, amp in (("tf32", None), ("fp16", "o2")):
        lamb = _bert(dtype, amp)
        adam = replace(lamb, optimizer=replace(lamb.optimizer, name="adam"))

        def step(m):
            return sum(optimizer_step_time(l.params, m, gpu, tensors=l.kernels.param_tensors,
                                           table=l.kind == "embedding")
                       for l in lamb.layers if l.params > 0)
        assert 2e-3 < step(lamb) - step(adam) < 6e-3


def test_lamb_state_and_master_memory():
    m = _bert()
    mem = memory_per_gpu(m, 1)
    assert mem.optimizer_state == 8 * m.params and mem.master_weights == 4 * m.params


def test_override_names_the_optimizer_and_refuses_unknown():
    assert _bert(name="adam").optimizer.name == "adam"
    with pytest.raises(InputError, match="name: must be one of .*got 'lars'"):
        _bert(name="lars")
    # per-tensor LAMB is DLE Transformer-XL's JITLamb loop (compute.PER_TENSOR_KERNELS)
    assert _bert(implementation="per-tensor").optimizer.implementation == "per-tensor"


def test_cli_optimizer_flag(capsys):
    args = ["simulate", "--model", "bert-large", "--topology", "dgx-a100:1x1", "--dtype", "fp16",
            "--batch", "8", "--iterations", "2"]
    assert main(args + ["--optimizer", "adam"]) == 0
    assert main(args + ["--optimizer", "lars"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--optimizer" in err[0] and "lars" in err[0]
