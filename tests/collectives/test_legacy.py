"""NCCL 2.4's protocol choice by size threshold (legacy.py), and its use for 2.4 logs."""

import math

import pytest

from embsim.collectives import legacy
from embsim.collectives.model import CollectiveModel
from embsim.collectives.releases import release_view
from embsim.collectives.validation import DATA_DIR, curve_errors
from embsim.topology import load_topology

# DGX-1 V100: 8 ranks on one node, 12 channels (6 NVLink rings, doubled)
DGX1 = dict(arch=70, n_nodes=1, n_ranks=8, channels=12, nvlink=True)


def test_ll_launch_grows_threads_then_channels():
    # 32 KiB of 8 chunks: 64 threads would carry 64 B each, so threads double to 256
    assert legacy.ll_launch(32768, 8, 12, 64) == (2, 256)
    assert legacy.ll_launch(512, 8, 12, 64) == (1, 64)
    assert legacy.ll_launch(64 << 20, 8, 12, 64) == (12, 256)     # channels capped


def test_ring_allreduce_is_ll_up_to_channels_x_threads_x_chunks_x_64():
    limit = 12 * 256 * 8 * 64        # 1.5 MiB
    assert legacy.choose("all_reduce", limit, **DGX1) == ("Ring", "LL")
    assert legacy.choose("all_reduce", limit + 64, **DGX1) == ("Ring", "Simple")
    assert legacy.choose("all_reduce", 1 << 20, **DGX1) == ("Ring", "LL")
    assert legacy.choose("all_reduce", 2 << 20, **DGX1) == ("Ring", "Simple")
    # fewer channels, lower limit
    assert legacy.choose("all_reduce", 1 << 20, **{**DGX1, "channels": 6}) == ("Ring", "Simple")


def test_threshold_per_thread_depends_on_arch_and_nodes():
    base = dict(n_ranks=8, channels=12, nvlink=True, n_nodes=1)
    size = 12 * 256 * 8 * 48         # between the pre-Volta (32 B) and Volta (64 B) limits
    assert legacy.choose("all_reduce", size, arch=70, **base)[1] == "LL"
    assert legacy.choose("all_reduce", size, arch=60, **base)[1] == "Simple"


def test_broadcast_is_a_pipeline_of_one_chunk():
    # one chunk per loop: the limit is channels x threads x 64 B
    assert legacy.choose("broadcast", 12 * 256 * 64, **DGX1) == ("Ring", "LL")
    assert legacy.choose("broadcast", 12 * 256 * 64 + 64, **DGX1) == ("Ring", "Simple")


def test_tree_threshold():
    assert legacy.tree_threshold(1, 8, 12, True) == 0.0              # one node: no tree
    assert legacy.tree_threshold(2, 16, 12, True) == math.inf         # 2 nodes: tree bw x2 wins
    ring = 5000.0 * 12
    ring_lat, tree_lat = 6.0 * 31, 15.0 * 2 + 4.0 * 7
    expected = ring * (0.75 * ring) / (0.25 * ring) * (ring_lat - tree_lat)
    assert legacy.tree_threshold(4, 32, 12, True) == pytest.approx(expected)
    # the tree pattern has one chunk per loop and 4x the per-thread threshold (x2 across nodes)
    algo, proto = legacy.choose("all_reduce", 1 << 20, arch=70, n_nodes=4, n_ranks=32,
                                channels=12, nvlink=True)
    assert (algo, proto) == ("Tree", "LL")     # 1 MiB <= 12 x 256 x 1 x 512


def test_only_2_4_logs_choose_by_threshold():
    assert release_view("2.4").threshold_choice
    assert release_view("2.4.8").threshold_choice
    assert "size threshold" in release_view("2.4").note
    for logged in ("2.3.7", "2.5.6", "2.9.9", "2.18.5", "unknown", None):
        assert not release_view(logged).threshold_choice


def test_model_uses_the_threshold_choice_when_asked():
    topo = load_topology("dgx1-v100:1x8")
    cost_model = CollectiveModel(topo, nccl_version="2.18", proto="^LL128")
    threshold = CollectiveModel(topo, nccl_version="2.18", proto="^LL128", threshold_choice=True)
    ranks = range(8)
    assert cost_model.plan("all_reduce", 1 << 20, ranks).proto == "Simple"
    plan = threshold.plan("all_reduce", 1 << 20, ranks)
    assert (plan.algo, plan.proto) == ("Ring", "LL") and plan.model_time > 0
    assert threshold.plan("all_reduce", 2 << 20, ranks).proto == "Simple"
    # a filter that excludes the threshold's pick leaves NCCL's cost model to choose
    simple = CollectiveModel(topo, nccl_version="2.18", proto="Simple", threshold_choice=True)
    assert simple.plan("all_reduce", 1 << 20, ranks).proto == "Simple"


def test_dgx1_curve_runs_ll_at_1_mib():
    c = curve_errors(DATA_DIR / "dgx1-v100-allreduce.yaml")
    point = {p.size: p for p in c.points}[1 << 20]
    assert point.proto == "LL" and "size threshold" in c.system
