"""topology.device_names: which board an nccl-tests log's CUDA device name fixes."""

import pytest

from embsim.topology import find_preset
from embsim.topology.device_names import infer_system, preset_for_device


@pytest.mark.parametrize("device, preset", [
    ("NVIDIA A100-SXM4-80GB", "dgx-a100"),
    ("NVIDIA A100-SXM4-40GB", "dgx-a100-40gb"),
    ("NVIDIA A800-SXM4-80GB", "hgx-a800"),
    ("NVIDIA H100 80GB HBM3", "dgx-h100"),
    ("NVIDIA H200", "dgx-h200"),
    ("NVIDIA H800", "hgx-h800"),
    ("NVIDIA H20", "hgx-h20"),
    ("NVIDIA B200", "dgx-b200"),
    ("NVIDIA B300 SXM6 AC", "dgx-b300"),
    ("Tesla V100-SXM2-32GB", "dgx1-v100"),
    ("Tesla V100-SXM2-16GB", "dgx1-v100"),
    ("Tesla V100-SXM3-32GB", "dgx2-v100"),
    ("Tesla V100-SXM3-32GB-H", "dgx2h-v100"),
])
def test_sxm_parts_name_their_board(device, preset):
    assert preset_for_device(device)[0] == preset
    assert find_preset(preset) is not None          # a packaged preset, not a typo


@pytest.mark.parametrize("device", [
    "NVIDIA A100 80GB PCIe", "NVIDIA A100-PCIE-40GB", "NVIDIA H100 PCIe", "NVIDIA H100 NVL",
    "NVIDIA H200 NVL", "NVIDIA H800 PCIe", "NVIDIA H800 NVL", "NVIDIA L40S", "NVIDIA GeForce RTX 4090",
    "NVIDIA GH200 480GB", "NVIDIA Graphics Device", "NVIDIA GB200", "NVIDIA GB300", "Tesla V100-PCIE-32GB",
    "NVIDIA H20-3e",   # its board may be HGX H20's, but its HBM3e is not the hgx-h20 preset's
])
def test_parts_that_fix_no_layout_are_not_guessed(device):
    assert preset_for_device(device) is None


def test_mixed_or_unknown_devices_infer_nothing_and_the_note_names_the_network():
    assert infer_system(["NVIDIA H100 80GB HBM3", "NVIDIA H200"], 1) is None
    assert infer_system(["NVIDIA L40S"] * 8, 1) is None
    one = infer_system(["NVIDIA B200"] * 8, 1)
    assert one.preset == "dgx-b200" and "network" not in one.note
    two = infer_system(["NVIDIA B200"] * 16, 2)
    assert "across its 2 nodes the preset's network stands in" in two.note


@pytest.mark.parametrize("name, family", [
    ("NVIDIA H800", "H800"), ("H800-SXM5-80GB", "H800"), ("NVIDIA H100 80GB HBM3", "H100"),
    ("NVIDIA L40S", "L40S"), ("L40S-48GB", "L40S"), ("NVIDIA GeForce RTX 4090", "RTX4090"),
    ("RTX-4090", "RTX4090"), ("NVIDIA RTX 6000 Ada Generation", "RTX6000ADA"),
    ("RTX-6000-Ada", "RTX6000ADA"), ("NVIDIA A10G", "A10G"), ("A10-24GB", "A10"),
    ("NVIDIA GeForce RTX 2080 Ti", "RTX2080TI"), ("some card", None),
])
def test_gpu_family_reads_device_and_preset_spellings_alike(name, family):
    from embsim.topology.device_names import gpu_family
    assert gpu_family(name) == family


def test_presets_for_a_pcie_card_come_first_and_a_mismatch_is_named():
    from embsim.topology.device_names import device_mismatch, presets_for_device
    found = presets_for_device("NVIDIA H100 PCIe")
    assert found[0] == "pcie-h100" and "dgx-h100" in found
    assert presets_for_device("NVIDIA L40S") == ["l40s-roce"]
    note = device_mismatch(["NVIDIA H800"], "L40S-48GB")
    assert "'NVIDIA H800' is not this topology's GPU (L40S-48GB)" in note
    assert device_mismatch(["NVIDIA A100-SXM4-80GB"], "A100-SXM4-40GB") is None
