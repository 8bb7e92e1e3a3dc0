"""A sampled softmax's own table (lstm-lm1b --untie-outputs, or an output layer's
`table:`) is synchronised as every sparse table is: its candidates' and true classes'
rows, never the dense vocab x dim gradient (3.2 GB per GPU of all_reduce on 16 GPUs)."""

from __future__ import annotations

import pytest

from embsim.engine.run import SimulationConfig, simulate

TOPOLOGY = "pcie-rtx3090:4x4"
SPARSE = ["allgather", "ps", "embrace", "s2reducer"]
TABLE_BYTES = 793_471 * 512 * 4          # lstm-lm1b's vocab x dim in FP32: 1.6 GB


def run(**kw):
    return simulate(SimulationConfig(topology=TOPOLOGY, model="lstm-lm1b", iterations=3,
                                     efficiency_baseline=False, **kw))


def total(r) -> float:
    return sum(r.comm_bytes_per_gpu.values())


def test_allgather_sends_rows_of_the_order_of_the_tied_table():
    tied, untied = run(strategy="allgather"), run(strategy="allgather", untie_outputs=True)
    # the dense layers' all_reduce only: no table in it (tied it held the softmax bias too)
    assert untied.comm_bytes_per_gpu["all_reduce"] < 0.1 * TABLE_BYTES
    assert untied.comm_bytes_per_gpu["all_reduce"] <= tied.comm_bytes_per_gpu["all_reduce"]
    # the softmax's rows as tied, plus the input lookups' rows in a table of their own
    assert tied.comm_bytes_per_gpu["all_gather"] < untied.comm_bytes_per_gpu["all_gather"] \
        < 1.25 * tied.comm_bytes_per_gpu["all_gather"]
    assert untied.step_time < 1.25 * tied.step_time


@pytest.mark.parametrize("strategy", SPARSE)
def test_every_sparse_strategy_keeps_it_sparse(strategy):
    r = run(strategy=strategy, untie_outputs=True)
    dense = run(strategy="allreduce", untie_outputs=True)
    assert total(r) < 0.1 * total(dense)
    assert r.step_time < 0.3 * dense.step_time
    assert not any("dense gradient (a full softmax" in n for n in r.notes)


def test_dense_allreduce_moves_both_tables():
    tied, untied = run(strategy="allreduce"), run(strategy="allreduce", untie_outputs=True)
    # ring all_reduce bytes per GPU: 2 (n - 1) / n of the tensor; one table more untied
    ring = 2 * 15 / 16
    assert untied.comm_bytes_per_gpu["all_reduce"] - tied.comm_bytes_per_gpu["all_reduce"] == \
        pytest.approx(ring * TABLE_BYTES, rel=1e-6)


@pytest.mark.parametrize("options", [{}, {"shard": "rows"}, {"dedup": "on"}])
def test_embrace_exchanges_its_rows_around_the_softmax_within_one_step(options):
    """The softmax's own table has no lookup layer: its ids go out, and the shards' rows
    come back, before the softmax's forward (ids known from the step's start); its
    gradient rows leave after the softmax's backward and reach the shards before their
    update, all in the same iteration."""
    r = run(strategy="embrace", untie_outputs=True, strategy_options=options)
    cls = r.run.classes[0].name
    comm = {c.name: c for c in r.run.comm if c.iteration == 1}
    comp = {c.name: c for c in r.run.compute if c.iteration == 1 and c.cls == cls}
    ids, fwd, bwd = comm["embrace-ids:softmax_w"], comm["embrace-fwd:softmax"], comm["embrace-bwd:softmax"]
    eps = 1e-12
    assert ids.end <= fwd.start + eps and fwd.end <= comp["fwd:softmax"].start + eps
    assert comp["bwd:softmax"].end <= bwd.start + eps and bwd.end <= comp["update:softmax"].start + eps
