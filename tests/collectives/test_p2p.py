"""p2p warps per work (enqueue.cc finishWorkP2p <= 2.21, sendrecv.h >= 2.22), a warp's rate by
Little's law (bytes in flight / the fitted batch time in SM cycles) and the FIFO fill step."""

from pathlib import Path
import dataclasses

import pytest

from embsim.collectives import p2p
from embsim.collectives.constants import constants_for
from embsim.collectives import fit_p2p
from embsim.collectives.model import CollectiveModel
from embsim.topology import load_topology


@pytest.mark.parametrize("version,works,read,warps", [
    ("2.18", 1, True, 8), ("2.18", 1, False, 9),      # 2 groups: recv 8, send 8+1 of 10 each
    ("2.19", 4, True, 2), ("2.19", 4, False, 3),      # 8 groups of 2.5 warps
    ("2.21", 8, False, 1),                            # 16 groups: one warp each
    ("2.22", 1, True, 9), ("2.22", 1, False, 10),     # 20 warps: recv 9, send 10
    ("2.30", 4, False, 3), ("2.30", 8, True, 1), ("2.30", 8, False, 1),
])
def test_fabric_warps(version, works, read, warps):
    assert p2p.fabric_warps(works, constants_for(version), read) == warps


@pytest.mark.parametrize("arch,unroll", [(70, 4), (75, 4), (80, 8), (90, 8), (100, 8), (120, 6)])
def test_coll_unroll(arch, unroll):
    assert p2p.coll_unroll(arch) == unroll


def test_warp_rate_is_bytes_in_flight_over_the_batch_time_at_the_gpus_clock():
    h100 = CollectiveModel(load_topology("dgx-h100:1x8")).shape(tuple(range(8)))[0]
    a100 = CollectiveModel(load_topology("dgx-a100:1x8")).shape(tuple(range(8)))[0]
    assert (h100.sm_clock_mhz, a100.sm_clock_mhz) == (1980.0, 1410.0)
    batch_us = p2p.P2P_BATCH_CYCLES / 1980.0
    assert p2p.warp_gbps(h100) == pytest.approx(8 * 16 * 32 / batch_us / 1e3)
    assert p2p.warp_gbps(a100) / p2p.warp_gbps(h100) == pytest.approx(1410 / 1980)
    unknown = dataclasses.replace(h100, sm_clock_mhz=0.0)
    assert p2p.warp_gbps(unknown) == p2p.warp_gbps(h100)      # the reference (fit) clock


def test_sendrecv_below_64_mib_on_8_h100_moves_at_four_channels_of_ten_warps():
    model = CollectiveModel(load_topology("dgx-h100:1x8"))
    shape = model.shape(tuple(range(8)))[0]
    t = p2p.sendrecv_time(shape, model.consts, 32 << 20, 32)
    assert t.intra_bw == pytest.approx(4 * 10 * p2p.warp_gbps(shape), rel=0.01)   # far below the link
    # 8 MiB per channel = 16 steps of 512 KiB; the FIFO adds one step of transfer time
    assert t.latency > t.transfer / 16
    assert t.time == pytest.approx(t.latency + t.transfer)


def test_alltoall_at_8_gib_holds_8_works_per_channel_with_one_fabric_warp_each():
    model = CollectiveModel(load_topology("dgx-h100:1x8"))
    shape = model.shape(tuple(range(8)))[0]
    ch = p2p.p2p_channels(shape, model.consts, 32, 7)
    nch = p2p.op_channels((8 << 30) / 8, ch, 8, False)
    assert (ch.total, nch) == (32, 32)
    assert p2p.fabric_warps(8, model.consts, False) == 1
    bound = p2p.warp_bound_gbps(8, nch, ch.total, model.consts, False, p2p.warp_gbps(shape))
    assert bound == pytest.approx(7 * 32 * p2p.warp_gbps(shape))


def test_shipped_batch_time_is_the_fit_curves_grid_minimum():
    here = fit_p2p.mean_error(p2p.P2P_BATCH_CYCLES)
    assert here <= fit_p2p.mean_error(p2p.P2P_BATCH_CYCLES - 10)
    assert here <= fit_p2p.mean_error(p2p.P2P_BATCH_CYCLES + 10)
    assert here < 0.05


def test_p2p_step_drops_the_ring_read_round_trip():
    from embsim.collectives import pipeline
    model = CollectiveModel(load_topology("dgx-a100:1x8"))
    shape = model.shape(tuple(range(8)))[0]
    assert pipeline.p2p_read(shape)
    ring = pipeline.step_us("Simple", shape, model.consts)
    assert p2p.step_us("Simple", shape, model.consts) == pytest.approx(ring - pipeline.SYNC_US["Simple"])
    assert p2p.step_us("LL", shape, model.consts) == pipeline.step_us("LL", shape, model.consts)


def _mva(n, z, s):
    """Mean-value analysis of the same closed system (Reiser & Lavenberg), for comparison."""
    q = x = 0.0
    for k in range(1, n + 1):
        r = s * (1 + q)
        x = k / (z + r)
        q = x * r
    return x


@pytest.mark.parametrize("n", [1, 10, 80, 160, 320, 640])
def test_shared_link_is_the_closed_queue_of_warps_and_link(n):
    rate, link, b = 2.3, 370.0, 4096
    got = p2p.shared_link_gbps(n, rate, link, b)
    s = b / (1e3 * link)
    z = b / (1e3 * rate) - s
    assert got == pytest.approx(_mva(n, z, s) * b / 1e3, rel=1e-9)
    assert got <= min(n * rate, link) * (1 + 1e-12)


