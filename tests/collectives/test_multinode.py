"""Multi-node mechanisms: which algorithms NCCL runs across nodes without SHARP, what the
NVLSTree kernel moves, and where the inter-node hop latency comes from."""

from dataclasses import replace
from pathlib import Path

import pytest

from embsim.collectives import CollectiveModel
from embsim.collectives import nccl_model as nm
from embsim.collectives import pipeline
from embsim.collectives.channels import search_graphs
from embsim.collectives.constants import constants_for
from embsim.collectives.multinode import (kernel_view, nic_tree_bw, nvls_node_bw, nvlstree_channel_cap,
                                         nvlstree_kernel_bw, nvlstree_stage_bw)
from embsim.errors import InputError
from embsim.topology import load_topology

ROOT = Path(__file__).resolve().parents[2]


def _shape(spec):
    model = CollectiveModel(load_topology(spec))
    n = model.topology.n_gpus
    return model, model.shape(tuple(range(n)))


def test_nvls_needs_collnet_across_nodes():
    """tuning.cc: NVLS on several nodes needs CollNet (SHARP); NVLSTree stays."""
    model, (shape, graphs) = _shape("dgx-h100:2x8")
    pairs = nm.default_enabled("all_reduce", shape, graphs, model.consts)
    assert ("NVLSTree", "Simple") in pairs and not any(a == "NVLS" for a, _ in pairs)
    one = CollectiveModel(load_topology("dgx-h100:1x8"))
    s1, g1 = one.shape(tuple(range(8)))
    assert ("NVLS", "Simple") in nm.default_enabled("all_reduce", s1, g1, one.consts)
    with pytest.raises(InputError, match="nothing NCCL can run"):
        CollectiveModel(load_topology("dgx-h100:2x8"), algo="NVLS").plan("all_reduce", 1 << 26, range(16))


def test_one_node_nvls_moves_heads_plus_one_chunks_per_heads_chunks_of_data():
    """A head sends its part of every head's multimem reduce plus its own multicast store,
    and receives its reduce's result plus every head's store: (H + 1) chunks each way per H
    chunks of data. Hand-derived on H100 (NCCL 2.30: 18 links x 20.6 GB/s, nvlsEfficiency
    0.85): 370.8 x 0.85 x H / (H + 1)."""
    newest = constants_for(None)
    for g, want in ((5, 262.65), (6, 270.16), (7, 275.78), (8, 280.16)):
        _, (shape, _) = _shape(f"dgx-h100:1x{g}")
        assert nvls_node_bw(shape, newest) == pytest.approx(want, abs=0.01)
    # NCCL's own search charges the same (H + 1) per head link (search.cc TryNvls: twice on
    # the head): its speed step on 370.8 GB/s is 60 for 4-5 heads (6 x 60 = 360), 50 for 6
    # (7 x 60 = 420 does not fit), 40 for 7-8 (8 x 50 = 400); 8 B200s on 721.8 take 80
    # (9 x 90 = 810 does not fit), an 8-link H800 on 164.8 takes 15 (9 x 20 = 180)
    for spec, want in (("dgx-h100:1x5", 60), ("dgx-h100:1x6", 50), ("dgx-h100:1x7", 40),
                       ("dgx-h100:1x8", 40), ("dgx-b200:1x8", 80), ("hgx-h800:1x8", 15)):
        _, (_, graphs) = _shape(spec)
        assert graphs.nvls.bw_intra == want, spec
    # more GPUs than NVLS heads (32): the heads are the bottleneck
    _, (rack, _) = _shape("gb200-nvl72:1x72")
    assert nvls_node_bw(rack, newest) == pytest.approx(rack.intra_bw * 0.74 * 32 / 33)
    # no NVSwitch, pre-Hopper, one GPU, or a table without the efficiency (<= 2.27): none
    _, (a100, _) = _shape("dgx-a100:1x8")
    assert nvls_node_bw(a100, newest) == 0.0
    _, (h100, _) = _shape("dgx-h100:1x8")
    assert nvls_node_bw(h100, constants_for("2.27")) == 0.0


