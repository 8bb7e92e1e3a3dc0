"""fsdp: per-block all-gathers and reduce-scatters as torch 2.1's FSDP issues them under
Composer (llm-foundry's MPT), the 1/N optimizer step, sharded memory."""

from __future__ import annotations

import pytest

from embsim.engine.build import build_step_plan
from embsim.engine.context import step_context
from embsim.engine.run import SimulationConfig, simulate
from embsim.errors import InputError
from embsim.plan.names import bwd_name, fwd_name
from embsim.schedulers import SCHEDULERS
from embsim.strategies import STRATEGIES
from embsim.strategies.fsdp import ROOT, units
from embsim.topology import load_topology
from embsim.workload import load_model


def plan(sharding="FULL_SHARD", model="mpt-125m", topology="dgx-h100:1x8", batch=4):
    m = load_model(model, batch=batch)
    cfg = SimulationConfig(topology=topology, model=model, strategy="fsdp")
    ctx, _ = step_context(m, load_topology(topology), None, cfg, True)
    return STRATEGIES.get("fsdp").from_options({"sharding": sharding}).plan(ctx), ctx


def run(**kw):
    kw.setdefault("iterations", 3)
    kw.setdefault("efficiency_baseline", False)
    return simulate(SimulationConfig(model="mpt-125m", batch=4, **kw))


def test_every_repeated_block_is_a_unit_and_the_rest_the_root():
    us = units(load_model("mpt-125m", batch=1))
    assert us[0][0] == ROOT and [l.name for l in us[0][1]][:2] == ["token_embedding", "position_embedding"]
    assert [name for name, _ in us[1:]] == [f"decoder.{i}" for i in range(12)]


def test_full_shard_gathers_twice_and_reduce_scatters_once():
    p, ctx = plan()
    m = ctx.model
    by = {}
    for t in p.sync:
        by.setdefault((t.op, t.name.split(":")[0]), []).append(t)
    assert len(by[("all_gather", "fsdp-ag-fwd")]) == 13 and len(by[("all_gather", "fsdp-ag-bwd")]) == 12
    assert len(by[("reduce_scatter", "fsdp-rs")]) == 13
    # DEFAULT mixed precision: 16-bit gathers (o2 parameters), FP32 reduce-scatters
    assert sum(t.nbytes for t in by[("all_gather", "fsdp-ag-fwd")]) == pytest.approx(2 * m.params)
    assert sum(t.nbytes for t in by[("reduce_scatter", "fsdp-rs")]) == pytest.approx(4 * m.params)
    fwd = {t.layer: t for t in by[("all_gather", "fsdp-ag-fwd")]}
    # the rate limiter: block i's gather waits for block i-2's forward
    assert fwd["decoder.5"].ready_after == fwd_name("decoder.3")
    assert fwd["decoder.5"].needed_by == fwd_name("decoder.5")
    bwd = {t.layer: t for t in by[("all_gather", "fsdp-ag-bwd")]}
    assert bwd["decoder.5"].ready_after == bwd_name("decoder.7")
    assert bwd["decoder.5"].needed_by == bwd_name("decoder.5")
    # ... queued behind block 7's reduce-scatter
    names = [t.name for t in p.sync]
    assert names.index("fsdp-rs:decoder.7") < names.index("fsdp-ag-bwd:decoder.5")
    # the backward's first two blocks are gathered as it begins
    assert bwd["decoder.11"].ready_after == bwd["decoder.10"].ready_after == bwd_name(m.layers[-1].name)


def test_shard_grad_op_gathers_once_at_the_step_start():
    p, _ = plan("SHARD_GRAD_OP")
    gathers = [t for t in p.sync if t.op == "all_gather"]
    assert len(gathers) == 13 and len({t.ready_after for t in gathers}) == 1
    assert all(t.name.startswith("fsdp-ag-fwd") for t in gathers)


