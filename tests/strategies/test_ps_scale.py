"""Co-located parameter servers at scale: a push or pull computed from the topology's
structure (collectives.server_demand) equals the pair-by-pair form on topologies small
enough to route every (worker, server) pair, three-tier fabrics included."""

import numpy as np
import pytest

from embsim.collectives.servers import server_transfer
from embsim.collectives.traffic import Traffic
from embsim.topology import load_topology
from embsim.topology.clusterspec import find_preset
from embsim.topology.parse import parse_node_type
from embsim.topology.servers import with_servers
from embsim.topology.topology import Topology


def three_tier():
    text = find_preset("dgx-h100").read_text().replace("nodes_per_leaf: 32", "nodes_per_leaf: 2")
    text = text.replace("radix: 64", "radix: 4\n  spines: 2")
    node = parse_node_type(text)
    topo = Topology(node, 9, 8)
    assert topo._layout.tiers == 3
    return topo


def fat_tree():
    text = find_preset("dgx-a100").read_text().replace("kind: rail-fat-tree", "kind: fat-tree")
    node = parse_node_type(text.replace("nodes_per_leaf: 20", "nodes_per_leaf: 2\n  spines: 3"))
    return Topology(node, 7, node.gpu.count)


@pytest.mark.parametrize("topo", [load_topology("dgx-h100:4x8"), load_topology("dgx-h100:70x8"),
                                  load_topology("pcie-rtx3090:5x8"), load_topology("dgx-a100:45x4"),
                                  load_topology("dgx-h100:1x8"), three_tier(), fat_tree()], ids=str)
def test_structural_push_and_pull_equal_pairwise(topo):
    t = with_servers(topo, "colocated")
    n, count = t.n_gpus, t.servers.count
    rng = np.random.default_rng(n)
    shares = rng.random(count) ** 3
    shares /= shares.sum()
    ranks = tuple(range(n))
    for tr in (Traffic(np.ones(n), 3.3e6 * shares), Traffic(rng.random(n), shares)):
        for op in ("ps_push", "ps_pull"):
            lat_a, time_a, a = server_transfer(t, t.capacity, op, tr.dense(), ranks)
            lat_b, time_b, b = server_transfer(t, t.capacity, op, tr, ranks)
            assert np.array_equal(a.links, b.links)
            np.testing.assert_allclose(b.bytes, a.bytes, rtol=1e-12)
            if np.all(tr.row == 1.0):
                # a PS push/pull: bit for bit on every link but spine and core ones
                fabric = t.link_kinds[a.links] == "net"
                assert np.array_equal(a.bytes[~fabric], b.bytes[~fabric])
            assert lat_b == lat_a and time_b == pytest.approx(time_a, rel=1e-12)


def test_ps_at_sixteen_thousand_gpus_builds_no_pair_routes():
    t = with_servers(load_topology("dgx-h100:2048x8"), "colocated")
    tr = Traffic(np.ones(t.n_gpus), np.full(t.servers.count, 1e3))
    latency, time, demand = server_transfer(t, t.capacity, "ps_push", tr, tuple(range(t.n_gpus)))
    assert time > latency > 0 and not demand.is_empty
    assert len(t.servers.push_routes) < 64          # a few representatives for the latency only
