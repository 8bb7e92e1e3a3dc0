"""--zipf shapes only which rows a batch touches (engine/context.py): where no table has a
row-sparse gradient the run says the flag changed nothing, instead of ignoring it."""

import pytest

from embsim.engine.config import SimulationConfig
from embsim.engine.run import simulate


def run(**kw):
    return simulate(SimulationConfig(topology="dgx-h100:1x2", iterations=2, efficiency_baseline=False, **kw))


@pytest.mark.parametrize("model, strategy, why", [
    ("gnmt", "allreduce", "--strategy allreduce synchronises every table's gradient densely"),
    ("bert-base", "embrace", "every table's gradient is dense"),
])
def test_zipf_without_a_sparse_gradient_is_said_to_do_nothing(model, strategy, why):
    plain = run(model=model, strategy=strategy)
    flat = run(model=model, strategy=strategy, zipf_s=0.6)
    assert flat.step_time == plain.step_time
    assert f"--zipf 0.6 has no effect: {why}" in flat.compute_source
    assert "--zipf" not in plain.compute_source      # the default is not a flag the run set


def test_zipf_with_a_sparse_gradient_changes_the_traffic_and_says_nothing_more():
    plain = run(model="gnmt", strategy="allgather")
    flat = run(model="gnmt", strategy="allgather", zipf_s=0.6)
    assert flat.comm_bytes_per_gpu["all_gather"] > plain.comm_bytes_per_gpu["all_gather"]
    assert "--zipf" not in flat.compute_source
