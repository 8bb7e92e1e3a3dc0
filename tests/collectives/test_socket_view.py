"""The socket link's two meanings: the file's physical link (the flows) and NCCL's search
constant for the CPU (the channel choice), derived per release as topo.cc does."""

from pathlib import Path

import pytest

from embsim.cli import main
from embsim.collectives import CollectiveModel
from embsim.collectives.pci_rings import nccl_cpu_bw, nccl_cpu_class, socket_view_note
from embsim.collectives.shape import comm_shape
from embsim.topology import load_topology, parse_node_type
from embsim.topology.spec import FabricSpec

ROOT = Path(__file__).resolve().parents[2]
L40S = ROOT / "topologies" / "l40s-roce.yaml"


@pytest.mark.parametrize("vendor, model, version, expect", [
    ("arm", None, "2.18", "arm"), ("arm", None, "2.30", "arm"),
    ("amd", None, "2.18", "loc"),                  # no AMD case before 2.19: LOC_BW
    ("amd", None, "2.19", "amd"), ("amd", None, "2.30", "amd"),
    ("intel", "broadwell", "2.21", "broadwell"), ("intel", "skylake", "2.18", "skylake"),
    ("intel", "sapphire-rapids", "2.25", "skylake"),   # model >= 0x55 is SKL until 2.26
    ("intel", "emerald-rapids", "2.25", "skylake"),
    ("intel", "sapphire-rapids", "2.26", "sapphire-rapids"),
    ("intel", "emerald-rapids", "2.30", "emerald-rapids"),
    ("intel", None, "2.30", None),
])
def test_nccl_classifies_the_cpu_per_release(vendor, model, version, expect):
    assert nccl_cpu_class(vendor, model, version) == expect


def _fab(**kw) -> FabricSpec:
    base = dict(kind="pcie", pcie_gen=4, pcie_lanes=16, pcie_gbps=31.5, pcie_switches=2,
                cpu_sockets=2, cpu_vendor="intel", cpu_link_gbps=128.0, cpu_latency_us=1.0)
    base.update(kw)
    return FabricSpec(**base)


def test_nccl_view_is_the_constant_not_the_file():
    assert nccl_cpu_bw(_fab(cpu_model="sapphire-rapids"), "2.27") == (22.0, "SRP_QPI_BW, topo.h")
    assert nccl_cpu_bw(_fab(cpu_model="sapphire-rapids"), "2.21")[0] == 10.0
    assert nccl_cpu_bw(_fab(cpu_vendor="amd"), "2.18")[0] == 5000.0
    # stated outright: wins over the derivation
    assert nccl_cpu_bw(_fab(cpu_model="skylake", nccl_cpu_link_gbps=7.0), "2.27")[0] == 7.0


def test_an_old_file_keeps_its_meaning_and_says_so():
    fab = _fab(cpu_link_gbps=10.0)                       # Intel, no cpu_model
    bw, src = nccl_cpu_bw(fab, "2.27")
    assert bw == 10.0 and "taken from fabric.cpu_link_gbps" in src
    assert "taken from fabric.cpu_link_gbps" in socket_view_note(fab, "2.27")


def test_the_note_names_both_figures_only_where_they_differ():
    note = socket_view_note(_fab(cpu_model="sapphire-rapids"), "2.27")
    assert "128 GB/s" in note and "22 in NCCL's search" in note and "SRP_QPI_BW" in note
    assert socket_view_note(_fab(cpu_model="skylake", cpu_link_gbps=10.0), "2.27") == ""
    assert socket_view_note(_fab(cpu_model="skylake", cpu_sockets=1), "2.27") == ""
    assert socket_view_note(_fab(kind="nvswitch", cpu_model="skylake"), "2.27") == ""


def _l40s(tmp_path, gbps: str) -> str:
    text = L40S.read_text().replace("cpu_link_gbps: 128 ", f"cpu_link_gbps: {gbps} ")
    assert "cpu_link_gbps: 128 " in L40S.read_text()
    path = tmp_path / f"l40s-{gbps}.yaml"
    path.write_text(text.replace("name: l40s-roce", f"name: l40s-{gbps}"))
    return str(path)


def test_the_physical_link_drives_the_flows_and_not_nccls_choice(tmp_path, capsys):
    # a socket link slower than the channel NCCL's search leaves the ring (1 ring, ~12 GB/s)
    fast, slow = (load_topology(_l40s(tmp_path, g) + ":2x8") for g in ("128", "6.4"))
    cpu_bw = [{lk.bandwidth for lk in t.links if lk.kind == "cpu"} for t in (fast, slow)]
    assert cpu_bw == [{128e9}, {6.4e9}]
    ranks = range(8)
    a, b = (comm_shape(t, ranks, "2.27") for t in (fast, slow))
    assert a.pci.cpu_bw == b.pci.cpu_bw == 22.0           # NCCL's SRP_QPI_BW either way
    pa, pb = (CollectiveModel(t, nccl_version="2.27").plan("all_reduce", 64 << 20, ranks)
              for t in (fast, slow))
    assert (pa.algo, pa.proto) == (pb.algo, pb.proto)        # NCCL chooses on its own view
    # ... but the ring's bytes cross the file's link: 2 x 7/8 of 64 MiB at 6.4 GB/s
    assert pa.time < pb.time and pb.time >= 1.75 * (64 << 20) / 6.4e9
    steps = []
    for t in ("128", "6.4"):
        assert main(["simulate", "--topology", _l40s(tmp_path, t) + ":2x8", "--model", "lstm-lm1b",
                     "--strategy", "ps", "--json"]) == 0
        steps.append(capsys.readouterr().out)
    assert steps[0] != steps[1]     # ps copies into host memory cross the physical link


