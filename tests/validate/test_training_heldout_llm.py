"""Held-out Llama 3 8B FP8 pre-training on GB200, B200 and H100 (Megatron-Bridge 25.09 and
25.11 rows the packaged file does not hold), added after the per-dtype GEMM fractions and
Blackwell's memory bandwidth were fixed and simulated with no constant fitted on them. The
bounds are the level reached when the file was added: 1.9 % / 5.3 % over 4 runs (the max is
H100, -5.3 %), so a change that makes these runs worse fails here. Mean LOOSENED 0.024 ->
0.034, max tightened 0.058 -> 0.047 when memory-bound kernels outside transformer blocks (the
128,256-class output projection's loss, the final norm, the embedding) took their per-kernel
class fractions instead of the transformer-layer fit: 2.86 % / 4.15 % (GB200/B200 -0.3..+2.0
-> +1.9..+4.1 %, H100 -5.3 -> -3.1 %)."""

import pytest

from embsim.validate.training import heldout_files, summary, training_errors

MEAN_BOUND, MAX_BOUND = 0.034, 0.047


@pytest.fixture(scope="module")
def llm():
    files = [f for f in heldout_files() if f.endswith("megatron-bridge-llama3-8b-more.yaml")]
    assert len(files) == 1
    return training_errors(files)


def test_llm_heldout_within_the_achieved_bounds(llm):
    runs, pairs = llm
    s = summary(runs, pairs)
    assert s["simulated_runs"] == 4 and s["pairs"] == 0
    assert s["mean_abs_error"] <= MEAN_BOUND
    assert s["max_abs_error"] <= MAX_BOUND


def test_each_gpu_says_where_its_compute_times_came_from(llm):
    runs, _ = llm
    gpus = {r.compute_source.split(",")[1].split()[0] for r in runs}
    assert gpus == {"B200-GB200-186GB", "B200-SXM-180GB", "H100-SXM5-80GB"}
    # the GB200 and B200 rows use the per-dtype FP8 figures; TF32/FP32 fall back, and say so
    assert all("per dtype for tf32, fp32" in r.compute_source for r in runs)
