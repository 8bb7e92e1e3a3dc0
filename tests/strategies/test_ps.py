"""Parameter servers on the cluster graph: routes through server NICs and CPUs, a push's
time by hand, uneven server load under Zipf, YAML server nodes."""

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


def test_the_servers_host_memory_is_said():
    """The tables live in the servers' host memory: the notes say how much (rows and the
    optimizer's state), since no topology gives a host memory size to check it against."""
    from embsim.workload import load_model
    r = simulate(SimulationConfig(topology="2x8", model="dlrm-criteo-t3", strategy="ps", iterations=2,
                                  efficiency_baseline=False))
    m = load_model("dlrm-criteo-t3")
    held = sum(t.vocab * t.dim for t in m.tables) * (m.table_bytes + m.optimizer.state_bytes_per_param)
    note = next(n for n in r.notes if n.startswith("ps: the servers hold"))
    assert f"{held / 1e9:,.1f} GB" in note and f"{held / 2 / 1e9:,.1f} GB each over 2 servers" in note
    assert "not checked" in note
