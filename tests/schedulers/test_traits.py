"""Policies talk through declared traits: the engine and embrace-2d ask the strategy what
its traffic is, and refuse what they cannot place instead of mis-scheduling it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from embsim.engine.context import step_context
from embsim.engine.run import SimulationConfig
from embsim.errors import InputError
from embsim.plan import Payload, bwd_name, update_name
from embsim.schedulers import SCHEDULERS
from embsim.strategies import STRATEGIES
from embsim.topology import load_topology
from embsim.workload import load_model


@pytest.fixture(scope="module")
def ctx():
    ctx, _ = step_context(load_model("lstm-lm1b"), load_topology("2x8"), None, SimulationConfig(),
                          dense_table_gradient=False)
    return ctx


def test_every_strategy_declares_its_traits():
    for name in STRATEGIES.names():
        cls = STRATEGIES.get(name)
        assert isinstance(cls.embedding_payload, Payload), name
        assert isinstance(cls.dense_table_gradient, bool), name
    # the data-parallel wrappers reduce every table's gradient densely (DDP, FSDP,
    # Megatron's distributed optimizer); S2 Reducer's authors sketch nn.Embedding's dense
    # gradient (Sketch_Embed_Reducer: matrix.to_sparse())
    dense = {"allreduce", "fsdp", "distopt", "s2reducer"}
    assert all(STRATEGIES.get(n).dense_table_gradient for n in dense)
    assert not any(STRATEGIES.get(n).dense_table_gradient for n in STRATEGIES.names() if n not in dense)


def test_priority_refuses_a_strategy_that_gathers_updated_parameters():
    """P3's per-layer updates run inside the next forward; FSDP issues that forward's
    parameter all-gathers after the previous optimizer step, so under priority they would
    carry parameters one update stale (gnmt on 16 RTX 3090s ran 57 ms faster than fifo,
    its next-forward gathers overlapping the backward whose gradients they lack)."""
    assert sorted(n for n in STRATEGIES.names() if STRATEGIES.get(n).gathers_updated_parameters) == ["distopt", "fsdp"]
    with pytest.raises(InputError, match="priority with --strategy fsdp: .* stale"):
        SCHEDULERS.get("priority")().check(STRATEGIES.get("fsdp")())
    for name in STRATEGIES.names():
        if name not in ("fsdp", "distopt"):
            SCHEDULERS.get("priority")().check(STRATEGIES.get(name)())


def test_embrace_2d_refuses_a_strategy_without_rows_to_split():
    with pytest.raises(InputError, match="no row-level split"):
        SCHEDULERS.get("embrace-2d")().check(STRATEGIES.get("s2reducer")())


def test_embrace_2d_refuses_embedding_traffic_it_cannot_place(ctx):
    """A row strategy whose embedding tensor feeds a backward: no branch of the 2D split
    fits, so the combination is refused, never silently left on the critical path."""
    strategy = STRATEGIES.get("allgather")()
    plan = strategy.plan(ctx)
    odd = [replace(t, needed_by=bwd_name(t.layer)) if t.category == "embedding" else t for t in plan.sync]
    with pytest.raises(InputError, match="cannot tell which part"):
        SCHEDULERS.get("embrace-2d")().transform(replace(plan, sync=tuple(odd)), ctx, strategy)


def test_embrace_2d_defers_part_of_each_payload(ctx):
    scheduler = SCHEDULERS.get("embrace-2d")()
    for name in ("allgather", "ps", "embrace"):
        strategy = STRATEGIES.get(name)()
        out = scheduler.transform(strategy.plan(ctx), ctx, strategy)
        assert out.deferred_update_time, name
        deferred = [t for t in out.sync if t.update_of == update_name(t.layer, deferred=True)
                    or t.ready_after == update_name(t.layer, deferred=True)]
        assert deferred, name


def test_the_queue_order_comes_from_the_scheduler():
    from embsim.plan import CommOp
    op = CommOp(name="x", op="all_reduce", nbytes=1.0, category="dense", channel="c",
                ready_after=(), priority=3.0, tensors=("x",))
    assert SCHEDULERS.get("fifo")().queue_key(op) == ()
    assert SCHEDULERS.get("priority")().queue_key(op) == (3.0,)
