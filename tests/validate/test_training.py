"""`embsim validate --training`: published throughput vs the simulation."""

import pytest

from embsim import cli
from embsim.errors import InputError
from embsim.validate.training import default_files, file_runs, merged_over, summary, training_errors


@pytest.fixture(scope="module")
def packaged():
    return training_errors([])


def test_packaged_files_all_simulate(packaged):
    runs, pairs = packaged
    assert len(default_files()) >= 3
    simulated = [r for r in runs if r.skipped is None]
    # 56 DeepLearningExamples runs (DGX-1 V100 rows too, since the dgx1-v100 preset) + 18
    # held-out: BERT DGX-1 V100 pre-training (8), BERT SQuAD (8), Megatron Llama3 8B (2),
    # NeMo 24.07 GPT3-5B and Llama2 7B (2)
    assert len(simulated) == 76
    assert all(r.simulated > 0 and "kernel model" in r.compute_source for r in simulated)
    assert not [r for r in runs if r.skipped]
    assert len(pairs) == 48
    v100 = [r for r in simulated if r.id.startswith("v100")]
    assert len(v100) == 24 and all("V100" in r.compute_source for r in v100)
    llama = [r for r in simulated if r.file == "megatron-bridge-llama3-8b"]
    assert {r.compute_source.split(",")[1].split()[0] for r in llama} == {"B200-SXM-180GB", "H100-SXM5-80GB"}


def test_summary_is_mean_and_max_of_abs_error(packaged):
    runs, pairs = packaged
    errs = [abs(r.simulated / r.measured - 1) for r in runs if r.skipped is None]
    s = summary(runs, pairs)
    assert s["mean_abs_error"] == pytest.approx(sum(errs) / len(errs))
    assert s["max_abs_error"] == pytest.approx(max(errs))
    from embsim.validate.training import training_json
    j = training_json(runs, pairs)
    assert len(j["runs"]) == len(runs) and j["simulated_runs"] == len(errs)


def test_compare_resolution_is_the_validated_mean_error(packaged):
    """embsim compare calls rows within TRAINING_MEAN_ERROR of the best not resolved: that
    constant is this validation's headline, to the rounding it is printed with."""
    from embsim.compare import TRAINING_MEAN_ERROR
    assert round(summary(*packaged)["mean_abs_error"], 3) == TRAINING_MEAN_ERROR


def test_scaling_pairs_compare_per_gpu_throughput(packaged):
    runs, pairs = packaged
    by = {(r.file, r.id): r for r in runs}
    p = pairs[0]
    run, base = by[(p.file, p.run)], by[(p.file, p.base)]
    k = run.gpus / base.gpus
    assert p.measured == pytest.approx(run.measured / (k * base.measured))
    assert p.simulated == pytest.approx(run.simulated / (k * base.simulated))


