"""What a run leaves unsaid comes from the model zoo file's trainer defaults (amp, jitter,
lengths); a flag wins, `--jitter none` turns a zoo jitter off."""

import pytest

from embsim.engine.config import SimulationConfig
from embsim.engine.run import simulate, with_model_defaults
from embsim.errors import InputError
from embsim.workload import ZOO_DIR


def test_zoo_defaults_fill_what_the_run_leaves_unsaid():
    cfg = with_model_defaults(SimulationConfig(model="transformer-wmt"))
    assert (cfg.amp, cfg.jitter, cfg.lengths) == ("autocast", "maxtokens", "lognormal:29.05:16.2")
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


def test_zoo_options_fill_the_run_s_components():
    """bert-large's trainer (DeepLearningExamples run_pretraining.py) gives DDP a bucket cap no
    gradient reaches: one bucket after DDP's 1 MiB first; a run's --option wins, and a
    scheduler that takes no bucket sizes gets none."""
    bert = with_model_defaults(SimulationConfig(model="bert-large"))
    assert bert.scheduler_options == {"bucket_bytes": 1e12, "first_bucket_bytes": 1048576}
    own = with_model_defaults(SimulationConfig(model="bert-large", scheduler_options={"bucket_bytes": 2.5e7}))
    assert own.scheduler_options == {"bucket_bytes": 2.5e7, "first_bucket_bytes": 1048576}
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
