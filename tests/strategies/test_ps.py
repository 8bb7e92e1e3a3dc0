"""Parameter servers on the cluster graph: routes through server NICs and CPUs, a push's
time by hand, uneven server load under Zipf, YAML server nodes."""

from pathlib import Path

import numpy as np
import pytest

from embsim.collectives.servers import server_transfer
from embsim.engine.run import SimulationConfig, simulate
from embsim.errors import InputError
from embsim.topology import load_topology, parse_node_type
from embsim.topology.servers import with_servers
from embsim.topology.spec import ServerSpec


def kinds(topo, route):
    return [topo.links[i].kind for i in route]


def test_dedicated_routes_cross_both_nics_and_end_on_the_server_cpu():
    topo = with_servers(load_topology("pcie-rtx3090:2x4"), "dedicated", ServerSpec(nodes=2))
    assert topo.servers.count == 2
    push = kinds(topo, topo.servers.push_routes[(5, 1)])
    assert push[0] == "pcie" and push[-2:] == ["ps-nic", "ps-cpu"] and "nic" in push
    pull = kinds(topo, topo.servers.pull_routes[(1, 5)])
    assert pull[0] == "ps-nic" and "ps-cpu" not in pull and pull[-1] == "pcie"
    # the GPU links keep their ids: server links are appended
    base = load_topology("pcie-rtx3090:2x4")
    assert topo.links[:len(base.links)] == base.links


def test_colocated_local_worker_stays_off_the_network():
    topo = with_servers(load_topology("pcie-rtx3090:2x4"), "colocated")
    assert topo.servers.count == 2
    local = kinds(topo, topo.servers.push_routes[(1, 0)])     # rank 1 lives on node 0
    assert "nic" not in local and local[-1] == "ps-cpu"
    remote = kinds(topo, topo.servers.push_routes[(1, 1)])
    assert "nic" in remote and remote[-1] == "ps-cpu"


def test_a_push_by_hand():
    # 8 workers each push 1 MB to each of 2 dedicated servers (1 NIC of 100 Gb/s, 2 GB/s
    # summation): a server receives 8 MB; its CPU (2 GB/s) is the bottleneck: 4 ms.
    topo = with_servers(load_topology("pcie-rtx3090:2x4"), "dedicated",
                        ServerSpec(nodes=2, sum_gbps=2.0))
    m = np.full((8, 2), 1e6)
    latency, time, demand = server_transfer(topo, topo.capacity, "ps_push", m, tuple(range(8)))
    assert time - latency == pytest.approx(8e6 / 2e9, rel=1e-9)
    # with fast CPUs the node's one 100 Gb/s NIC is: 4 workers x 2 MB leave each node
    fast = with_servers(load_topology("pcie-rtx3090:2x4"), "dedicated", ServerSpec(nodes=2, sum_gbps=1e3))
    latency, time, _ = server_transfer(fast, fast.capacity, "ps_push", m, tuple(range(8)))
    assert time - latency == pytest.approx(8e6 / 12.5e9, rel=1e-9)
    with pytest.raises(InputError, match="matrix"):
        server_transfer(topo, topo.capacity, "ps_push", np.ones((8, 3)), tuple(range(8)))


def run(**kw):
    return simulate(SimulationConfig(iterations=3, efficiency_baseline=False, **kw))


def test_contiguous_rows_load_one_server_and_slow_the_push():
    hashed = run(topology="pcie-rtx3090:4x4", model="lstm-lm1b", batch=32, strategy="ps",
                 strategy_options={"servers": "dedicated", "server_sharding": "hashed"})
    blocks = run(topology="pcie-rtx3090:4x4", model="lstm-lm1b", batch=32, strategy="ps",
                 strategy_options={"servers": "dedicated", "server_sharding": "contiguous"})
    load = lambda r: float(next(n for n in r.notes if "max/mean" in n).split("max/mean ")[1].split()[0])
    assert load(hashed) < 1.1 < 2.0 < load(blocks)
    assert blocks.comm_time["ps_push"] > hashed.comm_time["ps_push"]
    assert blocks.step_time > hashed.step_time


def test_yaml_describes_server_nodes_and_bad_options_are_one_line_errors():
    text = load_topology("pcie-rtx3090:1x4").node.source
    yaml = open(text).read() + "parameter_servers: {nodes: 3, nic_gbit: 25, sum_gbps: 8}\n"
    node = parse_node_type(yaml)
    assert node.servers == ServerSpec(nodes=3, nics=1, nic_gbit=25.0, latency_us=None, sum_gbps=8.0)
    with pytest.raises(InputError, match="parameter_servers"):
        parse_node_type(open(text).read() + "parameter_servers: {cores: 3}\n")
    with pytest.raises(InputError, match="servers"):
        run(topology="2x8", model="tiny-lm", strategy="ps", strategy_options={"servers": "cloud"})
    with pytest.raises(InputError, match="network"):
        run(topology="dgx-h100:1x8", model="lstm-lm1b", batch=8, strategy="ps",
            strategy_options={"servers": "dedicated"})