def test_one_node_nvls_kernel_runs_at_the_traffic_model_rate():
    """The kernel's NVLS AllReduce bandwidth is nvls_node_bw on the file's links, not NCCL's
    tuning entry: 6 H100s are no faster per byte than 8 (nccl#1455)."""
    times = {}
    for g in (6, 8):
        model = CollectiveModel(load_topology(f"dgx-h100:1x{g}"), algo="NVLS")
        times[g] = model.plan("all_reduce", 8 << 30, range(g)).time
    assert times[6] > times[8] * 0.95      # algBw x 6/7 vs x 8/9: within 4 %
    assert times[6] == pytest.approx(times[8] * (8 / 9) / (6 / 7), rel=0.01)


def test_nvlstree_kernel_bw_is_min_of_node_nvls_and_nic_tree():
    _, (b200, _) = _shape("dgx-b200:2x8")
    intra, net = nvlstree_stage_bw(b200)
    assert net == pytest.approx(8 * b200.nic_path_bw)          # two nodes: the heads' NICs once
    assert nvlstree_kernel_bw(b200, constants_for(None)) == pytest.approx(min(intra, net))
    four = replace(b200, n_ranks=32, n_nodes=4)
    assert nic_tree_bw(four) == pytest.approx(net / 2)        # inner tree nodes feed two children
    # slower NICs move the bound, faster ones leave it at the node's NVLS or NCCL's
    # per-channel NVLSTree throughput, whichever is lower
    slow = replace(b200, nic_bw=b200.nic_bw / 4)
    assert nvlstree_kernel_bw(slow, constants_for(None)) < nvlstree_kernel_bw(b200, constants_for(None))
    fast = replace(b200, nic_bw=b200.nic_bw * 10, pcie_bw=b200.pcie_bw * 10)
    assert nvlstree_kernel_bw(fast, constants_for(None)) == pytest.approx(
        min(intra, nvlstree_channel_cap(fast, constants_for(None))))


def test_nvlstree_kernel_held_by_nccls_per_channel_cap():
    """2.28+ perChMaxNVLSTreeBws: Hopper 57.7 GB/s per channel on 2 nodes -- on 8 NVLS graph
    channels and 16 ranks 57.7 x 8 x 16/30 = 246 GB/s algBw, below one H100 node's NVLS."""
    _, (h100, graphs) = _shape("dgx-h100:2x8")
    newest = constants_for(None)
    cap = nvlstree_channel_cap(h100, newest)
    assert cap == pytest.approx(57.7 * graphs.nvls.n_channels * 16 / 30)
    intra, net = nvlstree_stage_bw(h100)
    assert cap < min(intra, net)
    assert nvlstree_kernel_bw(h100, newest) == pytest.approx(cap)
    # tables without the cap (<= 2.27) and one node leave it out
    assert nvlstree_channel_cap(h100, constants_for("2.27")) == float("inf")
    one = replace(h100, n_ranks=8, n_nodes=1)
    assert nvlstree_channel_cap(one, newest) == float("inf")


def test_nvlstree_chunk_follows_version():
    """2.21+: comm->nvlsChunkSize (128 KiB), 64 KiB on 4+ nodes; up to 2.20 the 512 KiB step."""
    new, old = constants_for("2.26"), constants_for("2.20")
    big = 1 << 34
    assert pipeline.nvls_chunk(big, 256, True, 2, 400, new) == 128 << 10
    assert pipeline.nvls_chunk(big, 256, True, 4, 400, new) == 64 << 10
    assert pipeline.nvls_chunk(big, 256, True, 2, 400, old) == 512 << 10
    assert pipeline.nvls_chunk(big, 256, True, 2, 400, constants_for("2.18")) == 512 << 10


