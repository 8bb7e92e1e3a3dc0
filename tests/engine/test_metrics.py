"""What the step's figures say about communication: the exposed time attributed to the
collectives the slowest GPUs waited on, how many collectives run, and for how long any runs."""

import pytest

from embsim.engine.config import SimulationConfig
from embsim.engine.run import simulate


@pytest.mark.parametrize("kw", [
    dict(topology="2x8", model="lstm-lm1b", strategy="ps"),
    dict(topology="4x8", model="dlrm-criteo-t3", strategy="embrace", scheduler="embrace-2d", batch=2048),
    dict(topology="2x8", model="tiny-lm", strategy="allgather", straggler="gpu:3:1.5"),
    dict(topology="1x8", model="bert-base", accumulate=2),
])
def test_exposed_time_is_attributed_to_the_collectives_waited_on(kw):
    r = simulate(SimulationConfig(iterations=4, **kw))
    waited = sum(r.exposed_by_op.values())
    assert r.exposed_comm > 0
    assert waited == pytest.approx(r.exposed_comm, rel=1e-6, abs=1e-9)
    assert set(r.exposed_by_op) <= set(r.comm_bytes_per_gpu)


def test_collective_counts_and_busy_wall():
    r = simulate(SimulationConfig(topology="2x8", model="lstm-lm1b", iterations=4))
    assert set(r.comm_count) == set(r.comm_bytes_per_gpu)
    assert all(n >= 1 for n in r.comm_count.values())
    # any collective running: at most the step, at most their summed times, at least the longest op's
    assert max(r.comm_time.values()) / max(r.comm_count.values()) <= r.comm_wall + 1e-12
    assert r.comm_wall <= min(r.step_time, sum(r.comm_time.values())) + 1e-12


def test_one_gpu_waits_on_nothing():
    r = simulate(SimulationConfig(topology="1x1", model="tiny-lm", iterations=3))
    assert r.exposed_by_op == {} and r.comm_wall == 0.0
