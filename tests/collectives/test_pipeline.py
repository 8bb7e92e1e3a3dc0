"""The pipeline model: NCCL's formula where that is exact, the kernel's steps elsewhere."""

import pytest

from embsim.collectives import CollectiveModel, pipeline
from embsim.collectives import nccl_model as nm
from embsim.collectives.constants import constants_for
from embsim.collectives.p2p import op_channels, p2p_channels
from embsim.topology import load_topology

A100 = tuple(range(8))


@pytest.fixture
def no_sync(monkeypatch):
    monkeypatch.setattr(pipeline, "step_us", lambda proto, shape, consts: 0.0)


def _ring(model, size, proto="Simple", version=None):
    shape, graphs = model.shape(A100)
    consts = constants_for(version) if version else model.consts
    lat = nm.latency("all_reduce", "Ring", proto, shape, graphs, consts)
    bw = nm.bandwidth("all_reduce", "Ring", proto, shape, graphs, consts)
    return pipeline.collective_time("all_reduce", "Ring", proto, size, shape, graphs, consts, lat, bw), lat, bw


def test_one_loop_without_syncs_is_nccls_formula(no_sync):
    model = CollectiveModel(load_topology("dgx-a100:1x8"), nccl_version="2.30")
    size = 24 * 8 * (1 << 21)              # exactly one full loop: 24 channels x 8 ranks x 2 MiB
    t, lat, bw = _ring(model, size)
    assert t.loops == 1
    assert t.time == pytest.approx(lat + size / (1000 * bw))