def test_nvlstree_fill_is_cheaper_than_four_bottleneck_loops():
    consts = constants_for("2.26")
    args = ("all_reduce", 16 << 20, 32, 8, 2, 70.0, 384.0, consts)
    staged = pipeline.nvls(*args, tree_variant=True, stage_bw=(533.0, 384.0))
    lockstep = pipeline.nvls(*args, tree_variant=True)
    assert staged.transfer == pytest.approx(lockstep.transfer)
    assert staged.latency < lockstep.latency
    # the in-node stages at the node's NVLS rate; the network is the bottleneck, and a chunk
    # crosses it twice (up to the root, back down): the second crossing is fill
    full = staged.transfer
    assert staged.latency == pytest.approx(70.0 + 2 * full * 384.0 / 533.0 + full, rel=1e-9)


def test_nvlstree_fill_crosses_the_network_up_and_down_the_tree():
    from embsim.collectives.multinode import nvlstree_fill
    # network-bound: scatter/reduce and multicast/gather at half the time, two crossings
    two = nvlstree_fill(100.0, 300.0, (600.0, 300.0), 0.0, 2)
    assert two == pytest.approx(2 * 50.0 + 2 * 100.0 - 100.0)
    # four nodes: up and down two tree levels
    four = nvlstree_fill(100.0, 300.0, (600.0, 300.0), 0.0, 4)
    assert four == pytest.approx(two + 2 * 100.0)
    # NVLS-bound: the crossings are fill at the NICs' rate
    assert nvlstree_fill(100.0, 300.0, (300.0, 600.0), 0.0, 2) == pytest.approx(2 * 100.0 + 2 * 50.0 - 100.0)
    # a sync longer than a stage's data holds every stage
    assert nvlstree_fill(1.0, 300.0, (600.0, 300.0), 10.0, 2) == pytest.approx(4 * 10.0 - 10.0)


def test_tree_pays_network_store_and_forward():
    args = ("LL128", 1 << 20, 16, 2, 8, 50.0, 126.0, 1.0, 0.0)
    with_net = pipeline.tree(*args, net_rate=24.0)
    without = pipeline.tree(*args)
    assert with_net.latency > without.latency
    one_node = pipeline.tree("LL128", 1 << 20, 16, 1, 8, 50.0, 126.0, 1.0, 0.0, net_rate=24.0)
    assert one_node.latency == pytest.approx(50.0)


def _with_nics(tmp_path, latency, reported=None):
    text = (ROOT / "topologies" / "dgx-h100.yaml").read_text()
    lines = []
    for line in text.splitlines():
        if line.strip().startswith("latency_us:") and line.startswith("  latency_us"):
            line = f"  latency_us: {latency}"
            if reported is not None:
                line += f"\n  nccl_latency_us: {reported}"
        lines.append(line)
    path = tmp_path / f"h100-{latency}-{reported}.yaml"
    path.write_text("\n".join(lines) + "\n")
    return load_topology(f"{path}:2x8")


def test_nic_latency_reaches_the_kernel_and_reported_latency_reaches_nccls_choice(tmp_path):
    base = CollectiveModel(_with_nics(tmp_path, 0.6)).plan("all_reduce", 4096, range(16))
    slow = CollectiveModel(_with_nics(tmp_path, 20.6)).plan("all_reduce", 4096, range(16))
    # two network hops (up and down the tree), 20 µs more each
    assert slow.time - base.time == pytest.approx(40e-6, rel=1e-6)
    assert slow.model_time == pytest.approx(base.model_time)     # the IB plugin reports 0
    told = CollectiveModel(_with_nics(tmp_path, 0.6, reported=75.0))
    shape, _ = told.shape(tuple(range(16)))
    assert shape.nic_latency_us == 75.0 and kernel_view(shape).nic_latency_us == shape.net_hop_us
    assert told.plan("all_reduce", 4096, range(16)).model_time > base.model_time + 100e-6


def test_reported_latency_must_not_be_negative(tmp_path):
    with pytest.raises(InputError, match="nccl_latency_us"):
        _with_nics(tmp_path, 0.6, reported=-1)


def _with_sharp(tmp_path, value):
    text = (ROOT / "topologies" / "dgx-h100.yaml").read_text()
    text = text.replace("\nnetwork:\n", f"\nnetwork:\n  sharp: {value}\n", 1)
    path = tmp_path / f"h100-sharp-{value}.yaml"
    path.write_text(text)
    return load_topology(f"{path}:2x8")


