import json

import numpy as np
import pytest

from embsim.cli import main
from embsim.collectives import CollectiveModel
from embsim.collectives.validation import validate_all
from embsim.errors import InputError
from embsim.topology import load_topology


@pytest.fixture(scope="module")
def h100x2():
    return load_topology("dgx-h100:2x8")


def _check_invariant(plan, topo):
    if len(plan.demand):
        assert plan.latency + plan.demand.bottleneck_time(topo.capacity) == pytest.approx(plan.time, rel=1e-12)
    else:
        assert plan.latency == pytest.approx(plan.time)


@pytest.mark.parametrize("op", ["all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce",
                                "alltoall", "sendrecv"])
@pytest.mark.parametrize("size", [4096, 1 << 20, 256 << 20])
def test_demand_scaling_invariant(h100x2, op, size):
    model = CollectiveModel(h100x2)
    plan = model.plan(op, size, range(16))
    _check_invariant(plan, h100x2)
    # the pipeline drops NCCL's empirical Tree correction, so it may beat NCCL's own
    # prediction, but never by the factor a lost mechanism would
    assert plan.time >= 0.5 * plan.model_time
    assert model.plan(op, size, range(16)) is plan          # cached


def test_forced_algorithms_have_demands(h100x2):
    for algo in ("Ring", "Tree", "NVLSTree"):
        plan = CollectiveModel(h100x2, algo=algo).plan("all_reduce", 64 << 20, range(16))
        assert plan.algo == algo
        _check_invariant(plan, h100x2)
        assert plan.demand.total > 0


def test_small_messages_simulated_slower_than_model():
    topo = load_topology("dgx-a100:1x8")
    plan = CollectiveModel(topo).plan("all_reduce", 64 << 10, range(8))
    assert plan.time > plan.model_time                       # runtime trimming: 2 of 24 channels


def test_alltoallv_matches_uniform_alltoall(h100x2):
    model = CollectiveModel(h100x2)
    n, size = 16, 64 << 20
    m = np.full((n, n), size / n)
    np.fill_diagonal(m, 0)
    v = model.plan_alltoallv(m, range(n))
    u = model.plan("alltoall", size, range(n))
    assert v.time == pytest.approx(u.time, rel=1e-6)
    _check_invariant(v, h100x2)
    skew = m.copy()
    skew[:, 9] *= 4                                          # a hot receiver is slower
    assert model.plan_alltoallv(skew, range(n)).time > v.time
    with pytest.raises(InputError):
        model.plan_alltoallv(np.ones((3, 3)), range(n))


def test_measured_override(h100x2):
    sizes, times = [1 << 20, 1 << 30], [1e-4, 1e-2]
    model = CollectiveModel(h100x2, measured={("all_reduce", 16): (sizes, times)})
    mid = model.plan("all_reduce", 1 << 25, range(16))
    assert mid.source == "measured"
    assert mid.time == pytest.approx(np.exp(np.interp(25, [20, 30], np.log(times))))
    _check_invariant(mid, h100x2)
    assert model.plan("all_gather", 1 << 25, range(16)).source == "model"


def test_large_rank_count_is_fast():
    topo = load_topology("dgx-h100:128x8")
    model = CollectiveModel(topo)
    ranks = range(1024)
    for op in ("all_reduce", "alltoall"):
        _check_invariant(model.plan(op, 64 << 20, ranks), topo)


def point_bounds(name: str, maxima: list[float]) -> dict[str, tuple[float, float]]:
    """Bounds of a points file's entries name[0], name[1], ...: one point's mean is its max."""
    return {f"{name}[{i}]": (m, m) for i, m in enumerate(maxima)}


