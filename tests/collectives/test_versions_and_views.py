"""NCCL releases 2.18-2.30, the topology file's links, and overrides NCCL would refuse."""

import pytest

from embsim.cli import main
from embsim.collectives import CollectiveModel
from embsim.collectives.constants import VERSIONS, constants_for
from embsim.errors import InputError
from embsim.topology import load_topology

DGX_H100 = "topologies/dgx-h100.yaml"


@pytest.mark.parametrize("minor", range(18, 31))
def test_every_release_from_2_18_to_2_30(minor):
    consts = constants_for(f"2.{minor}.1")
    assert consts.version == f"2.{minor}"
    model = CollectiveModel(load_topology("dgx-h100:1x8"), nccl_version=f"2.{minor}.3")
    assert model.plan("all_reduce", 64 << 20, range(8)).time > 0


@pytest.mark.parametrize("bad", ["2.17", "2.31.0", "3.1", "2.x"])
def test_unmodelled_release_is_refused(bad):
    with pytest.raises(InputError, match="2.18 to 2.30"):
        constants_for(bad)


def test_behaviour_changes_land_in_their_release():
    assert constants_for("2.19").ll128_chunk_rounding and not constants_for("2.20").ll128_chunk_rounding
    assert constants_for("2.20").ring_ll_factor_old and not constants_for("2.21").ring_ll_factor_old
    assert constants_for("2.27").nvls_allgather_rs and not constants_for("2.26").nvls_allgather_rs
    assert constants_for("2.28").nvls_efficiency is not None and constants_for("2.27").nvls_efficiency is None
    assert constants_for("2.19").nvlink_per_link[90] == 20.0 and constants_for("2.20").nvlink_per_link[90] == 20.6
    assert len(VERSIONS) == 13
    # LL128's rounded chunks make the A100 slower at 4 MiB under 2.19 than under 2.20
    topo = load_topology("dgx-a100:1x8")
    t = {v: CollectiveModel(topo, proto="LL128", nccl_version=v).plan("all_reduce", 4 << 20, range(8)).time
         for v in ("2.19", "2.20")}
    assert t["2.19"] > 1.05 * t["2.20"]   # empty chunk slots: the busiest rank moves 17 % more data


def test_blackwell_one_node_rows_follow_each_release():
    # tuning.cc: <= 2.24 sm100 reads Hopper's rows, 2.25-2.27 twice Hopper's, 2.28 keeps
    # Ring LL128 at 2 x 36.7 with 2.30's Tree rows, 2.30 caps Ring LL128 at 40 per channel
    one_node = lambda v: (constants_for(v).ll_max_bw[100][0], constants_for(v).per_ch_ring_ll128[100][0],
                          constants_for(v).per_ch_tree[100][0])
    assert one_node("2.24") == (141.0, 36.7, 38.7)
    assert one_node("2.25.1") == one_node("2.27") == (282.0, 73.4, 77.4)
    assert one_node("2.28") == (282.0, 73.4, 70.0)
    assert one_node("2.30") == (282.0, 40.0, 70.0)
    # the multi-node columns follow the release too (git show vX:src/graph/tuning.cc)
    rows = lambda v: (constants_for(v).per_ch_ring_ll128[100], constants_for(v).per_ch_tree_ll128[100],
                      constants_for(v).per_ch_tree[100])
    assert rows("2.24") == ((36.7, 36.7, 36.7), (36.7, 36.7, 29.0), (38.7, 41.4, 36.0))
    assert rows("2.26") == ((73.4, 73.4, 73.4), (73.4, 73.4, 58.0), (77.4, 82.8, 72.0))
    assert rows("2.28") == ((73.4, 34.6, 73.4), (55.6, 31.67, 20.0), (70.0, 42.8, 24.0))
    assert rows("2.29") == ((40.0, 40.0, 40.0), (55.6, 31.67, 20.0), (70.0, 42.8, 24.0))
    assert constants_for("2.29").per_ch_nvlstree[100] == (0, 96.0, 43.8)
    # a patch level whose table differs: 2.29.2 / 2.29.3 Ring LL128 (34.5, 34.6, 34.5), 40 from 2.29.7
    assert rows("2.29.2")[0] == rows("2.29.3")[0] == (34.5, 34.6, 34.5)
    assert rows("2.29.7") == rows("2.29") and rows("2.29.2")[1:] == rows("2.29")[1:]
    assert constants_for("2.29.2").version == "2.29"
    assert constants_for("2.30").per_ch_nvlstree[100] == (0, 96.0, 80.0)
    # NVLSTree's network hop: 14 µs up to 2.27, 20.9 from 2.28
    assert constants_for("2.27").hw_lat["NET"]["NVLSTree"][2] == 14
    assert constants_for("2.28").hw_lat["NET"]["NVLSTree"][2] == 20.9
    # Hopper's rows do not move
    assert constants_for("2.25").per_ch_ring_ll128[90] == constants_for("2.30").per_ch_ring_ll128[90]


@pytest.mark.parametrize("version,one_node,two_nodes", [("2.24", 16, 16), ("2.25", 32, 32), ("2.26", 32, 32),
                                                        ("2.27", 24, 32), ("2.30", 24, 32)])
