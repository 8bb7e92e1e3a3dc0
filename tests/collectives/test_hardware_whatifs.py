"""Hardware what-ifs (sweeps) reach the collective model. NCCL's cost model assumes a
non-blocking fabric behind the NICs: an oversubscribed spine tighter than the NICs must
make cross-leaf collectives slower, a non-blocking one must leave the model's time alone;
NVLink and NIC what-ifs change what NCCL would detect."""

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


def test_nvlink_whatif_reaches_nccls_view_of_the_links():
    # NCCL would detect faster links: its channel search and bandwidths scale with them
    slow = load_topology("dgx-a100").with_overrides(nvlink_gbps=150)
    base = load_topology("dgx-a100")
    ranks = tuple(range(8))
    t_slow = CollectiveModel(slow).plan("all_reduce", 256 << 20, ranks).time
    t_base = CollectiveModel(base).plan("all_reduce", 256 << 20, ranks).time
    assert t_slow == pytest.approx(2 * t_base, rel=0.05)


def test_nic_whatif_slows_inter_node_traffic():
    ranks = tuple(range(16))
    t_100 = CollectiveModel(load_topology("2x8").with_overrides(nic_gbit=100)).plan("alltoall", 256 << 20, ranks).time
    t_400 = CollectiveModel(load_topology("2x8")).plan("alltoall", 256 << 20, ranks).time
    assert t_100 > 2 * t_400
