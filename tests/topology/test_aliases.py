"""Other names for the presets' systems (topology/aliases.py): resolved with a note, never guessed."""

import pytest
from embsim.cli import main
from embsim.topology import TopologyError, list_presets, load_topology
from embsim.topology.aliases import ALIASES, normalise, resolve, suggestions


def test_every_alias_names_a_shipped_preset_and_is_not_one():
    presets = list_presets()
    for alias, (preset, why) in ALIASES.items():
        assert preset in presets, alias
        assert alias not in presets, alias          # a file of that name would shadow it
        assert alias == normalise(alias) and why


@pytest.mark.parametrize("name, preset", [("hgx-h100", "dgx-h100"), ("HGX_A100", "dgx-a100"),
                                          ("p5.48xlarge", "aws-p5"), ("DGX-H100", "dgx-h100"),
                                          ("hgx-b300", "dgx-b300")])
def test_an_alias_loads_its_preset_and_says_so(name, preset):
    topo = load_topology(f"{name}:1x8")
    assert topo.preset == preset and topo.n_gpus == 8
    assert topo.alias_note.startswith(f"preset {name!r} read as {preset}")
    assert load_topology(preset).alias_note == ""


def test_the_same_system_under_either_name_simulates_identically():
    from embsim.collectives.model import CollectiveModel
    a, b = CollectiveModel(load_topology("hgx-h100:2x8")), CollectiveModel(load_topology("dgx-h100:2x8"))
    ranks = range(16)
    assert a.plan("all_reduce", 1 << 27, ranks).time == b.plan("all_reduce", 1 << 27, ranks).time
    assert a.notes[0].startswith("preset 'hgx-h100' read as dgx-h100") and a.notes[1:] == b.notes


def test_overrides_keep_the_note():
    topo = load_topology("hgx-h100:2x8").with_overrides(nic_gbit=200)
    assert "read as dgx-h100" in topo.alias_note


def test_a_typo_is_refused_with_the_nearest_names():
    with pytest.raises(TopologyError, match=r"unknown preset 'dgx-h10' \(did you mean dgx-h100"):
        load_topology("dgx-h10:1x8")
    assert resolve("dgx-h10", list_presets()) is None
    assert suggestions("zzzz", list_presets()) == []


def test_cli_refuses_an_unknown_name_with_exit_2_and_one_line(capsys):
    assert main(["nccl-tests", "--topology", "hgx-h1000:1x8"]) == 2
    err = capsys.readouterr().err
    assert "did you mean dgx-h100" in err and len(err.strip().splitlines()) == 1


def test_nccl_tests_header_names_the_preset_and_the_alias(capsys):
    assert main(["nccl-tests", "--topology", "hgx-h100:1x8", "-b", "1M", "-e", "1M"]) == 0
    out = capsys.readouterr().out
    assert "all_reduce on dgx-h100:1x8" in out
    assert "read as dgx-h100: the same 8-GPU HGX baseboard" in out


@pytest.mark.parametrize("name, first", [("h100-pcie", "pcie-h100"), ("a100-pcie", "pcie-a100-40gb"),
                                         ("a100", "dgx-a100"), ("h100", "dgx-h100")])
def test_words_in_another_order_or_a_bare_gpu_suggest_the_preset_holding_them(name, first):
    # difflib alone offered nothing for h100-pcie; the preset with fewest extra words leads
    assert suggestions(name, list_presets())[0] == first


def test_a_file_key_is_named_instead_of_the_flag():
    with pytest.raises(TopologyError, match=r"^preset 'a100:1x8': unknown preset 'a100'"):
        load_topology("a100:1x8", origin="preset")
    with pytest.raises(TopologyError, match=r"^--topology 'a100:1x8'"):
        load_topology("a100:1x8")