def test_shared_link_limits():
    assert p2p.shared_link_gbps(4, 2.3, 370.0, 4096) == pytest.approx(4 * 2.3, rel=1e-3)
    assert p2p.shared_link_gbps(2000, 2.3, 370.0, 4096) == pytest.approx(370.0, rel=1e-6)
    knee = p2p.shared_link_gbps(161, 2.3, 370.0, 4096)      # 161 x 2.3 = the link rate
    assert 0.9 * 370.0 < knee < 0.97 * 370.0                  # batches queue at the knee
    assert p2p.shared_link_gbps(0, 2.3, 370.0, 4096) == 0.0
    assert p2p.shared_link_gbps(3, 500.0, 370.0, 4096) == 370.0   # one warp fills the link


@pytest.mark.parametrize("spec, version, per_peer", [
    ("dgx-h100:10x1", "2.29", 2),   # max(1 local NIC, ceil(48/14)=4) -> 4, halved to fit 10 peers in 4 channels
    ("dgx-h100:10x8", "2.29", 1),   # 4, halved until 4 x ceil(80/8) fits the 16 p2p channels
    ("dgx-h100:2x8", "2.29", 4),    # the GPU's own NIC, not the node's 8
    ("dgx-h100:10x8", "2.28", 1),   # before 2.29: 2 halved while 2 x 80 > 4 x 16
    ("dgx-h100:2x8", "2.28", 2),
])
def test_network_channels_per_peer_follow_the_release(spec, version, per_peer):
    model = CollectiveModel(load_topology(spec), nccl_version=version)
    n = model.topology.n_gpus
    shape, graphs = model.shape(tuple(range(n)))
    ch = p2p.p2p_channels(shape, model.consts, graphs.comm_channels, 1)
    assert ch.per_peer == per_peer


def test_sendrecv_across_nodes_is_held_to_its_channels_not_the_nic():
    """10 x 1 H100 sendrecv measured 24.9 GB/s with a 48 GB/s NIC: 2 channels of ~14 GB/s."""
    model = CollectiveModel(load_topology("dgx-h100:10x1"), nccl_version="2.29")
    shape, graphs = model.shape(tuple(range(10)))
    size = 1 << 30
    t = p2p.sendrecv_time(shape, model.consts, size, graphs.comm_channels)
    gbps = size / t.time / 1e3
    assert 2 * p2p.P2P_PER_CHANNEL_NET_BW * 0.8 < gbps <= 2 * p2p.P2P_PER_CHANNEL_NET_BW
    assert t.inter_bw == pytest.approx(2 * p2p.P2P_PER_CHANNEL_NET_BW)


def test_network_bound_p2p_hides_the_gpu_side_step_syncs():
    """Across nodes the GPU's send warps and the net proxy are joined by an NCCL_STEPS FIFO:
    while the network carries the other steps in flight, the GPU's per-step flag/fence work
    is off the critical path, so a network-bound op takes max(syncs + fabric time, network
    time); NVLink-only ops keep their syncs in series."""
    size = 1 << 30
    model = CollectiveModel(load_topology("dgx-h100:10x8"), nccl_version="2.29")
    shape, graphs = model.shape(tuple(range(80)))
    t = p2p.sendrecv_time(shape, model.consts, size, graphs.comm_channels)
    sync = t.steps * p2p.step_us("Simple", shape, model.consts)
    intra_us = t.intra_bytes / (1000 * t.intra_bw)
    inter_us = t.inter_bytes / (1000 * t.inter_bw)
    assert inter_us > intra_us + sync * 0.5
    # the syncs cost only what the fabric side runs past the network: none here
    assert t.latency < 0.05 * sync and t.transfer == pytest.approx(inter_us)
    one = CollectiveModel(load_topology("dgx-h100:1x8"), nccl_version="2.29")
    s1, g1 = one.shape(tuple(range(8)))
    t1 = p2p.sendrecv_time(s1, one.consts, size, g1.comm_channels)
    assert t1.latency > t1.steps * p2p.step_us("Simple", s1, one.consts)   # in series


def test_a_faster_nic_never_slows_an_alltoall_across_nodes(tmp_path):
    # NCCL 2.29+ sizes channels per network peer from what getLocalNetCountByBw counts: the
    # GPU -> NIC path, which a Gen5 x16 hop caps at 48 GB/s. Sized from the raw NIC, an
    # 800 Gb/s NIC took 8 channels a peer (4 at 400), fewer peers ran at once, and a 16 MiB
    # AlltoAll on 2x8 H100 took 372 µs against 285 at 400 Gb/s.
    from embsim.collectives import CollectiveModel
    from embsim.topology import load_topology
    text = (Path(__file__).parents[2] / "topologies" / "dgx-h100.yaml").read_text()
    times = []
    for gbit in (400, 800, 1600):
        path = tmp_path / f"h100-nic{gbit}.yaml"
        path.write_text(text.replace("name: dgx-h100", f"name: h100-nic{gbit}")
                        .replace("  gbit: 400 ", f"  gbit: {gbit} "))
        model = CollectiveModel(load_topology(f"{path}:2x8"))
        times.append([model.plan("alltoall", size, range(16)).time for size in (16 << 20, 256 << 20)])
    assert times[1][0] <= times[0][0] and times[2][0] <= times[1][0]
    assert times[1][1] <= times[0][1] and times[2][1] <= times[1][1]
