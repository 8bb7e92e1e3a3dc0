import random
import time

import numpy as np
import pytest

from embsim.topology import load_topology, nccl_path_type, parse_node_type
from embsim.topology.vroutes import route_table

from topology_samples import SMALL_PCIE


def vertices(topo, src, dst):
    links = [topo.links[i] for i in topo.route(src, dst)]
    return [links[0].src] + [l.dst for l in links]


def kinds(topo, src, dst):
    return [topo.links[i].kind for i in topo.route(src, dst)]


def assert_chained(topo, src, dst):
    links = [topo.links[i] for i in topo.route(src, dst)]
    assert links[0].src == f"n{topo.node_of(src)}.gpu{topo.local_of(src)}"
    assert links[-1].dst == f"n{topo.node_of(dst)}.gpu{topo.local_of(dst)}"
    for a, b in zip(links, links[1:]):
        assert a.dst == b.src
    assert all(topo.graph.has_edge(l.src, l.dst) for l in links)


def test_intra_node_nvswitch_route():
    t = load_topology("dgx-h100")
    assert vertices(t, 2, 5) == ["n0.gpu2", "n0.nvs", "n0.gpu5"]
    assert kinds(t, 2, 5) == ["nvlink", "nvlink"]
    assert t.route(3, 3) == ()
    assert t.route(2, 5) is t.route(2, 5)  # cached
    assert nccl_path_type(t, 2, 5) == "NVL"


def test_inter_node_route_uses_destination_rail_with_pxn():
    t = load_topology("dgx-h100:4x8")
    dst = t.rank(2, 5)
    assert t.nic_for(dst) == 5
    v = vertices(t, t.rank(0, 3), dst)
    # NVLink to the rail-5 GPU, its NIC, rail-5 leaf, same rail on the far side, no spine.
    assert v == ["n0.gpu3", "n0.nvs", "n0.gpu5", "n0.pcie2", "n0.nic5", "leaf5", "n2.nic5", "n2.pcie2", "n2.gpu5"]
    assert not any(x.startswith("spine") for x in v)
    assert t.pxn_proxy(t.rank(0, 3), 5) == t.rank(0, 5)
    # Already on the right rail: no NVLink hop.
    assert kinds(t, t.rank(0, 5), dst)[0] == "pcie"
    assert nccl_path_type(t, 0, dst) == "NET"


def test_inter_group_route_crosses_spine_on_same_rail():
    t = load_topology("dgx-h100:64x8")    # 32 nodes per rail leaf -> two groups
    v = vertices(t, t.rank(0, 1), t.rank(40, 6))
    leaves = [x for x in v if x.startswith("leaf")]
    assert leaves == ["leaf6", "leaf14"] and any(x.startswith("spine") for x in v)
    assert t.nic_links(40, 6)[1] == t.route(t.rank(0, 1), t.rank(40, 6))[-3]


def test_pcie_routes_and_cross_socket():
    t = load_topology("pcie-rtx3090:2x8")
    assert vertices(t, 1, 2) == ["n0.gpu1", "n0.pcie0", "n0.gpu2"]
    assert "cpu" not in kinds(t, 1, 2)
    assert vertices(t, 1, 6) == ["n0.gpu1", "n0.pcie0", "n0.cpu0", "n0.cpu1", "n0.pcie1", "n0.gpu6"]
    assert kinds(t, 1, 6).count("cpu") == 1
    assert [nccl_path_type(t, 1, d) for d in (2, 6)] == ["PIX", "SYS"]
    # The single NIC sits on socket 0: a socket-1 GPU crosses the CPU link to leave the node, no PXN.
    k = kinds(t, 7, 8)
    assert k[:3] == ["pcie", "pcie", "cpu"] and k.count("nic") == 2 and "nvlink" not in k


def test_routes_are_valid_paths_everywhere():
    rng = random.Random(1)
    for spec in ("dgx-h100:40x8", "pcie-rtx3090:3x8", "dgx-a100:5x3"):
        t = load_topology(spec)
        for _ in range(300):
            a, b = rng.randrange(t.n_gpus), rng.randrange(t.n_gpus)
            if a != b:
                assert_chained(t, a, b)


