"""The DGX-2 / DGX-2H presets (topologies/dgx2-v100.yaml, dgx2h-v100.yaml): 16 V100 SXM3 on one
NVSwitch fabric, 8 EDR NICs, and the DGX-2H's 450 W GPUs the only difference."""

import re
from pathlib import Path

import pytest

import embsim
from embsim.collectives import CollectiveModel
from embsim.topology import list_presets, load_topology

PRESET_DIR = Path(embsim.__file__).parent.parent / "topologies"
NAMES = ("dgx2-v100", "dgx2h-v100")


def _bandwidths(summary, kind):
    return {c["bandwidth_gbps"] for c in summary["links"] if c["kind"] == kind}


@pytest.mark.parametrize("name", NAMES)
def test_dgx2_loads_16_gpus_on_nvswitch_with_8_edr_nics(name):
    assert name in list_presets()
    topo = load_topology(name)
    s = topo.summary()
    assert (topo.preset, topo.n_nodes, topo.gpus_per_node, s["n_gpus"]) == (name, 1, 16, 16)
    assert topo.node.gpu.arch == 70 and topo.node.fabric.kind == "nvswitch"
    assert topo.node.fabric.nvswitches == 12 and topo.node.fabric.nvlink_links_per_gpu == 6
    assert _bandwidths(s, "nvlink") == {150} and _bandwidths(s, "pcie") == {15.75}
    two = load_topology(f"{name}:2x16").summary()
    assert _bandwidths(two, "nic") == {12.5} and two["n_gpus"] == 32
    assert topo.node.nics.count == 8 and all(len(g) == 2 for g in topo.node.nics.gpus)


@pytest.mark.parametrize("name", NAMES)
def test_dgx2_every_number_cites_a_source(name):
    text = (PRESET_DIR / f"{name}.yaml").read_text()
    assert re.search(rf"^name: {re.escape(name)}$", text, re.M)
    for line in text.splitlines():
        if re.match(r"^\s+\w+(_gbps|_us|gbit|_tflops|hbm_gb|nvswitches|switches|sockets|count|_mhz|fraction)\s*:\s*[\d.]+",
                    line):
            assert "#" in line, f"{name}: no source comment on: {line.strip()}"


def test_dgx2h_differs_from_dgx2_only_in_the_gpus_rates():
    d2, d2h = load_topology("dgx2-v100").node, load_topology("dgx2h-v100").node
    assert d2.fabric == d2h.fabric and d2.nics == d2h.nics and d2.network == d2h.network
    assert (d2.gpu.bf16_tflops, d2h.gpu.bf16_tflops) == (125, 131.25)      # 2 vs 2.1 PFLOPS / 16
    assert d2h.gpu.clock_mhz / d2.gpu.clock_mhz == pytest.approx(2.1 / 2, rel=1e-3)
    assert (d2.gpu.sms, d2.gpu.hbm_gbps, d2.gpu.gemm_fraction) == (d2h.gpu.sms, d2h.gpu.hbm_gbps, d2h.gpu.gemm_fraction)
    # the V100 fractions are dgx1-v100's (same die)
    d1 = load_topology("dgx1-v100").node.gpu
    assert (d2.gpu.gemm_fractions, d2.gpu.hbm_fraction) == (d1.gemm_fractions, d1.hbm_fraction)


def test_nccl_sees_one_nvswitch_domain_of_16_volta_gpus():
    """NCCL's view: 6 NVLinks of Volta's 20 GB/s per GPU into the switch, no NVLS; a 16-GPU
    1 GiB ring AllReduce approaches that 120 GB/s bound (no published DGX-2 nccl-tests log was
    found to hold it to)."""
    model = CollectiveModel(load_topology("dgx2-v100"))
    ranks = tuple(range(16))
    shape = model.shape(ranks)[0]
    assert shape.intra == "nvswitch" and shape.nvlink_bw == pytest.approx(6 * 20.0)
    assert not shape.nvls_capable
    size = 1 << 30
    busbw = 2 * 15 / 16 * size / model.plan("all_reduce", size, ranks).time / 1e9
    assert 105 < busbw <= 120.5, busbw


@pytest.mark.parametrize("alias, preset", [("dgx-2", "dgx2-v100"), ("DGX2", "dgx2-v100"),
                                           ("dgx-2h", "dgx2h-v100"), ("DGX_2H", "dgx2h-v100")])
def test_dgx2_aliases(alias, preset):
    topo = load_topology(f"{alias}:1x16")
    assert topo.preset == preset and topo.alias_note.startswith(f"preset {alias!r} read as {preset}")
