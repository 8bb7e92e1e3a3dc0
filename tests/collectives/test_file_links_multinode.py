"""The topology file's intra-node links drive collective times on several nodes too.

NCCL chooses on its own per-arch view (it reads link counts, not speeds), so a file whose
NVLink or PCIe differs from NCCL's constants keeps NCCL's (algo, proto) but moves the
time: a ring channel crosses every GPU's fabric link once and each node's NICs once, so a
slow fabric binds a 2-node ring exactly as it binds a 1-node one.
"""

from pathlib import Path

import pytest

from embsim.cli import main
from embsim.collectives import CollectiveModel
from embsim.collectives.busbw import busbw_factor
from embsim.collectives.shape import comm_shape
from embsim.topology import load_topology

ROOT = Path(__file__).resolve().parents[2]
SIZE = 256 << 20


def _copy(tmp_path, preset: str, old: str, new: str) -> str:
    text = (ROOT / "topologies" / f"{preset}.yaml").read_text()
    assert old in text
    path = tmp_path / f"{preset}-whatif.yaml"
    path.write_text(text.replace(old, new).replace(f"name: {preset}", f"name: {preset}-whatif"))
    return str(path)


def _busbw(op: str, nbytes: int, n: int, seconds: float) -> float:
    return nbytes * busbw_factor(op, n) / seconds


def _plan(spec: str, op: str, nbytes: int = SIZE):
    topo = load_topology(spec)
    n = topo.n_nodes * topo.gpus_per_node
    return CollectiveModel(topo).plan(op, nbytes, range(n)), n


CASES = [("dgx-h100", "nvlink_gbps: 450 ", "nvlink_gbps: 45 "),
         ("pcie-a100-40gb", "pcie_gbps: 31.5 ", "pcie_gbps: 3.15 ")]


@pytest.mark.parametrize("preset, old, new", CASES)
@pytest.mark.parametrize("op", ["all_gather", "reduce_scatter", "all_reduce", "broadcast"])
def test_a_slow_fabric_slows_two_nodes(tmp_path, preset, old, new, op):
    slow = _copy(tmp_path, preset, old, new)
    stock2, _ = _plan(f"{preset}:2x8", op)
    slow2, n2 = _plan(f"{slow}:2x8", op)
    slow1, n1 = _plan(f"{slow}:1x8", op)
    assert (slow2.algo, slow2.proto) == (stock2.algo, stock2.proto)   # NCCL's own choice
    assert slow2.time > 4 * stock2.time
    # two slow nodes are no faster per byte than one: the same fabric hops bind them
    if slow2.algo == "Ring":
        assert _busbw(op, SIZE, n2, slow2.time) <= _busbw(op, SIZE, n1, slow1.time)
    else:   # NVLSTree vs one node's NVLS: the node's NVLS stage moves the same bytes
        assert SIZE / slow2.time <= SIZE / slow1.time


def test_the_users_probe(tmp_path, capsys):
    """The report: 2x8 at 45 GB/s NVLink came out at 1030.82 us, faster than 1x8's 6556.67."""
    path = _copy(tmp_path, "dgx-h100", "nvlink_gbps: 450 ", "nvlink_gbps: 45 ")
    times = {}
    for shape in ("1x8", "2x8"):
        assert main(["nccl-tests", "--topology", f"{path}:{shape}", "--op", "all_gather",
                     "-b", "256M", "-e", "256M"]) == 0
        out = capsys.readouterr().out
        assert "disagrees with NCCL's view" in out
        assert f"# topology file: {path}" in out      # not only the preset's own name
        times[shape] = float(out.strip().splitlines()[-2].split()[5])
    assert times["2x8"] > 0.9 * times["1x8"]


def test_the_sweep_override_and_the_file_agree_on_the_order_of_magnitude(tmp_path):
    """A sweep's `hardware: {nvlink_gbps: 45}` changes NCCL's view too (it re-searches its
    channels); the file keeps NCCL's view. Both must land near the slow fabric."""
    path = _copy(tmp_path, "dgx-h100", "nvlink_gbps: 450 ", "nvlink_gbps: 45 ")
    override = load_topology("dgx-h100:2x8").with_overrides(nvlink_gbps=45)
    via_file = CollectiveModel(load_topology(f"{path}:2x8")).plan("all_gather", SIZE, range(16)).time
    via_override = CollectiveModel(override).plan("all_gather", SIZE, range(16)).time
    assert via_file == pytest.approx(via_override, rel=0.25)


