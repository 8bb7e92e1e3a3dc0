"""ps local aggregation: a node pushes the union of its GPUs' rows (the token model's
union statistics), the NICs carry the union ratio less, G=1 nodes and the option off are
the per-GPU plan unchanged, bad values are one-line errors."""

import numpy as np
import pytest

from embsim.engine.context import table_traffic
from embsim.engine.run import SimulationConfig, simulate
from embsim.errors import InputError
from embsim.strategies.ps import ParameterServerStrategy, PsOptions
from embsim.topology import load_topology
from embsim.workload import load_model
from embsim.workload.tokens import RowTouches, TokenStats, union_inclusion

BASE = dict(model="lstm-lm1b", batch=32, strategy="ps", iterations=3, efficiency_baseline=False)


def run(topology, **options):
    return simulate(SimulationConfig(topology=topology, strategy_options=options, **BASE))


def pushed(r, op="ps-push:word_embedding"):
    return {c.nbytes for c in r.run.comm if c.name == op}


def distinct(gpus: int, model) -> tuple[float, float]:
    """(one GPU's distinct rows U, the union of `gpus` GPUs' rows) from the token model."""
    t = table_traffic(model, gpus, lambda table: TokenStats.zipf(table.vocab, SimulationConfig().zipf_s))
    return t["word_embedding"].unique_per_gpu, t["word_embedding"].unique_union


def test_a_nodes_rows_are_the_token_models_union():
    stats = TokenStats.zipf(50_000, 1.1)
    touches = RowTouches(stats, tokens=3_000.0, candidates=500)
    p = touches.inclusion
    for g in (1, 2, 8):
        np.testing.assert_allclose(union_inclusion(p, g), touches.union_inclusion(g), rtol=1e-12)
    # the formula itself: one step is its own inclusion, two are 1 - (1 - p)^2 = p (2 - p)
    np.testing.assert_allclose(union_inclusion(p, 1), p, rtol=1e-12)
    np.testing.assert_allclose(union_inclusion(p, 2), p * (2 - p), rtol=1e-12)
    assert touches.union(8) < 8 * touches.unique()


def test_a_node_pushes_its_union_once_and_the_nics_carry_the_union_ratio_less():
    on, off = run("pcie-rtx3090:4x4"), run("pcie-rtx3090:4x4", local_aggregation="false")
    model = load_model("lstm-lm1b", batch=32)
    u, union4 = distinct(4, model)
    (a,), (b,) = pushed(on), pushed(off)
    # per GPU route: the node's union / 4, against each GPU's own U rows
    assert a == pytest.approx(b * union4 / (4 * u), rel=1e-9)
    assert union4 < 4 * u
    # pull per node (BytePS, the default) likewise; pull=gpu keeps every GPU's own rows
    (pa,), (pb,) = pushed(on, "ps-pull:word_embedding"), pushed(off, "ps-pull:word_embedding")
    assert pa == pytest.approx(pb * union4 / (4 * u), rel=1e-9)
    gpu = run("pcie-rtx3090:4x4", pull="gpu")
    assert pushed(gpu, "ps-pull:word_embedding") == {pb} and pushed(gpu) == {a}
    # NIC bytes of a step: sparse push + pull fall by the union ratio, dense AllReduce unchanged
    topo = ParameterServerStrategy.from_options({}).topology(load_topology("pcie-rtx3090:4x4"))
    nics = topo.link_ids_of_kind("nic")

    def nic_bytes(r):
        first, last = sorted(r.run.link_bytes_at)[:2]
        return float((r.run.link_bytes_at[last] - r.run.link_bytes_at[first])[nics].sum())
    assert nic_bytes(on) < nic_bytes(off)
    assert on.step_time < off.step_time
    assert any("local aggregation" in n for n in on.notes)


def test_one_gpu_nodes_and_the_option_off_are_the_per_gpu_plan():
    for topo in ("pcie-rtx3090:4x1",):
        on, off = run(topo), run(topo, local_aggregation=False)
        assert on.step_time == off.step_time and pushed(on) == pushed(off)
        assert not any("local aggregation" in n for n in on.notes)


def test_bad_values_are_one_line_errors():
    with pytest.raises(InputError, match="local_aggregation"):
        PsOptions(local_aggregation="maybe")
    with pytest.raises(InputError, match="pull"):
        PsOptions(pull="cpu")
    assert PsOptions(local_aggregation="off").local_aggregation is False
    assert PsOptions().local_aggregation is True and PsOptions().pull == "node"


def test_host_copies_by_hand():
    from embsim.strategies.ps_local import host_transfer_seconds
    from embsim.topology.build import tree_path
    t = load_topology("pcie-rtx3090:1x4")._template
    verts = tree_path(t, "gpu0", "cpu0")
    links = [t.links[t.offset[(u, v)]] for u, v in zip(verts, verts[1:])]
    one = host_transfer_seconds(t, "cpu0", 1, 1e8, to_host=True)
    # one GPU alone: its route's latency plus its narrowest link
    assert one == pytest.approx(sum(l[4] for l in links) + 1e8 / min(l[3] for l in links), rel=1e-12)
    four = host_transfer_seconds(t, "cpu0", 4, 1e8, to_host=True)
    assert one < four <= 4 * one
    assert host_transfer_seconds(t, "cpu0", 4, 1e8, to_host=False) == pytest.approx(four, rel=1e-12)


