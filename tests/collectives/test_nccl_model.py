from dataclasses import replace

import pytest

from embsim.collectives import nccl_model as nm
from embsim.collectives.busbw import algbw_busbw, busbw_factor, size_convention
from embsim.collectives.channels import runtime_lanes, search_graphs
from embsim.collectives.constants import constants_for
from embsim.collectives.shape import CommShape
from embsim.errors import InputError

C230, C218 = constants_for("2.30"), constants_for("2.18.5")


def node(arch, nvlink, nodes=1, ppn=8, nic=25.0, pcie=24.0, cpu="intel"):
    return CommShape(arch=arch, n_ranks=nodes * ppn, n_nodes=nodes, ppn=ppn, intra="nvswitch",
                     nvlink_bw=nvlink, pcie_bw=pcie, nic_bw=nic, nics_per_node=8, cpu_vendor=cpu)


A100 = node(80, 12 * 20.0)
H100 = node(90, 18 * 20.6)


def test_graph_search_reproduces_nccl_logs():
    g = search_graphs(A100)
    assert (g.ring.n_channels, g.ring.bw_intra) == (12, 20)          # "nChannels 12, bw 20/20"
    h = search_graphs(node(90, 18 * 20.0))                           # NCCL 2.19 H100
    assert (h.ring.n_channels, h.ring.bw_intra) == (12, 30)
    assert (h.tree.n_channels, h.tree.bw_intra) == (12, 30)
    assert (h.nvls.n_channels, h.nvls.bw_intra, h.nvls.bw_inter) == (8, 40, 60)
    assert search_graphs(A100).nvls is None                          # NVLS needs sm90


def test_multinode_ring_is_nic_bound():
    g = search_graphs(node(80, 240.0, nodes=16))
    assert g.ring.n_channels * g.ring.bw_inter == 192                # 8 HDR NICs at 24 GB/s


def test_worked_example_a100_latency_and_bandwidth():
    g = search_graphs(A100)
    assert nm.latency("all_reduce", "Ring", "LL", A100, g, C230) == pytest.approx(15.0)
    assert nm.latency("all_reduce", "Ring", "Simple", A100, g, C230) == pytest.approx(56.0)
    assert nm.bandwidth("all_reduce", "Ring", "LL", A100, g, C230) == pytest.approx(87.7 * 8 / 14)
    assert nm.bandwidth("all_reduce", "Ring", "Simple", A100, g, C230) == pytest.approx(240 * 8 / 14)
    # 2.18: Ring LL busBw x 1/4 instead of x 1/2
    assert nm.bandwidth("all_reduce", "Ring", "LL", A100, g, C218) == pytest.approx(60 * 8 / 14)


@pytest.mark.parametrize("size,busbw", [(1 << 20, 51.1), (4 << 20, 99.4), (16 << 20, 169.2),
                                        (256 << 20, 233.3), (1 << 30, 238.3)])
def test_worked_example_best_busbw(size, busbw):
    t = nm.select("all_reduce", size, A100, search_graphs(A100), C230)
    assert size / t.time / 1e3 * 1.75 == pytest.approx(busbw, abs=0.1)


def test_selection_small_and_large_on_h100():
    g = search_graphs(H100)
    small = nm.select("all_reduce", 4096, H100, g, C230)
    large = nm.select("all_reduce", 1 << 30, H100, g, C230)
    assert (small.algo, small.proto) == ("Ring", "LL")
    assert (large.algo, large.proto) == ("NVLS", "Simple")
    assert nm.select("all_gather", 1 << 30, H100, g, C230).proto == "Simple"


def test_nvls_busbw_230():
    g = search_graphs(H100)
    bw = nm.bandwidth("all_reduce", "NVLS", "Simple", H100, g, C230)
    assert bw * 14 / 8 == pytest.approx(8 * 40 * 0.85 * 7 / 8 * 2)   # 476 GB/s busbw-equivalent


