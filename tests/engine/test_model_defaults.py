"""What a run leaves unsaid comes from the model zoo file's trainer defaults (amp, jitter,
lengths, global batch, accumulate_sync); a flag wins, `--jitter none` turns a zoo jitter off."""

import pytest

from embsim.engine.config import SimulationConfig
from embsim.engine.run import simulate, with_model_defaults
from embsim.errors import InputError
from embsim.workload import ZOO_DIR


def test_zoo_defaults_fill_what_the_run_leaves_unsaid():
    cfg = with_model_defaults(SimulationConfig(model="transformer-wmt"))
    assert (cfg.amp, cfg.jitter, cfg.lengths) == ("autocast", "maxtokens", "lognormal:29.05:16.2,ratio:0.151")
    assert with_model_defaults(SimulationConfig(model="gnmt")).amp == "o2"
    plain = with_model_defaults(SimulationConfig(model="bert-base"))
    assert (plain.amp, plain.jitter, plain.lengths, plain.padding) == ("autocast", None, None, None)
    # bert-large models DeepLearningExamples' pre-training data: Wikipedia lengths, padded
    # per phase as its scripts/run_pretraining.sh reads them
    bert = with_model_defaults(SimulationConfig(model="bert-large"))
    assert (bert.jitter, bert.lengths, bert.padding) == (None, "wikipedia", "longest:8")
    assert bert.amp == "o2"     # run_pretraining.py model.half() under --fp16
    assert with_model_defaults(SimulationConfig(model="bert-large", seq=512)).padding == "bins:64:8"
    assert with_model_defaults(SimulationConfig(model="bert-large", seq=512, padding="max")).padding == "max"


def test_flags_win_and_none_turns_the_zoo_jitter_off():
    given = with_model_defaults(SimulationConfig(model="gnmt", amp="autocast", jitter="normal:0.05",
                                                 lengths="lognormal:20:5"))
    assert (given.amp, given.jitter, given.lengths) == ("autocast", "normal:0.05", "lognormal:20:5")
    assert with_model_defaults(SimulationConfig(model="gnmt", jitter="none")).jitter is None
    # a corpus file replaces the zoo's length distribution
    assert with_model_defaults(SimulationConfig(model="gnmt", corpus="c.txt")).lengths is None


def test_zoo_jitter_changes_the_simulated_step():
    kw = dict(topology="dgx-a100:1x2", model="transformer-wmt", iterations=2, efficiency_baseline=False)
    zoo = simulate(SimulationConfig(**kw))
    off = simulate(SimulationConfig(**kw, jitter="none"))
    assert zoo.workload["jitter"] == "maxtokens" and off.workload["jitter"] is None
    assert zoo.metrics.step_time != off.metrics.step_time
    assert simulate(SimulationConfig(**kw)).metrics.step_time == zoo.metrics.step_time   # deterministic


def test_bad_zoo_jitter_names_the_file(tmp_path):
    text = (ZOO_DIR / "tiny-lm.yaml").read_text()
    assert "  optimizer: sgd\n" in text
    path = tmp_path / "m.yaml"
    path.write_text(text.replace("  optimizer: sgd\n", "  optimizer: sgd\n  jitter: wobbly\n", 1))
    with pytest.raises(InputError, match=rf"{path}: defaults.jitter: --jitter 'wobbly'"):
        with_model_defaults(SimulationConfig(model=str(path)))


def test_zoo_global_batch_sets_the_accumulation_per_gpu_count():
    # gnmt: DeepLearningExamples benchmarks a global batch of 1024 at 128 per GPU
    from embsim.engine.run import with_global_batch
    base = with_model_defaults(SimulationConfig(model="gnmt"))
    assert base.accumulate_sync == "every"
    assert [with_global_batch(base, 128, n).accumulate for n in (1, 2, 4, 8, 16)] == [8, 4, 2, 1, 1]
    assert with_global_batch(base, 64, 4).accumulate == 4          # a smaller batch accumulates more
    # a run's own --accumulate / --accumulate-sync win; a model without a global batch: 1
    given = with_model_defaults(SimulationConfig(model="gnmt", accumulate=1, accumulate_sync="last"))
    assert (with_global_batch(given, 128, 1).accumulate, given.accumulate_sync) == (1, "last")
    plain = with_model_defaults(SimulationConfig(model="bert-large"))
    assert (with_global_batch(plain, 8, 1).accumulate, plain.accumulate_sync) == (1, "last")


def test_zoo_global_batch_reaches_the_simulated_step():
    kw = dict(topology="dgx-a100:1x1", model="gnmt", iterations=2, efficiency_baseline=False, jitter="none")
    zoo = simulate(SimulationConfig(**kw))
    one = simulate(SimulationConfig(**kw, accumulate=1))
    assert zoo.workload["accumulate"] == 8 and one.workload["accumulate"] == 1
    # the per-update optimizer work is spread over 8 micro-batches: more samples per second
    assert zoo.samples_per_s > one.samples_per_s