# Per curve: (mean, max) |sim/meas - 1| over sizes >= 64 KiB, at the level the model
# reaches (docs/validation.md), so that a regression fails here. The target is
# 5 % / 15 %; the curves above it are the gaps docs/validation.md names.
CURVE_BOUNDS = {
    "azure-nd-a100-v4-allreduce": (0.075, 0.31),      # A100 LL128 2-16 MiB 12-31 % fast (~0.66 of NCCL's LL128 bw)
    "azure-nd-h100-v5-allreduce": (0.04, 0.125),      # NVLS 8-16 MiB (32 KiB chunks) 10 % fast
    # the one-node NVLS traffic model (multinode.nvls_node_bw: H / (H + 1) of the links, NCCL's
    # 2.20+ 20.6 GB/s per link) puts 8 GPUs 2 % above NCCL's tuning entry: 3.0/7.6 -> 3.8/9.4 %
    "azure-nd-h200-v5-allreduce": (0.038, 0.095),
    # loosened 0.07/0.15 -> 0.095/0.175 by the ring handshake overlap (pipeline.py), which the
    # H100 2.29 curves show: Ring/Simple 32 MiB - 1 GiB now 7-17 % fast on this B200 tray
    "azure-nd-gb200-v6-allreduce": (0.095, 0.175),    # LL/LL128 at 1-16 MiB, Ring/Simple 32 MiB-1 GiB
    # B200 NVLS saturation + ~480 µs fixed cost. 13.1/27.1 -> 21.6/34.1 % with the NVLS traffic
    # model (32 heads of 72: 721.8 x 0.74 x 32/33), which fits 8 B200s (nccl#1807) to 0.3 %: the
    # rack runs 17 % below it, unexplained (NCCL's speed-step formula had hidden part of it)
    "coreweave-gb200-nvl72-allreduce": (0.216, 0.342),
    "stas00-8xa100-allreduce": (0.15, 0.476),         # 0.5-4 MiB, unexplained; (0.175, 0.52) on 2.30 before it was dated (2023-12-15: 2.19.4)
    # Held-out curves, added after the model was built and not used to tune it: bounds at
    # the level it reaches there, so that the gaps stay visible and cannot grow unnoticed.
    # 2 nodes over EFA: Tree/LL 64 KiB 26 % fast; 0.085 -> 0.08 by the ring step floor (32 MiB
    # 23 % fast -> 20 % fast); LOOSENED 0.08 -> 0.082 when dated (2024-04-19: 2.21.5, not 2.30);
    # 0.082 -> 0.075 by 2.21's Ring AllReduce latency (2 x nNodes network steps, tuning.cc
    # v2.21.5-1:161): 32 MiB is Tree/LL128, 6 % slow (was Ring/LL128, 20 % fast)
    "aws-p5-2node-allreduce": (0.075, 0.265),
    # TCPXO profile (Ring,Tree / Simple, NCCL_BUFFSIZE 8 MiB): 1 MiB Tree/Simple chunks (2.20+) fill the
    # chain and the NICs store-and-forward; 128 KiB 14 % fast, >= 512 MiB 5 % slow
    "gcp-a3-mega-2node-allreduce": (0.055, 0.115),   # s2-mn r2: chain rounds 5.7/13.6 -> 5.5/11.4; chain hops at the one-node rate 5.4
    # NVLSTree held by one rack's NVLS (B200 saturation, 15.9/20.8 -> 23.9/28.0 % with the NVLS
    # traffic model, as the one-rack curve); 2.26's 14 µs NVLSTree hop
    "coreweave-gb200-2rack-allreduce": (0.239, 0.281),
    # TCPXO: 8-128 MiB 1.2-2.2x fast, >= 512 MiB within 4 %; 0.215 -> 0.22 when the profile's
    # NCCL_BUFFSIZE 8 MiB reached the model (4 MiB ring chunks: half the slices' handshakes
    # at the sizes this run is already slow at; run -b is within 5 % there)
    "gcp-a3-mega-2node-allgather": (0.111, 0.401),    # 0.22/0.55 -> ring step floor (multinode.ring_step_floor): 64-128 MiB 29-40 % fast
    # second run (LL128 env profile): 16-32 MiB 19-20 % fast (ring step floor: 42 -> 20 %).
    # LOOSENED 0.055 -> 0.058 (2026-12-05): the preset now carries the TCPXO profile's 8 MiB
    # NCCL_BUFFSIZE, which the LL128 profile also sets and its how: line did not spell out
    "gcp-a3-mega-2node-allgather-b": (0.058, 0.202),
    # 2-node B200: NVLSTree 8-64 MiB up to 11 % fast. LOOSENED 0.113 -> 0.195 (s8-tune): 2.28.3's own
    # tuning table (hwLat[NET][NVLSTree] 14, not 2.28.9's 20.9; constants.NCCL_2_28_3), which the
    # kernel's fill follows as every release's does: same picks, 8 MiB 11 -> 19 % fast
    "gcp-a4-2node-allreduce": (0.057, 0.195),
    "lambda-b200-2node-allreduce": (0.11, 0.44),      # 2-node B200 (2.26 tables): 0.5-4 MiB flat ~115-125 µs, 20-44 % fast
    "nebius-h100-2node-allreduce": (0.07, 0.204),     # FIT curve of multinode.PROXY_HANDOFF_US; NVLSTree 8 MiB 19 % slow
    # Held-out single-node curves (NCCL 2.29.2 H100 SLURM node; OCI A100 40GB, -g 8)
    "h100-slurm-1x8-alltoall": (0.055, 0.095),        # 256-512 MiB 8-9 % fast (4 channels per peer below link rate)
    "h100-slurm-1x4-alltoall": (0.035, 0.07),         # 512 MiB 7 % fast
    "h100-slurm-1x8-sendrecv": (0.025, 0.04),         # the FIT curve of p2p.P2P_BATCH_CYCLES; >= 512 MiB 3 % slow
    "h100-slurm-1x4-sendrecv": (0.027, 0.04),         # 256 MiB 4 % fast, >= 512 MiB 3 % slow
    "h100-slurm-1x8-all-gather": (0.035, 0.08),       # informed the handshake overlap; 32 MiB 8 % fast
    "h100-slurm-1x8-reduce-scatter": (0.028, 0.06),   # informed the handshake overlap; 128 MiB 6 % fast
    # NCCL 2.9.9 (horovod's CUDA 11.3 image), run on 2.18's table: max 45.1 -> 46.5 %
    "oci-bm-gpu4-8-allreduce": (0.16, 0.47),          # A100 LL/LL128 0.5-16 MiB 24-47 % fast (as stas00)
    # 2019 (NCCL <= 2.4.8 by the page's date): no LL128 (releases.py), 2.18's tables stand in;
    # 2.4's size threshold picks LL up to 1.5 MiB (legacy.py; 1 MiB was Ring/Simple, 29 % slow,
    # now LL 9 % fast): LL 64-256 KiB 13-24 % fast, 128 MiB 11 % slow (> NCCL's 6 x 20 GB/s)
    "dgx1-v100-allreduce": (0.096, 0.24),
    # 2x RTX 2080 Ti behind one Gen3 switch, P2P unavailable (host-staged, SHM), NCCL version
    # not given. One-way ops (one transfer up the switch uplink) sit at NCCL's 12 GB/s PCI rate;
    # two-way ops share the uplink (CommShape.host_share) and are still ~1.5x fast at >= 1 MiB:
    # the pair delivers 4 GB/s each way where half the uplink is 6. Unexplained.
    # s4-search: NCCL's search replayed link by link (pci_rings) gives the pair 1 ring at
    # 5 GB/s, not 12, so NCCL's tuner picks Simple from 64 KiB where it picked LL: Broadcast
    # 0.053 / 0.082 -> 0.061 / 0.195 and Reduce 0.059 / 0.147 -> 0.070 / 0.296 (64 KiB Simple
    # 19 / 29 % slow), AllGather 0.413 -> 0.395 (held out: reported, not tuned).
    "autodl-2x2080ti-p2poff-broadcast": (0.061, 0.195),
    "autodl-2x2080ti-p2poff-reduce": (0.070, 0.296),  # 64 KiB Simple 29 % slow
    "autodl-2x2080ti-p2poff-all-reduce": (0.296, 0.339),
    "autodl-2x2080ti-p2poff-all-gather": (0.395, 0.47),
    "autodl-2x2080ti-p2poff-alltoall": (0.168, 0.237),
}
# Large-message single points: within 10 %, except the 8-GPU AlltoAlls of NVIDIA's GTC25
# slide (NCCL version not given): the warps could outrun NVLink, so the model runs at the
# link rate, and the slide's A100 210 and H100 320 GB/s are 0.875 and 0.86 of it (10.8 and
# 11.8 %); the held-out 2.29.2 H100 curve reaches 348 (0.95). Unexplained.
# Held-out Azure NC A100 v4 AllGather (4 A100 PCIe, bridged pairs, 32 MiB): 25.86 GB/s busbw
# over PCIe Gen4 hops where the model's PCIe kernel rate is NCCL's own 24 (x16 x 120 / 80):
# 10.4 % slow.
POINT_BOUNDS = {"single-points[3]": 0.11, "single-points[4]": 0.12, "single-points[10]": 0.105}