def test_the_host_copies_run_on_the_push_and_pull_streams_timed_on_the_nodes_links():
    """The gather precedes each push's transfer and the copy-back follows each pull, on
    their own streams: no compute op of the step is a copy, the push's transfer starts at
    least the gather after it was ready, and the lookup waits for the copy-back too."""
    from embsim.strategies.ps_local import host_transfer_seconds
    r = run("pcie-rtx3090:4x4")
    model = load_model("lstm-lm1b", batch=32)
    u, _ = distinct(4, model)
    t = load_topology("pcie-rtx3090:4x4")._template
    gather = host_transfer_seconds(t, "cpu0", 4, u * model.row_bytes("word"), to_host=True)
    back = host_transfer_seconds(t, "cpu0", 4, u * 512 * model.table_bytes, to_host=False)
    assert gather > 0 and back > 0
    assert not any("ps-gather" in c.name or "ps-scatter" in c.name for c in r.run.compute)
    note = next(n for n in r.notes if "gather into host memory" in n)
    assert f"before each push ({gather * 1e3:.2f} ms on an idle node" in note
    assert f"after each pull ({back * 1e3:.2f} ms" in note
    pushes = [c for c in r.run.comm if c.name == "ps-push:word_embedding"]
    assert pushes and all(c.start - c.ready >= gather * (1 - 1e-9) for c in pushes)
    pulls = {c.iteration: c for c in r.run.comm if c.name == "ps-pull:word_embedding"}
    lookups = [c for c in r.run.compute if c.name == "fwd:word_embedding" and c.iteration - 1 in pulls]
    assert lookups and all(c.start >= pulls[c.iteration - 1].end + back * (1 - 1e-9) for c in lookups)
    # Parallax's hybrid pulls per GPU: no copy back; without aggregation no copies at all
    gpu = run("pcie-rtx3090:4x4", pull="gpu")
    note = next(n for n in gpu.notes if "gather into host memory" in n)
    assert "after each pull" not in note and "sharing the node's PCIe links" in note
    off = run("pcie-rtx3090:4x4", local_aggregation=False)
    assert not any("gather into host memory" in n for n in off.notes)
    for sched in ("priority", "embrace-2d"):            # every scheduler still drives it
        simulate(SimulationConfig(topology="pcie-rtx3090:4x4", scheduler=sched, **BASE))



def test_node_copy_is_every_nodes_links_and_takes_the_idle_time_alone():
    """The copies as network bytes: node a's local link o is a x per-node links + o, every
    node carries the same bytes, and alone on the network they take what
    host_transfer_seconds says; sharing a link with other traffic they take longer."""
    from embsim.strategies.ps_local import host_transfer_seconds, node_copy
    topo = load_topology("pcie-rtx3090:4x4")
    t, per_node = topo._template, topo._per_node
    copy = node_copy(t, "cpu0", 4, per_node, 4, 1e8, to_host=True)
    links = np.asarray(copy.demand.links)
    assert len(links) % 4 == 0
    local = links[: len(links) // 4]
    for a in range(4):
        np.testing.assert_array_equal(links[a * len(local):(a + 1) * len(local)], local + a * per_node)
    capacity = topo.capacity
    idle = host_transfer_seconds(t, "cpu0", 4, 1e8, to_host=True)
    assert copy.latency + copy.demand.bottleneck_time(capacity) == pytest.approx(idle, rel=1e-12)
    half = copy.scaled(0.5)
    assert half.latency == copy.latency and float(np.sum(half.demand.bytes)) == pytest.approx(
        0.5 * float(np.sum(copy.demand.bytes)), rel=1e-12)


def test_every_tables_copies_share_one_array_of_link_ids_and_one_row_of_ones():
    """A jumbo model's thousand tables all copy over the same node links and push from the
    same workers, many of them the same bytes: the link ids, the bytes of one size and the
    server matrix's row of ones are each held once, read-only."""
    from embsim.strategies.ps_local import NodeHost, server_matrix
    topo = load_topology("pcie-rtx3090:4x4")
    host = NodeHost(topo._template, "cpu0", 4, topo._per_node)
    (a, _), (b, _) = host.copies(4, 1e8, to_host=True), host.copies(4, 3e6, to_host=True)
    assert a.demand.links is b.demand.links and not a.demand.links.flags.writeable
    assert a.demand.normalised() is a.demand          # built sorted: its own normal form
    again = host.copies(4, 1e8, to_host=True)[0].demand
    assert again is not a.demand and again.bytes is a.demand.bytes and a.demand.bytes is not b.demand.bytes
    back = [host.copies(4, size, to_host=False)[0].demand.links for size in (1e8, 3e6)]
    assert back[0] is back[1] and back[0].tolist() != a.demand.links.tolist()   # the other direction
    shares = np.full(4, 0.25)
    p, q = server_matrix(16, 1e6, shares), server_matrix(16, 2e6, shares)
    assert p.row is q.row and p.row.tolist() == [1.0] * 16
