"""distopt: Megatron-Core's distributed optimizer — bucketed reduce-scatters, the 1/N
optimizer step, parameter all-gathers one bucket ahead in the next forward, and only the
optimizer state and master weights sharded."""

from __future__ import annotations

import pytest

from embsim.engine.context import step_context
from embsim.engine.run import SimulationConfig, simulate
from embsim.errors import InputError
from embsim.plan.names import bwd_name, fwd_name, update_name
from embsim.strategies import STRATEGIES
from embsim.strategies.distopt import buckets
from embsim.topology import load_topology
from embsim.workload import load_model


def plan(model="gpt3-5b", topology="dgx-h100:2x8", options=None, strategy="distopt", **kw):
    m = load_model(model, batch=1, **kw)
    cfg = SimulationConfig(topology=topology, model=model, strategy=strategy)
    ctx, _ = step_context(m, load_topology(topology), None, cfg, True)
    return STRATEGIES.get(strategy).from_options(options or {}).plan(ctx), ctx


def test_buckets_fill_in_backward_order_to_megatrons_default_size():
    p, ctx = plan()
    m, n = ctx.model, ctx.n_gpus
    size = max(40_000_000, 1_000_000 * n)
    bs = buckets(m, n, size)
    layers = [l for l in m.layers if l.params > 0]
    # every parameterised layer once, the first bucket holding the last layers
    assert [l.name for b in reversed(bs) for l in b] == [l.name for l in layers]
    assert bs[0][-1].name == layers[-1].name
    # each bucket but the last formed closes at the layer that crosses the size
    for b in bs[:-1]:
        assert sum(l.params for l in b) >= size > sum(l.params for l in b[1:])
    assert buckets(m, n, None) == [layers]


def test_reduce_scatters_carry_every_gradient_and_gathers_every_parameter():
    p, ctx = plan()
    m = ctx.model
    rs = [t for t in p.sync if t.op == "reduce_scatter"]
    ag = [t for t in p.sync if t.op == "all_gather"]
    assert len(rs) == len(ag) >= 2
    grads = sum(l.params * m.grad_elem_bytes(l) for l in m.layers if l.params > 0)
    params = sum(l.params * m.param_bytes(l) for l in m.layers if l.params > 0)
    assert sum(t.nbytes for t in rs) == pytest.approx(grads)
    assert sum(t.nbytes for t in ag) == pytest.approx(params)
    # a bucket's reduce-scatter waits for the backward of its first layer (the last gradient)
    for t in rs:
        assert t.ready_after.role.name == "BWD" and t.needed_by is None
    # the first two gathers go after the optimizer step; later ones when the forward
    # reaches the bucket before; each is needed by its bucket's first forward
    step_end = update_name([l.name for l in m.layers if l.params > 0][-1])
    assert ag[0].ready_after == step_end and ag[1].ready_after == step_end
    assert ag[0].needed_by == fwd_name(m.layers[0].name)
    names = [l.name for l in m.layers]
    for prev, t in zip(ag[1:], ag[2:]):
        assert t.ready_after == fwd_name(names[names.index(prev.layer) - 1])
        assert t.needed_by == fwd_name(t.layer)


def test_without_overlap_one_bucket_and_every_gather_blocks_the_forward():
    p, ctx = plan(options={"overlap_grad_reduce": False, "overlap_param_gather": False})
    first = fwd_name(ctx.model.layers[0].name)
    assert [t.op for t in p.sync] == ["reduce_scatter", "all_gather"]
    assert p.sync[1].needed_by == first
    assert p.sync[0].ready_after == bwd_name(next(l.name for l in ctx.model.layers if l.params > 0))


@pytest.mark.parametrize("typed, on", [("false", False), ("off", False), ("0", False),
                                       ("true", True), ("on", True)])
def test_overlap_switches_take_the_words_the_command_line_gives(typed, on):
    """--option values arrive as text: true/false, on/off and 1/0 all switch overlap."""
    p, _ = plan(options={"overlap_grad_reduce": typed, "overlap_param_gather": typed})
    assert (len(p.sync) == 2) is (not on)
    with pytest.raises(InputError, match="overlap_grad_reduce='maybe'"):
        plan(options={"overlap_grad_reduce": "maybe"})


def test_optimizer_state_and_master_weights_alone_are_sharded():
    d, ctx = plan()
    a, _ = plan(strategy="allreduce")
    n = ctx.n_gpus
    assert d.memory.params == a.memory.params and d.memory.grads == a.memory.grads
    assert d.memory.optimizer_state == pytest.approx(a.memory.optimizer_state / n, rel=1e-6)
    assert d.memory.master_weights == pytest.approx(a.memory.master_weights / n, rel=1e-6)
    assert d.memory.total < a.memory.total
    # the step runs on 1/N of every parameter
    assert sum(d.update_time.values()) < sum(a.update_time.values()) / (n / 2)


def test_options_are_checked():
    with pytest.raises(InputError, match="bucket_elements"):
        STRATEGIES.get("distopt").from_options({"bucket_elements": -1})
    with pytest.raises(InputError, match="overlap_param_gather"):
        STRATEGIES.get("distopt").from_options({"overlap_param_gather": "sometimes"})


def run(**kw):
    kw.setdefault("iterations", 3)
    kw.setdefault("efficiency_baseline", False)
    return simulate(SimulationConfig(model="gpt3-5b", batch=1, seq=1024, topology="dgx-h100:2x8", **kw))


def _bytes(r, op):
    return r.metrics.comm_bytes_per_gpu[op]


def test_gathers_once_per_step_with_tensor_parallel_accumulation():
    """With --tensor-parallel and --accumulate the earlier micro-batches are simulated
    apart: the distributed optimizer's gathers must not run in them again."""
    one = run(strategy="distopt", tensor_parallel=2, accumulate=1)
    four = run(strategy="distopt", tensor_parallel=2, accumulate=4)
    assert _bytes(four, "all_gather") == pytest.approx(_bytes(one, "all_gather"), rel=1e-9)


def test_overlapped_gathers_hide_behind_the_forward():
    hidden = run(strategy="distopt")
    blocking = run(strategy="distopt", strategy_options={"overlap_param_gather": False})
    assert hidden.metrics.step_time < blocking.metrics.step_time
    assert hidden.metrics.step_time == run(strategy="distopt").metrics.step_time     # determinism


def test_priority_scheduler_is_refused():
    with pytest.raises(InputError, match="fifo"):
        run(strategy="distopt", scheduler="priority")


def test_an_efficiency_above_one_says_why():
    """The 1/N optimizer step can make a replica among many faster than one alone: the
    output says so rather than print an unexplained efficiency above 100 %."""
    r = simulate(SimulationConfig(model="gpt3-20b", topology="dgx-h100:8x8", strategy="distopt",
                                  tensor_parallel=2, dtype="fp8", amp="megatron", batch=2, seq=2048,
                                  accumulate=4, iterations=3))
    assert r.scaling_efficiency > 1
    assert any("the distributed optimizer shards the optimizer step, each GPU updating 1/32" in n
               for n in r.notes)