def test_overrides():
    g = search_graphs(H100)
    ring = nm.parse_filter("Ring", "algo")
    assert nm.select("all_reduce", 1 << 30, H100, g, C230, algos=ring).algo == "Ring"
    no_nvls = nm.parse_filter("^NVLS", "algo")
    assert "NVLS" not in no_nvls and "Ring" in no_nvls
    ll128 = nm.parse_filter("LL128", "proto")
    assert nm.select("all_reduce", 1 << 30, H100, g, C230, protos=ll128).proto == "LL128"
    assert nm.parse_filter("tree,ring", "algo") == {"Tree", "Ring"}
    with pytest.raises(InputError):
        nm.parse_filter("Bogus", "algo")
    with pytest.raises(InputError):
        constants_for("2.99")


def test_tree_correction_and_broadcast_ring_only():
    g = search_graphs(A100)
    pairs = nm.default_enabled("broadcast", A100, g, C230)
    assert {a for a, _ in pairs} == {"Ring"}
    t = nm.algo_time("all_reduce", "Tree", "Simple", 1 << 20, A100, g, C230)
    assert t.bandwidth == pytest.approx(nm.bandwidth("all_reduce", "Tree", "Simple", A100, g, C230) * 0.5)


def test_runtime_trimming():
    assert runtime_lanes(64 << 10, "Ring", "LL", 8, 24) == (2, 512)
    assert runtime_lanes(1 << 30, "Ring", "Simple", 8, 24) == (24, 512)
    nc, nt = runtime_lanes(64, "Ring", "Simple", 8, 24)
    assert nc == 1 and nt < 512


def test_busbw_factors_and_sizes():
    assert busbw_factor("all_reduce", 8) == pytest.approx(1.75)
    assert busbw_factor("all_gather", 8) == pytest.approx(7 / 8)
    assert busbw_factor("alltoall", 4) == pytest.approx(3 / 4)
    assert busbw_factor("sendrecv", 8) == 1.0
    ts = size_convention("all_gather", 1000, 4, 8)
    assert (ts.size, ts.count) == (992, 31)
    assert size_convention("all_reduce", 1001, 4, 8).size == 1000
    assert algbw_busbw("all_reduce", 1_000_000_000, 1.0, 8) == pytest.approx((1.0, 1.75))


def test_nccls_view_of_the_presets_links():
    """NCCL's per-link constants, not datasheet figures (NVL[370.8] in NCCL's own logs)."""
    from embsim.collectives.shape import comm_shape
    from embsim.topology import load_topology
    h100 = comm_shape(load_topology("dgx-h100"), range(8))
    assert h100.nvlink_bw == pytest.approx(18 * 20.6) and h100.pcie_bw == pytest.approx(48.0)
    assert comm_shape(load_topology("dgx-a100"), range(8)).nvlink_bw == pytest.approx(240.0)
    assert comm_shape(load_topology("dgx-b200"), range(8)).nvlink_bw == pytest.approx(721.8)
    rtx = comm_shape(load_topology("pcie-rtx3090:2x8"), range(16))
    assert rtx.intra == "pcie" and rtx.nic_bw == pytest.approx(12.5)


def test_tree_092_and_per_channel_cap_hold_every_protocol():
    # tuning.cc: `if (a == NCCL_ALGO_TREE && coll == ncclFuncAllReduce) busBw = min(busBw*.92,
    # nChannels*perChMaxTreeBw)` has no protocol test; LL and LL128 apply theirs after it
    s = node(90, 18, nodes=2, nic=50.0)
    g = search_graphs(s)
    c = constants_for("2.30")
    tree = g.tree
    bus = min(tree.n_channels * tree.bw_intra * 0.92, tree.n_channels * c.per_ch_tree[90][1])
    assert nm.bandwidth("all_reduce", "Tree", "LL", s, g, c) == pytest.approx(min(bus / 3.8, nm.ll_max_bw(s, c)) * 0.5)
    ll128 = min(bus * 120 / 128, tree.n_channels * c.per_ch_tree_ll128[90][1])
    assert nm.bandwidth("all_reduce", "Tree", "LL128", s, g, c) == pytest.approx(ll128 * 0.5)