def test_the_optimizer_steps_one_nth():
    p, ctx = plan(topology="dgx-h100:1x8")
    from embsim.workload.compute import optimizer_kernels
    whole = sum(ctx.layer_update.values())
    # the shard's bytes, with the same kernel launches: a little over an eighth
    assert whole / 8 < sum(p.update_time.values()) < whole / 6
    l = ctx.layer("decoder.3")
    assert p.update_time["decoder.3"] == pytest.approx(ctx.kernel_seconds(optimizer_kernels(
        -(-l.params // 8), ctx.model, tensors=l.kernels.param_tensors)))


def test_memory_is_sharded():
    p, ctx = plan()
    ddp = STRATEGIES.get("allreduce")().plan(ctx)
    assert p.memory.optimizer_state == pytest.approx(ddp.memory.optimizer_state / 8, rel=0.01)
    assert p.memory.total < ddp.memory.total


def test_the_plan_builds_and_simulates():
    p, ctx = plan()
    fifo = SCHEDULERS.get("fifo")()
    sp = build_step_plan(ctx, p, STRATEGIES.get("fsdp")(), fifo)
    assert {c.op for c in sp.comms} == {"all_gather", "reduce_scatter"}
    r = run(topology="dgx-h100:1x8", strategy="fsdp")
    assert set(r.comm_bytes_per_gpu) == {"all_gather", "reduce_scatter"}
    assert r.metrics.step_time >= r.metrics.compute
    # DDP steps the whole optimizer on every GPU: FSDP's step is shorter here
    assert r.metrics.step_time < run(topology="dgx-h100:1x8").metrics.step_time
    # one GPU: plain training, whatever the strategy
    assert run(topology="dgx-h100:1x1", strategy="fsdp").metrics.step_time == pytest.approx(
        run(topology="dgx-h100:1x1").metrics.step_time)


def test_bad_options_are_refused():
    with pytest.raises(InputError, match="sharding"):
        STRATEGIES.get("fsdp").from_options({"sharding": "HYBRID_SHARD"})


@pytest.mark.parametrize("sharding", ["FULL_SHARD", "SHARD_GRAD_OP"])
def test_a_model_without_blocks_is_one_root_unit(sharding):
    """NCF (and DLRM) have no block for the auto-wrap policy; they were refused. FSDP wraps
    the whole model in its root unit, which it does not reshard after the forward: one
    all-gather before the forward, none before the backward, one reduce-scatter after it."""
    p, ctx = plan(sharding, model="ncf-ml20m", batch=64)
    m = ctx.model
    assert [name for name, _ in units(m)] == [ROOT]
    assert [(t.op, t.name) for t in p.sync] == [("all_gather", "fsdp-ag-fwd:root"),
                                               ("reduce_scatter", "fsdp-rs:root")]
    gather, scatter = p.sync
    assert gather.nbytes == pytest.approx(sum(l.params * m.param_bytes(l) for l in m.layers))
    assert gather.needed_by == fwd_name(m.layers[0].name)
    assert scatter.ready_after == bwd_name(m.layers[0].name)
    assert "the whole model is one root unit" in p.notes[0]
    # the tables go dense (torch FSDP takes no sparse gradient), and the output says so
    assert p.notes[1].startswith("fsdp: embedding tables mf_user, mf_item, mlp_user, mlp_item (")
    assert "no sparse gradients" in p.notes[1]
    # the root is gathered whole and its whole gradient lives until the reduce-scatter
    # (probe P: a two-tower model over 46.6 GB was marked fitting at 64 GB)
    full = gather.nbytes
    parts = p.memory.by_component
    assert parts["fsdp gathered parameters"] == pytest.approx(full, abs=1)
    assert parts["fsdp unsharded gradients"] == pytest.approx(scatter.nbytes, abs=1)
    assert p.memory.buffers == pytest.approx(full + scatter.nbytes, abs=2)
    assert p.memory.total > full + scatter.nbytes


def test_a_transformer_block_listed_once_is_still_a_unit(tmp_path):
    # a one-layer transformer (repeat: 1, so its block has no ".0" suffix) was refused as
    # having "no repeated blocks"; the auto-wrap policy wraps it like any other block
    from embsim.workload import ZOO_DIR
    text = (ZOO_DIR / "gpt2.yaml").read_text().replace("repeat: 12,", "repeat: 1,")
    path = tmp_path / "one-block.yaml"
    path.write_text(text.replace("name: gpt2", "name: one-block", 1))
    model = load_model(str(path), seq=128)
    assert [name for name, _ in units(model)] == [ROOT, "decoder"]
    r = simulate(SimulationConfig(topology="dgx-h100:1x2", model=str(path), seq=128, strategy="fsdp",
                                  iterations=2, efficiency_baseline=False))
    assert r.notes[0] == "fsdp: FULL_SHARD, 1 block + root unit, limit_all_gathers"
    assert r.comm_bytes_per_gpu["all_gather"] > 0


def test_accumulation_gathers_every_micro_batch_and_reduce_scatters_once():
    """torch FSDP under no_sync (accumulate_sync last) skips the reduce-scatters of the
    earlier micro-batches, not their parameter gathers: K micro-batches gather K times."""
    one = run(strategy="fsdp", topology="dgx-h100:2x8", accumulate=1).metrics.comm_bytes_per_gpu
    four = run(strategy="fsdp", topology="dgx-h100:2x8", accumulate=4).metrics.comm_bytes_per_gpu
    assert four["all_gather"] == pytest.approx(4 * one["all_gather"], rel=1e-9)
    assert four["reduce_scatter"] == pytest.approx(one["reduce_scatter"], rel=1e-9)