def test_byteps_partitions_are_the_default_and_load_the_first_server():
    r = run(topology="pcie-rtx3090:4x4", model="lstm-lm1b", batch=32, strategy="ps")
    note = next(n for n in r.notes if "max/mean" in n)
    assert "rows partitions" in note and "4 colocated servers" in note
    with pytest.raises(InputError, match="server_partition_params"):
        run(topology="2x8", model="tiny-lm", strategy="ps", strategy_options={"server_partition_params": 0})


def _h100_with_host_memory(tmp_path, extra: str | None):
    """dgx-h100 as a user's file, its host_memory_gb line replaced by `extra` (None: none)."""
    text = (Path(__file__).resolve().parents[2] / "topologies" / "dgx-h100.yaml").read_text()
    kept = [line for line in text.splitlines() if not line.startswith("host_memory_gb:")]
    path = tmp_path / "h100.yaml"
    path.write_text("\n".join(kept + ([extra] if extra else [])) + "\n")
    return f"{path}:2x8"


def ps_run(topology, **options):
    return simulate(SimulationConfig(topology=topology, model="lstm-lm1b", strategy="ps", iterations=2,
                                     efficiency_baseline=False, strategy_options=options))


def test_the_servers_host_memory_is_checked_against_the_node():
    """The tables live in the servers' host memory (rows and the optimizer's state): a
    colocated server is its node's, so each node's host holds its server's shard, checked
    against the preset's host memory (dgx-h100: 2 TB)."""
    from embsim.workload import load_model
    r = ps_run("dgx-h100:2x8")
    m = load_model("lstm-lm1b")
    held = sum(t.vocab * t.dim for t in m.tables) * (m.table_bytes + m.optimizer.state_bytes_per_param)
    need = r.memory.host
    assert need.holder == "servers" and need.where == "node" and need.fits is True
    assert need.mean_per_node == pytest.approx(held / 2, rel=1e-6)
    assert need.per_node >= need.mean_per_node              # partitions dealt from server 0 on
    note = next(n for n in r.notes if n.startswith("ps: the servers hold"))
    assert f"{held / 1e9:,.1f} GB" in note and "2 colocated servers" in note
    assert note.endswith(f"servers need {need.per_node / 1e9:,.1f} GB of host memory per node, "
                         f"node has 2,199.0 GB: fits")
    assert r.fits_in_memory


def test_servers_that_outgrow_the_nodes_host_memory_do_not_fit(tmp_path, capsys):
    """probe: ps said "fits yes" where its servers needed more host memory than a node has.
    A user's topology sets host_memory_gb; the verdict and every output name the limit."""
    import json
    from embsim.cli import main
    topo = _h100_with_host_memory(tmp_path, "host_memory_gb: 1")
    r = ps_run(topo)
    assert r.fits_in_hbm and r.memory.host.fits is False and not r.fits_in_memory
    said = f"servers need {r.memory.host.per_node / 1e9:,.1f} GB of host memory per node, node has 1.1 GB"
    args = ["simulate", "--topology", topo, "--model", "lstm-lm1b", "--strategy", "ps", "--iterations", "2"]
    assert main(args) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert f"WARNING: does not fit: {said}." in out and "│ host memory " in out
    assert main(args + ["--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["fits_in_memory"] is False and d["host_memory"]["fits"] is False
    assert d["host_memory"]["host_memory_bytes"] == 2**30


def test_an_unknown_host_memory_is_said_not_checked(tmp_path):
    r = ps_run(_h100_with_host_memory(tmp_path, None))
    assert r.memory.host.fits is None and r.fits_in_memory
    note = next(n for n in r.notes if n.startswith("ps: the servers hold"))
    assert note.endswith("host memory unknown: not checked")


def test_dedicated_servers_are_checked_against_their_own_machines(tmp_path):
    topo = _h100_with_host_memory(tmp_path, "parameter_servers:\n  nodes: 4\n  host_memory_gb: 0.25")
    r = ps_run(topo, servers="dedicated")
    need = r.memory.host
    assert need.where == "server machine" and need.capacity == 2**28 and need.fits is False
    assert "per server machine, server machine has 0.3 GB" in next(
        n for n in r.notes if n.startswith("ps: the servers hold"))
    # the GPU nodes' host memory is not what holds dedicated servers' shards
    assert ps_run(_h100_with_host_memory(tmp_path, None), servers="dedicated").memory.host.fits is None