def test_bad_zoo_global_batch_names_the_file(tmp_path):
    text = (ZOO_DIR / "tiny-lm.yaml").read_text()
    path = tmp_path / "m.yaml"
    path.write_text(text.replace("  optimizer: sgd\n", "  optimizer: sgd\n  global_batch: 0\n", 1))
    with pytest.raises(InputError, match="global_batch"):
        with_model_defaults(SimulationConfig(model=str(path)))
    path.write_text(text.replace("  optimizer: sgd\n", "  optimizer: sgd\n  accumulate_sync: sometimes\n", 1))
    with pytest.raises(InputError, match="accumulate_sync"):
        with_model_defaults(SimulationConfig(model=str(path)))


def test_maxtokens_counts_the_real_target_tokens():
    # fairseq (and DeepLearningExamples' tokens/s) count sample['ntokens']: real target tokens
    kw = dict(topology="dgx-a100:1x2", model="transformer-wmt", batch=80, seq=128, iterations=2,
              efficiency_baseline=False)
    zoo = simulate(SimulationConfig(**kw))
    fill = zoo.workload["token_fill"]
    assert 0.85 < fill < 0.9
    assert zoo.tokens_per_s == pytest.approx(zoo.samples_per_s * 128 * fill)
    off = simulate(SimulationConfig(**kw, jitter="none"))
    assert off.workload["token_fill"] is None and off.tokens_per_s == pytest.approx(off.samples_per_s * 128)
    import io
    from rich.console import Console
    from embsim.report.summary import print_summary
    out = io.StringIO()
    print_summary(zoo, Console(file=out, width=200))
    assert f"real target tokens, {fill:.3f} of the token budget" in out.getvalue()


def test_zoo_options_fill_the_run_s_components():
    """bert-large's trainer (DeepLearningExamples run_pretraining.py) gives DDP a bucket cap no
    gradient reaches: one bucket after DDP's 1 MiB first; a run's --option wins, and a
    scheduler that takes no bucket sizes gets none."""
    bert = with_model_defaults(SimulationConfig(model="bert-large"))
    ddp = {"ddp": "torch-view", "hook_divides": 2}     # gradient_as_bucket_view + two hook divides
    assert bert.scheduler_options == {"bucket_bytes": 1e12, "first_bucket_bytes": 1048576, **ddp}
    own = with_model_defaults(SimulationConfig(model="bert-large", scheduler_options={"bucket_bytes": 2.5e7}))
    assert own.scheduler_options == {"bucket_bytes": 2.5e7, "first_bucket_bytes": 1048576, **ddp}
    assert with_model_defaults(SimulationConfig(model="bert-base")).scheduler_options == {}
    assert with_model_defaults(SimulationConfig(model="bert-large", scheduler="embrace-2d")).scheduler_options == {}


def test_zoo_options_change_the_simulated_step():
    kw = dict(topology="dgx-a100:2x8", model="bert-large", batch=8, iterations=2, efficiency_baseline=False)
    zoo = simulate(SimulationConfig(**kw))
    ddp = simulate(SimulationConfig(**kw, scheduler_options={"bucket_bytes": 25 * 2**20}))
    # one bucket after the backward: nothing overlaps it, so the step is longer
    assert zoo.metrics.step_time > ddp.metrics.step_time
    assert zoo.metrics.exposed_comm > ddp.metrics.exposed_comm


def test_bad_zoo_option_names_the_file(tmp_path):
    text = (ZOO_DIR / "tiny-lm.yaml").read_text()
    path = tmp_path / "m.yaml"
    path.write_text(text.replace("  optimizer: sgd\n", "  optimizer: sgd\n  options: {bucket_bytes: -1}\n", 1))
    with pytest.raises(InputError, match=rf"{path}: defaults.options: --option bucket_bytes=-1"):
        with_model_defaults(SimulationConfig(model=str(path)))


def test_a_default_dtype_the_gpu_lacks_is_refused_as_the_models_not_the_users():
    # mpt-125m trains in bf16; a V100 has no bf16 rate. The user typed no --dtype, so the
    # refusal says the dtype is the model's default and which --dtype would run
    with pytest.raises(InputError, match=r"^--dtype: model mpt-125m trains in bf16 by default "
                                         r"and V100-SXM2-32GB has no bf16 .*give --dtype fp16 or fp32$"):
        simulate(SimulationConfig(model="mpt-125m", topology="dgx1-v100:1x2", iterations=2))
    with pytest.raises(InputError, match=r"^--dtype bf16: V100-SXM2-32GB has no bf16"):
        simulate(SimulationConfig(model="mpt-125m", topology="dgx1-v100:1x2", iterations=2, dtype="bf16"))
    ran = simulate(SimulationConfig(model="mpt-125m", topology="dgx1-v100:1x2", iterations=2,
                                    dtype="fp16", efficiency_baseline=False))
    assert ran.step_time > 0
