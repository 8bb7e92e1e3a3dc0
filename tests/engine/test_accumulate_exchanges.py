"""Gradient accumulation with a strategy whose forward or backward waits for a transfer:
no_sync skips only the gradient synchronisation, so every micro-batch still runs EmbRace's
AlltoAlls of looked-up vectors (and their gradients) and a parameter server's pulls; only
the once-per-step transfers (a PS push, the dense AllReduce) stay single."""

import pytest

from embsim.engine.run import SimulationConfig, simulate

BASE = dict(topology="dgx-h100:2x8", model="dlrm-torchrec-criteo", iterations=2,
            efficiency_baseline=False, gpu_variation=0.0)


def run(strategy: str, k: int):
    return simulate(SimulationConfig(**BASE, strategy=strategy, accumulate=k))


@pytest.mark.parametrize("strategy", ["embrace", "ps"])
def test_activation_exchanges_run_in_every_micro_batch(strategy):
    one, four = run(strategy, 1), run(strategy, 4)
    each = {"embrace": ("alltoall",), "ps": ("ps_pull",)}[strategy]
    for op in each:
        assert four.comm_count[op] == pytest.approx(4 * one.comm_count[op])
        assert four.comm_bytes_per_gpu[op] == pytest.approx(4 * one.comm_bytes_per_gpu[op], rel=1e-9)
    for op in ("all_reduce",) + (("ps_push",) if strategy == "ps" else ()):
        assert four.comm_count[op] == pytest.approx(one.comm_count[op])


def test_embrace_throughput_does_not_grow_by_skipping_exchanges():
    """EmbRace's step is mostly its AlltoAlls: four micro-batches take about four times one
    (before the fix, the first three ran none and throughput read 2.8x higher)."""
    one, four = run("embrace", 1), run("embrace", 4)
    assert four.step_time > 3.5 * one.step_time
    assert four.samples_per_s < 1.15 * one.samples_per_s


@pytest.mark.parametrize("strategy, op", [("allgather", "all_gather"), ("ps", "ps_push")])
def test_a_sparse_gradient_sized_by_one_micro_batch_is_said(strategy, op):
    four = run(strategy, 4)
    assert any(n.startswith("--accumulate 4:") and f"({op})" in n for n in four.notes)
    assert not any(n.startswith("--accumulate") for n in run(strategy, 1).notes)
    assert not any(n.startswith("--accumulate") for n in run("allreduce", 4).notes)
