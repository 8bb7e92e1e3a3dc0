"""CollNet (IB SHARP): NCCL's enablement rules, its tuning numbers, its choice, the kernel
time's independence of the node count, the demand's NIC and switch bytes, refusals."""

from pathlib import Path

import numpy as np
import pytest

from embsim.cli import main
from embsim.collectives import collnet
from embsim.collectives import nccl_model as nm
from embsim.collectives.channels import runtime_lanes
from embsim.collectives.constants import constants_for
from embsim.collectives.model import CollectiveModel
from embsim.errors import InputError
from embsim.nccl_names import parse_filter
from embsim.topology import load_topology

ROOT = Path(__file__).resolve().parents[2]


def _sharp_file(tmp_path, preset="dgx-h100", sharp=True) -> Path:
    text = (ROOT / "topologies" / f"{preset}.yaml").read_text()
    text = text.replace("\nnetwork:\n", f"\nnetwork:\n  sharp: {str(sharp).lower()}\n", 1)
    path = tmp_path / f"{preset}-sharp-{sharp}.yaml"
    path.write_text(text)
    return path


def _model(tmp_path, shape="4x8", preset="dgx-h100", sharp=True, **kw):
    return CollectiveModel(load_topology(f"{_sharp_file(tmp_path, preset, sharp)}:{shape}"), **kw)


def _enabled(model, n):
    shape, graphs = model.shape(tuple(range(n)))
    return {a for a, _ in nm.default_enabled("all_reduce", shape, graphs, model.consts)}


def test_names_parse():
    assert parse_filter("collnetdirect,CollNetChain", "algo") == {"CollNetDirect", "CollNetChain"}
    assert "CollNetDirect" not in parse_filter("^CollNetDirect", "algo")


def test_enablement_rules(tmp_path):
    # no SHARP: never; one node: never (NCCL_COLLNET_NODE_THRESHOLD 2); with both: Direct and Chain
    assert not _enabled(_model(tmp_path, sharp=False), 32) & set(nm.COLLNET)
    assert not _enabled(_model(tmp_path, shape="1x8"), 8) & set(nm.COLLNET)
    assert set(nm.COLLNET) <= _enabled(_model(tmp_path), 32)
    # a PCIe node (no NVSwitch: nvsCount == 0): Chain only
    pcie = _enabled(_model(tmp_path, shape="2x8", preset="l40s-roce"), 16)
    assert "CollNetChain" in pcie and "CollNetDirect" not in pcie
    # AllReduce only
    m = _model(tmp_path)
    shape, graphs = m.shape(tuple(range(32)))
    ag = {a for a, _ in nm.default_enabled("all_gather", shape, graphs, m.consts)}
    assert not ag & set(nm.COLLNET)
    assert nm.bandwidth("all_gather", "CollNetDirect", "Simple", shape, graphs, m.consts) == 0


@pytest.mark.parametrize("version, direct, chain", [
    # DGX H100 4x8, SHARP. 2.30: Direct graph 8 heads at 48 GB/s (NIC path min(50, Gen5 x16 48));
    # bus 8 x 48 = 384, GPU/NIC factor 8/8 = 1, x0.85 (sm90) = 326.4, x0.5 = 163.2 GB/s;
    # latency 2 (min(1, 7) 3.7 + 7 x 0.4) + 31 = 44.0 us. Chain graph: the ring's 8 channels at
    # 45 (8 x 48 > 370.8 NVLink): 8 x 45 x 0.5 = 180.0; 2 x 7 x 2.8 + 30 = 69.2 us.
    ("2.30", (163.2, 44.0), (180.0, 69.2)),
    # 2.18: one collnet graph (the chain's, 8 x 45) for both: Direct 360 x 0.85 x 0.5 = 153.0;
    # latency 2 (8.0 + 7 x 0.5) + 10.7 = 33.7; Chain 180.0, 2 x 7 x 4.75 + 14 = 80.5.
    ("2.18", (153.0, 33.7), (180.0, 80.5)),
])
def test_tuning_numbers_are_tuning_cc(tmp_path, version, direct, chain):
    m = _model(tmp_path, nccl_version=version)
    shape, graphs = m.shape(tuple(range(32)))
    for algo, (bw, lat) in (("CollNetDirect", direct), ("CollNetChain", chain)):
        assert nm.bandwidth("all_reduce", algo, "Simple", shape, graphs, m.consts) == pytest.approx(bw)
        assert nm.latency("all_reduce", algo, "Simple", shape, graphs, m.consts) == pytest.approx(lat)
        assert nm.bandwidth("all_reduce", algo, "LL128", shape, graphs, m.consts) == 0


