import re
from pathlib import Path

import pytest

import embsim
from embsim.topology import list_presets, load_topology

PRESET_DIR = Path(embsim.__file__).parent.parent / "topologies"
PRESETS = ["dgx-a100", "dgx-a100-40gb", "dgx-h100", "dgx-h200", "dgx-b200", "dgx-b300", "pcie-rtx3090", "aws-p4d",
           "aws-p4de"]

# Published per-direction figures (docs/sources/hardware.md): NVLink per GPU, NIC line rate in GB/s.
EXPECTED = {
    "dgx-a100": dict(arch=80, nvlink=300, nic=25, pcie=31),
    "dgx-a100-40gb": dict(arch=80, nvlink=300, nic=25, pcie=31),
    "dgx-h100": dict(arch=90, nvlink=450, nic=50, pcie=63),
    "dgx-h200": dict(arch=90, nvlink=450, nic=50, pcie=63),
    "dgx-b200": dict(arch=100, nvlink=900, nic=50, pcie=63),
    # B300 is compute capability 10.3; XDR 800 Gb/s CX-8 on a PCIe Gen6 x16 link per GPU
    "dgx-b300": dict(arch=103, nvlink=900, nic=100, pcie=121),
    "pcie-rtx3090": dict(arch=86, nvlink=None, nic=12.5, pcie=31),
    # EFA v1 100 Gb/s; PCIe Gen3 x16 (the 8 GT/s links of aws-ofi-nccl's p4d/p4de topology files)
    "aws-p4d": dict(arch=80, nvlink=300, nic=12.5, pcie=15.75),
    "aws-p4de": dict(arch=80, nvlink=300, nic=12.5, pcie=15.75),
}


def _bandwidths(summary, kind):
    return {c["bandwidth_gbps"] for c in summary["links"] if c["kind"] == kind}


def test_all_presets_listed():
    assert set(PRESETS) <= set(list_presets())


@pytest.mark.parametrize("name", PRESETS)
def test_preset_loads_with_right_shape_and_links(name):
    topo = load_topology(name)
    s = topo.summary()
    assert (topo.preset, topo.n_nodes, topo.gpus_per_node, s["n_gpus"]) == (name, 1, 8, 8)
    assert s["network"] is None  # one node: no network
    exp = EXPECTED[name]
    assert topo.node.gpu.arch == exp["arch"]
    assert _bandwidths(s, "pcie") == {exp["pcie"]}
    assert _bandwidths(s, "nvlink") == ({exp["nvlink"]} if exp["nvlink"] else set())
    two = load_topology(f"{name}:2x8").summary()
    assert _bandwidths(two, "nic") == {exp["nic"]}
    assert two["n_gpus"] == 16


@pytest.mark.parametrize("name", PRESETS)
def test_preset_file_name_matches_and_every_number_cites_a_source(name):
    path = PRESET_DIR / f"{name}.yaml"
    text = path.read_text()
    assert re.search(rf"^name: {re.escape(name)}$", text, re.M)
    for line in text.splitlines():
        if re.match(r"^\s+\w+(_gbps|_us|gbit|_tflops|hbm_gb|nvswitches|switches|sockets)\s*:\s*[\d.]+", line):
            assert "#" in line, f"{name}: no source comment on: {line.strip()}"


def test_a100_40gb_differs_from_the_80gb_part_only_in_memory():
    small, big = load_topology("dgx-a100-40gb").node.gpu, load_topology("dgx-a100").node.gpu
    assert (small.hbm_gb, small.hbm_gbps, big.hbm_gb, big.hbm_gbps) == (40, 1555, 80, 2000)
    assert (small.tensor_tflops, small.gemm_fraction, small.sms) == (big.tensor_tflops, big.gemm_fraction, big.sms)