def test_validation_targets():
    results = {c.name: c for c in validate_all()}
    assert set(CURVE_BOUNDS) <= set(results)
    for name, (mean, worst) in CURVE_BOUNDS.items():
        assert results[name].mean_error <= mean, (name, results[name].mean_error)
        assert results[name].max_error <= worst, (name, results[name].max_error)
    for name, c in results.items():
        if name.startswith("single-points"):
            assert c.max_error <= POINT_BOUNDS.get(name, 0.10), (name, c.system, c.max_error)
        else:
            assert name in CURVE_BOUNDS, f"{name}: new curve without a bound"


def test_tcpxo_allreduce_runs_with_its_env_profile():
    """The A3 Mega AllReduce passed the TCPXO env profile's NCCL_* settings on (HOST_VARS):
    validate must run NCCL's choice within NCCL_ALGO=Ring,Tree and NCCL_PROTO=Simple."""
    from embsim.collectives.validation import DATA_DIR, curve_errors
    c = curve_errors(DATA_DIR / "gcp-a3-mega-2node-allreduce.yaml")
    assert {p.proto for p in c.points} == {"Simple"}
    assert {p.algo for p in c.points} <= {"Ring", "Tree"}
    # the second AllGather ran the LL128 profile: NCCL_PROTO=Simple,LL128
    b = curve_errors(DATA_DIR / "gcp-a3-mega-2node-allgather-b.yaml")
    assert {p.proto for p in b.points} <= {"Simple", "LL128"}


def test_tcpxo_allgather_runs_differ_only_below_512mib():
    """The two A3 Mega AllGather runs share the day, image and NCCL (2.23.4) and differ only
    in the env profile (Simple vs Simple,LL128 and each one's unpublished tuner config): from
    512 MiB they agree within 1.5 %, below it the LL128 run is 1.4-2.4x faster. What the
    docs say about them (a protocol choice, not a network state) rests on this."""
    from embsim.yamlio import load_yaml
    from embsim.collectives.validation import DATA_DIR
    a = load_yaml(DATA_DIR / "gcp-a3-mega-2node-allgather.yaml").data
    b = load_yaml(DATA_DIR / "gcp-a3-mega-2node-allgather-b.yaml").data
    assert a["nccl"] == b["nccl"] == "2.23.4"
    for size, t in a["time_us"].items():
        ratio = t / b["time_us"][size]
        if size >= 512 << 20:
            assert abs(ratio - 1) < 0.015, size
        else:
            assert 1.1 < ratio < 2.5, size


