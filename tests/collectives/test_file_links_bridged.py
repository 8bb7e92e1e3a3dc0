"""An NVLink-bridged node's file rates drive the answer on every path its rings take: GPUs
that NVLink does not join send over PCIe and the socket links at the file's rates, and a
bridged pair's NVLink at its own (the NVLink ratio was applied to the PCIe rings, and the
PCIe and socket rates were ignored)."""

from pathlib import Path

import pytest

from embsim.collectives import CollectiveModel
from embsim.topology import load_topology

PRESET = Path(__file__).resolve().parents[2] / "topologies" / "azure-nc-a100-v4.yaml"


def time_on(tmp_path, op, ranks, edit=None):
    text = PRESET.read_text()
    if edit:
        old, new = edit
        assert old in text
        text = text.replace(old, new)
    path = tmp_path / f"node-{abs(hash(edit))}.yaml"
    path.write_text(text)
    return CollectiveModel(load_topology(str(path))).plan(op, 256 << 20, ranks).time


SLOW_PCIE = ("pcie_gbps: 31.5", "pcie_gbps: 0.0315")
SLOW_NVLINK = ("nvlink_gbps: 300", "nvlink_gbps: 0.3")


def test_rings_across_the_pairs_move_at_the_files_pcie_and_socket_rates(tmp_path):
    four = tuple(range(4))
    base = time_on(tmp_path, "all_reduce", four)
    assert time_on(tmp_path, "all_reduce", four, SLOW_PCIE) > 100 * base
    cpu = PRESET.read_text().split("cpu_link_gbps:")[1].split()[0]
    slow_cpu = (f"cpu_link_gbps: {cpu}", f"cpu_link_gbps: {float(cpu) / 1000:g}")
    assert time_on(tmp_path, "all_reduce", four, slow_cpu) > 10 * base


def test_a_bridged_pair_is_its_nvlink_not_its_pcie(tmp_path):
    pair = (0, 1)
    base = time_on(tmp_path, "all_reduce", pair)
    assert time_on(tmp_path, "all_reduce", pair, SLOW_PCIE) == pytest.approx(base, rel=1e-9)
    assert time_on(tmp_path, "all_reduce", pair, SLOW_NVLINK) > 100 * base


def test_an_alltoall_waits_for_the_peer_behind_a_slow_bridge(tmp_path):
    four = tuple(range(4))
    slow = time_on(tmp_path, "alltoall", four, SLOW_NVLINK)
    # one of each GPU's three peers is across the bridge: 1/4 of 256 MiB at 0.3 GB/s
    assert slow == pytest.approx((256 << 20) / 4 / 0.3e9, rel=0.1)
