"""--padding in a simulation: every layer timed at each padded length, weighted."""

import pytest

from embsim import cli
from embsim.engine.config import SimulationConfig
from embsim.engine.padded import check_padding, expected_layer_times, length_probabilities
from embsim.engine.run import simulate
from embsim.errors import InputError
from embsim.workload import ZOO_DIR, load_model
from embsim.workload.compute import model_times
from embsim.workload.gpu_compute import for_gpu
from embsim.workload.padding import LengthMix
from embsim.topology import load_topology

BERT512 = dict(topology="dgx-a100:1x1", model="bert-large", seq=512, batch=32, dtype="fp16",
               iterations=2, efficiency_baseline=False)


def test_expectation_is_over_lengths_not_at_the_mean_length():
    """Attention grows as L^2: half the micro-batches at 128 and half at 512 cost more than
    all of them at 320."""
    gpu = for_gpu(load_topology("dgx-a100:1x1").node.gpu)

    def times_at(seq):
        t = model_times(load_model("bert-large", batch=32, seq=seq, dtype="fp16"), gpu)
        return {n: x.fwd_s for n, x in t.items()}, {n: x.bwd_s for n, x in t.items()}

    fwd, bwd = expected_layer_times(LengthMix((128, 512), (0.5, 0.5)), times_at)
    lo, hi, mid = times_at(128), times_at(512), times_at(320)
    assert fwd["encoder.0"] == pytest.approx((lo[0]["encoder.0"] + hi[0]["encoder.0"]) / 2)
    assert fwd["encoder.0"] > mid[0]["encoder.0"] and bwd["encoder.0"] > mid[1]["encoder.0"]


def test_bert_large_defaults_to_its_binned_phase_2():
    binned = simulate(SimulationConfig(**BERT512))
    full = simulate(SimulationConfig(**BERT512, padding="max"))
    assert "padding bins:64:8 of wikipedia lengths" in binned.compute_source
    assert "mean padded length 279.1 of 512" in binned.compute_source
    assert "padding" not in full.compute_source
    assert binned.workload["padding"] == "bins:64:8" and full.workload["padding"] is None
    # between the linear layers' 512 / 279 and attention's 512^2 / E[L^2] = 512^2 / 329^2
    assert 512 / 279.1 < binned.samples_per_s / full.samples_per_s < (512 / 328.8) ** 2
    assert simulate(SimulationConfig(**BERT512)).metrics.step_time == binned.metrics.step_time


def test_any_model_takes_lengths_and_padding():
    kw = dict(topology="dgx-a100:1x1", model="bert-base", seq=512, batch=8, iterations=2,
              efficiency_baseline=False)
    plain = simulate(SimulationConfig(**kw))
    packed = simulate(SimulationConfig(**kw, lengths="wikipedia", padding="packed"))
    longest = simulate(SimulationConfig(**kw, lengths="lognormal:100:40", padding="longest"))
    assert "padding" not in plain.compute_source        # bert-base: fixed shapes, as calibrate runs it
    assert "tokens computed per sample 255.8 of 512" in packed.compute_source
    assert packed.samples_per_s > 1.8 * plain.samples_per_s
    assert "lognormal:100:40 lengths (seed 0)" in longest.compute_source
    assert longest.samples_per_s > plain.samples_per_s


