"""The system presets: they load, list one line each, and NCCL's view of them is right."""

import pytest

from embsim.cli import main
from embsim.collectives import CollectiveModel
from embsim.topology import list_presets, load_topology

NEW = ("dgx1-v100", "pcie-rtx2080ti", "pcie-rtx2080ti-nvlink", "l40s-roce", "aws-p5", "aws-p6-b200",
       "gcp-a3-mega")


def test_list_shows_every_preset_on_one_line(capsys):
    assert main(["topology", "list"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert [ln.split()[0] for ln in lines] == list_presets()
    assert set(NEW) <= set(list_presets())
    assert all(len(ln.split(None, 1)) == 2 for ln in lines)      # a description on every line


@pytest.mark.parametrize("name", NEW)
def test_new_presets_simulate_one_and_two_nodes(name):
    for shape in ("1x8", "2x8"):
        topo = load_topology(f"{name}:{shape}")
        model = CollectiveModel(topo)
        assert model.view_note == "", name          # the files describe hardware NCCL knows
        for op in ("all_reduce", "alltoall"):
            assert model.plan(op, 64 << 20, range(topo.n_gpus)).time > 0


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