def test_sharp_lets_nvls_span_nodes(tmp_path):
    model = CollectiveModel(_with_sharp(tmp_path, "true"))
    shape, graphs = model.shape(tuple(range(16)))
    pairs = nm.default_enabled("all_reduce", shape, graphs, model.consts)
    assert ("NVLS", "Simple") in pairs and ("NVLSTree", "Simple") in pairs
    plan = CollectiveModel(_with_sharp(tmp_path, "true"), algo="NVLS").plan("all_reduce", 1 << 26, range(16))
    assert plan.algo == "NVLS" and plan.time > 0
    with pytest.raises(InputError, match="sharp"):
        _with_sharp(tmp_path, "maybe")


def test_plugin_nic_grouping_is_nccls_view(tmp_path):
    """aws-p5: 32 x 100 Gb/s EFA, presented to NCCL as 8 devices of 400 Gb/s."""
    _, (p5, graphs) = _shape("aws-p5:2x8")
    assert p5.nics_per_node == 8 and p5.nic_bw == pytest.approx(50.0)
    assert graphs.nvls is not None and graphs.nvls.bw_inter >= 40
    text = (ROOT / "topologies" / "aws-p5.yaml").read_text().replace("nccl_group: 4", "nccl_group: 3")
    path = tmp_path / "p5-bad.yaml"
    path.write_text(text)
    with pytest.raises(InputError, match="nccl_group"):
        load_topology(f"{path}:2x8")


def test_tree_pays_the_proxy_hand_off_per_network_crossing(monkeypatch):
    from embsim.collectives import multinode
    args = ("LL", 65536, 16, 2, 8, 30.0, 20.0, 1.0, 0.0)
    monkeypatch.setattr(multinode, "PROXY_HANDOFF_US", 0.0)
    bare = pipeline.tree(*args, net_rate=24.0)
    monkeypatch.setattr(multinode, "PROXY_HANDOFF_US", 5.0)
    two = pipeline.tree(*args, net_rate=24.0)
    four = pipeline.tree("LL", 65536, 16, 4, 8, 30.0, 20.0, 1.0, 0.0, net_rate=24.0)
    assert two.latency == pytest.approx(bare.latency + 2 * 5.0)      # up and down one tree level
    assert four.latency - two.latency > 2 * 5.0                       # two levels: four crossings
    one_node = pipeline.tree("LL", 65536, 16, 1, 8, 30.0, 20.0, 1.0, 0.0, net_rate=24.0)
    assert one_node.latency == pytest.approx(30.0)


def test_proxy_hand_off_is_the_fit_on_its_named_curve():
    from embsim.collectives import fit_net, multinode
    here = fit_net.mean_error(multinode.PROXY_HANDOFF_US)
    assert here <= fit_net.mean_error(multinode.PROXY_HANDOFF_US - 0.5)
    assert here <= fit_net.mean_error(multinode.PROXY_HANDOFF_US + 0.5)


def test_tree_simple_kernel_bw_is_held_by_links_not_the_table():
    from embsim.collectives.model import CollectiveModel
    from embsim.collectives.multinode import tree_kernel_bw
    m = CollectiveModel(load_topology("gcp-a3-mega:2x8"))
    shape, _ = m.shape(tuple(range(16)))
    # 8 NICs x 25 GB/s, or each GPU's 370.8 GB/s NVLink carrying every byte up and down
    assert tree_kernel_bw(shape, 165.6) == pytest.approx(min(8 * 25.0, 370.8 / 2))
    one, _ = CollectiveModel(load_topology("gcp-a3-mega:1x8")).shape(tuple(range(8)))
    assert tree_kernel_bw(one, 123.0) == 123.0


