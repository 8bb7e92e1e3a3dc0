"""GNMT and Transformer (DeepLearningExamples) against their published throughput and
scaling: bounds at the level the model reaches, so that a regression is red."""

import pytest

from embsim.validate.training import DATA_DIR, file_runs

# (file, max |scaling-efficiency difference|, max |error|): docs/validation.md
# (GNMT max |error| 0.27 -> 0.28: 27.02 % since FRAMEWORK_STREAM_EFFICIENCY was refitted 0.38 ->
# 0.37 with V100 copy bandwidth measured at 0.862 of peak instead of the 0.85 default)
# (GNMT 0.14/0.28 -> 0.125/0.145: 12.1 % / 14.1 % since the LSTM step scales with the tensor
# rate, embsim.workload.recurrent_fit: A100 AMP 1-GPU -27.0 -> -9.3 %)
# (Transformer 0.13/0.23 -> 0.11/0.19: sentence pairs with a fitted tgt/src spread, each side
# timed at its own padded length, and real target tokens counted: 0.106 / 18.5 %)
# (0.125/0.145 and 0.11/0.19 -> 0.112/0.122 and 0.091/0.185: apex DDP's passes over each
# bucket, schedulers.ddp_passes: GNMT 0.111 / 12.1 %, Transformer 0.090 / 18.4 %)
# (0.112/0.122 and 0.091/0.185 -> 0.092/0.092 and 0.091/0.166: memory-bound kernels outside
# transformer blocks at their per-kernel class fractions, GNMT's eager Bahdanau attention and
# both models' label-smoothing losses counted as DLE runs them: GNMT 0.087 / 8.7 %,
# Transformer 0.087 / 16.1 %)
# s2-bert: A100 TF32 GEMMs at 0.789 (CUTLASS TF32/FP16 peaks on the FP16 cube): Transformer
# A100 TF32 one GPU -16.0 -> -17.7 % -> error bound LOOSENED 0.166 -> 0.178.
# s2-seq2seq (2026-12-02): GNMT's one-GPU runs step the dense embedding whole, its throughput
# is the trainer's mean of per-iteration rates over the zoo's bucket lengths (the packaged copy
# no longer runs a fixed seq 28) and a length jitter no longer multiplies the optimizer step:
# GNMT scaling 0.065 -> 0.070 (V100 AMP 4 GPUs), max |error| 8.8 -> 11.9 % (A100 AMP one GPU:
# the bucket padding is 28.4 tokens with a convex step time, 2.6-3.1 % more than seq 28):
# bounds 0.092 -> 0.0705 (tightened) and error LOOSENED 0.092 -> 0.12. Transformer: its
# optimizer step no longer takes the token-budget factor (< 1 on one GPU): A100 TF32 one GPU
# -17.7 -> -18.0 % -> error LOOSENED 0.178 -> 0.181; scaling 0.074, bound 0.091 -> 0.0745.
BOUNDS = {"dle-pytorch-gnmt": (0.0705, 0.12), "dle-pytorch-transformer": (0.0745, 0.181)}


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
    # o2: every parameter 16-bit, so FP32 gradients double all of it; under autocast every
    # gradient is FP32 already (embsim.workload.precision.param_bytes): the key is redundant
    base = dict(topology="dgx-a100:1x8", model="tiny-lm", dtype="fp16", iterations=3, amp="o2")
    half = simulate(SimulationConfig(**base))
    full = simulate(SimulationConfig(**base, model_overrides={"optimizer": {"fp32_gradients": True}}))
    assert full.metrics.comm_bytes_per_gpu["all_reduce"] == 2 * half.metrics.comm_bytes_per_gpu["all_reduce"]
    auto = simulate(SimulationConfig(**{**base, "amp": "autocast"}))
    auto_full = simulate(SimulationConfig(**{**base, "amp": "autocast"},
                                          model_overrides={"optimizer": {"fp32_gradients": True}}))
    assert auto.metrics.comm_bytes_per_gpu["all_reduce"] == full.metrics.comm_bytes_per_gpu["all_reduce"] \
        == auto_full.metrics.comm_bytes_per_gpu["all_reduce"]


# Minimal run blocks, as a published table is first copied (model, topology, batch, seq,
# dtype and nothing of how the trainer runs): the zoo files' trainer defaults carry the
# rest. Values: the DeepLearningExamples READMEs' DGX A100 tables (as in DATA_DIR's files).
MINIMAL = """\
embsim_defaults: {{model: {model}, batch: {batch}, seq: {seq}, metric: tokens_per_s, scale: {scale}}}
runs:
{runs}
"""
MINIMAL_RUNS = {
    # model, batch, seq, scale, (id, gpus, dtype, measured tokens/s); bounds: |error|, |diff|
    "transformer-wmt": (80, 128, 1, [("tf32-1", 1, "tf32", 51057), ("tf32-4", 4, "tf32", 179245),
                                     ("tf32-8", 8, "tf32", 347936), ("amp-1", 1, "fp16", 82059),
                                     ("amp-4", 4, "fp16", 286081), ("amp-8", 8, "fp16", 551599)],
                        # 0.14 -> 0.155 (s2-recsys): autocast's casts at copy bandwidth move
                        # the already-fast 4-8 GPU AMP rows from ~+11 to ~+15 %; 0.155/0.11 ->
                        # 0.10/0.085 (s2-seq2seq round 3): the zoo's sentence pairs, real target
                        # tokens counted (one GPU -9.6 %, 8 GPUs +0.4 %, scaling +0.073..+0.082);
                        # 0.10/0.085 -> 0.097/0.077 with apex DDP's bucket passes (9.6 % / 0.076)
                        0.097, 0.077),
    "gnmt": (128, 24, 2, [("tf32-1", 1, "tf32", 83214), ("tf32-4", 4, "tf32", 278576),
                          ("tf32-8", 8, "tf32", 519952), ("amp-1", 1, "fp16", 140909),
                          ("amp-4", 4, "fp16", 463144), ("amp-8", 8, "fp16", 822024)],
             # 0.32/0.23 -> 0.185/0.22 with the tensor-rate LSTM step (AMP 1-GPU -31.8 -> -16.3 %);
             # the zoo's global batch 1024 (s2-seq2seq round 3): 18.4 % / 0.108 -> 0.185/0.11;
             # apex DDP's bucket passes (schedulers.ddp_passes): 16.5 % / 0.099 -> 0.166/0.1
             0.166, 0.1),
}


@pytest.mark.parametrize("model", sorted(MINIMAL_RUNS))
def test_minimal_blocks_simulate_the_reference_trainer(model, tmp_path):
    batch, seq, scale, rows, max_error, max_diff = MINIMAL_RUNS[model]
    runs = "\n".join(
        f"  - {{id: {rid}, gpus: {g}, value: {v}, "
        + (f"scaling_base: {rid.split('-')[0]}-1, " if g > 1 else "")
        + f"embsim: {{topology: 'dgx-a100:1x{g}', dtype: {d}}}}}"
        for rid, g, d, v in rows)
    path = tmp_path / f"{model}.yaml"
    path.write_text(MINIMAL.format(model=model, batch=batch, seq=seq, scale=scale, runs=runs))
    got, pairs = file_runs(str(path), iterations=3)
    assert len(got) == 6 and len(pairs) == 4
    assert max(abs(r.error) for r in got) <= max_error
    assert max(abs(p.difference) for p in pairs) <= max_diff
