"""Topologies at scale: routes in bulk equal routes one by one, the third (core) tier
where the leaves outnumber a spine switch's ports, switch counts per tier, and a
16,384-GPU cluster that builds in well under a second."""


import numpy as np
import pytest

from embsim.topology import load_topology, parse_node_type
from embsim.topology.vroutes import route_table

from topology_samples import SMALL_PCIE, write_yaml  # noqa: F401 (fixture)

FAT_TREE = SMALL_PCIE.replace("switch_latency_us: 0.1", "switch_latency_us: 0.1\n  nodes_per_leaf: 2")


def assert_bulk_equals_single(t, pairs=2000, seed=0):
    rng = np.random.default_rng(seed)
    src = rng.integers(0, t.n_gpus, pairs)
    dst = rng.integers(0, t.n_gpus, pairs)
    src[:3] = dst[:3]                              # a few empty routes
    links, lengths = route_table(t, src, dst)
    single = [t.route(int(a), int(b)) for a, b in zip(src, dst)]
    assert lengths.tolist() == [len(r) for r in single]
    assert links.tolist() == [x for r in single for x in r]


@pytest.mark.parametrize("spec", ["dgx-h100:16x8", "dgx-h100:300x8", "dgx-a100:64x8", "dgx-a100:200x4",
                                  "pcie-rtx3090:6x8", "pcie-rtx3090:3x3", "local-cpu", "dgx-h100:1x8"])
def test_routes_in_bulk_equal_routes_one_by_one(spec):
    assert_bulk_equals_single(load_topology(spec))


def test_routes_in_bulk_on_a_plain_fat_tree_with_spines():
    from embsim.topology.topology import Topology
    node = parse_node_type(FAT_TREE.replace("nodes_per_leaf: 2", "nodes_per_leaf: 2\n  spines: 3"))
    assert_bulk_equals_single(Topology(node, 7, node.gpu.count))


def test_third_tier_only_where_leaves_outnumber_the_radix():
    # dgx-h100: 32 nodes per rail leaf, 8 rails, 64-port switches
    assert load_topology("dgx-h100:256x8")._layout.tiers == 2          # 8 groups x 8 rails = 64 leaves
    t = load_topology("dgx-h100:257x8")                                 # 72 leaves > 64
    assert t._layout.tiers == 3
    net = t.summary()["network"]
    assert net["tiers"] == 3 and net["pods"] == 3                       # 4 groups (32 leaves) per pod
    # a cross-pod route climbs to the core: leaf, pod spine, core, pod spine, leaf
    a, b = t.rank(0, 2), t.rank(200, 2)
    names = [t.links[i].dst for i in t.route(a, b)]
    i = names.index("leaf2")
    assert names[i:i + 5] == ["leaf2", "spine0.0", "core", "spine1.0", "leaf50"]
    # same pod, other leaf group: no core
    names = [t.links[i].dst for i in t.route(t.rank(0, 2), t.rank(40, 2))]
    assert "core" not in names and "spine0.0" in names


def test_switch_counts_per_tier():
    two = load_topology("dgx-h100:128x8").summary()["network"]["switches"]
    assert two == {"leaf": 32, "spine": 16}         # 32 leaves x 32 uplinks / 64 ports
    three = load_topology("dgx-h100:2048x8").summary()["network"]["switches"]
    # 512 leaves x 32 uplinks over pod spines with 32 ports down; their 16,384 uplinks / 64
    assert three == {"leaf": 512, "spine": 512, "core": 256}


def test_spine_oversubscription_thins_the_core_links(write_yaml):
    from embsim.topology.clusterspec import load_topology as load
    text = open(load_topology("dgx-h100").node.source).read()
    path = write_yaml(text.replace("radix: 64", "radix: 64\n  spine_oversubscription: 4"), "dgx-os.yaml")
    t = load(f"{path}:300x8")
    core = [l for l in t.links if l.dst == "core"]
    spine = [l for l in t.links if l.src == "leaf0" and l.dst.startswith("spine")]
    assert core and spine
    # a pod spine's uplink = its 32 leaves' uplinks / 4
    assert core[0].bandwidth == pytest.approx(32 * spine[0].bandwidth / 4)


def test_sixteen_thousand_gpus_build_whole():
    # how fast is benchmarks/scale_speed.py's figure; the test checks what is built
    t = load_topology("dgx-h100:2048x8")
    assert t.n_gpus == 16384 and t.capacity.size == t.n_links
    assert t.route(0, 16383)[-1] < t.n_links