def test_stock_files_keep_nccls_scale():
    for spec in ("dgx-h100:2x8", "pcie-a100-40gb:2x8", "dgx-b200:2x8", "aws-p5:4x8"):
        shape = comm_shape(load_topology(spec), range(load_topology(spec).n_nodes * 8))
        assert shape.fabric_ratio == 1.0
        assert shape.kernel_scale_for("Ring") == shape.kernel_scale_for("Tree") == 1.0


def test_one_gpu_per_node_crosses_no_nvlink(tmp_path):
    path = _copy(tmp_path, "dgx-h100", "nvlink_gbps: 450 ", "nvlink_gbps: 45 ")
    slow = load_topology(f"{path}:2x8")
    ranks = (0, 8)                                  # one GPU on each node
    assert comm_shape(slow, ranks).kernel_scale == 1.0
    a = CollectiveModel(load_topology("dgx-h100:2x8")).plan("all_gather", SIZE, ranks)
    b = CollectiveModel(slow).plan("all_gather", SIZE, ranks)
    assert a.time == b.time


def _lone_gpu_with_nics(tmp_path, nics: int) -> str:
    """dgx-h100 cut to one GPU a node, every one of `nics` 400G NICs serving it."""
    text = (ROOT / "topologies" / "dgx-h100.yaml").read_text()
    lines = []
    for line in text.splitlines():
        key = line.strip().split(":")[0]
        if line.startswith("  count: 8") and "GPUs" in line:
            line = "  count: 1"
        elif line.startswith("  count: 8"):
            line = f"  count: {nics}"
        elif key == "gpus" and line.startswith("  gpus:"):
            line = f"  gpus: {[[0]] * nics}"
        lines.append(line)
    path = tmp_path / f"lone-h100-{nics}nics.yaml"
    path.write_text("\n".join(lines).replace("name: dgx-h100", f"name: lone-h100-{nics}nics") + "\n")
    return str(path)


@pytest.mark.parametrize("op", ["all_reduce", "all_gather", "sendrecv"])
def test_a_lone_gpu_feeds_its_nics_through_its_own_link(tmp_path, op):
    # More NICs behind one GPU add no bandwidth past that GPU's PCIe Gen5 x16 (NCCL's view 48
    # GB/s): the ring of a 1-GPU-per-node communicator once grew with the NIC count (358 GB/s
    # busbw through one x16 link with 8 NICs).
    one = _plan(f"{_lone_gpu_with_nics(tmp_path, 1)}:4x1", op)[0]
    eight, n = _plan(f"{_lone_gpu_with_nics(tmp_path, 8)}:4x1", op)
    assert load_topology(f"{_lone_gpu_with_nics(tmp_path, 8)}:4x1").node.nics.count == 8
    assert _busbw(op, SIZE, n, eight.time) <= 1.05 * 48e9
    assert eight.time == pytest.approx(one.time, rel=0.05)


@pytest.mark.parametrize("shape", ["4x1", "4x2"])
def test_a_pcie_what_if_reaches_the_gpus_hop_to_its_nic(tmp_path, shape):
    # l40s-roce's 400 GbE NICs (50 GB/s) behind Gen4 x16 (31.5): doubling the file's PCIe
    # rate lifts the path to the NIC too; it used to keep NCCL's Gen4 view there while the
    # output said the times use the file.
    fast = _copy(tmp_path, "l40s-roce", "pcie_gbps: 31.5 ", "pcie_gbps: 63 ")
    stock, n = _plan(f"l40s-roce:{shape}", "all_reduce", 1 << 30)
    what_if, _ = _plan(f"{fast}:{shape}", "all_reduce", 1 << 30)
    assert (what_if.algo, what_if.proto) == (stock.algo, stock.proto)
    assert stock.time / what_if.time > 1.6
    assert _busbw("all_reduce", 1 << 30, n, what_if.time) <= 50e9


def test_a_nic_slower_than_nccls_slowest_speed_step_still_sets_the_time(tmp_path):
    # NCCL's slowest inter-node speed step is 0.12 GB/s; a file's 0.1 Gb/s NIC once ran at
    # that step, as fast as a 1 Gb/s one
    times = []
    for gbit in ("1", "0.1"):
        path = _copy(tmp_path, "l40s-roce", "gbit: 400 ", f"gbit: {gbit} ")
        times.append(_plan(f"{path}:2x1", "all_reduce", 1 << 30)[0].time)
        (tmp_path / "l40s-roce-whatif.yaml").unlink()
    assert times[1] == pytest.approx(10 * times[0], rel=0.05)   # 1 Gb/s runs at the 0.12 step