def test_loops_and_syncs_follow_the_chunk():
    model = CollectiveModel(load_topology("dgx-a100:1x8"), nccl_version="2.30")
    loop = 24 * 8 * (1 << 21)
    t, lat, _ = _ring(model, 8 << 30)
    assert t.loops == -(-(8 << 30) // loop) == 22
    assert t.n_sync == 22 * 15 * 2          # loops x (2n-1) primitives x 2 slices
    shape, _ = model.shape(A100)
    assert t.latency == pytest.approx(lat + t.n_sync * pipeline.step_us("Simple", shape, model.consts))


def test_ll128_rounding_only_before_2_20():
    model = CollectiveModel(load_topology("dgx-a100:1x8"))
    old, _, _ = _ring(model, 4 << 20, "LL128", "2.19")
    new, _, _ = _ring(model, 4 << 20, "LL128", "2.20")
    # 4 MiB over 8 ranks x 24 channels, each chunk rounded up to 2 grains of 19.2 KB: the
    # chunk-major layout fills 109.2 slots, so channel 0 holds chunks 0-4 and 5-7 are empty;
    # its busiest rank moves 2 x 5 full chunks, not 15 rounded ones
    exact = (4 << 20) / 192
    assert old.transfer / new.transfer == pytest.approx(2 * 5 * 38400 / (15 * exact), rel=1e-6)
    # at 16 MiB every slot of channel 0 is full: the rounded chunk is paid on all 15 steps
    old, _, _ = _ring(model, 16 << 20, "LL128", "2.19")
    new, _, _ = _ring(model, 16 << 20, "LL128", "2.20")
    assert old.transfer / new.transfer == pytest.approx(5 * 19200 / ((16 << 20) / 192), rel=1e-6)


@pytest.mark.parametrize("size,chunk", [(1 << 30, 128 << 10), (512 << 20, 64 << 10), (64 << 20, 64 << 10),
                                        (32 << 20, 32 << 10), (4 << 20, 16 << 10)])
def test_nvls_chunk_shrinks_with_size(size, chunk):
    consts = constants_for("2.18")
    assert pipeline.nvls_chunk(size, 16 * 8, False, 1, 400.0, consts) == chunk


def test_nvls_pays_a_handshake_per_loop_and_one_stage_of_fill():
    consts = constants_for("2.30")
    step, bw = 3.4, 300.0
    t = pipeline.nvls("all_reduce", 64 << 20, 16, 8, 1, 25.0, bw, consts, step=step)
    loop = 16 * 8 * t.chunk
    assert t.chunk == 64 << 10 and t.loops == (64 << 20) // loop
    # NCCL's bandwidth holds at its full 128 KiB chunk, handshake included
    full = 16 * 8 * (128 << 10)
    rate = full / (full / bw - 1000 * step)
    assert t.transfer == pytest.approx(t.loops * loop / (1000 * rate))
    assert t.latency == pytest.approx(25.0 + (t.loops + 1) * step + loop / (1000 * rate))
    big = pipeline.nvls("all_reduce", 8 << 30, 16, 8, 1, 25.0, bw, consts, step=step)
    assert big.chunk == 128 << 10
    assert (big.time - 25.0) == pytest.approx((8 << 30) / (1000 * bw), rel=2e-3)


def test_nvls_smaller_chunks_run_slower():
    # the 32 KiB chunks of 8-64 MiB pay the same handshake for a quarter of the data
    consts = constants_for("2.30")
    per_byte = {}
    for size in (16 << 20, 32 << 20, 128 << 20, 256 << 20, 2 << 30, 4 << 30):
        t = pipeline.nvls("all_reduce", size, 16, 8, 1, 25.0, 300.0, consts, step=3.4)
        per_byte.setdefault(t.chunk, []).append((size, t.time))
    slopes = {c: (b[1] - a[1]) / (b[0] - a[0]) for c, (a, b) in per_byte.items()}
    assert slopes[32 << 10] > slopes[64 << 10] > slopes[128 << 10]


@pytest.mark.parametrize("size,channels", [(64 << 20, 4), (128 << 20, 8), (256 << 20, 16), (1 << 30, 32)])
def test_p2p_parts_double_with_size(size, channels):
    model = CollectiveModel(load_topology("dgx-a100:1x8"))
    shape, graphs = model.shape(A100)
    ch = p2p_channels(shape, model.consts, graphs.comm_channels, 1)
    assert (ch.total, ch.per_peer, ch.chunk) == (32, 32, 512 << 10)
    assert op_channels(size, ch, 8, False) == channels


def test_fitted_sync_is_reproducible():
    from embsim.collectives.fit_sync import fit
    assert fit() == {p: pipeline.SYNC_US[p] for p in ("LL", "Simple")}


@pytest.mark.parametrize("spec,read", [("dgx-a100:1x8", True), ("dgx-h100:1x8", False), ("dgx-b200:1x8", False),
                                       ("pcie-rtx3090", False), ("dgx1-v100", False)])
def test_simple_step_is_nccls_hop_plus_the_read_round_trip(spec, read):
    topo = load_topology(spec)
    model = CollectiveModel(topo)
    shape, _ = model.shape(tuple(range(topo.n_gpus)))
    assert pipeline.p2p_read(shape) is read
    hop = model.consts.hw_lat[shape.intra_hw]["Ring"][2] / 2
    extra = pipeline.SYNC_US["Simple"] if read else 0.0
    assert pipeline.step_us("Simple", shape, model.consts) == pytest.approx(hop + extra)
    assert pipeline.step_us("LL", shape, model.consts) == pipeline.SYNC_US["LL"]


@pytest.mark.parametrize("size,channels", [(128 << 20, 8), (256 << 20, 16), (1 << 30, 16)])
def test_p2p_parts_capped_up_to_2_19(size, channels):
    # 2.18/2.19 scheduleP2pTasksToPlan: nChannelsMax halves while nChannelsMax*nRanks > 4*p2pnChannels
    model = CollectiveModel(load_topology("dgx-a100:1x8"), nccl_version="2.18")
    assert model.consts.p2p_max_channels_4x
    shape, graphs = model.shape(A100)
    ch = p2p_channels(shape, model.consts, graphs.comm_channels, 1)
    assert op_channels(size, ch, 8, False, max_channels_4x=True) == channels
    assert op_channels(size, ch, 8, True, max_channels_4x=True) <= ch.per_peer


def test_nvls_partial_loop_up_to_2_19_runs_on_few_channels():
    # 2.18/2.19 lay a loop out as channel blocks of nHeads x chunk: 128 KiB fits one
    # channel's block and waits on that channel alone; 2.20 spreads it over every channel.
    old, new = constants_for("2.18"), constants_for("2.20")
    assert not old.nvls_host_split and new.nvls_host_split
    t_old = pipeline.nvls("all_reduce", 128 << 10, 16, 8, 1, 23.0, 300.0, old)
    t_new = pipeline.nvls("all_reduce", 128 << 10, 16, 8, 1, 23.0, 300.0, new)
    assert t_old.chunk == t_new.chunk == 16 << 10
    assert t_old.transfer == pytest.approx(16 * t_new.transfer)


@pytest.mark.parametrize("bw", [1e-6, 1e12])
def test_nvls_handshake_longer_than_a_full_loop_keeps_nccls_bandwidth(bw):
    # a what-if table so fast that one handshake outlasts a full loop: the data rate stays
    # NCCL's bandwidth and every loop still pays its handshake
    consts = constants_for("2.30")
    t = pipeline.nvls("all_reduce", 1 << 30, 16, 8, 1, 25.0, bw, consts, step=3.4)
    assert t.transfer == pytest.approx((1 << 30) / (1000 * bw), rel=1e-3)
    assert t.latency >= 25.0 + t.loops * 3.4


def _h100_ring(op, size):
    model = CollectiveModel(load_topology("dgx-h100:1x8"), algo="Ring", nccl_version="2.29")
    shape, graphs = model.shape(A100)
    lat = nm.latency(op, "Ring", "Simple", shape, graphs, model.consts)
    bw = nm.bandwidth(op, "Ring", "Simple", shape, graphs, model.consts)
    t = pipeline.collective_time(op, "Ring", "Simple", size, shape, graphs, model.consts, lat, bw)
    return t, lat, bw, model.consts.hw_lat["NVLINK"]["Ring"][2]


@pytest.mark.parametrize("op", ["reduce_scatter", "all_gather", "all_reduce"])
def test_write_mode_handshake_hides_behind_the_other_slice(op):
    """P2P write (H100): a slice's handshake overlaps the other slice's data, so once a
    slice's data outlasts NCCL's per-hop latency the ring is NCCL's formula, loops and all."""
    big, lat, bw, hop = _h100_ring(op, 32 << 20)
    assert big.n_sync > 0 and big.latency == pytest.approx(lat)
    assert big.time == pytest.approx(lat + (32 << 20) / (1000 * bw))
    # a tiny message: every primitive step waits one whole handshake
    tiny, lat, _, _ = _h100_ring(op, 96 << 10)
    prims = pipeline.ring_primitives(op, 8)
    stall = tiny.latency - lat
    assert prims * hop * 0.9 < stall <= prims * hop


def test_hidden_handshake_stall_is_the_slack_of_the_other_slice():
    # 2 slices of 1 µs against a 3.4 µs hop: each of 8 steps waits 2.4 µs; 1 µs slices of a
    # 1-slice step hide nothing
    assert pipeline.hidden_handshake_stall(3.4, 8, 2, 1, 16.0, 16.0) == pytest.approx(8 * 2.4)
    assert pipeline.hidden_handshake_stall(3.4, 8, 1, 1, 8.0, 8.0) == pytest.approx(8 * 3.4)
    assert pipeline.hidden_handshake_stall(3.4, 8, 2, 3, 80.0, 16.0) == pytest.approx(8 * 2.4)


def test_read_mode_keeps_the_handshake_in_series():
    """A100 (P2P read): every slice pays the handshake and the read round trip (the fit)."""
    model = CollectiveModel(load_topology("dgx-a100:1x8"), nccl_version="2.18")
    t, lat, _ = _ring(model, 32 << 20)
    shape, _ = model.shape(A100)
    assert t.latency == pytest.approx(lat + t.n_sync * pipeline.step_us("Simple", shape, model.consts))


def test_tree_ll128_chunk_counts_whole_chunks_as_nccl_does():
    """enqueue.cc compares nBytes / (nChannels * chunkSize) in integers: 8.45 chunks per
    channel is 8, under nstepsLL128 = 1 + log2(2) + 0.1 x 64 = 8.4, so the chunk halves."""
    from embsim.collectives.pipeline import BUFF_BYTES, NCCL_STEPS, tree_chunk
    step = BUFF_BYTES["LL128"] // NCCL_STEPS
    halved = tree_chunk(8.45 * step, 1, 64, "LL128", 2, 64)
    assert halved == (step // 2) // 16 * 15
    assert tree_chunk(9 * step, 1, 64, "LL128", 2, 64) == step // 16 * 15
