"""The PCIe presets for the Lambda PyTorch benchmark GPUs (H100 PCIe, RTX 6000 Ada, RTX A6000,
Quadro RTX 8000, A10, A100 40GB PCIe): they load, list on one line, cite a source for every
number, and the compute model uses their datasheet figures (professional and datacenter cards
run FP16/BF16 with FP32 accumulate at the full tensor rate, unlike the GeForce presets)."""

import re
from pathlib import Path

import pytest

import embsim
from embsim.cli import main
from embsim.topology import list_presets, load_topology
from embsim.workload.gpu_compute import for_gpu

PRESET_DIR = Path(embsim.__file__).parent.parent / "topologies"

# preset -> (arch, SMs, memory GB, memory GB/s, FP32, dense tensor TFLOPS per dtype, PCIe GB/s per direction)
EXPECTED = {
    "pcie-h100": (90, 114, 80, 2000, 51, {"tf32": 378, "bf16": 756, "fp16": 756, "fp8": 1513}, 63.0),
    "pcie-rtx6000ada": (89, 142, 48, 960, 91.1, {"tf32": 182.1, "bf16": 364.2, "fp16": 364.2, "fp8": 728.5}, 31.5),
    "pcie-rtxa6000": (86, 84, 48, 768, 38.7, {"tf32": 77.4, "bf16": 154.8, "fp16": 154.8}, 31.5),
    "pcie-quadro-rtx8000": (75, 72, 48, 672, 16.3, {"fp16": 130.5}, 15.75),
    "pcie-a10": (86, 72, 24, 600, 31.2, {"tf32": 62.5, "bf16": 125, "fp16": 125}, 31.5),
    "pcie-a100-40gb": (80, 108, 40, 1555, 19.5, {"tf32": 156, "bf16": 312, "fp16": 312}, 31.5),
}
NAMES = tuple(EXPECTED)


def test_listed_one_line_each(capsys):
    assert main(["topology", "list"]) == 0
    lines = {ln.split(None, 1)[0]: ln for ln in capsys.readouterr().out.strip().splitlines()}
    assert set(NAMES) <= set(list_presets())
    for name in NAMES:
        desc = lines[name].split(None, 1)[1]
        assert desc.startswith("8x ") and "\n" not in desc


@pytest.mark.parametrize("name", NAMES)
def test_loads_one_and_two_nodes_with_the_datasheet_figures(name):
    arch, sms, mem, mem_bw, fp32, tensor, pcie = EXPECTED[name]
    topo = load_topology(name)
    gpu = topo.node.gpu
    assert (topo.preset, topo.n_nodes, topo.gpus_per_node) == (name, 1, 8)
    assert (gpu.arch, gpu.sms, gpu.hbm_gb, gpu.hbm_gbps, gpu.fp32_tflops) == (arch, sms, mem, mem_bw, fp32)
    assert dict(gpu.tensor_tflops) == tensor
    s = topo.summary()
    assert {c["bandwidth_gbps"] for c in s["links"] if c["kind"] == "pcie"} == {pcie}
    assert not [c for c in s["links"] if c["kind"] == "nvlink"]      # no NVLink bridge modelled
    assert load_topology(f"{name}:2x8").summary()["n_gpus"] == 16


@pytest.mark.parametrize("name", NAMES)
def test_the_compute_model_uses_them(name):
    _, sms, _, mem_bw, fp32, tensor, _ = EXPECTED[name]
    g = for_gpu(load_topology(name).node.gpu)
    assert g.rates["fp32"] == pytest.approx(fp32 * 1e12)
    for key, tflops in tensor.items():
        assert g.rates[key] == pytest.approx(tflops * 1e12)
    assert g.hbm_bps == pytest.approx(mem_bw * 1e9) and g.sms == sms


def test_professional_cards_run_fp16_with_fp32_accumulate_at_full_rate():
    """Same die, different SKU: the RTX 6000 Ada's FP16 rate (FP32 accumulate) is twice the
    4090's per SM-clock; the A6000's twice the 3090's; the Turing Quadro's twice the 2080 Ti's."""
    def per_sm_clock(name):
        gpu = load_topology(name).node.gpu
        return dict(gpu.tensor_tflops)["fp16"] / (gpu.sms * gpu.clock_mhz)
    for pro, geforce in (("pcie-rtx6000ada", "pcie-rtx4090"), ("pcie-rtxa6000", "pcie-rtx3090"),
                         ("pcie-quadro-rtx8000", "pcie-rtx2080ti")):
        assert per_sm_clock(pro) / per_sm_clock(geforce) == pytest.approx(2.0, rel=0.05), pro


def test_turing_quadro_has_fp16_tensor_only():
    g = for_gpu(load_topology("pcie-quadro-rtx8000").node.gpu)
    assert "bf16" not in g.rates and "tf32" not in g.rates and "fp16" in g.rates


@pytest.mark.parametrize("name", NAMES)
def test_every_number_cites_a_source(name):
    text = (PRESET_DIR / f"{name}.yaml").read_text()
    assert re.search(rf"^name: {re.escape(name)}$", text, re.M)
    for line in text.splitlines():
        if re.match(r"^\s+\w+\s*:\s*[\d.]+", line):
            assert "#" in line, f"{name}: no source comment on: {line.strip()}"