def test_blackwell_nvls_ctas_follow_each_release(version, one_node, two_nodes):
    # nvls.cc ncclNvlsInit: NCCL_NVLS_NCHANNELS 16 up to 2.24, 32 on sm100 in 2.25-2.26,
    # 24 in one NVLink domain (32 across nodes) from 2.27; Hopper keeps 16
    for spec, want in (("dgx-b200:1x8", one_node), ("dgx-b200:2x8", two_nodes), ("dgx-h100:1x8", 16)):
        topo = load_topology(spec)
        m = CollectiveModel(topo, nccl_version=version)
        assert m.shape(tuple(range(topo.n_gpus)))[1].nvls_channels == want, spec


def test_cli_accepts_a_patch_release(capsys):
    assert main(["nccl-tests", "--topology", "dgx-h100:1x8", "--nccl-version", "2.27.7",
                 "-b", "1M", "-e", "1M"]) == 0
    assert "NCCL 2.27.7 model" in capsys.readouterr().out      # the release as given


def _copy(tmp_path, old, new):
    text = open(DGX_H100).read().replace(old, new).replace("name: dgx-h100", "name: h100-copy")
    path = tmp_path / "h100-copy.yaml"
    path.write_text(text)
    return str(path)


def test_the_files_links_drive_the_time(tmp_path, capsys):
    same = CollectiveModel(load_topology(_copy(tmp_path, "x", "x") + ":1x8"))
    ref = CollectiveModel(load_topology("dgx-h100:1x8"))
    slow = CollectiveModel(load_topology(_copy(tmp_path, "nvlink_gbps: 450 ", "nvlink_gbps: 1 ") + ":1x8"))
    for op in ("all_reduce", "alltoall"):
        a, b, c = (m.plan(op, 128 << 20, range(8)) for m in (ref, same, slow))
        assert a.time == b.time and (a.algo, a.proto) == (c.algo, c.proto)   # NCCL's choice stays
        assert c.time > 100 * a.time
    assert ref.view_note == "" and "NVLink 1 GB/s" in slow.view_note
    path = _copy(tmp_path, "nvlink_gbps: 450 ", "nvlink_gbps: 1 ")
    assert main(["nccl-tests", "--topology", path + ":1x8", "-b", "1M", "-e", "1M"]) == 0
    assert "disagrees with NCCL's view" in capsys.readouterr().out


def test_a_what_if_override_is_seen_by_nccl_too():
    topo = load_topology("dgx-h100:1x8")
    fast = CollectiveModel(topo.with_overrides(nvlink_gbps=900))
    assert fast.view_note == ""
    assert fast.plan("all_reduce", 1 << 30, range(8)).time < CollectiveModel(topo).plan(
        "all_reduce", 1 << 30, range(8)).time


@pytest.mark.parametrize("args", [["--proto", "^Simple,LL,LL128"], ["--algo", "^Ring,Tree,NVLS,NVLSTree,PAT"],
                                  ["--algo", "NVLS", "--op", "all_gather", "--nccl-version", "2.18"]])
def test_override_excluding_everything_is_refused(args, capsys):
    assert main(["nccl-tests", "--topology", "dgx-h100:1x8", "-b", "1M", "-e", "1M", *args]) == 2
    assert "nothing" in capsys.readouterr().err


def test_validate_uses_the_given_topology(tmp_path, capsys):
    curve = "embsim/validation_data/azure-nd-h100-v5-allreduce.yaml"
    assert main(["validate", "--nccl-tests", curve, "--json"]) == 0
    base = capsys.readouterr().out
    slow = _copy(tmp_path, "nvlink_gbps: 450 ", "nvlink_gbps: 45 ")
    assert main(["validate", "--nccl-tests", curve, "--topology", slow, "--json"]) == 0
    assert capsys.readouterr().out != base


def test_validate_says_when_the_file_and_nccl_disagree(tmp_path, capsys):
    curve = "embsim/validation_data/azure-nd-h100-v5-allreduce.yaml"
    slow = _copy(tmp_path, "nvlink_gbps: 450 ", "nvlink_gbps: 45 ")
    assert main(["validate", "--nccl-tests", curve, "--topology", slow]) == 0
    assert "disagrees with NCCL's view" in capsys.readouterr().out


def test_a_release_outside_the_tables_maps_to_the_nearest():
    from embsim.collectives.constants import nearest_table
    assert nearest_table("2.12.12") == "2.18" and nearest_table("2.31.0") == "2.30"
    assert nearest_table("2.25.1") == "2.25" and nearest_table("unknown") is None


def test_p2p_off_boxes_carry_the_held_out_caveat():
    from embsim.collectives.model import CollectiveModel
    from embsim.topology import load_topology
    for spec in ("pcie-rtx4090:1x8", "pcie-rtx2080ti:1x2"):
        note = CollectiveModel(load_topology(spec)).fidelity_note
        assert "P2P off" in note and "docs/validation.md" in note
    # P2P on, but the hops between an Intel host's switches lie beyond NCCL's default P2P
    # level (PXB): the same host-staged ring, the same caveat; one switch's 4 GPUs: P2P
    note = CollectiveModel(load_topology("pcie-rtx3090:1x8")).fidelity_note
    assert note.startswith("host-staged (beyond NCCL's P2P level)")
    # an AMD 8-GPU node: P2P through 2.22, host-staged from 2.23
    assert CollectiveModel(load_topology("aws-g5:1x8"), nccl_version="2.22.3").fidelity_note == ""
    assert "P2P level" in CollectiveModel(load_topology("aws-g5:1x8"), nccl_version="2.23.4").fidelity_note
    for spec in ("pcie-rtx3090:1x4", "dgx-h100:1x8", "pcie-rtx4090:1x1"):
        assert CollectiveModel(load_topology(spec)).fidelity_note == ""
