"""The real collective model on the real network: idle time equals the plan, and
concurrent collectives slow each other exactly where they share links."""

from __future__ import annotations

import pytest
import simpy

from embsim.collectives import CollectiveModel
from embsim.collectives.runtime import CollectiveRuntime
from embsim.network import Network
from embsim.topology import load_topology


def run_together(topo, jobs):
    """jobs: (op, nbytes, ranks) started together; returns each one's duration."""
    model = CollectiveModel(topo)
    env = simpy.Environment()
    rt = CollectiveRuntime(env, Network(env, topo.capacity), model)
    events = [rt.arrive(op, nbytes, ranks, ranks, key=i) for i, (op, nbytes, ranks) in enumerate(jobs)]
    env.run()
    return [ev.value.end - ev.value.start for ev in events], model


def test_idle_network_time_equals_the_plan():
    topo = load_topology("2x8")
    ranks = tuple(range(16))
    for op in ("all_reduce", "all_gather", "alltoall", "broadcast"):
        (t,), model = run_together(topo, [(op, 64 << 20, ranks)])
        assert t == pytest.approx(model.plan(op, 64 << 20, ranks).time, rel=1e-9)


def test_two_collectives_on_the_same_links_share_them():
    topo = load_topology("2x8")
    ranks = tuple(range(16))
    size = 256 << 20
    (alone,), model = run_together(topo, [("all_reduce", size, ranks)])
    both, _ = run_together(topo, [("all_reduce", size, ranks), ("all_reduce", size, ranks)])
    plan = model.plan("all_reduce", size, ranks)
    transfer = plan.time - plan.latency
    # identical demands on the same bottleneck: each gets half, both end together
    assert both == pytest.approx([plan.latency + 2 * transfer] * 2, rel=1e-9)
    assert both[0] > alone


def test_collectives_on_disjoint_nodes_do_not_interact():
    topo = load_topology("2x8")
    node0, node1 = tuple(range(8)), tuple(range(8, 16))
    size = 256 << 20
    (alone,), _ = run_together(topo, [("all_reduce", size, node0)])
    both, _ = run_together(topo, [("all_reduce", size, node0), ("all_reduce", size, node1)])
    assert both == pytest.approx([alone, alone], rel=1e-9)


def test_alltoall_beside_allreduce_is_slowed_by_the_shared_links_only():
    topo = load_topology("2x8")
    ranks = tuple(range(16))
    (a2a_alone,), model = run_together(topo, [("alltoall", 128 << 20, ranks)])
    (a2a, ar), _ = run_together(topo, [("alltoall", 128 << 20, ranks), ("all_reduce", 512 << 20, ranks)])
    assert a2a > a2a_alone
    ar_plan = model.plan("all_reduce", 512 << 20, ranks)
    assert ar > ar_plan.time