def test_choice_follows_nccls_table(tmp_path):
    # H100 + SHARP, 2.30: NVLS across nodes (CollNet+NVLS, 198 GB/s, 43 us) beats both CollNet
    # algorithms at every size above the LL range
    m = _model(tmp_path)
    assert {m.plan("all_reduce", s, range(32)).algo for s in (1 << 20, 1 << 24, 1 << 30)} == {"NVLS"}
    # without NVLS: Direct (44 us) up to ~44 MB, then Chain (180 > 163.2 GB/s)
    m = _model(tmp_path, algo="^NVLS,NVLSTree")
    assert m.plan("all_reduce", 1 << 22, range(32)).algo == "CollNetDirect"
    assert m.plan("all_reduce", 1 << 28, range(32)).algo == "CollNetChain"
    # A100 + SHARP (no NVLS): Direct's table 192 GB/s beats the ring's ~99 from 256 KiB
    m = _model(tmp_path, preset="dgx-a100")
    assert m.plan("all_reduce", 1 << 30, range(32)).algo == "CollNetDirect"
    assert m.plan("all_reduce", 1 << 10, range(32)).algo != "CollNetDirect"


def test_sharp_time_does_not_grow_with_nodes(tmp_path):
    t = {}
    for algo in ("CollNetDirect", "CollNetChain", "Ring"):
        for nodes in (2, 16):
            m = _model(tmp_path, shape=f"{nodes}x8", algo=algo)
            t[algo, nodes] = m.plan("all_reduce", 1 << 30, range(8 * nodes)).time
    for algo in nm.COLLNET:
        assert t[algo, 16] == pytest.approx(t[algo, 2], rel=0.02)
    assert t["Ring", 16] > 1.1 * t["Ring", 2]


def test_demand_nic_bytes_are_one_share_each_way(tmp_path):
    s = 1 << 30
    for nodes in (2, 64):
        m = _model(tmp_path, shape=f"{nodes}x8", algo="CollNetDirect")
        topo = m.topology
        plan = m.plan("all_reduce", s, range(8 * nodes))
        unit = m._unit_demand("all_reduce", "CollNetDirect", tuple(range(8 * nodes)))
        up, down = topo.nic_links(nodes - 1, topo.rails[3])
        dense = np.bincount(unit.links, weights=unit.bytes, minlength=len(topo.capacity))
        assert dense[up] == pytest.approx(1 / 8) and dense[down] == pytest.approx(1 / 8)
        # the busiest NVLink: a head's (7 + 7) / 8 of the message each way
        assert dense[list(topo.gpu_up_links(0, "nvlink"))].max() == pytest.approx(1.75)
        net = dense[topo.link_kinds == "net"]
        # 64 nodes span two leaves per rail: each leaf's uplinks carry one reduced share
        if nodes == 64:
            assert net.max() == pytest.approx(1 / 8)
        else:
            assert net.size == 0 or net.max() == 0
        assert plan.time > plan.latency


def test_direct_launch_trimming_is_enqueue_cc():
    # 1 MiB, 16 channels, 8 heads: 16 -> 8 (threshold 256 at 12) -> 4 (128 at 6) -> 2 (64 at 3);
    # 1 MiB >= 2 x 640 x 8 x 64: stop
    assert runtime_lanes(1 << 20, "CollNetDirect", "Simple", 32, 16, heads=8) == (2, 640)
    assert runtime_lanes(1 << 30, "CollNetDirect", "Simple", 32, 16, heads=8) == (16, 640)
    # Chain: the Ring/Tree rule at 512 B a thread
    assert runtime_lanes(16 * 640 * 512, "CollNetChain", "Simple", 32, 16) == (16, 640)


def test_kernel_bw_is_the_slower_stage(tmp_path):
    m = _model(tmp_path)
    shape, graphs = m.shape(tuple(range(32)))
    link = shape.intra_bw * shape.fabric_ratio
    assert collnet.kernel_bw("CollNetDirect", shape, graphs) == pytest.approx(min(link / 1.75, 8 * shape.nic_path_bw))
    assert collnet.kernel_bw("CollNetChain", shape, graphs) == pytest.approx(min(link / 2, 8 * shape.nic_path_bw))
    assert collnet.direct_link_load(8, 4) == pytest.approx(10 / 4)


def test_refused_without_sharp(tmp_path, capsys):
    with pytest.raises(InputError, match="network.sharp"):
        _model(tmp_path, sharp=False, algo="CollNetChain").plan("all_reduce", 1 << 20, range(32))
    assert main(["nccl-tests", "--topology", "dgx-h100:4x8", "--algo", "CollNetDirect", "-b", "1M", "-e", "1M"]) == 2
    err = capsys.readouterr().err.strip()
    assert "network.sharp" in err and len(err.splitlines()) == 1


def test_deterministic(tmp_path):
    a = _model(tmp_path, algo="CollNetChain").plan("all_reduce", 12345678, range(32))
    b = _model(tmp_path, algo="CollNetChain").plan("all_reduce", 12345678, range(32))
    assert (a.time, a.latency, a.model_time) == (b.time, b.latency, b.model_time)
    assert np.array_equal(a.demand.links, b.demand.links) and np.array_equal(a.demand.bytes, b.demand.bytes)


def test_nccl_tests_table_says_collnet(tmp_path, capsys):
    path = _sharp_file(tmp_path, "dgx-a100")
    main(["nccl-tests", "--topology", f"{path}:4x8", "-b", "1G", "-e", "1G"])
    assert "CollNetDirect" in capsys.readouterr().out
