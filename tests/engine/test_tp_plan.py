"""Tensor parallelism through the engine (engine/tp_plan.py, engine/run.py): the TP
collectives per block, the data-parallel view, refusals, determinism, TP=1 unchanged."""

import json

import pytest
from embsim import cli
from embsim.collectives import CollectiveModel
from embsim.engine.config import SimulationConfig
from embsim.engine.run import simulate, tp_groups
from embsim.errors import InputError
from embsim.sweep.spec import config_hash
from embsim.topology import load_topology

BASE = dict(model="gpt2", topology="dgx-h100:1x8", batch=4, seq=1024, dtype="bf16", iterations=2,
            efficiency_baseline=False)
ACT = 4 * 1024 * 768 * 2          # batch x seq x hidden, bf16


def block_comms(result, block="decoder.3"):
    return [(c.name.split(":")[1], c.op, c.nbytes) for c in result.run.comm
            if c.iteration == 1 and c.name.startswith("tp:") and c.name.split(":")[2] == block]


def test_sequence_parallel_block_collectives_and_bytes():
    r = simulate(SimulationConfig(**BASE, tensor_parallel=2))
    comms = block_comms(r)
    fwd = [op for where, op, _ in comms if where == "fwd"]
    bwd = [op for where, op, _ in comms if where.startswith("bwd")]
    assert sorted(fwd) == ["all_gather"] * 2 + ["reduce_scatter"] * 2
    assert sorted(bwd) == ["all_gather"] * 4 + ["reduce_scatter"] * 2
    assert {n for _, _, n in comms} == {ACT}
    assert "tensor parallel 2 (sequence parallel)" in r.compute_source
    assert r.workload["tensor_parallel"] == 2 and r.workload["sequence_parallel"] is True


def test_without_sequence_parallelism_two_all_reduces_each_way():
    r = simulate(SimulationConfig(**BASE, tensor_parallel=4, sequence_parallel=False))
    comms = block_comms(r)
    assert [(w, op) for w, op, _ in comms] == [("fwd", "all_reduce")] * 2 + [("bwd-overlap", "all_reduce")] * 2
    assert "tensor parallel 4: 2 all-reduces forward and 2 all-reduces backward" in r.compute_source
    # the cross-entropy's two small FP32 all-reduces
    loss = [c.nbytes for c in r.run.comm if c.iteration == 1 and c.name.startswith("tp:fwd:lm_loss")]
    assert loss == [4 * 4 * 1024, 2 * 4 * 4 * 1024]


def test_tp_collectives_block_the_step():
    two = dict(BASE, topology="dgx-h100:1x2")
    plain = simulate(SimulationConfig(**two))
    tp = simulate(SimulationConfig(**two, tensor_parallel=2))
    # one replica of 2 GPUs: each computes about half, but waits for its TP collectives
    assert tp.metrics.compute < 0.7 * plain.metrics.compute
    assert tp.metrics.exposed_comm > 0.0 and tp.metrics.comm_time["tp all_gather"] > 0
    assert tp.samples_per_s == pytest.approx(BASE["batch"] / tp.metrics.step_time)


def test_data_parallel_sync_bytes_drop_by_k():
    cfg = dict(BASE, topology="dgx-h100:2x8", model="llama3-8b", batch=1, seq=2048)
    one = simulate(SimulationConfig(**cfg))
    two = simulate(SimulationConfig(**cfg, tensor_parallel=2))

    def dp_bytes(r):
        return sum(c.nbytes for c in r.run.comm if c.iteration == 1 and c.channel != "tp")
    assert dp_bytes(two) == pytest.approx(dp_bytes(one) / 2, rel=0.001)
    # model replicas: 16 / 2 = 8, each one micro-batch
    assert two.samples_per_s == pytest.approx(8 * 1 / two.metrics.step_time)


def test_fsdp_composes():
    r = simulate(SimulationConfig(**dict(BASE, strategy="fsdp"), tensor_parallel=2))
    assert r.metrics.step_time > 0 and "tensor parallel 2" in r.compute_source


def test_groups_follow_megatron_order():
    g = tp_groups(16, 4)
    assert g["tp"][:2] == ((0, 1, 2, 3), (4, 5, 6, 7)) and len(g["tp"]) == 4
    assert g[""] == ((0, 4, 8, 12), (1, 5, 9, 13), (2, 6, 10, 14), (3, 7, 11, 15))