def test_nvlstree_tree_correction_from_229_only():
    s = node(100, 18, nodes=2, nic=50.0)
    g = search_graphs(s)
    for v, corrected in (("2.28", False), ("2.29", True), ("2.30", True)):
        c = constants_for(v)
        t = nm.algo_time("all_reduce", "NVLSTree", "Simple", 1 << 20, s, g, c)
        assert (t.bandwidth < nm.bandwidth("all_reduce", "NVLSTree", "Simple", s, g, c)) == corrected


# 2 nodes x 8 H100 over 8 x 400 Gb/s NICs behind PCIe Gen5 (48 GB/s), as dgx-h100 / aws-p5.
H100_2N = node(90, 18 * 20.6, nodes=2, nic=50.0, pcie=48.0)


@pytest.mark.parametrize("version,inter_steps", [("2.18", 4), ("2.20", 4), ("2.21", 4), ("2.22", 4),
                                                 ("2.23", 2), ("2.27", 2), ("2.30", 2)])
def test_ring_allreduce_network_steps_per_release(version, inter_steps):
    """tuning.cc nInterSteps: 2 x nNodes for a multi-node AllReduce up to v2.22.3-1 (line 159),
    2 x (nNodes - 1) from v2.23.4-1 (line 258). Ring/LL128 on 2 x 8 H100 (Intel, 1 µs overhead):
    baseLat 14 + (30 - k) x hwLat[NVLINK] 1.9 + k x hwLat[NET] 4.0."""
    c = constants_for(version)
    g = search_graphs(H100_2N, c)
    assert nm.latency("all_reduce", "Ring", "LL128", H100_2N, g, c) == pytest.approx(
        14.0 + (30 - inter_steps) * 1.9 + inter_steps * 4.0)
    # AllGather counts nNodes - 1 in every release
    assert nm.latency("all_gather", "Ring", "LL128", H100_2N, g, c) == pytest.approx(
        14.0 + 14 * 1.9 + 1 * 4.0)


def test_aws_p5_2_21_picks_tree_ll128_at_32_mib():
    """The net plugin's 75 µs per hop (aws-ofi-nccl p5) on 2.21's 4 network steps makes Ring/LL128
    cost 14 + 26 x 2.0 (AMD netOverhead) + 4 x 79 = 382 µs: Tree/LL128 (198.5 µs + 32 MiB at
    146.8 x 0.9) wins at 32 MiB, where 2.23's 2 steps (228 µs) leave Ring/LL128 ahead."""
    p5 = node(90, 18 * 20.6, nodes=2, nic=50.0, pcie=48.0, cpu="amd")
    p5 = replace(p5, nic_latency_us=75.0)
    old, new = constants_for("2.21.5"), constants_for("2.27.7")
    assert nm.latency("all_reduce", "Ring", "LL128", p5, search_graphs(p5, old), old) == pytest.approx(382.0)
    pick_old = nm.select("all_reduce", 32 << 20, p5, search_graphs(p5, old), old)
    pick_new = nm.select("all_reduce", 32 << 20, p5, search_graphs(p5, new), new)
    assert (pick_old.algo, pick_old.proto) == ("Tree", "LL128")
    assert (pick_new.algo, pick_new.proto) == ("Ring", "LL128")


@pytest.mark.parametrize("version,tree_net", [("2.22", False), ("2.23", True), ("2.30", True)])
def test_one_gpu_per_node_network_hop_per_release(version, tree_net):
    """2.23+ prices a 1-GPU-per-node hop at the Tree's hwLat[NET] for every algorithm ("With
    ppn=1 latencies are fully exposed"); up to 2.22 each algorithm its own (Ring LL 2.7)."""
    c = constants_for(version)
    one = node(90, 18 * 20.6, nodes=4, ppn=1, nic=50.0, pcie=48.0)
    g = search_graphs(one, c)
    hop = 5.0 if tree_net else 2.7                                   # hwLat[NET] Tree / Ring, LL
    steps = 8 if c.ring_allreduce_inter_steps_2n else 6
    assert nm.latency("all_reduce", "Ring", "LL", one, g, c) == pytest.approx(
        6.6 + (6 - steps) * 1.0 + steps * hop)                      # intra = max(0.6, 1 µs overhead)


