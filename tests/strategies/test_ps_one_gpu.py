"""ps on one GPU: the tables still live on the servers, so one worker still pulls its rows
before the lookup, pushes its gradient rows after the backward and leaves the update to
the server's CPU; Cache Local tables (dense_vocab_below) stay dense GPU tables."""

import pytest

from embsim.engine.run import SimulationConfig, simulate
from embsim.workload import load_model

MODEL = "embsim/validation_data/rankings/models/oe-wdl-criteo-9.yaml"
BATCH = 512
BASE = {"servers": "colocated", "local_aggregation": False, "pull": "gpu"}


def run(strategy="ps", gpus=1, **options):
    opts = {**BASE, **options} if strategy == "ps" else {}
    return simulate(SimulationConfig(topology=f"pcie-rtx3090:1x{gpus}", model=MODEL, batch=BATCH,
                                     strategy=strategy, strategy_options=opts,
                                     iterations=2, efficiency_baseline=False, gpu_variation=0.0))


def test_one_worker_still_pushes_and_pulls_its_rows():
    one, two = run(gpus=1), run(gpus=2)
    # no aggregation: a worker's own rows, the same on one GPU as on two
    for op in ("ps_push", "ps_pull"):
        assert one.comm_bytes_per_gpu[op] == pytest.approx(two.comm_bytes_per_gpu[op], rel=1e-9)
        assert one.comm_bytes_per_gpu[op] > 0
    assert "all_reduce" not in one.comm_bytes_per_gpu     # nothing dense to synchronise
    assert not any("nothing to synchronise" in part for part in one.compute_source.split("; "))
    assert any("1 colocated server," in n for n in one.notes)


def test_one_gpu_differs_from_plain_training_by_the_servers():
    ps, plain = run(), run(strategy="allreduce")
    assert ps.step_time != plain.step_time
    assert "ps_push" not in plain.comm_bytes_per_gpu


def update_seconds(result, layer: str) -> float:
    """The first steady iteration's optimizer time of `layer` on the first rank class."""
    cls = result.run.classes[0].name
    return next(r.end - r.start for r in result.run.compute
                if r.cls == cls and r.iteration == 1 and r.kind == "update" and r.name.endswith(layer))


def test_cache_local_tables_are_updated_densely_on_one_gpu():
    """A table under dense_vocab_below is built sparse_as_dense: its whole vocab x dim
    gradient is applied on the GPU, on one worker as on two (not the touched rows); a
    served table's update is the server's, not the GPU's."""
    cached = run(dense_vocab_below=4096)
    two = run(gpus=2, dense_vocab_below=4096)
    # C1_linear: 1,460 rows, Cache Local; C3_linear: 10.1M rows, on the servers
    assert update_seconds(cached, "C1_linear_lookup") == pytest.approx(
        update_seconds(two, "C1_linear_lookup"), rel=1e-9)
    assert update_seconds(cached, "C1_linear_lookup") > 0
    assert update_seconds(cached, "C3_linear_lookup") == 0.0
    assert any("Cache Local" in n for n in cached.notes)


def test_dedicated_servers_multi_node_keep_their_one_gpu_baseline():
    """The scaling efficiency's one-GPU run is a one-node topology, where dedicated server
    machines have no network to sit on: that GPU trains alone (as before servers stayed on
    one GPU), and the multi-node run it divides is unaffected."""
    res = simulate(SimulationConfig(topology="2x2", strategy="ps",
                                    strategy_options={"servers": "dedicated"}, iterations=2))
    assert res.scaling_efficiency is not None and 0 < res.scaling_efficiency <= 1.0
    one = simulate(SimulationConfig(topology="1x1", strategy="ps",
                                    strategy_options={"servers": "dedicated"}, iterations=2))
    assert "ps_push" not in one.comm_bytes_per_gpu
    assert "nothing to synchronise" in one.compute_source


def test_colocated_servers_on_a_node_without_nics():
    """A single node with no NICs (the local-cpu preset, a workstation) has its servers
    on its own CPU: every push and pull stays on the node, no NIC is looked up."""
    r = simulate(SimulationConfig(topology="local-cpu", model="lstm-lm1b", strategy="ps",
                                  iterations=2, efficiency_baseline=False))
    assert r.comm_bytes_per_gpu["ps_push"] > 0 and r.step_time > 0
