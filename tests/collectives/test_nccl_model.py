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