def test_whole_step_tree_chunks_from_2_20_fill_slower():
    """2.20 dropped computeColl's Tree/Simple halving: a 16 MiB AllReduce on 2 nodes runs one
    512 KiB chunk per channel whose fill down the chain shows; 2.19 ran many small ones."""
    from embsim.collectives.model import CollectiveModel
    topo = load_topology("gcp-a3-mega:2x8")
    t = {v: CollectiveModel(topo, algo="Tree", proto="Simple", nccl_version=v).plan(
        "all_reduce", 16 << 20, range(16)).time for v in ("2.19", "2.20")}
    assert t["2.20"] > t["2.19"] + 200e-6      # 14 hops of a 512 KiB chunk at ~23 GB/s each


@pytest.mark.parametrize("spec, ranks, nics", [
    ("dgx-h100:2x8", range(16), 8),
    ("dgx-h100:10x1", range(10), 1),            # one GPU per node drives its own NIC only
    ("dgx-h100:4x2", range(8), 2),
    ("dgx-h100:2x8", [0, 8], 1),                # a 1-GPU-per-node sub-communicator
    ("dgx-h100:2x8", [0, 1, 8], 1),             # uneven: the node with fewest NICs sets the rings
    ("dgx1-v100:2x2", range(4), 1),             # GPUs 0 and 1 share one PCIe-switch NIC
    ("aws-p5:2x1", range(2), 1),                # 4 EFA NICs next to GPU 0, one NCCL device
])
def test_communicator_uses_the_nics_next_to_its_gpus(spec, ranks, nics):
    from embsim.collectives.shape import comm_shape
    topo = load_topology(spec)
    assert comm_shape(topo, list(ranks)).nics_per_node == nics


def test_one_gpu_per_node_allreduce_is_one_nics_rate():
    """10 x 1 H100 all_reduce measured 48.9 GB/s busbw at 16 GiB (one 400 Gb/s NIC each):
    the model must not hand the lone GPU the node's other seven NICs."""
    one = CollectiveModel(load_topology("dgx-h100:10x1"))
    eight = CollectiveModel(load_topology("dgx-h100:10x8"))
    size = 1 << 32
    t1 = one.plan("all_reduce", size, range(10)).time
    t8 = eight.plan("all_reduce", size, range(80)).time
    busbw1 = size / t1 * 2 * 9 / 10 / 1e9
    assert 40 < busbw1 < 50, busbw1
    assert t8 < t1


def test_hopper_doubles_compute_channels_across_nodes_when_a_ring_channel_is_fast():
    """connect.cc ncclTopoPostset: 4 compute channels per search channel on sm90+ across
    nodes when bwIntra > 45 GB/s and fewer than 16 channels; never on one node, and on
    Blackwell only from 2.25 (before, minCompCap == 90)."""
    from embsim.collectives.channels import Graph, compute_channels
    _, (h100, _) = _shape("dgx-h100:2x8")
    fast = Graph("ring", 4, 48.0, 48.0, "NVLINK")
    slow = Graph("ring", 4, 45.0, 45.0, "NVLINK")
    assert compute_channels(h100, fast, "2.26") == 16
    assert compute_channels(h100, slow, "2.26") == 8
    assert compute_channels(replace(h100, n_nodes=1, n_ranks=8), fast, "2.26") == 8
    b200 = replace(h100, arch=100)
    assert compute_channels(b200, fast, "2.24") == 8
    assert compute_channels(b200, fast, "2.25") == 16
    assert compute_channels(h100, Graph("ring", 8, 48.0, 48.0, "NVLINK"), "2.26") == 16
    assert compute_channels(h100, Graph("ring", 8, 48.0, 48.0, "NVLINK"), "2.19") == 32


def test_gb200_nics_are_shared_by_a_grace_pair(tmp_path):
    """gb200-nvl72: a NIC's closest path spans the two B200s of its Grace."""
    _, (shape, _) = _shape("gb200-nvl72:2x64")
    assert shape.nic_local_gpus == 2 and shape.ppn == 64
    text = (ROOT / "topologies" / "gb200-nvl72.yaml").read_text().replace("nccl_local_gpus: 2", "nccl_local_gpus: 0")
    path = tmp_path / "gb200-bad.yaml"
    path.write_text(text)
    with pytest.raises(InputError, match="nccl_local_gpus"):
        load_topology(f"{path}:2x64")


