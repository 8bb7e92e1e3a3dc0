"""GPU-to-GPU speed variation (embsim.engine.gpu_speed): N GPUs wait for the slowest."""

from __future__ import annotations

import numpy as np
import pytest

from embsim.engine import gpu_speed
from embsim.engine.jitter import jitter_factors
from embsim.engine.run import SimulationConfig, simulate
from embsim.errors import InputError


def test_published_variation_is_a_normal_sigma_of_1_48_percent():
    # the artifact's 4 IQR / median of a normal spread: 8 x 0.6745 sigma
    assert gpu_speed.VARIATION_PER_SIGMA == pytest.approx(5.396, abs=1e-3)
    assert gpu_speed.PUBLISHED_VARIATION / gpu_speed.VARIATION_PER_SIGMA == pytest.approx(0.01483, abs=1e-5)


def test_one_gpu_runs_at_the_median():
    assert gpu_speed.speed_factors(1, seed=3, variation=0.08).tolist() == [1.0]


def test_slowest_of_n_grows_with_n_and_the_mean_stays_one():
    slowest = []
    for n in (2, 8, 64, 256):
        f = gpu_speed.speed_factors(n, seed=0, variation=0.08)
        assert f.size == n
        assert f.mean() == pytest.approx(1.0, abs=1e-12)      # symmetric quantiles
        slowest.append(f.max())
    assert slowest == sorted(slowest)
    sigma = 0.08 / gpu_speed.VARIATION_PER_SIGMA
    # Blom's expected maximum of 8 normals is 1.42 sigma
    assert slowest[1] == pytest.approx(1 + 1.4236 * sigma, rel=1e-3)


def test_seed_permutes_ranks_but_not_the_values():
    a = gpu_speed.speed_factors(8, seed=0, variation=0.08)
    b = gpu_speed.speed_factors(8, seed=1, variation=0.08)
    assert sorted(a) == sorted(b) and not np.array_equal(a, b)
    assert np.array_equal(a, gpu_speed.speed_factors(8, seed=0, variation=0.08))


def test_resolved_variation_defaults_to_the_publication_on_gpus_only():
    assert gpu_speed.resolved_variation(None, is_gpu=True) == 0.08
    assert gpu_speed.resolved_variation(None, is_gpu=False) == 0.0
    assert gpu_speed.resolved_variation(0.0, is_gpu=True) == 0.0
    with pytest.raises(InputError, match="--gpu-variation"):
        gpu_speed.resolved_variation(1.5, is_gpu=True)


def test_speeds_multiply_each_gpus_times_before_the_order_statistics():
    # a jitter that is the same on every GPU: the factors are exactly the speeds
    speed = gpu_speed.speed_factors(8, seed=0, variation=0.08)
    assert np.allclose(jitter_factors(None, 8, 0, speed=speed), speed)
    same = jitter_factors("normal:0", 8, 0, speed=speed)
    assert np.allclose(np.sort(same), np.sort(speed))
    # with a wider per-step jitter the slowest GPU gains less than the speeds' own maximum
    wide = jitter_factors("normal:0.05", 8, 0)
    both = jitter_factors("normal:0.05", 8, 0, speed=speed)
    assert wide.max() < both.max() < wide.max() * speed.max()


def _gnmt(n, **kw):
    return simulate(SimulationConfig(topology=f"dgx-a100:1x{n}", model="gnmt", dtype="fp16",
                                     iterations=3, **kw))


def test_simulated_scaling_waits_for_the_slowest_gpu():
    off = _gnmt(8, gpu_variation=0.0)
    on = _gnmt(8)
    assert on.workload["gpu_variation"] == 0.08 and off.workload["gpu_variation"] == 0.0
    assert on.metrics.step_time > off.metrics.step_time
    assert on.scaling_efficiency < off.scaling_efficiency
    assert "GPU speed variation 8% (Sinha et al. SC22)" in on.compute_source
    assert "GPU speed variation" not in _gnmt(8, gpu_variation=0.0).compute_source
    # one GPU is the median GPU: unchanged
    assert _gnmt(1).metrics.step_time == _gnmt(1, gpu_variation=0.0).metrics.step_time


def test_cpu_devices_have_no_variation_by_default():
    r = simulate(SimulationConfig(topology="local-cpu:1x2", model="tiny-lm", iterations=2))
    assert r.workload["gpu_variation"] == 0.0
    assert "GPU speed variation" not in r.compute_source


def test_bad_variation_is_refused_naming_the_flag():
    with pytest.raises(InputError, match="--gpu-variation"):
        SimulationConfig(gpu_variation=-0.1)


def test_many_gpus_keep_the_exact_slowest_and_few_distinct_speeds():
    from embsim.engine.gpu_speed import MAX_SPEED_CLASSES, VARIATION_PER_SIGMA
    from statistics import NormalDist
    n = 256
    f = gpu_speed.speed_factors(n, seed=3, variation=0.08)
    assert len(set(f.tolist())) <= MAX_SPEED_CLASSES
    sigma = 0.08 / VARIATION_PER_SIGMA
    slowest = 1 + sigma * NormalDist().inv_cdf((n - 0.375) / (n + 0.25))
    assert f.max() == pytest.approx(slowest, rel=1e-12)
    assert f.mean() == pytest.approx(1.0, abs=1e-9)      # group means keep the average


def test_eight_gpus_are_exact_order_statistics():
    f = np.sort(gpu_speed.speed_factors(8, seed=1, variation=0.08))
    assert len(set(f.tolist())) == 8
