"""GNMT and Transformer (DeepLearningExamples) against their published throughput and
scaling: bounds at the level the model reaches, so that a regression is red."""

import pytest

from embsim.validate.training import DATA_DIR, file_runs

# (file, max |scaling-efficiency difference|, max |error|): docs/validation.md
BOUNDS = {"dle-pytorch-gnmt": (0.15, 0.32), "dle-pytorch-transformer": (0.13, 0.30)}


@pytest.fixture(scope="module", params=sorted(BOUNDS))
def result(request):
    runs, pairs = file_runs(str(DATA_DIR / f"{request.param}.yaml"))
    return request.param, runs, pairs


def test_within_bounds(result):
    name, runs, pairs = result
    scaling, error = BOUNDS[name]
    assert len(pairs) == 8
    assert max(abs(p.difference) for p in pairs) <= scaling
    assert max(abs(r.error) for r in runs) <= error


def test_gnmt_scaling_comes_from_the_benchmarks_accumulation():
    """--train-global-batch-size 1024: one GPU amortises the update over 8 iterations,
    eight GPUs not at all, so the simulated efficiency falls well below 1."""
    _, pairs = file_runs(str(DATA_DIR / "dle-pytorch-gnmt.yaml"))
    eight = [p for p in pairs if p.gpus == 8]
    assert all(p.simulated < 0.95 for p in eight)


def test_fp32_gradients_are_all_reduced_in_fp32():
    from embsim.engine.run import SimulationConfig, simulate
    base = dict(topology="dgx-a100:1x8", model="tiny-lm", dtype="fp16", iterations=3)
    half = simulate(SimulationConfig(**base))
    full = simulate(SimulationConfig(**base, model_overrides={"optimizer": {"fp32_gradients": True}}))
    assert full.metrics.comm_bytes_per_gpu["all_reduce"] == 2 * half.metrics.comm_bytes_per_gpu["all_reduce"]