def test_links_capacity_and_helpers():
    t = load_topology("dgx-h100:2x8")
    assert [l.id for l in t.links] == list(range(len(t.links)))
    assert np.array_equal(t.capacity, [l.bandwidth for l in t.links])
    all_ids = np.concatenate([t.link_ids_of_kind(k) for k in ("nvlink", "pcie", "cpu", "nic", "net")])
    assert sorted(all_ids.tolist()) == list(range(len(t.links)))
    assert t.link_ids_of_kind("host").size == 0
    up, down = t.gpu_up_links(9, kind="nvlink"), t.gpu_down_links(9, kind="nvlink")
    assert [(t.links[i].src, t.links[i].dst) for i in up + down] == [("n1.gpu1", "n1.nvs"), ("n1.nvs", "n1.gpu1")]
    assert {t.links[i].kind for i in t.gpu_up_links(9)} == {"nvlink", "pcie"}
    nic_up, nic_down = t.nic_links(1, 3)
    assert (t.links[nic_up].src, t.links[nic_down].dst) == ("n1.nic3", "n1.nic3")
    assert t.capacity[nic_up] == 400e9 / 8
    route = t.route(t.rank(0, 3), t.rank(1, 3))
    assert t.nic_links(0, 3)[0] in route and nic_down in route and nic_up not in route
    assert t.route_latency(0, 1) == pytest.approx(1e-6)   # two 0.5 µs NVLink hops


def test_rank_arithmetic():
    t = load_topology("3x4")
    assert t.rank(2, 1) == 9 and t.node_of(9) == 2 and t.local_of(9) == 1
    with pytest.raises(IndexError):
        t.rank(3, 0)
    with pytest.raises(IndexError):
        t.route(0, 12)


def test_oversubscription_and_overrides():
    t = load_topology("dgx-h100:64x8")
    leaf_spine = t.link_ids_of_kind("net")
    assert t.capacity[leaf_spine] == pytest.approx(32 * 50e9)  # 32 nodes x one 400G NIC per rail leaf
    o = t.with_overrides(oversubscription=2.0, nic_gbit=200, nvlink_gbps=900)
    assert o.capacity[o.link_ids_of_kind("net")] == pytest.approx(32 * 25e9 / 2)
    assert set(o.capacity[o.link_ids_of_kind("nic")]) == {25e9}
    assert set(o.capacity[o.link_ids_of_kind("nvlink")]) == {900e9}
    assert o.overrides == {"nic_gbit": 200.0, "nvlink_gbps": 900.0, "oversubscription": 2.0}
    assert set(t.capacity[t.link_ids_of_kind("nic")]) == {50e9}      # original untouched
    with pytest.raises(Exception, match="no NVLink"):
        load_topology("pcie-rtx3090").with_overrides(nvlink_gbps=100)


def test_plain_fat_tree_puts_all_nics_of_a_node_on_one_leaf():
    node = parse_node_type(SMALL_PCIE.replace("kind: rail-fat-tree", "kind: fat-tree")
                           .replace("switch_latency_us: 0.1", "switch_latency_us: 0.1\n  nodes_per_leaf: 2"))
    from embsim.topology import Topology
    t = Topology(node, 4, 4)
    assert {t.links[t.nic_links(1, k)[0]].dst for k in (0, 1)} == {"leaf0"}
    assert t.links[t.nic_links(2, 0)[0]].dst == "leaf1"
    assert any(t.links[i].kind == "net" for i in t.route(0, t.rank(3, 0)))


def test_nvlink_mesh_direct_pairs_and_pcie_fallback():
    text = SMALL_PCIE.replace("kind: pcie", "kind: nvlink-mesh\n  nvlink_links_per_gpu: 4\n  nvlink_gbps: 100\n"
                              "  nvlink_latency_us: 0.5\n  nvlink_pairs: [[0, 1, 2], [0, 2, 2], [1, 3, 2]]")
    from embsim.topology import Topology
    t = Topology(parse_node_type(text), 2, 4)
    assert vertices(t, 0, 1) == ["n0.gpu0", "n0.gpu1"] and t.capacity[t.route(0, 1)[0]] == 50e9
    assert "nvlink" not in kinds(t, 0, 3)          # no 0-3 pair: PCIe
    # Rail of GPU 6 (node 1, local 2) is NIC 1, proxied by local GPU 2: an NVLink neighbour of 0 -> PXN.
    assert kinds(t, 0, 6)[0] == "nvlink"
    # From GPU 3 the rail-0 proxy GPU 0 is not an NVLink neighbour: no PXN, own NIC 1.
    assert "nvlink" not in kinds(t, 3, 4) and "n0.nic1" in vertices(t, 3, 4)