def test_length_probabilities_from_a_corpus(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("a b c\n" * 3 + "a " * 9 + "\n")
    p, label = length_probabilities(None, str(corpus), 0, 6)
    assert label == f"--corpus {corpus}" and list(p) == [0, 0, 0.75, 0, 0, 0.25]   # 9 cut to 6


def test_padding_needs_lengths_and_one_padder():
    check_padding("max", None, None, "shuffle")
    with pytest.raises(InputError, match="--padding longest: needs sample lengths"):
        check_padding("longest", None, None, None)
    with pytest.raises(InputError, match="both pad the batches: give --padding max"):
        check_padding("longest", "wikipedia", None, "shuffle")
    with pytest.raises(InputError, match="defaults.padding at seq 512: bins:64:8 and --jitter seq:8"):
        simulate(SimulationConfig(**BERT512, jitter="seq:8"))


def test_cli_flags_and_bad_values(capsys):
    argv = ["simulate", "--topology", "dgx-a100:1x1", "--model", "bert-base", "--iterations", "2",
            "--seq", "512", "--batch", "4"]
    assert cli.main(argv + ["--lengths", "wikipedia", "--padding", "bins:64:8"]) == 0
    out = " ".join(capsys.readouterr().out.replace("│", " ").split())
    assert "padding bins:64:8 (lengths wikipedia)" in out
    for bad in (["--padding", "bins:0"], ["--padding", "wobbly"], ["--lengths", "nosuch", "--padding", "max"],
                ["--padding", "longest"], ["--padding", "bins:100", "--lengths", "wikipedia"]):
        assert cli.main(argv + bad) == 2, bad
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "Traceback" not in err, err


def test_bad_zoo_padding_names_the_file(tmp_path):
    text = (ZOO_DIR / "tiny-lm.yaml").read_text()
    path = tmp_path / "m.yaml"
    path.write_text(text.replace("  optimizer: sgd\n", "  optimizer: sgd\n  padding: {128: 'bins:x'}\n", 1))
    with pytest.raises(InputError, match=r"m.yaml: defaults.padding.128.*'bins:x'"):
        simulate(SimulationConfig(model=str(path), topology="1x1"))
    path.write_text(text.replace("  optimizer: sgd\n", "  optimizer: sgd\n  padding: {-1: max}\n", 1))
    with pytest.raises(InputError, match=r"defaults.padding.-1 \(line \d+\): keys are sequence lengths"):
        simulate(SimulationConfig(model=str(path), topology="1x1"))


def test_zoo_padding_that_does_not_fit_the_seq_names_the_file(tmp_path):
    """A zoo default's bins or ALIGN that do not fit the run's seq: the error names the file
    and key, not a --padding the user never typed."""
    text = (ZOO_DIR / "tiny-lm.yaml").read_text()
    path = tmp_path / "m.yaml"
    path.write_text(text.replace("  optimizer: sgd\n",
                                 "  optimizer: sgd\n  lengths: wikipedia\n  padding: {35: 'bins:64', other: 'longest:64'}\n", 1))
    with pytest.raises(InputError, match=r"m.yaml: defaults.padding at seq 35: bins:64: --seq 35 must be a multiple"):
        simulate(SimulationConfig(model=str(path), topology="1x1"))
    with pytest.raises(InputError, match=r"m.yaml: defaults.padding at seq 40: longest:64: ALIGN 64 is more than --seq 40"):
        simulate(SimulationConfig(model=str(path), topology="1x1", seq=40))
    with pytest.raises(InputError, match=r"^--padding bins:64: --seq 35"):
        check_padding("bins:64", "wikipedia", None, None, seq=35)


def test_lengths_and_corpus_together_are_refused(tmp_path):
    """Both give the sample lengths; the corpus used to win silently."""
    corpus = tmp_path / "c.txt"
    corpus.write_text("a b c\n" * 4)
    with pytest.raises(InputError, match=r"^--lengths wikipedia and --corpus .*c.txt both give the sample lengths"):
        simulate(SimulationConfig(model="tiny-lm", topology="1x1", padding="longest", lengths="wikipedia",
                                  corpus=str(corpus), iterations=2))


def test_cli_empty_padding_is_one_line(capsys):
    argv = ["simulate", "--topology", "1x2", "--model", "bert-large", "--iterations", "2", "--seq", "512"]
    assert cli.main(argv + ["--padding", ""]) == 2
    err = capsys.readouterr().err.strip()
    # every command refuses an empty text value at the flag (commands.checks.refuse_empty)
    assert err == "embsim: error: embsim simulate: Invalid value for '--padding': empty value (see --help)", err


@pytest.mark.parametrize("flags", [
    ["--model", "bert-large", "--seq", "512", "--padding", "bins:64:8", "--lengths", "wikipedia"],
    ["--model", "tiny-lm", "--jitter", "maxtokens", "--lengths", "lognormal:29.05:16.2,ratio:0.151"],
])
def test_same_inputs_and_seed_give_identical_json_across_processes(flags):
    """Two fresh processes (different hash seeds, so no set or dict order can leak in): the
    --json output is byte-identical (it carries no wall-clock time)."""
    import json
    import os
    import subprocess
    import sys
    argv = [sys.executable, "-m", "embsim", "simulate", "--topology", "dgx-a100:1x8", "--seed", "7",
            "--iterations", "2", "--json"] + flags
    outs = []
    for hash_seed in ("1", "2"):
        done = subprocess.run(argv, capture_output=True, text=True, check=True,
                              env={**os.environ, "PYTHONHASHSEED": hash_seed})
        assert "wall_s" not in json.loads(done.stdout)
        outs.append(done.stdout)
    assert outs[0] == outs[1]