def test_ring_step_floor_only_across_nodes_and_for_ring_collectives():
    from embsim.collectives.multinode import ring_step_floor
    consts = constants_for("2.29")
    _, (one, _) = _shape("dgx-h100:1x8")
    _, (ten, _) = _shape("dgx-h100:10x8")
    assert ring_step_floor("all_gather", "LL128", one, consts) is None
    assert ring_step_floor("broadcast", "LL128", ten, consts) is None
    f = ring_step_floor("all_gather", "LL128", ten, consts)
    # every step but the nNodes-1 network hops NCCL prices itself; one message per LL128 step
    assert (f.steps, f.raised) == (79, 70)
    from embsim.collectives import multinode
    assert f.floor == pytest.approx(consts.hw_lat["NET"]["Ring"][1] + multinode.PROXY_HANDOFF_US)
    ar = ring_step_floor("all_reduce", "Simple", ten, consts)
    assert (ar.steps, ar.raised) == (158, 140)
    # two slices per Simple step: two hand-offs
    assert ar.floor == pytest.approx(consts.hw_lat["NET"]["Ring"][2] + 2 * multinode.PROXY_HANDOFF_US)
    # one GPU per node: every step is a network hop NCCL already prices
    _, (flat, _) = _shape("dgx-h100:10x1")
    assert ring_step_floor("all_reduce", "LL128", flat, consts).raised == 0


def test_ring_step_floor_is_a_rate_bound_that_data_hides():
    from embsim.collectives.multinode import RingStepFloor
    f = RingStepFloor(floor=10.0, steps=10, raised=8, base=2.0)
    # a loop whose steps carry 1 µs of data each: 7 µs short per raised step
    assert f.stall(1, 0.0, 10.0) == pytest.approx(8 * 7.0)
    # steps with 8 µs of data or more already take the floor
    assert f.stall(1, 0.0, 80.0) == 0.0
    assert f.stall(3, 200.0, 10.0) == pytest.approx(8 * 7.0)


def test_multi_node_ring_all_gather_pays_the_step_floor_at_small_sizes_only():
    """A small AllGather across nodes is bound by its step rate, a large one by its data."""
    from embsim.collectives.multinode import ring_step_floor
    model = CollectiveModel(load_topology("dgx-h100:10x8"), algo="Ring", proto="LL128", nccl_version="2.29")
    ranks = tuple(range(80))
    shape, graphs = model.shape(ranks)
    lat, bw = model._pair("all_gather", "Ring", "LL128", ranks, shape, graphs)
    floor = ring_step_floor("all_gather", "LL128", shape, model.consts)
    small = pipeline.collective_time("all_gather", "Ring", "LL128", 32 << 20, shape, graphs, model.consts, lat, bw)
    assert small.latency == pytest.approx(lat + floor.stall(1, 0.0, small.transfer))
    assert small.latency > lat + 0.5 * floor.raised * (floor.floor - floor.base)
    big = pipeline.collective_time("all_gather", "Ring", "LL128", 1 << 30, shape, graphs, model.consts, lat, bw)
    assert big.latency == pytest.approx(lat)
    one = CollectiveModel(load_topology("dgx-h100:1x8"), algo="Ring", proto="LL128", nccl_version="2.29")
    s1, g1 = one.shape(tuple(range(8)))
    l1, b1 = one._pair("all_gather", "Ring", "LL128", tuple(range(8)), s1, g1)
    assert pipeline.collective_time("all_gather", "Ring", "LL128", 32 << 20, s1, g1, one.consts, l1, b1).latency == l1


def test_ring_messages_per_step_are_the_slices_of_a_ring_chunk():
    from embsim.collectives.multinode import ring_messages_per_step
    for op in ("all_reduce", "all_gather", "reduce_scatter"):
        chunk_steps, slice_steps = pipeline.RING_STEPS[op]
        assert ring_messages_per_step("Simple") == chunk_steps // slice_steps
    assert ring_messages_per_step("LL") == ring_messages_per_step("LL128") == 1
