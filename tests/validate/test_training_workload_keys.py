"""A published run's embsim: block takes simulate's workload flags a real run may need
(--zipf/--corpus, --seed, --untie-outputs, --interference/--comm-interference,
--nccl-algo/--nccl-proto): each reaches the simulation, and a value the flag would refuse is
refused naming the file, the run and the key."""

from __future__ import annotations

import pytest

from embsim.cli import main
from embsim.validate.training import file_runs

LM = "model: tiny-lm, metric: tokens_per_s"


def _write(tmp_path, embsim: str, model: str = LM):
    path = tmp_path / "t.yaml"
    path.write_text(f"runs: [{{id: two, gpus: 2, value: 100000, embsim: {{topology: 1x2, {model}, {embsim}}}}}]\n")
    return path


def _simulated(tmp_path, embsim: str, model: str = LM) -> float:
    runs, _ = file_runs(str(_write(tmp_path, embsim, model)), iterations=2)
    return runs[0].simulated


def test_zipf_reaches_the_simulation(tmp_path):
    # the rows a batch looks up follow the token skew: a flatter law gathers more rows
    # (untied, so the table's gradient is the sparse one allgather sends)
    skewed = _simulated(tmp_path, "zipf: 1.5, strategy: allgather, untie_outputs: true")
    flat = _simulated(tmp_path, "zipf: 0.5, strategy: allgather, untie_outputs: true")
    assert skewed > flat          # fewer rows to gather: a shorter step, more tokens/s


def test_nccl_proto_reaches_the_simulation(tmp_path):
    assert _simulated(tmp_path, "nccl_proto: Simple") != _simulated(tmp_path, "nccl_proto: LL")


def test_interference_reaches_the_simulation(tmp_path):
    # gpt2's gradient buckets all-reduce under its backward: compute slowed while they run
    gpt2 = "model: gpt2, batch: 2, seq: 128, metric: tokens_per_s"
    assert _simulated(tmp_path, "interference: 0.5", gpt2) < _simulated(tmp_path, "interference: 0", gpt2)


def test_seed_and_untie_are_read(tmp_path):
    assert _simulated(tmp_path, "seed: 3, untie_outputs: true") > 0


@pytest.mark.parametrize("embsim, key", [("zipf: -1", "zipf"), ("zipf: 11", "zipf"),
                                         ("seed: -1", "seed"), ("interference: -0.1", "interference"),
                                         ("comm_interference: .nan", "comm_interference"),
                                         ("nccl_proto: '^Simple,LL,LL128'", "nccl")])
def test_a_value_the_flag_refuses_is_one_line_exit_2(tmp_path, capsys, embsim, key):
    path = _write(tmp_path, embsim)
    assert main(["validate", "--training", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(path) in err and key in err, err


def test_a_corpus_is_read_beside_the_file(tmp_path, monkeypatch):
    (tmp_path / "words.txt").write_text("the cat sat on the mat " * 50)
    monkeypatch.chdir(tmp_path.parent)          # not where the file is: read beside the YAML
    few_words = _simulated(tmp_path, "corpus: words.txt, strategy: allgather, untie_outputs: true")
    assert few_words > _simulated(tmp_path, "zipf: 0.5, strategy: allgather, untie_outputs: true")


def test_a_missing_corpus_names_the_file(tmp_path, capsys):
    path = _write(tmp_path, "corpus: nowhere.txt")
    assert main(["validate", "--training", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "nowhere.txt" in err, err


def test_a_typo_in_the_defaults_is_named_there(tmp_path, capsys):
    path = tmp_path / "t.yaml"
    path.write_text("embsim_defaults:\n  model: tiny-lm\n  zipff: 1.2\nruns:\n"
                    "  - {id: one, gpus: 1, value: 1000, embsim: {topology: 1x1}}\n")
    assert main(["validate", "--training", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "embsim_defaults.zipff" in err and "line 3" in err, err