def test_cli_table_and_json(capsys):
    assert main(["nccl-tests", "--topology", "dgx-h100:1x8", "-b", "1K", "-e", "1G", "-f", "32"]) == 0
    out = capsys.readouterr().out
    assert "busbw" in out and "NVLS" in out and "Ring" in out
    assert main(["nccl-tests", "--topology", "dgx-a100:2x8", "--op", "all_gather", "-b", "8",
                 "-e", "1M", "-d", "half", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["ranks"] == 16 and doc["op"] == "all_gather"
    assert set(doc["rows"][0]) == {"size", "count", "type", "time_us", "algbw", "busbw", "algo", "proto"}
    assert all(r["size"] % (16 * 2) == 0 for r in doc["rows"])


@pytest.mark.parametrize("args", [["--op", "nope"], ["-b", "12Q"], ["-f", "1"], ["--algo", "Fast"],
                                  ["--proto", "LL256"], ["-d", "float7"], ["--nccl-version", "3.1"],
                                  ["-b", "1M", "-e", "1K"]])
def test_cli_bad_flags_exit_2(capsys, args):
    assert main(["nccl-tests", "--topology", "dgx-h100:1x8"] + args) == 2
    err = capsys.readouterr().err
    assert err.startswith("embsim: error:") and err.count("\n") == 1


# Held-out multi-node curves (s2-mn round 3), at the achieved level + 0.5 %. Known gaps, reported:
# 10x1/10x8 SendRecv (2 / 1 net channels per peer at NCCL's 14 GB/s: measured 12.4 / 15.2 GB/s per channel), 10x8 AllGather/ReduceScatter LL128 at
# 128-256 MiB on 80 ranks (32-64 MiB within 1-16 % since the ring step floor), GB200 across NVL72 racks (CoreWeave 20 racks: NVLSTree 2x fast; OCI 2 x 64, NVLS off: Tree).
CURVE_BOUNDS.update({
    "coreweave-gb200-20rack-allreduce": (0.639, 0.694),   # 0.611/0.681 before the NVLS traffic model
    "h100-slurm-10x1-all-reduce": (0.067, 0.134),
    "h100-slurm-10x1-sendrecv": (0.117, 0.127),   # 2 net channels at 14 GB/s: 28 vs 24.9 measured
    "h100-slurm-10x2-all-reduce": (0.073, 0.106),
    "h100-slurm-10x4-all-reduce": (0.087, 0.166),
    "h100-slurm-10x8-all-gather": (0.103, 0.384),      # ring step floor; 256 MiB LL128 38 % fast
    "h100-slurm-10x8-all-reduce": (0.072, 0.126),
    "h100-slurm-10x8-alltoall": (0.066, 0.171),
    "h100-slurm-10x8-reduce-scatter": (0.131, 0.402),  # ring step floor; 128-256 MiB LL128 27-40 % fast
    "h100-slurm-10x8-sendrecv": (0.092, 0.098),
    # run with NCCL_NVLS_ENABLE=0 (its manifest): Ring/Simple >= 4 GiB within 3.5 %; Tree/LL
    # 1 KiB-512 KiB and Tree/LL128 1-256 MiB 16-48 % fast on the 64-GPU chain; Tree/Simple at
    # 512 MiB-2 GiB: 2 MiB steps store-and-forwarded down 64-GPU chains, rotated per NIC GPU
    # and alternating direction on GB200's Grace pairs (tree_chain.py; s2-mn 2026-12-02,
    # 54.0 / 423.3 -> 28.8 / 101.8 %): 1 GiB within 8.4 %, 512 MiB / 2 GiB 2x / 1.45x slow
    "oci-gb200-2rack-128gpu-allreduce": (0.290, 1.024),
})


# Held-out systems found on 2026-12-02 (embsim/validation_data/ext-*.yaml), at the level reached
# on first contact + 0.5 % (nothing tuned on them; docs/validation.md "Held-out systems (ext-*)").
CURVE_BOUNDS.update({
    # Alps GH200 2x4 over Slingshot (NCCL_PROTO=^LL128): 64 KiB-1 MiB 29-81 % fast (the
    # libfabric/CXI small-message cost), 2-128 MiB Tree/Simple 1-13 % fast
    "ext-alps-gh200-2x4-allreduce": (0.225, 0.658),   # ring step floor: Ring/LL 128 KiB now 63 % slow, 512 KiB 65 % fast
    # AWS p5 HyperPod (NCCL 2.27.7, aws-ofi-nccl tuner): AlltoAll >= 512 MiB 6-16 % fast on 2-32
    # nodes (the model's per-GPU EFA rate 0.90-0.95 of 4 x 100 Gb/s, measured 0.80-0.85)
    "ext-aws-p5-2x8-alltoall": (0.089, 0.118),
    "ext-aws-p5-4x8-alltoall": (0.124, 0.379),
    "ext-aws-p5-8x8-alltoall": (0.1, 0.274),
    "ext-aws-p5-16x8-alltoall": (0.094, 0.134),
    "ext-aws-p5-32x8-alltoall": (0.099, 0.158),
    # AllGather: the per-step cost across EFA (Ring/LL128 32-128 MiB 36-56 % fast) is the ring
    # step floor (multinode.ring_step_floor, s2-mn 2026-12-02 morning); left: 2x8 32 MiB and
    # Simple 256 MiB 24-25 % fast, 4-16x8 at 256 MiB-1 GiB 17-20 % fast. AllReduce
    # NVLSTree 10-42 % fast on 32 nodes; AWS's tuner plugin choice is not modelled
    "ext-aws-p5-2x8-all-gather": (0.125, 0.251),
    "ext-aws-p5-4x8-all-gather": (0.099, 0.207),
    "ext-aws-p5-8x8-all-gather": (0.092, 0.205),
    "ext-aws-p5-16x8-all-gather": (0.061, 0.192),
    "ext-aws-p5-32x8-all-gather": (0.056, 0.184),
    "ext-aws-p5-2x8-all-reduce": (0.042, 0.224),
    "ext-aws-p5-32x8-all-reduce": (0.221, 0.419),
    # on > 2 nodes aws-ofi-nccl's region tuner picks (ofi_tuner.py; s2-p2p mntree 2026-12-02):
    # Ring/LL128 plateaus right, means 7.8/11.4/16.1/22.0 -> 5.3/7.3/10.8/20.4 % (with the ring
    # step floor); the 4-node 64 MiB point is the tuner's Ring/LL128 (-17.5 %, was Tree/LL128)
    "ext-aws-p5-4x8-all-reduce": (0.053, 0.176),
    "ext-aws-p5-8x8-all-reduce": (0.074, 0.195),
    "ext-aws-p5-16x8-all-reduce": (0.109, 0.205),
    "ext-aws-p5-32x8-all-reduce": (0.205, 0.419),
    # single points: H800 NVLS (8 links); H200 2.20.3 NVLS; H100 Ring 2/8 GPUs; H100 NVLS on 5-8
    # GPUs. Before the one-node NVLS traffic model (multinode.nvls_node_bw) H800 was 9.5 % and
    # 6 / 7 GPUs 13 / 9 % fast (NCCL's speed-step formula); now 1.1 / 1.8 / 2.2 %, with the
    # 8-GPU H200 point 0.3 -> 2.6 % (NCCL 2.20's 20.6 GB/s per link)
    **point_bounds("ext-points", [0.012, 0.026, 0.023, 0.024, 0.004, 0.019, 0.023, 0.016]),
})


# Second round of held-out systems found on 2026-12-02 (embsim/validation_data/ext2-*.yaml), at
# the level reached on first contact x 1.005 (simulated as they are, nothing tuned on them;
# docs/validation.md "Held-out systems, second round (ext2-*)").
CURVE_BOUNDS.update({
    # one process drives 8 A100 40GB (-g 8, NCCL 2.29.3, Modal): Ring/LL 64 KiB-1 MiB 26-36 % and
    # Ring/LL128 4-16 MiB 38-42 % fast, the shape of stas00's -g 8 curve; Simple >= 32 MiB 4-16 %
    "ext2-modal-a100-40gb-1x8-g8-all-reduce": (0.26, 0.42),
    # 2x XE9680 (NCCL 2.26.2): Tree/LL 64-256 KiB 25-42 % slow, NVLSTree 2-8 MiB 12-31 % slow,
    # >= 32 MiB within 6 %
    "ext2-xe9680-h100-2x8-all-reduce": (0.111, 0.418),
    # one H100 cluster over NDR IB, 2/4/8 nodes, release not given: NVLSTree 4-32 MiB 7-45 %
    # slow; on 4 and 8 nodes >= 256 MiB 7-21 % fast (plateau 325 / 321 GB/s, modelled 361)
    "ext2-h100-ib-2x8-all-reduce": (0.049, 0.157),       # (0.066, 0.248) on 2.30 before it was dated (2.27.5)
    "ext2-h100-ib-4x8-all-reduce": (0.127, 0.37),
    "ext2-h100-ib-8x8-all-reduce": (0.124, 0.41),
    "ext2-h100-1x8-g8-all-reduce": (0.045, 0.083),        # NVLS 128 MiB 8 % fast (5.7 before the NVLS traffic model)
    "ext2-h100-1x8-ring-reduce-scatter": (0.018, 0.032),
    "ext2-points[0]": (0.016, 0.016),                      # XE9680 NVLS 16 GiB
    "ext2-points[1]": (0.026, 0.026),                      # XE9680 NVLS off (Ring) 16 GiB
    # the 10-node H100 SLURM cluster's tables not packaged before (NCCL 2.29.2, 1/2/4 GPUs per
    # node) and one 2-node pair of its pairwise sweep: Ring/Simple AllGather/ReduceScatter at
    # 32-512 MiB 13-19 % slow (the smallest sizes of each curve), p2p within 10 %
    "ext2-h100-slurm-10x1-all-gather": (0.054, 0.181),
    "ext2-h100-slurm-10x1-alltoall": (0.071, 0.083),
    "ext2-h100-slurm-10x1-reduce-scatter": (0.056, 0.186),
    "ext2-h100-slurm-10x2-all-gather": (0.073, 0.146),
    "ext2-h100-slurm-10x2-alltoall": (0.056, 0.063),
    "ext2-h100-slurm-10x2-reduce-scatter": (0.065, 0.149),
    "ext2-h100-slurm-10x2-sendrecv": (0.098, 0.101),
    "ext2-h100-slurm-10x4-all-gather": (0.071, 0.134),
    "ext2-h100-slurm-10x4-alltoall": (0.038, 0.052),
    "ext2-h100-slurm-10x4-reduce-scatter": (0.072, 0.134),
    "ext2-h100-slurm-10x4-sendrecv": (0.06, 0.064),
    "ext2-h100-slurm-2x8-alltoall": (0.024, 0.024),
    "ext2-h100-slurm-2x8-sendrecv": (0.045, 0.045),
})


# Points found on 2026-12-02 (fourth session) while testing the one-node NVLS traffic model
# (embsim/validation_data/ext3-points.yaml): 8x B200 NCCL 2.27.1 830 busBw (nccl#1807) is
# 0.3 % off; NCCL's speed-step formula, which the kernel used before, gave 10.6 %.
CURVE_BOUNDS.update({
    "ext3-points[0]": (0.005, 0.005),
})


# Held-out systems found on 2026-12-02 (fifth session, helper s7-data: embsim/validation_data/
# ext4-*.yaml), at the level reached on first contact x 1.005, nothing tuned on them. The
# one-process (-g 8) H100 Ring curves sit on a ~35 us floor up to 2-4 MiB (the model's Ring/LL
# 18-21 us: 39-46 % fast), as stas00's and Modal's -g 8 A100 curves do.
CURVE_BOUNDS.update({
    # s8-tune: <= 2.22's Ring AllReduce latency counts 2 x nNodes network steps (tuning.cc
    # v2.22.3-1:159), so 32 MiB is Tree/LL128 (3 % fast; was Ring/LL128, 27 % fast):
    # 0.122 -> 0.109 and 0.094 -> 0.081
    "ext4-aws-p5-2x8-nccl2203-tuner-all-reduce": (0.109, 0.441),   # Tree/LL 64 KiB 44 % fast
    "ext4-aws-p5-2x8-nccl2223-all-reduce": (0.081, 0.29),
    "ext4-b200-ib-2x8-sendrecv": (0.07, 0.156),
    "ext4-b200-ib-4x8-sendrecv": (0.062, 0.192),
    "ext4-h100-1x8-g8-nvls-all-reduce": (0.045, 0.104),
    "ext4-h100-1x8-g8-ring-all-gather": (0.161, 0.459),
    "ext4-h100-1x8-g8-ring-all-reduce": (0.062, 0.336),
    "ext4-h100-1x8-g8-ring-reduce-scatter": (0.149, 0.443),
    **point_bounds("ext4-points", [
        0.024,
        0.046,
        0.047,
        0.078,  # B200 AllGather 8 GiB 7.7-8.0 % fast
        0.081,
        0.081,
        0.045,
        0.047,
        0.047,
    ]),
})

# Held-out RTX 4090 curves found on 2026-12-02 (fifth session, helper s7-rtx4090: embsim/
# validation_data/ext5-rtx4090-*.yaml, preset pcie-rtx4090), at the level reached on first
# contact x 1.005, nothing tuned on them. A Kalavai pool's 4090 box, P2P off (host-staged SHM):
# AllReduce plateaus at 2.24 GB/s busbw on 2 GPUs behind one switch and 2.59 on 4; the model
# runs Ring/Simple on 2 kernel channels at 11.1-12.0 GB/s busbw from 4 MiB up (NCCL's search:
# 1 ring at 10), 4.4-5.7x fast there. No fixed capacity of the box (Gen4 x16 links, a shared
# switch uplink) explains 2.2 GB/s; what does is not known (collective_notes.md, "RTX 4090
# with P2P off").
CURVE_BOUNDS.update({
    "ext5-rtx4090-1x2-all-reduce": (0.783, 0.831),
    "ext5-rtx4090-1x4-all-reduce": (0.733, 0.79),
    "ext5-rtx4090-1x4-all-reduce-b": (0.733, 0.79),
})

# Held-out HGX H20 measurements (fifth session, helper h20: embsim/validation_data/ext5-h20-*.yaml,
# with the new hgx-h20 preset), at the level reached on first contact x 1.005, nothing tuned on
# them. NVIDIA/nccl#1244's 2x8 H20 AllReduce (a run its author reported as below expectation):
# 1-2 MiB NVLSTree/Simple 36-44 % fast, 128-512 MiB 20-36 % fast (the measured curve dips at
# 128 MiB), and its 343 GB/s headline peak (read at 8 GiB) 24 % below the model's 452.
CURVE_BOUNDS.update({
    "ext5-h20-2x8-all-reduce": (0.212, 0.438),
    "ext5-h20-points[0]": (0.243, 0.243),
})

# Held-out NVLink 5 (Blackwell) measurements (fifth session, helper nvl5: embsim/validation_data/
# ext6-*.yaml), at the level reached on first contact x 1.005, nothing tuned on them. Google Cloud
# A4X (GB200 NVL72, one NVLink domain, 4-72 GPUs) points at 16 GiB from a user's deployment guide:
# NVLS AllReduce on 32-72 GPUs 8.8-13.6 % below the model (algBw 444-469 against 515; CoreWeave's
# rack is 17 % below), 8-16 GPUs within 1.3-4.1 %; AlltoAll 6-28 % above it. GKE A4 (8x B200)
# curves: 8x B200 AllReduce 12.6 / 26.2 % (a 4 GiB -> 8 GiB step in the measured curve), 2x8
# AllReduce over gIB 9.1 / 25.7 %, AllGather 2x8 65.5 / 91.3 % (its 1-16 MiB rows take 250-1000
# us), 1x2 37.4 / 41.7 %, 2x1 over one RoCE NIC 25.2 / 41.3 %; CoreWeave's 2x8 B200 over IB at 8 GiB
# (coreweave/nccl-tests#92) 2.9 %.
CURVE_BOUNDS.update({
    # 2x8 B200 over IB, 8 GiB, NVLSTree; LOOSENED 0.029 -> 0.0295 (s8-tune): 2.28.3's own
    # hwLat[NET][NVLSTree] 14 (not 2.28.9's 20.9), 2.92 -> 2.94 %
    "ext6-coreweave-b200-points[0]": (0.0295, 0.0295),
    **point_bounds("ext6-gcp-a4x-gb200-points", [
        0.051,
        0.013,
        0.05,
        0.037,
        0.279,  # AlltoAll 8 GPUs 16 GiB: 683 measured, model 535 (27.7 % slow)
        0.016,
        0.05,
        0.037,
        0.278,
        0.089,
        0.037,
        0.012,
        0.142,
        0.103,
        0.029,
        0.009,
        0.126,
        0.137,  # one rack, 72 GPUs: NVLS AllReduce algBw 444 vs the model's 515
        0.055,
        0.022,
        0.064,
        0.046,
        0.071,
        0.074,
        0.042,
        0.014,
        0.05,
        0.037,
        0.274,
        0.041,
        0.043,
        0.019,
        0.134,
        0.109,  # one rack, 72 GPUs (production table): algBw 459 vs 515
        0.044,
        0.014,
        0.104,
    ]),
    "ext6-gke-a4-b200-1x2-all-gather": (0.376, 0.419),
    "ext6-gke-a4-b200-1x8-all-reduce": (0.127, 0.264),
    "ext6-gke-a4-b200-2x1-all-gather": (0.254, 0.415),
    "ext6-gke-a4-b200-2x8-all-gather": (0.659, 0.918),  # 1-16 MiB 250-1000 us per op (84-91 % fast)
    # LOOSENED 0.092/0.259 -> 0.104/0.288 (s8-tune): 2.28.7's own tuning table (hwLat[NET]
    # [NVLSTree] 14, not 2.28.9's 20.9): same NVLSTree picks, 13.8 us less fill; 64 MiB 26 -> 29 % fast
    "ext6-gke-a4-b200-2x8-all-reduce": (0.104, 0.288),
})

# Held-out AWS p4d.24xlarge measurements (sixth session, helper p4d: embsim/validation_data/ext7-*.yaml,
# with the new aws-p4d preset), at the level reached on first contact x 1.005, nothing tuned on them.
# AllReduce over 4x 100 Gb/s EFA v1: AWS's DLAMI-guide 2x8 curve (NCCL 2.23.4, the plugin's
# NCCL_PROTO=simple) Tree/Simple 4-28 % fast (512 KiB-16 MiB 22-28 %); aws-efa-eks's 2021 2x8 curves
# with NCCL_ALGO=RING (2.8.3 / 2.9.9 under 2.18's tables, every protocol): Ring/LL 64-256 KiB within
# 0.4-14 %, Ring/LL128 1-128 MiB 26-58 % fast, Ring/Simple >= 256 MiB 29-35 % (2.8.3, plateau 32.8 GB/s
# busbw) and 6-18 % fast (2.9.9, plateau 43.7; the model's 46.6); NVIDIA/nccl#527's 1 GiB points: one
# node 2.0 %, 2-4 nodes 28-36 % fast (57.2 / 31.8 / 29.6 measured).
CURVE_BOUNDS.update({
    "ext7-aws-p4d-2x8-all-reduce": (0.164, 0.279),
    "ext7-aws-p4d-2x8-all-reduce-nccl283": (0.337, 0.582),
    "ext7-aws-p4d-2x8-all-reduce-nccl299": (0.258, 0.553),
    **point_bounds("ext7-aws-p4d-points", [
        0.021,  # one p4d, 1 GiB, Ring/Simple over NVSwitch
        0.283,
        0.314,
        0.361,  # 4 nodes: 29.6 measured, model 46.2
    ]),
})

# Held-out PCIe datacenter boxes (seventh session, helper pcie: embsim/validation_data/ext8-*.yaml, with
# the new aws-g5 preset; selection rule committed before the first simulation), at the level reached on
# first contact x 1.005, nothing tuned on them. AWS g5.48xlarge, 4 A10Gs of one NUMA node, NCCL 2.18.5,
# AllReduce 28 MiB (pytorch/pytorch#127077): 3.10 GB/s busbw measured, the model's Ring/Simple 23.4
# (P2P on or host-staged alike): 86.8 % (the box is 7.6x slower than its PCIe links). 2x8 H200 on OCI
# (BM.GPU.H200.8, 8x 400G RoCE, NCCL 2.27.5, argonne-lcf/oci-howto) AllReduce 1-16 GiB, NVLSTree/Simple,
# preset dgx-h200: the model 4.3-5.7 % slow (439-460 against 458-486 GB/s busbw).
CURVE_BOUNDS.update({
    **point_bounds("ext8-aws-g5-points", [
        0.872,  # 4x A10G, 28 MiB: 3.10 measured, model 23.4
    ]),
    "ext8-oci-h200-2x8-all-reduce": (0.052, 0.058),
})

# Held-out systems found by probe J (2026-12-05: embsim/validation_data/ext9-*.yaml, with the new
# pcie-rtx4090-epyc preset and two topology files in embsim/validation_data/topologies/), at the level
# reached on first contact (commit 293dc2c) x 1.005, the same after 5a2e855 and daaddb2; nothing tuned on
# them. 8x RTX 4090 on AMD EPYC 7542 root ports (blog.chlc.cc), AllReduce -g 8, release not given (dated:
# 2.25.1): P2P off 17.2 / 28.5 % (the model's 11.95 GB/s plateau below the measured 14.5-15.0), P2P on
# (tinygrad driver) 39.4 / 73.6 % (20.6 measured; 2.25.1 stages an 8-GPU AMD box through host memory, P2P
# level PXB: 11.95; under 2.22.3 the ring runs GPU to GPU at 22.0, 13.2 / 37.0 %, a sensitivity, not the
# gate). 2x H100 PCIe over an NVLink bridge (NV12 inferred; nccl-tests#194) 1-4 GiB: the model 2x fast
# (239 against 115-116 GB/s), 51.5-51.8 %. 8x H20 one node -g 8 (nccl-tests#306): NVLS 1-2 GiB 25 % fast
# (16.5 / 25.4 %). OCI BM.GPU3.8 V100 1 GiB 13.3 % (the model's NVLink-2 ring 119.6 against 135.5) and
# BM.GPU4.8 A100 40GB 10 GiB 1.4 %.
CURVE_BOUNDS.update({
    "ext9-chlc-8x4090-p2poff-all-reduce": (0.173, 0.287),
    "ext9-chlc-8x4090-p2pon-all-reduce": (0.396, 0.74),     # 32 MiB Ring/Simple 73.6 % slow (host-staged on 2.25.1)
    **point_bounds("ext9-h100pcie-nvlbridge-1x2-points", [
        0.521,  # 1 GiB: 115.4 measured, model 239.2
        0.52,
        0.518,
    ]),
    "ext9-h20-1x8-g8-all-reduce": (0.166, 0.255),
    **point_bounds("ext9-oci-points", [
        0.134,  # BM.GPU3.8, 8x V100 SXM2, 1 GiB: 135.5 measured, model 119.6
        0.014,  # BM.GPU4.8, 8x A100 40GB, 10 GiB
    ]),
})

# Held-out system found by probe T (2026-12-06: embsim/validation_data/ext10-*.yaml), at the level reached
# on first contact x 1.005, nothing tuned on it: 2x GCP a3-ultragpu-8g H200 over RoCE (gIB), AllGather,
# NCCL 2.26.6: 128 MiB - 8 GiB 4-6 % slow, every Ring/LL and LL128 row below 32 MiB 1.7-3.7x slow (the
# ring step floor, docs/validation.md "Held-out systems, thirtieth session").
CURVE_BOUNDS.update({
    "ext10-gcp-a3ultra-h200-2x8-all-gather": (0.860, 2.683),
})


def test_sweep_sizes_names_the_nccl_tests_flags():
    from embsim.collectives import nccl_tests as nt
    # nccl-tests -b 8 -e 128 -f 2: 8, 16, 32, 64, 128; texts and byte counts alike
    assert nt.sweep_sizes("8", "128", 2) == nt.sweep_sizes(8, 128, 2) == [8, 16, 32, 64, 128]
    assert nt.sweep_sizes("1K", "4K", 2) == [1024, 2048, 4096]
    for lo, hi, needles in (("0", "8", ["-b/--minbytes '0'", "at least 1 byte"]),
                            ("4K", "1K", ["-e/--maxbytes '1K'", "-b/--minbytes '4K'"]),
                            ("x", "8", ["-b/--minbytes 'x'", "not a size"]),
                            ("8", "2T", ["-e/--maxbytes '2T'", "at most 1T"])):
        with pytest.raises(InputError) as exc:
            nt.sweep_sizes(lo, hi, 2)
        for needle in needles:
            assert needle in str(exc.value), str(exc.value)


def test_a_g8_comparison_says_its_launch_floor_is_not_modelled():
    from embsim.collectives import nccl_tests as nt
    from embsim.collectives.validation import curve_errors, DATA_DIR
    assert nt.launch_note(1) == ""
    assert "-g 8" in nt.launch_note(8) and "not modelled" in nt.launch_note(8)
    g8 = curve_errors(DATA_DIR / "ext4-h100-1x8-g8-ring-all-gather.yaml")
    g1 = curve_errors(DATA_DIR / "h100-slurm-1x8-all-gather.yaml")
    assert "launch floor" in g8.system and "launch floor" not in g1.system


@pytest.mark.parametrize("kw, said", [
    ({}, "NCCL_ALGO=Tree:"),
    ({"flags": ("--nccl-algo", "--nccl-proto")}, "--nccl-algo Tree:"),
])
def test_a_filter_that_leaves_nothing_names_itself(h100x2, kw, said):
    with pytest.raises(InputError, match=f"^{said} leaves nothing NCCL can run for all_gather"):
        CollectiveModel(h100x2, algo="Tree", **kw).plan("all_gather", 1 << 20, range(16))


def test_simulate_refusal_names_the_flags(capsys):
    args = ["simulate", "--topology", "dgx-h100:4x8", "--model", "tiny-lm", "--iterations", "2",
            "--nccl-algo", "PAT", "--nccl-proto", "LL"]
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--nccl-algo PAT with --nccl-proto LL: leaves nothing" in err[0]
