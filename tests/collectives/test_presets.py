"""The system presets: they load, list one line each, and NCCL's view of them is right."""

from pathlib import Path

import pytest

from embsim.cli import main
from embsim.collectives import CollectiveModel
from embsim.errors import InputError
from embsim.topology import list_presets, load_topology

PRESETS = Path(__file__).resolve().parents[2] / "topologies"
NEW = ("dgx1-v100", "dgx2-v100", "dgx2h-v100", "pcie-rtx2080ti", "pcie-rtx2080ti-nvlink", "pcie-rtx2080ti-switch", "pcie-rtx4090",
       "azure-nc-a100-v4",
       "l40s-roce",
       "aws-p5", "aws-p6-b200", "gcp-a3-mega", "hgx-h20", "aws-p4d", "aws-p4de", "aws-g5",
       "pcie-h100", "pcie-rtx6000ada", "pcie-rtxa6000", "pcie-quadro-rtx8000", "pcie-a10", "pcie-a100-40gb",
       "pcie-rtx4090-epyc", "dgx-b300", "gb300-nvl72")


def test_list_shows_every_preset_on_one_line(capsys):
    assert main(["topology", "list"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert [ln.split()[0] for ln in lines] == list_presets()
    assert set(NEW) <= set(list_presets())
    assert all(len(ln.split(None, 1)) == 2 for ln in lines)      # a description on every line


@pytest.mark.parametrize("name", NEW)
def test_new_presets_simulate_one_and_two_nodes(name):
    g = load_topology(name).gpus_per_node          # 8, or 4 for the NC A100 v4 VM
    for shape in (f"1x{g}", f"2x{g}"):
        topo = load_topology(f"{name}:{shape}")
        model = CollectiveModel(topo)
        # the files' NVLink/PCIe describe hardware NCCL knows; their socket link is the
        # physical one, which NCCL's search does not see (its CPU constant), and says so
        assert "disagrees with NCCL's view" not in model.view_note, name
        assert "taken from fabric.cpu_link_gbps" not in model.view_note, name
        for op in ("all_reduce", "alltoall"):
            assert model.plan(op, 64 << 20, range(topo.n_gpus)).time > 0


def test_hgx_h20_is_an_hgx_h100_to_nccl():
    """H20 keeps NVLink 4's 18 links and NVLink SHARP (hgx-h20.yaml): NCCL's view and the
    collective times of an HGX H20 are an HGX H100's; only the compute side differs."""
    for shape in ("1x8", "2x8"):
        h20, h100 = (CollectiveModel(load_topology(f"{n}:{shape}")) for n in ("hgx-h20", "dgx-h100"))
        ranks = tuple(range(h20.topology.n_gpus))
        s20 = h20.shape(ranks)[0]
        assert s20.nvlink_bw == pytest.approx(18 * 20.6) and s20.nvls_capable
        for op, size in (("all_reduce", 64 << 20), ("all_reduce", 1 << 30), ("all_gather", 64 << 20)):
            a, b = h20.plan(op, size, ranks), h100.plan(op, size, ranks)
            assert (a.algo, a.proto) == (b.algo, b.proto) and a.time == pytest.approx(b.time)


def test_aws_p4d_is_nccls_own_choice_over_4_efa_devices_with_simple_only():
    """aws-ofi-nccl on p4d/p4de: SENDRECV protocol (no NIC grouping: 4 devices of 100 Gb/s,
    2 GPUs each), no tuner of its own, 75 us reported latency, NCCL_PROTO=simple set by the
    plugin unless the run sets one (aws-p4d.yaml)."""
    for name in ("aws-p4d", "aws-p4de"):
        model = CollectiveModel(load_topology(f"{name}:2x8"))
        shape = model.shape(tuple(range(16)))[0]
        assert (shape.nics_per_node, shape.nic_bw, shape.nic_latency_us, shape.nccl_tuner) == (4, 12.5, 75.0, "")
        assert shape.nic_path_bw == 12.0          # the plugin's topology file: 8 GT/s x16 links
        assert model.protos == frozenset({"Simple"})
        assert any("platform's setting (nics.nccl_proto)" in n for n in model.notes)
        for op, size in (("all_reduce", 1024), ("all_reduce", 1 << 30), ("all_gather", 1 << 20)):
            assert model.plan(op, size, range(16)).proto == "Simple"
        # one node: the plugin still sets it at NCCL's init
        assert CollectiveModel(load_topology(f"{name}:1x8")).plan("all_reduce", 1024, range(8)).proto == "Simple"
        # the run's own NCCL_PROTO wins, and the note goes
        mine = CollectiveModel(load_topology(f"{name}:2x8"), proto="LL,LL128,Simple")
        assert mine.protos == frozenset({"LL", "LL128", "Simple"}) and not mine.plugin_proto_note
        assert mine.plan("all_reduce", 1024, range(16)).proto == "LL"
    small, big = load_topology("aws-p4d").node, load_topology("aws-p4de").node
    assert (small.gpu.hbm_gb, big.gpu.hbm_gb) == (40, 80)
    assert small.fabric == big.fabric and small.nics == big.nics and small.network == big.network


def test_alltoall_shares_a_nic_among_the_gpus_it_serves():
    """p4d: 4 EFA devices of 12.5 GB/s for 8 GPUs. A 2x8 AlltoAll sends half of every
    rank's buffer off-node, 4 buffers per node over 50 GB/s: a NIC each would be twice
    that. Where every GPU has its own NIC (p5, DGX A100) nothing is shared."""
    size = 1 << 30
    for name, node_gbps in (("aws-p4d", 50.0), ("dgx-a100-40gb", 200.0), ("aws-p5", 400.0)):
        topo = load_topology(f"{name}:2x8")
        t = CollectiveModel(topo).plan("alltoall", size, range(16)).time
        wire = 8 * size / 2 / (node_gbps * 1e9)          # the node's off-node bytes at its NIC rate
        assert wire < t < 1.15 * wire, (name, t, wire)


def test_nics_nccl_proto_is_checked(tmp_path):
    text = (PRESETS / "aws-p4d.yaml").read_text()
    for bad, needle in (("Fast", "unknown proto .fast."), ("^LL,LL128,Simple", "excludes every proto")):
        path = tmp_path / "t.yaml"
        path.write_text(text.replace("nccl_proto: Simple ", f"nccl_proto: '{bad}' "))
        with pytest.raises(InputError, match=needle):
            load_topology(str(path))
    path.write_text(text.replace("nccl_proto: Simple ", "nccl_proto: '^LL128' "))
    assert CollectiveModel(load_topology(f"{path}:1x8")).protos == frozenset({"LL", "Simple"})


def test_nvlink_bridge_only_inside_a_pair():
    pair = CollectiveModel(load_topology("pcie-rtx2080ti-nvlink:1x2")).shape((0, 1))[0]
    box = CollectiveModel(load_topology("pcie-rtx2080ti-nvlink")).shape(tuple(range(8)))[0]
    assert pair.intra == "nvlink" and box.intra == "pcie"
    mesh = CollectiveModel(load_topology("dgx1-v100")).shape(tuple(range(8)))[0]
    assert mesh.intra == "nvlink" and mesh.nvlink_bw == pytest.approx(6 * 20.0)


def test_p2p_off_box_is_slower_than_nvlink_pairs():
    t = {}
    for name in ("pcie-rtx2080ti", "pcie-rtx2080ti-nvlink"):
        t[name] = CollectiveModel(load_topology(f"{name}:1x2")).plan("all_reduce", 64 << 20, (0, 1)).time
    assert t["pcie-rtx2080ti-nvlink"] < t["pcie-rtx2080ti"] / 2


def test_p2p_off_gpus_behind_one_switch_share_its_uplink(tmp_path):
    """P2P off: host-staged transfers of GPUs behind one switch share its uplink; a
    one-way chain (broadcast of 2 ranks) has one transfer, a ring every rank's."""
    sw = CollectiveModel(load_topology("pcie-rtx2080ti-switch:1x2"))
    shape = sw.shape((0, 1))[0]
    assert shape.host_share == 2
    assert shape.host_flows("all_reduce") == 2 and shape.host_flows() == 2
    assert shape.host_flows("broadcast") == 1
    assert shape.host_staged_bw(12.0) == 6.0 and shape.host_staged_bw(12.0, "broadcast") == 12.0
    # every GPU on its own root port (pcie-rtx2080ti), or P2P on: nothing shared
    root = CollectiveModel(load_topology("pcie-rtx2080ti:1x2"))
    assert root.shape((0, 1))[0].host_share == 1
    src = (PRESETS / "pcie-rtx2080ti-switch.yaml").read_text()
    on_file = tmp_path / "p2p-on.yaml"
    on_file.write_text(src.replace("pcie_p2p: false", "pcie_p2p: true"))
    on = CollectiveModel(load_topology(f"{on_file}:1x2"))
    assert on.shape((0, 1))[0].host_share == 1
    big = 256 << 20
    t = {name: m.plan("all_reduce", big, (0, 1)).time for name, m in (("sw", sw), ("root", root), ("on", on))}
    assert t["sw"] == pytest.approx(2 * t["root"], rel=0.02) and t["on"] == pytest.approx(t["root"], rel=1e-9)
    b_sw, b_root = (m.plan("broadcast", big, (0, 1)).time for m in (sw, root))
    assert b_sw == pytest.approx(b_root, rel=1e-9)


def test_pcie_p2p_must_be_a_boolean(tmp_path):
    src = (PRESETS / "pcie-rtx2080ti-switch.yaml").read_text()
    bad = tmp_path / "bad.yaml"
    bad.write_text(src.replace("pcie_p2p: false", "pcie_p2p: maybe"))
    with pytest.raises(InputError, match="pcie_p2p"):
        load_topology(str(bad))


def test_alltoallv_shares_the_nodes_nics_as_alltoall_does():
    """A uniform all-to-all-v (embrace's embedding exchange) costs what alltoall does, on
    nodes with fewer NICs than GPUs (DGX-1: 4 for 8; p4d: 4 EFA for 8) as on DGX H100 (8)."""
    import numpy as np
    from embsim.collectives.model import CollectiveModel
    from embsim.topology import load_topology
    for spec in ("dgx1-v100:2x8", "aws-p4d:2x8", "dgx-h100:2x8"):
        m, size = CollectiveModel(load_topology(spec)), 1 << 28
        uniform = np.full((16, 16), size / 16)
        assert m.plan_alltoallv(uniform, range(16)).time == pytest.approx(
            m.plan("alltoall", size, range(16)).time, rel=1e-9)
        # the outer-product form embrace sends at scale takes the same share
        from embsim.collectives.traffic import Traffic
        ones = np.ones(16)
        assert m.plan_alltoallv(Traffic(ones * size / 16, ones), range(16)).time == pytest.approx(
            m.plan("alltoall", size, range(16)).time, rel=1e-6)
    # half the node's GPUs sending off-node get a whole NIC each on DGX-1 (4 NICs, 4 senders)
    m = CollectiveModel(load_topology("dgx1-v100:2x8"))
    half = np.zeros((16, 16))
    half[:4, 8:12] = half[8:12, :4] = size / 16
    full = np.zeros((16, 16))
    full[:8, 8:] = full[8:, :8] = size / 16
    assert m.plan_alltoallv(half, range(16)).time < m.plan_alltoallv(full, range(16)).time


def test_the_held_out_topology_files_beside_the_curves():
    """embsim/validation_data/topologies/ holds topology files that are not presets (ext9's P2P-on
    RTX 4090 box and bridged H100 PCIe pair): each cites a source for every number, its curve finds
    it beside itself from any directory (topology.spec_beside), and the packaged set never reads it
    as a curve (validate reads only the data folder's own *.yaml)."""
    import re
    from embsim.collectives.validation import DATA_DIR, validate_all
    from embsim.topology import spec_beside
    folder = DATA_DIR / "topologies"
    files = sorted(folder.glob("*.yaml"))
    assert {p.stem for p in files} >= {"chlc-8x4090-p2pon", "h100pcie-nvlbridge"}
    for path in files:
        text = path.read_text()
        assert re.search(rf"^name: {re.escape(path.stem)}$", text, re.M), path.name
        for line in text.splitlines():
            if re.match(r"^\s+\w+\s*:\s*[\d.]+", line):
                assert "#" in line, f"{path.name}: no source comment on: {line.strip()}"
        # from the repository root `topologies/NAME.yaml` would name the preset instead
        assert not (PRESETS / path.name).exists(), path.name
        load_topology(str(path))
    curve = DATA_DIR / "ext9-chlc-8x4090-p2pon-all-reduce.yaml"
    assert spec_beside("topologies/chlc-8x4090-p2pon.yaml", curve) == str(folder / "chlc-8x4090-p2pon.yaml")
    names = {c.name for c in validate_all()}
    assert not names & {p.stem for p in files}
