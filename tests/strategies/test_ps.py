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


# --- payload=dense: BytePS as shipped (strategies/ps_dense.py) ------------------------

def dense_run(topology="pcie-rtx3090:2x4", scheduler="fifo", **options):
    return simulate(SimulationConfig(topology=topology, model="lstm-lm1b", batch=32, strategy="ps",
                                     scheduler=scheduler, iterations=3, efficiency_baseline=False,
                                     strategy_options={"payload": "dense", **options}))


def test_dense_payload_pushes_and_pulls_every_table_whole():
    """probe Q G1: BytePS has no sparse path (byteps@f5df52f README; torch/__init__.py
    push_pulls every dense p.grad), so a node pushes vocab x dim x 4 bytes of each table a
    step and pulls as much back, where the rows payload moves only the touched rows."""
    from embsim.workload import load_model
    model = load_model("lstm-lm1b", batch=32)
    table = model.table("word")
    whole = table.vocab * table.dim * 4
    r = dense_run()
    # one push_pull per tensor, 1/4 of the node's sum on each of its 4 GPUs' routes
    sent = {c.nbytes for c in r.run.comm if c.name == "ps-push-pull:word_embedding"}
    assert sent == {whole / 4} and {c.op for c in r.run.comm} == {"ps_push"}
    # every parameter, tables included, through the servers; nothing AllReduced
    params = sum(l.params for l in model.layers) * 4
    assert r.comm_bytes_per_gpu == {"ps_push": pytest.approx(params / 4, rel=1e-12)}
    # into the network: on 2 colocated servers a node sends the other's server the share it
    # does not hold and serves the other node's pull of the share it does: the whole
    # parameter bytes a node a step, pushed and pulled
    assert r.net_bytes_per_node == pytest.approx(params, rel=1e-9)
    note = next(n for n in r.notes if n.startswith("ps word: dense payload"))
    assert f"793,471 x 512 x 4 B = {whole / 1e6:,.1f} MB pushed and pulled a step per node" in note
    assert any(n.startswith("ps payload=dense (BytePS as shipped") for n in r.notes)
    rows = run(topology="pcie-rtx3090:2x4", model="lstm-lm1b", batch=32, strategy="ps")
    assert rows.net_bytes_per_node < params / 2          # the touched rows only
    assert not any("payload=dense" in n for n in rows.notes)
    # without BytePS's reduce in the node every GPU pushes the whole table itself
    off = dense_run(local_aggregation="off")
    assert {c.nbytes for c in off.run.comm if c.name == "ps-push-pull:word_embedding"} == {whole}


def test_dense_payload_steps_the_optimizer_on_the_gpus_after_the_push_pull():
    """BytePS's servers only sum; the workers' optimizer runs once push and pull are done
    (torch/__init__.py step(): synchronize(), then the optimizer): the table's update starts
    after its push_pull's transfer ended, on the GPU (a nonzero update)."""
    r = dense_run()
    done = {c.iteration: c.end for c in r.run.comm if c.name == "ps-push-pull:word_embedding"}
    updates = [c for c in r.run.compute if c.name == "update:word_embedding"]
    assert updates and all(c.end > c.start >= done[c.iteration] for c in updates)
    for scheduler in ("priority",):
        dense_run(scheduler=scheduler)                  # partitions the push_pulls whole


def test_dense_payload_partitions_keyed_as_byteps_does():
    from embsim.strategies.ps_dense import djb2, partition_bytes, tensor_shares
    # global.cc: 4,096,000 rounded up to local_size x 4096-byte pages
    assert partition_bytes(1_024_000, 8) == 4_096_000             # 125 x 32,768
    assert partition_bytes(1_024_000, 3) == 334 * 3 * 4096
    # Hash_DJB2 over the key's decimal digits: 5381 x 33 + '0'
    assert djb2(0) == 5381 * 33 + ord("0") and djb2(65536) == djb2(int("65536"))
    shares = tensor_shares(10 * 4_096_000, 1, 4, "partitions", 4_096_000)
    keys = [(1 << 16) + j for j in range(10)]
    expect = np.bincount([djb2(k) % 4 for k in keys], minlength=4) / 10
    np.testing.assert_allclose(shares, expect)
    np.testing.assert_allclose(tensor_shares(1e6, 0, 4, "hashed", 4_096_000), [0.25] * 4)
    r = dense_run()
    note = next(n for n in r.notes if "keyed to servers by djb2" in n)
    assert "BytePS partitions of 4,096,000 B" in note