def test_cpu_model_is_checked(tmp_path):
    from embsim.topology import TopologyError
    text = L40S.read_text()
    with pytest.raises(TopologyError, match=r"fabric\.cpu_model.*one of broadwell"):
        parse_node_type(text.replace("cpu_model: sapphire-rapids", "cpu_model: granite"), "f.yaml")
    with pytest.raises(TopologyError, match=r"fabric\.cpu_model.*cpu_vendor is 'amd'"):
        parse_node_type(text.replace("cpu_vendor: intel", "cpu_vendor: amd"), "f.yaml")
    with pytest.raises(TopologyError, match=r"fabric\.nccl_cpu_link_gbps"):
        parse_node_type(text.replace("  cpu_latency_us:", "  nccl_cpu_link_gbps: -1\n  cpu_latency_us:"), "f.yaml")


def test_every_multi_socket_intel_preset_names_its_generation():
    for path in [*sorted((ROOT / "topologies").glob("*.yaml")),
                 *sorted((ROOT / "embsim/validation_data/rankings/topologies").glob("*.yaml"))]:
        fab = parse_node_type(path.read_text(), str(path)).fabric
        if (fab.cpu_sockets or 1) > 1 and fab.cpu_vendor == "intel":
            assert fab.cpu_model, path.name
            assert not nccl_cpu_bw(fab, "2.27")[1].startswith("taken"), path.name


RTX3090 = ROOT / "topologies" / "pcie-rtx3090.yaml"


def _rtx3090(tmp_path, gbps: str) -> str:
    text = RTX3090.read_text()
    assert "cpu_link_gbps: 41.6 " in text
    path = tmp_path / f"rtx3090-cpu{gbps}.yaml"
    path.write_text(text.replace("cpu_link_gbps: 41.6 ", f"cpu_link_gbps: {gbps} ")
                    .replace("name: pcie-rtx3090", f"name: rtx3090-cpu{gbps}"))
    return str(path)


def test_a_slow_socket_link_slows_an_alltoall_that_crosses_it(tmp_path, capsys):
    """GPUs 0-3 sit on socket 0, 4-7 on socket 1: each of the 16 cross-socket pairs sends
    S/8 each way, 2 S per direction over the socket link."""
    size = 64 << 20
    stock = CollectiveModel(load_topology("pcie-rtx3090")).plan("alltoall", size, range(8))
    slow = CollectiveModel(load_topology(_rtx3090(tmp_path, "0.5"))).plan("alltoall", size, range(8))
    assert slow.time >= 2 * size / 0.5e9 > 50 * stock.time
    # a communicator on one socket never crosses it
    one = [CollectiveModel(load_topology(p)).plan("alltoall", size, range(4)).time
           for p in ("pcie-rtx3090", _rtx3090(tmp_path, "0.5"))]
    assert one[0] == one[1]
    # the CLI the user ran
    assert main(["nccl-tests", "--topology", _rtx3090(tmp_path, "0.5"), "--op", "alltoall",
                 "-b", "64M", "-e", "64M"]) == 0
    row = capsys.readouterr().out.strip().splitlines()[-2].split()
    assert float(row[5]) >= 2 * size / 0.5e9 * 1e6


def test_the_socket_link_bounds_rings_and_alltoallv(tmp_path):
    import numpy as np
    slow = CollectiveModel(load_topology(_rtx3090(tmp_path, "0.5")))
    size = 64 << 20
    ring = slow.plan("all_gather", size, range(8))
    assert ring.time >= 7 / 8 * size / 0.5e9           # the ring's 3 -> 4 hop
    m = np.zeros((8, 8))
    m[0, 4] = size                                       # one cross-socket transfer
    assert slow.plan_alltoallv(m, range(8)).time >= size / 0.5e9
    m = np.zeros((8, 8))
    m[0, 1] = size                                       # one on socket 0
    fast = CollectiveModel(load_topology("pcie-rtx3090"))
    assert slow.plan_alltoallv(m, range(8)).time == fast.plan_alltoallv(m, range(8)).time


def test_a_shared_pcie_switch_uplink_bounds_an_alltoall():
    """pcie-rtx3090: two switches of four GPUs, each on one x16 uplink (31 GB/s). An
    8-GPU alltoall sends half of every GPU's bytes off its switch: 4 x S/2 = 2S across each
    uplink, which no per-GPU rate sees; the collective takes at least that long."""
    topo = load_topology("pcie-rtx3090:1x8")
    size = 64 << 20
    plan = CollectiveModel(topo).plan("alltoall", size, range(8))
    uplink = 31e9
    assert plan.time >= plan.latency + 2 * size / uplink * (1 - 1e-9)
    # a node of four GPUs on one switch crosses no uplink: not bounded by it
    four = CollectiveModel(load_topology("pcie-rtx3090:1x4")).plan("alltoall", size, range(4))
    assert four.time < four.latency + 2 * size / uplink
