"""The Blackwell Ultra presets (dgx-b300, gb300-nvl72): they load, keep B200's / GB200's dense
16-bit and FP8 peaks, hold 288 GB HBM3e stacks (the exposed GiB, as the B200 presets give
theirs), run 800 Gb/s CX-8 NICs, resolve from their other names, and say in every output that
their measured fractions are B200's / GB200's (no B300 measurement exists)."""

import re
from pathlib import Path

import pytest

from embsim.cli import main
from embsim.collectives import CollectiveModel
from embsim.collectives.constants import arch_family, constants_for, nvlink_per_link
from embsim.collectives.nccl_model import ll128_enabled
from embsim.topology import TopologyError, list_presets, load_topology
from embsim.topology.aliases import ALIASES, resolve, suggestions
from embsim.topology.measured_gpus import preset_with_measurements
from embsim.topology.parse import parse_node_type
from embsim.workload.gpu_compute import for_gpu

ROOT = Path(__file__).resolve().parents[2]
# (Blackwell Ultra preset, the Blackwell preset of the same package and network layout)
PAIRS = [("dgx-b300", "dgx-b200"), ("gb300-nvl72", "gb200-nvl72")]
MEASURED = ("gemm_fraction", "gemm_fractions", "hbm_fraction")


@pytest.mark.parametrize("new, old", PAIRS)
def test_loads_and_keeps_the_blackwell_dense_peaks(new, old):
    b300, b200 = load_topology(new).node.gpu, load_topology(old).node.gpu
    assert new in list_presets() and b300.count == b200.count
    assert b300.bf16_tflops == b200.bf16_tflops              # 2250 HGX, 2500 in the NVL72 rack
    t300, t200 = dict(b300.tensor_tflops), dict(b200.tensor_tflops)
    assert [t300[k] for k in ("bf16", "fp16", "fp8")] == [t200[k] for k in ("bf16", "fp16", "fp8")]
    assert b300.fp32_tflops == b200.fp32_tflops and b300.hbm_gbps == b200.hbm_gbps == 8000
    assert b300.arch == 103 and arch_family(b300.arch) == 100


def test_the_dense_bf16_rate_is_b200s():
    assert load_topology("dgx-b300").node.gpu.bf16_tflops == load_topology("dgx-b200").node.gpu.bf16_tflops == 2250


@pytest.mark.parametrize("name, exposed", [("dgx-b300", 270), ("gb300-nvl72", 279)])
def test_hbm_is_the_288_gb_part_as_the_device_exposes_it(name, exposed):
    """288 GB HBM3e = 8 x 12-high stacks of 36 GiB; the presets' hbm_gb is the GiB a device
    exposes, as dgx-b200's 180 of B200's 192 (nvidia-smi 275040 MiB on HGX B300, NVIDIA's
    "B300-SXM-270GB"; 284208 MiB on GB300)."""
    gpu = load_topology(name).node.gpu
    assert gpu.hbm_gb == exposed
    b200 = load_topology("dgx-b200").node.gpu.hbm_gb / 192
    assert gpu.hbm_gb / 288 == pytest.approx(b200, abs=0.035)
    assert gpu.hbm_gb > 1.45 * load_topology("dgx-b200").node.gpu.hbm_gb


@pytest.mark.parametrize("new, old", PAIRS)
def test_the_measured_fractions_are_the_blackwell_ones_and_the_output_says_so(new, old):
    b300, b200 = load_topology(new).node.gpu, load_topology(old).node.gpu
    assert [getattr(b300, k) for k in MEASURED] == [getattr(b200, k) for k in MEASURED]
    assert b300.fractions_from and old in b300.fractions_from and not b200.fractions_from
    label = for_gpu(b300).label
    assert f"no data for {b300.model}: " in label and f"({b300.fractions_from} figures used)" in label
    assert "measured GEMM and memory efficiency" not in for_gpu(b200).label
    # a user's file for the B300 part is not pointed at a preset whose figures are borrowed
    assert preset_with_measurements(b300) is None


def test_simulate_names_the_borrowed_figures(capsys):
    import json
    assert main(["simulate", "--topology", "dgx-b300:1x8", "--model", "gpt2", "--iterations", "2", "--json"]) == 0
    source = json.loads(capsys.readouterr().out)["compute_source"]
    assert "no data for B300-SXM-270GB: " in source
    assert "measured GEMM and memory efficiency (dgx-b200's B200 figures used)" in source