def test_1024_gpus_build_and_route_fast():
    t0 = time.perf_counter()
    t = load_topology("128x8")
    built = time.perf_counter() - t0
    assert t.n_gpus == 1024 and built < 1.5
    rng = random.Random(0)
    t0 = time.perf_counter()
    for _ in range(20000):
        t.route(rng.randrange(1024), rng.randrange(1024))
    assert time.perf_counter() - t0 < 1.5


def test_grace_hopper_gpus_reach_their_cpu_over_c2c():
    """alps-gh200: each Hopper's host link is NVLink-C2C (450 GB/s per direction), the NIC
    keeps its PCIe Gen5 link to the Grace, and NCCL calls that GPU -> NIC path P2C
    (paths.cc mergePathType), a NIC on another Grace SYS; modelled as PCIe it was PHB."""
    from embsim.topology.nccl_view import nccl_nic_path_type
    t = load_topology("alps-gh200:2x4")
    k = kinds(t, t.rank(0, 1), t.rank(1, 1))
    assert k[0] == "c2c" and k[1] == "pcie" and k[-1] == "c2c"
    c2c = [l for l in t.links if l.kind == "c2c"]
    assert len(c2c) == 2 * 2 * 4 and {l.bandwidth for l in c2c} == {450e9}
    assert [nccl_nic_path_type(t._template, g, g) for g in range(4)] == ["P2C"] * 4
    assert nccl_nic_path_type(t._template, 0, 3) == "SYS"
    assert nccl_path_type(t, 0, 1) == "NVL"
    assert t.summary()["nics"]["nccl_path"] == ["P2C"]
    # the same node with its GPUs on PCIe root ports: PHB, as before the C2C links
    pcie = load_topology("dgx1-v100")
    assert "c2c" not in set(pcie.link_kinds.tolist())
    assert load_topology("aws-g5").summary()["nics"]["nccl_path"] == ["PHB"]


def _oversubscribed_l40s(tmp_path, ratio: str) -> str:
    from pathlib import Path
    text = (Path(__file__).resolve().parents[2] / "topologies" / "l40s-roce.yaml").read_text()
    assert "  oversubscription: 1.0 " in text
    path = tmp_path / f"l40s-ov{ratio}.yaml"
    path.write_text(text.replace("  oversubscription: 1.0 ", f"  oversubscription: {ratio} ")
                    .replace("name: l40s-roce", f"name: l40s-ov{ratio}"))
    return str(path)


def test_a_ring_hop_stays_on_its_rail_where_two_gpus_share_a_nic(tmp_path):
    # NCCL's ring channel leaves a node by the NIC it entered by, so on a rail-optimised
    # fabric a 2-node ring never climbs to the spine: l40s-roce (2 GPUs a NIC, both nodes on
    # one leaf per rail) once routed GPU 7 (rail 3) -> GPU 0 (rail 0) over the spine, and a
    # spine oversubscribed 50:1 cut its AllReduce from 23 to 3 GB/s busbw
    from embsim.collectives import CollectiveModel
    times = [CollectiveModel(load_topology(_oversubscribed_l40s(tmp_path, r) + ":2x8"))
             .plan("all_reduce", 1 << 30, range(16)).time for r in ("1.0", "50")]
    assert times[1] == pytest.approx(times[0], rel=1e-9)
    # a point-to-point send still leaves by the sender's own NIC: cross-rail, over the spine
    topo = load_topology(_oversubscribed_l40s(tmp_path, "50") + ":2x8")
    ring = route_table(topo, [7], [8], same_nic=True)[0]
    p2p = route_table(topo, [7], [8])[0]
    assert "net" not in set(topo.link_kinds[ring])      # leaf to leaf: no spine link
    assert "net" in set(topo.link_kinds[p2p])