def test_groups_plan_adds_the_groups_demands():
    model = CollectiveModel(load_topology("dgx-h100:2x8"))
    one = model.plan("all_reduce", 1 << 26, (0, 8))
    both = model.plan_groups("all_reduce", 1 << 26, ((0, 8), (1, 9)))
    assert both.time == one.time and both.demand.bytes.sum() == pytest.approx(2 * one.demand.bytes.sum())


@pytest.mark.parametrize("kw, message", [
    (dict(tensor_parallel=3), "--tensor-parallel 3: does not divide the 8 GPUs per node"),
    (dict(tensor_parallel=5, topology="dgx-h100:1x5"), "does not divide model gpt2's heads 12"),
    (dict(tensor_parallel=2, strategy="ps"), "composes with --strategy allreduce, fsdp or distopt, not ps"),
])
def test_refusals(kw, message):
    with pytest.raises(InputError, match=message):
        simulate(SimulationConfig(**{**BASE, **kw}))
    with pytest.raises(InputError, match="--sequence-parallel needs --tensor-parallel > 1"):
        SimulationConfig(**BASE, sequence_parallel=True)


def test_cli_flags_and_one_line_refusal(capsys):
    assert cli.main(["simulate", "--model", "gpt2", "--topology", "dgx-h100:1x8", "--tensor-parallel", "3",
                     "--iterations", "2"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "does not divide the 8 GPUs per node" in err
    assert cli.main(["simulate", "--model", "gpt2", "--topology", "dgx-h100:1x8", "--tensor-parallel", "2",
                     "--no-sequence-parallel", "--iterations", "2", "--json"]) == 0
    assert "tensor parallel 2: 2 all-reduces" in json.loads(capsys.readouterr().out)["compute_source"]
    assert cli.main(["simulate", "--model", "gpt2", "--topology", "dgx-h100:1x8", "--tensor-parallel", "2",
                     "--iterations", "2"]) == 0
    assert "scaling efficiency" in capsys.readouterr().out     # 4 replicas vs one TP group
    assert cli.main(["compare", "--model", "gpt2", "--topology", "dgx-h100:1x8", "--tensor-parallel", "2",
                     "--strategies", "allreduce,fsdp", "--iterations", "2", "--json"]) == 0
    assert "tensor parallel 2 (sequence parallel)" in capsys.readouterr().out


def test_deterministic_and_tp1_is_today():
    a = simulate(SimulationConfig(**BASE, tensor_parallel=2))
    b = simulate(SimulationConfig(**BASE, tensor_parallel=2))
    assert a.metrics == b.metrics and a.samples_per_s == b.samples_per_s
    plain, one = simulate(SimulationConfig(**BASE)), simulate(SimulationConfig(**BASE, tensor_parallel=1))
    assert plain.metrics == one.metrics and "tensor parallel" not in plain.compute_source
    assert "tensor_parallel" not in plain.workload
    # sweep points that do not use it keep the hashes they had before it existed
    assert config_hash({"model": "gpt2", "topology": "dgx-h100:1x8"}) == "3ea54af3eb2711f5"
    assert config_hash({}) == "6a6bc239fccbb264"
    assert config_hash({"tensor_parallel": 2}) != config_hash({})


def test_a_traces_whole_layer_times_are_not_used_for_a_tp_rank():
    base = dict(model="bert-base", topology="local-cpu", trace="traces/cpu-gloo-bert-base.yaml",
                iterations=2, efficiency_baseline=False)
    plain = simulate(SimulationConfig(**base))
    tp = simulate(SimulationConfig(**base, tensor_parallel=2))
    assert plain.compute_source.startswith("measured: traces/cpu-gloo-bert-base.yaml")
    assert "the trace's layer times not used" in tp.compute_source


def test_grad_compress_with_tensor_parallel_accumulation_compresses_the_last_micro_batch():
    # the micro-batches before the last (simulated apart under TP) sync no gradient: they
    # were checked for a bucket to compress and refused "allreduce with fifo", the one case
    # --grad-compress is modelled for
    base = dict(topology="dgx-h100:1x8", model="gpt2", tensor_parallel=2, accumulate=2,
                iterations=2, efficiency_baseline=False)
    plain = simulate(SimulationConfig(**base))
    packed = simulate(SimulationConfig(**base, grad_compress="bf16"))
    assert packed.comm_bytes_per_gpu["all_reduce"] == pytest.approx(plain.comm_bytes_per_gpu["all_reduce"] / 2)
    assert packed.comm_bytes_per_gpu["tp all_gather"] == plain.comm_bytes_per_gpu["tp all_gather"]
