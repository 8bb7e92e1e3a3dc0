"""engine.iteration_rate: throughput as a mean of per-iteration rates (DeepLearningExamples
GNMT's AverageMeter of tokens / elapsed)."""

from __future__ import annotations

import numpy as np
import pytest

from embsim.engine import iteration_rate as ir
from embsim.engine.run import SimulationConfig, simulate
from embsim.errors import InputError


def test_equal_iterations_give_the_time_ratio():
    one = np.ones(1)
    assert ir.mean_rate(0.1, 0.1, 4, 0.05, one, one) == pytest.approx(10.0)
    assert ir.mean_rate(0.1, 0.1, 1, 0.05, one, one) == pytest.approx(10.0)


def test_accumulation_weighs_the_updating_iteration_as_one_of_k():
    one = np.ones(1)
    # 7 iterations of 40 ms, one of 54 ms: the mean of rates, not 8 / (7 x 40 + 54) ms
    got = ir.mean_rate(0.040, 0.054, 8, 0.03, one, one)
    assert got == pytest.approx((7 / 0.040 + 1 / 0.054) / 8)
    assert got > 8 / (7 * 0.040 + 0.054)


def test_a_fixed_cost_weighs_more_on_short_iterations():
    """Iterations of different lengths: the mean of rates falls below tokens over time by
    more when each iteration also pays a fixed cost (Jensen: L / (a + b L) is concave)."""
    m = np.array([0.5, 1.5])       # slowest GPU's compute: half and 1.5x the mean
    r = m.copy()                   # tokens in proportion
    compute = 0.1
    no_fixed = ir.mean_rate(0.1, 0.1, 1, compute, m, r)
    with_fixed = ir.mean_rate(0.15, 0.15, 1, compute, m, r)
    assert no_fixed == pytest.approx(10.0)
    assert with_fixed < 1 / 0.15


def test_step_profile_is_flat_without_a_corpus_form():
    m, r = ir.step_profile(None, 8, 0, 128, 24, lambda s: float(s))
    assert m.tolist() == [1.0] and r.tolist() == [1.0]


def test_step_profile_of_buckets_spreads_lengths_and_is_seeded():
    kw = dict(jitter="bucket:5", n_gpus=4, batch=16, seq=24, compute_at_seq=lambda s: float(s),
              lengths="lognormal:29.05:16.2:50")
    m, r = ir.step_profile(seed=1, **kw)
    m2, r2 = ir.step_profile(seed=1, **kw)
    assert np.array_equal(m, m2) and np.array_equal(r, r2)
    assert m.min() < 0.7 and m.max() > 1.5            # 10-token buckets up to 50
    assert r.mean() == pytest.approx(1.0, abs=0.05)   # real tokens over the corpus mean


def test_bad_value_is_refused():
    with pytest.raises(InputError, match="throughput .epochs."):
        SimulationConfig(model="gnmt", throughput="epochs")


def test_gnmt_reports_the_mean_of_iteration_rates():
    """zoo gnmt's default: 8 GPUs (every iteration updates and all-reduces) lose more to the
    mean of rates than one GPU accumulating 8 iterations per update."""
    def tokens(topology: str, average: str) -> float:
        return simulate(SimulationConfig(topology=topology, model="gnmt", dtype="fp16", iterations=2,
                                         throughput=average, efficiency_baseline=False)).tokens_per_s
    one = tokens("dgx-a100-40gb:1x1", "iterations") / tokens("dgx-a100-40gb:1x1", "time")
    eight = tokens("dgx-a100-40gb:1x8", "iterations") / tokens("dgx-a100-40gb:1x8", "time")
    assert eight < 0.99 and eight < one - 0.01
    r = simulate(SimulationConfig(topology="dgx-a100-40gb:1x1", model="gnmt", iterations=2,
                                  efficiency_baseline=False))
    assert "mean of per-iteration rates" in r.compute_source
    assert r.config.throughput == "iterations"


def test_length_jitter_leaves_the_optimizer_step_alone():
    """GNMT's bucket jitter pads every GPU's batch (factor ~1.2 over --seq): its forward and
    backward pay it, its optimizer update (parameter-sized) does not (RankClass.param_slowdown)."""
    base = dict(topology="dgx-a100-40gb:1x1", model="gnmt", dtype="fp16", iterations=2, accumulate=1,
                efficiency_baseline=False, gpu_variation=0.0)
    padded = simulate(SimulationConfig(**base))
    plain = simulate(SimulationConfig(**base, jitter="none"))

    def total(r, kind):
        return sum(c.end - c.start for c in r.run.compute if c.iteration == 1 and c.kind == kind)
    assert total(padded, "fwd") > 1.1 * total(plain, "fwd")
    assert total(padded, "update") == pytest.approx(total(plain, "update"), rel=1e-9)


def test_param_factors_follow_the_gpu_not_the_length():
    from embsim.engine.jitter import param_factors
    f, speed = np.array([1.2, 1.3]), np.array([1.0, 1.02])
    assert param_factors("bucket:5", f, speed).tolist() == [1.0, 1.02]
    assert param_factors("maxtokens", f, None).tolist() == [1.0, 1.0]
    assert param_factors("normal:0.05", f, speed) is f