@pytest.mark.parametrize("version,row", [("2.18", 87.7), ("2.20", 87.7), ("2.21", 141.0), ("2.30", 141.0)])
def test_hopper_one_node_ll_cap_per_release(version, row):
    """llMaxBws' Hopper row is Ampere's {87.7, 22.5, 19.0} up to v2.20.5-1 (line 89), 141.0 from 2.21."""
    c = constants_for(version)
    assert nm.ll_max_bw(H100, c) == row


@pytest.mark.parametrize("arch,version,on", [
    (75, "2.26", False), (86, "2.26", False), (89, "2.24", False),   # `default: pEnable &= 0`
    (75, "2.27", True), (86, "2.30", True),                          # v2.27.3-1: every sm70+
    (100, "2.24", False), (100, "2.25", True), (90, "2.18", True), (80, "2.18", True),
    (60, "2.30", False)])
def test_ll128_arch_rule_per_release(arch, version, on):
    c = constants_for(version)
    nvl = CommShape(arch=arch, n_ranks=2, n_nodes=1, ppn=2, intra="nvlink", nvlink_bw=50.0,
                    pcie_bw=24.0, nic_bw=0.0, nics_per_node=0)
    assert nm.ll128_enabled(nvl, c) is on
    pairs = nm.default_enabled("all_reduce", nvl, search_graphs(nvl, c), c)
    assert (("Ring", "LL128") in pairs) is on


def test_ll128_needs_nvlink_inside_the_node_even_on_hopper():
    """typeIntra <= PATH_NVB: PCIe-connected GPUs of one node get no LL128, Hopper included;
    one GPU per node (typeIntra PATH_LOC) keeps it."""
    c = constants_for("2.30")
    pcie = CommShape(arch=90, n_ranks=4, n_nodes=1, ppn=4, intra="pcie", nvlink_bw=0.0,
                     pcie_bw=48.0, nic_bw=0.0, nics_per_node=0)
    assert not nm.ll128_enabled(pcie, c)
    one = replace(pcie, n_ranks=4, n_nodes=4, ppn=1, nic_bw=50.0, nics_per_node=1)
    assert nm.ll128_enabled(one, c)


@pytest.mark.parametrize("version,nvlstree_net,ring_ll128_sm100,nvlstree_sm100_n4", [
    ("2.28.3", 14.0, (73.4, 73.4, 73.4), 43.1),     # v2.28.3-1 tuning.cc tunerConstants
    ("2.28.7", 14.0, (73.4, 34.6, 73.4), 43.1),     # v2.28.7-1: Ring LL128 N2 34.6
    ("2.28.9", 20.9, (73.4, 34.6, 73.4), 43.8),     # v2.28.9-1: NVLSTree NET 20.9, N4 43.8
    ("2.28", 20.9, (73.4, 34.6, 73.4), 43.8)])
def test_patch_tables_of_2_28(version, nvlstree_net, ring_ll128_sm100, nvlstree_sm100_n4):
    c = constants_for(version)
    assert c.hw_lat["NET"]["NVLSTree"][2] == nvlstree_net
    assert c.per_ch_ring_ll128[100] == ring_ll128_sm100
    assert c.per_ch_nvlstree[100][2] == nvlstree_sm100_n4
    assert c.nvls_min_gpus == (3 if version == "2.28.3" else 2)
    b200 = node(100, 18 * 40.1, nodes=2, nic=50.0, pcie=48.0)
    g = search_graphs(b200, c)
    # NVLSTree on 2 nodes: hwLat[NVLINK] 25 + 2 x log2(2) x hwLat[NET]
    assert nm.latency("all_reduce", "NVLSTree", "Simple", b200, g, c) == pytest.approx(25 + 2 * nvlstree_net)
