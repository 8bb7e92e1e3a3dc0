"""NCCL's cost model assumes a non-blocking fabric behind the NICs. An oversubscribed
spine that is tighter than the NICs must make cross-leaf collectives slower; a
non-blocking one must leave the model's time alone."""

import pytest

from embsim.collectives import CollectiveModel
from embsim.topology import load_topology


def plan_time(spec, op, nbytes, oversubscription):
    topo = load_topology(spec).with_overrides(oversubscription=oversubscription)
    return CollectiveModel(topo).plan(op, nbytes, tuple(range(topo.n_gpus))).time


@pytest.mark.parametrize("op,nbytes", [("alltoall", 64 << 20), ("all_reduce", 256 << 20)])
def test_oversubscribed_spine_slows_cross_leaf_traffic(op, nbytes):
    # 64 DGX A100 nodes span several leaf groups (nodes_per_leaf in the preset)
    full = plan_time("dgx-a100:64x8", op, nbytes, 1)
    half = plan_time("dgx-a100:64x8", op, nbytes, 2)
    quarter = plan_time("dgx-a100:64x8", op, nbytes, 4)
    assert full < half < quarter


def test_one_leaf_group_is_not_affected():
    # 4 nodes share one leaf per rail: nothing crosses the spine
    assert plan_time("dgx-a100:4x8", "alltoall", 64 << 20, 4) == plan_time("dgx-a100:4x8", "alltoall", 64 << 20, 1)


def test_non_blocking_fabric_keeps_the_model_time():
    topo = load_topology("dgx-a100:64x8")
    plan = CollectiveModel(topo).plan("alltoall", 64 << 20, tuple(range(topo.n_gpus)))
    assert plan.time == pytest.approx(plan.model_time, rel=1e-9)