def test_dense_payload_host_memory_is_the_partitions_and_the_workers_copies():
    from embsim.workload import load_model
    params = sum(l.params for l in load_model("lstm-lm1b", batch=32).layers) * 4
    need = dense_run().memory.host
    # colocated: a node holds its server's partitions (one copy, no optimizer state) and its
    # worker's host copy of every tensor
    assert need.mean_per_node == pytest.approx(params / 2 + params, rel=1e-6)


def test_dense_payload_on_one_node_is_bytepss_allreduce_and_one_gpu_trains_alone():
    ar = simulate(SimulationConfig(topology="pcie-rtx3090:1x4", model="lstm-lm1b", batch=32, iterations=3,
                                   efficiency_baseline=False, strategy="allreduce"))
    ps = dense_run("pcie-rtx3090:1x4")
    assert ps.step_time == ar.step_time and ps.comm_bytes_per_gpu == ar.comm_bytes_per_gpu
    assert any("BytePS runs no server there" in n for n in ps.notes)
    one = dense_run("pcie-rtx3090:1x1")
    plain = simulate(SimulationConfig(topology="pcie-rtx3090:1x1", model="lstm-lm1b", batch=32, iterations=3,
                                      efficiency_baseline=False, strategy="allreduce"))
    assert one.step_time == plain.step_time


def test_payload_option_is_typed_listed_and_follows_the_strategys_traits():
    from embsim.plan.traits import Payload
    from embsim.strategies import STRATEGIES
    from embsim.strategies.ps import PsOptions
    ps = STRATEGIES.get("ps")
    assert PsOptions().payload == "rows"
    # read on the class (the registry's listing), the traits stay the rows payload's
    assert ps.dense_table_gradient is False and ps.embedding_payload is Payload.ROWS
    dense = ps.from_options({"payload": "dense"})
    assert dense.dense_table_gradient is True and dense.embedding_payload is Payload.NONE
    rows = ps.from_options({"payload": "rows"})
    assert rows.dense_table_gradient is False and rows.embedding_payload is Payload.ROWS
    for bad in ({"payload": "sparse"}, {"payload": "dense", "dense_vocab_below": 100}):
        with pytest.raises(InputError) as err:
            ps.from_options(bad)
        assert "\n" not in str(err.value)
    assert str(pytest.raises(InputError, ps.from_options, {"payload": "Dense"}).value) == \
        "--option payload='Dense': expected one of rows, dense"
    # embrace-2d has no rows to defer in whole tensors
    with pytest.raises(InputError, match="no row-level split"):
        dense_run(scheduler="embrace-2d")


def test_payload_on_the_command_line(capsys):
    from embsim.cli import main
    base = ["simulate", "--topology", "pcie-rtx3090:2x4", "--model", "lstm-lm1b", "--batch", "32",
            "--strategy", "ps", "--iterations", "2"]
    assert main(base + ["-o", "payload=dense"]) == 0
    out = capsys.readouterr().out
    assert "options: ps: payload=dense (--option); servers=colocated" in out
    assert "ps payload=dense (BytePS as shipped" in " ".join(out.split())
    assert main(base) == 0
    assert "options: ps: payload=rows, servers=colocated" in capsys.readouterr().out
    assert main(base + ["-o", "payload=sparse"]) == 2
    err = capsys.readouterr().err
    assert err.strip().count("\n") == 0 and "payload='sparse': expected one of rows, dense" in err
    assert main(base + ["-o", "bogus=1"]) == 2
    assert "strategy ps: payload, servers," in capsys.readouterr().err