def test_bad_file_names_file_and_key(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("runs:\n  - {id: a, gpus: 1, value: 10, embsim: {topology: 'dgx-a100:1x1', "
                    "model: tiny-lm, colour: red}}\n")
    with pytest.raises(InputError, match=r"bad.yaml: runs.0.embsim.colour"):
        file_runs(str(path))


@pytest.mark.parametrize("scale", ["0", "-0.125"])
def test_a_scale_that_is_not_positive_names_file_and_key(tmp_path, scale):
    """`scale:` multiplies the simulated figure (tokens/s summed over GPUs -> per GPU): 0 or
    below is a typo, refused before anything is simulated."""
    path = tmp_path / "scale.yaml"
    path.write_text("embsim_defaults: {topology: 'dgx-a100:1x1', model: tiny-lm, "
                    f"metric: tokens_per_s, scale: {scale}}}\n"
                    "runs:\n  - {id: a, gpus: 1, value: 10, embsim: {}}\n")
    with pytest.raises(InputError, match=r"scale.yaml: runs.0.embsim.scale.*must be positive"):
        file_runs(str(path))


def test_padding_key_and_its_errors(tmp_path):
    """`lengths:` and `padding:` in a run's embsim: block; a bad form names file and run."""
    path = tmp_path / "pad.yaml"
    text = ("embsim_defaults: {model: bert-base, dtype: fp16, batch: 8, seq: 512, topology: 'dgx-a100:1x1'}\n"
            "runs:\n  - {id: full, gpus: 1, value: 100, embsim: {}}\n"
            "  - {id: binned, gpus: 1, value: 100, embsim: {lengths: wikipedia, padding: 'bins:64:8'}}\n")
    path.write_text(text)
    full, binned = file_runs(str(path))[0]
    assert binned.simulated > 1.5 * full.simulated and "padding bins:64:8" in binned.compute_source
    path.write_text(text.replace("bins:64:8", "bins:sixty"))
    with pytest.raises(InputError, match=r"pad.yaml: runs.1.embsim \(line \d+\): --padding 'bins:sixty'"):
        file_runs(str(path))
    path.write_text(text.replace("lengths: wikipedia, ", ""))
    with pytest.raises(InputError, match=r"pad.yaml: run binned \(line \d+\): --padding bins:64:8: needs sample lengths"):
        file_runs(str(path))


def test_run_mappings_merge_over_defaults_key_by_key():
    defaults = {"model": "bert-base", "layers": {"encoder": {"fused_elementwise": True},
                                                 "mlm_norm": {"token_fraction": 0.15}},
                "options": {"bucket_bytes": 1}}
    run = {"layers": {"encoder": {"dropout": 0.0}}, "options": 3, "batch": 8}
    merged = merged_over(defaults, run)
    assert merged["layers"] == {"encoder": {"fused_elementwise": True, "dropout": 0.0},
                                "mlm_norm": {"token_fraction": 0.15}}
    assert merged["options"] == 3 and merged["batch"] == 8 and merged["model"] == "bert-base"
    assert defaults["layers"]["encoder"] == {"fused_elementwise": True}     # not mutated


def test_a_run_layer_override_keeps_the_defaults_others(tmp_path):
    """Through file_runs: a run overriding one layer key simulates like the defaults plus that
    key, not like a file without the defaults' layer overrides."""
    path = tmp_path / "merge.yaml"
    path.write_text("embsim_defaults: {model: bert-base, dtype: fp16, batch: 8, seq: 128, "
                    "topology: 'dgx-a100:1x1', layers: {encoder: {fused_elementwise: false}}}\n"
                    "runs:\n  - {id: eager, gpus: 1, value: 100, embsim: {}}\n"
                    "  - {id: plus, gpus: 1, value: 100, embsim: {layers: {mlm_norm: {token_fraction: 0.15}}}}\n"
                    "  - {id: fused, gpus: 1, value: 100, embsim: {layers: {encoder: {fused_elementwise: true}}}}\n")
    eager, plus, fused = file_runs(str(path))[0]
    assert plus.simulated == eager.simulated       # the defaults' eager encoder kept
    assert fused.simulated > eager.simulated


def test_runs_of_one_configuration_are_simulated_once(tmp_path, monkeypatch):
    """One row published several times (three values of one configuration) is simulated
    once per file set: the same configuration gives the same result, bit for bit."""
    import embsim.validate.training as training
    calls = []
    real = training.simulate
    monkeypatch.setattr(training, "simulate", lambda cfg: calls.append(cfg) or real(cfg))
    path = tmp_path / "same.yaml"
    path.write_text("embsim_defaults: {model: tiny-lm, topology: 'dgx-a100:1x8'}\n"
                    "runs:\n  - {id: a, gpus: 8, value: 100, embsim: {}}\n"
                    "  - {id: b, gpus: 8, value: 110, embsim: {}}\n"
                    "  - {id: c, gpus: 8, value: 100, embsim: {gpu_variation: 0}}\n")
    runs, _ = training_errors([str(path), str(path)])
    assert len(calls) == 2 and len(runs) == 6
    assert runs[0].simulated == runs[1].simulated == runs[3].simulated != runs[2].simulated
    assert runs[0].error != runs[1].error          # each run keeps its own measured value


def test_gpu_variation_key(tmp_path):
    """`gpu_variation:` in an embsim: block sets the GPU-to-GPU speed spread (0: off); a bad
    value names file and run."""
    path = tmp_path / "var.yaml"
    text = ("embsim_defaults: {model: tiny-lm, topology: 'dgx-a100:1x8'}\n"
            "runs:\n  - {id: default, gpus: 8, value: 100, embsim: {}}\n"
            "  - {id: none, gpus: 8, value: 100, embsim: {gpu_variation: 0}}\n")
    path.write_text(text)
    default, off = file_runs(str(path))[0]
    assert off.simulated > default.simulated
    assert "GPU speed variation 8%" in default.compute_source
    assert "GPU speed variation" not in off.compute_source
    path.write_text(text.replace("gpu_variation: 0", "gpu_variation: 2"))
    with pytest.raises(InputError, match=r"var.yaml: runs.1.embsim.*--gpu-variation 2"):
        file_runs(str(path))


def test_cli(capsys, tmp_path):
    assert cli.main(["validate", "--training", str(tmp_path / "none.yaml")]) == 2
    path = tmp_path / "one.yaml"
    path.write_text("embsim_defaults: {model: tiny-lm, metric: samples_per_s}\n"
                    "runs:\n  - {id: a, gpus: 1, value: 1.0e+9, embsim: {topology: 'dgx-a100:1x1', dtype: bf16}}\n"
                    "  - {id: b, gpus: 2, value: 2.0e+9, scaling_base: a, embsim: {topology: 'dgx-a100:1x2'}}\n")
    assert cli.main(["validate", "--training", str(path)]) == 0
    out = capsys.readouterr().out
    assert "mean |error|" in out and "kernel model, A100" in out
    assert cli.main(["validate", "--training", str(path), "--max-error", "0.01"]) == 1


def test_options_reach_the_scheduler(tmp_path):
    path = tmp_path / "opt.yaml"
    text = ("embsim_defaults: {model: bert-base, dtype: fp16, batch: 8}\n"
            "runs:\n  - {id: a, gpus: 8, value: 1000, embsim: {topology: 'dgx-a100:1x8'}}\n"
            "  - {id: b, gpus: 8, value: 1000, embsim: {topology: 'dgx-a100:1x8', "
            "options: {bucket_bytes: 1.0e+12, first_bucket_bytes: 1.0e+12}}}\n")
    path.write_text(text)
    runs, _ = file_runs(str(path))
    overlapped, one_bucket = runs
    assert one_bucket.simulated < overlapped.simulated      # no overlap with backward
    path.write_text(text.replace("bucket_bytes: 1.0e+12, first_", "colour: 1, first_"))
    with pytest.raises(InputError, match="colour"):
        file_runs(str(path))


def test_dtype_and_metric_spellings_read_as_the_flags(tmp_path):
    """`dtype: TF32` / `float16` and `metric: tokens/s` are the same runs as `tf32`, `fp16`
    and `tokens_per_s`; `amp` says no precision and is refused, naming the run."""
    path = tmp_path / "spell.yaml"
    text = _two_runs("model: tiny-lm, topology: 'dgx-a100:1x1', metric: METRIC", "dtype")
    plain = _simulated(path, text.replace("METRIC", "tokens_per_s").replace("D1", "tf32").replace("D2", "fp16"))
    assert _simulated(path, text.replace("METRIC", "tokens/s").replace("D1", "TF32").replace("D2", "float16")) == plain
    path.write_text(text.replace("METRIC", "tokens_per_s").replace("D1", "amp").replace("D2", "fp16"))
    with pytest.raises(InputError, match=r"spell.yaml: run.*--dtype 'amp'"):
        file_runs(str(path))


def test_recompute_key_takes_a_form_or_a_boolean(tmp_path):
    path = tmp_path / "rc.yaml"
    text = _two_runs("model: gpt2, topology: 'dgx-h100:1x1', batch: 4, seq: 512", "recompute")
    forms = _simulated(path, text.replace("D1", "full").replace("D2", "none"))
    assert _simulated(path, text.replace("D1", "true").replace("D2", "false")) == forms
    assert forms[0] < forms[1]
    path.write_text(text.replace("D1", "op").replace("D2", "none"))
    with pytest.raises(InputError, match=r"rc.yaml: run.*--recompute 'op'"):
        file_runs(str(path))


def test_grad_compress_key_reaches_the_run_and_is_checked(tmp_path):
    path = tmp_path / "gc.yaml"
    text = _two_runs("model: bert-base, topology: 'dgx-a100:2x8', dtype: tf32", "grad_compress")
    text = text.replace("gpus: 1", "gpus: 16")
    forms = _simulated(path, text.replace("D1", "fp16").replace("D2", "none"))
    assert forms[0] != forms[1]     # half the all-reduce bytes, two casts per bucket
    assert _simulated(path, text.replace("D1", "FP16").replace("D2", "NONE")) == forms
    path.write_text(text.replace("D1", "fp8").replace("D2", "none"))
    with pytest.raises(InputError, match=r"gc.yaml: run.*--grad-compress 'fp8'"):
        file_runs(str(path))


def _simulated(path, text: str) -> list[float]:
    """Each run's simulated figure of a training file written with `text`."""
    path.write_text(text)
    return [r.simulated for r in file_runs(str(path))[0]]


def _two_runs(defaults: str, key: str) -> str:
    """A training file of runs a and b, `key` set to the placeholders D1 and D2."""
    return (f"embsim_defaults: {{{defaults}}}\n"
            f"runs:\n  - {{id: a, gpus: 1, value: 10, embsim: {{{key}: D1}}}}\n"
            f"  - {{id: b, gpus: 1, value: 10, embsim: {{{key}: D2}}}}\n")


def test_the_training_table_keeps_small_rates_digits():
    """A per-GPU rate of 0.83 samples/s printed as "1 samples/s"; 12.4 as "12"."""
    from embsim.validate.training import TrainingRun, training_table
    small = TrainingRun(file="f", id="r", system="s", gpus=8, measured=0.834, unit="samples/s/GPU",
                        simulated=0.9)
    mid = TrainingRun(file="f", id="q", system="s", gpus=8, measured=12.44, unit="samples/s/GPU",
                      simulated=1234.4)
    table = training_table([small, mid], [])
    assert "| 0.83 samples/s/GPU | 0.90 |" in table and "| 12.4 samples/s/GPU | 1,234 |" in table