def test_fractions_from_without_fractions_is_refused():
    text = (ROOT / "topologies" / "dgx-b300.yaml").read_text()
    kept = [ln for ln in text.splitlines()
            if not re.match(r"^  (gemm_fraction|hbm_fraction|gemm_fractions)\b|^    (fp8|bf16|fp16): 0\.", ln)]
    with pytest.raises(TopologyError, match=r"gpu\.fractions_from.*give them"):
        parse_node_type("\n".join(kept) + "\n", "f.yaml")
    with pytest.raises(TopologyError, match=r"gpu\.fractions_from"):
        parse_node_type(text.replace("fractions_from: dgx-b200's B200", "fractions_from: ''"), "f.yaml")


@pytest.mark.parametrize("name, nodes, gpus", [("dgx-b300", 2, 8), ("gb300-nvl72", 2, 72)])
def test_800_gbit_cx8_nics_on_pcie_gen6(name, nodes, gpus):
    topo = load_topology(f"{name}:{nodes}x{gpus}")
    s = topo.summary()
    assert {c["bandwidth_gbps"] for c in s["links"] if c["kind"] == "nic"} == {100}
    assert {c["bandwidth_gbps"] for c in s["links"] if c["kind"] == "pcie"} == {121}
    assert s["nics"]["nccl_path"] == ["PIX"] and s["nics"]["count"] == gpus
    model = CollectiveModel(topo)
    assert "disagrees with NCCL's view" not in model.view_note


def test_two_nodes_reduce_faster_than_b200_and_one_node_the_same():
    def time(preset, shape, size=1 << 30):
        topo = load_topology(f"{preset}:{shape}")
        return CollectiveModel(topo).plan("all_reduce", size, range(topo.n_gpus)).time
    assert time("dgx-b300", "1x8") == pytest.approx(time("dgx-b200", "1x8"))
    assert time("dgx-b300", "2x8") < 0.95 * time("dgx-b200", "2x8")


def test_sm103_is_blackwell_to_nccl_but_gets_no_ll128_before_2_27():
    """tuning.cc up to 2.26: switch (minCompCap) {70, 80, 90, 100, 120; default: off}; 2.27+:
    every sm70+ GPU. NVLink per link: topo.h `cudaCompCap >= 100 ? SM100_NVLINK_BW`."""
    for version in ("2.26", "2.30"):
        consts = constants_for(version)
        assert nvlink_per_link(consts, 103) == nvlink_per_link(consts, 100)
    b300 = CollectiveModel(load_topology("dgx-b300:2x8")).shape(tuple(range(16)))[0]
    b200 = CollectiveModel(load_topology("dgx-b200:2x8")).shape(tuple(range(16)))[0]
    assert b300.arch == 103 and b300.nvls_capable
    assert ll128_enabled(b300, constants_for("2.30")) and ll128_enabled(b200, constants_for("2.30"))
    assert not ll128_enabled(b300, constants_for("2.26")) and ll128_enabled(b200, constants_for("2.26"))


@pytest.mark.parametrize("alias, preset", [("hgx-b300", "dgx-b300"), ("HGX_B300", "dgx-b300"),
                                           ("gb300", "gb300-nvl72"), ("dgx-gb300", "gb300-nvl72"),
                                           ("DGX-GB300", "gb300-nvl72")])
def test_the_aliases_resolve(alias, preset):
    assert resolve(alias, list_presets())[0] == preset
    topo = load_topology(alias)
    assert topo.preset == preset and topo.alias_note.startswith(f"preset {alias!r} read as {preset}")


@pytest.mark.parametrize("name", ["b300", "p6-b300", "p6-b300.48xlarge", "aws-p6-b300"])
def test_names_of_other_systems_are_not_aliases(name):
    """A bare b300 is both presets' part; AWS p6-b300 runs 16x 400 Gb/s EFA v4, not DGX B300's
    8x 800 Gb/s CX-8: refused, with the nearest presets offered."""
    assert name not in ALIASES and resolve(name, list_presets()) is None
    with pytest.raises(TopologyError, match="unknown preset"):
        load_topology(f"{name}:1x8")
    assert suggestions("b300", list_presets())[0] == "dgx-b300"


@pytest.mark.parametrize("name", ["dgx-b300", "gb300-nvl72"])
def test_every_number_cites_a_source(name):
    text = (ROOT / "topologies" / f"{name}.yaml").read_text()
    assert re.search(rf"^name: {name}$", text, re.M)
    for line in text.splitlines():
        if re.match(r"^\s+\w+\s*:\s*[\d.]+", line):
            assert "#" in line, f"no source comment on: {line.strip()}"
