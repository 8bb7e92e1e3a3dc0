"""A malformed published-throughput file (`embsim validate --training FILE`) is one line
naming the file and key, exit 2: a `runs:` that is not a list of mappings, an `embsim:` or
`embsim_defaults:` that is not a mapping, a non-string scaling_base, two runs of one id, an
option no strategy takes. These were tracebacks (TypeError, AttributeError) before."""

from __future__ import annotations

import pytest

from embsim.cli import main

RUN = "{id: a, gpus: 2, value: 100, embsim: {topology: 1x2, model: tiny-lm}}"


@pytest.mark.parametrize("text, words", [
    ("runs: 5\n", ["runs", "must be a list"]),
    ("runs: null\n", ["runs", "must be a list"]),
    ("runs: {a: 1}\n", ["runs", "must be a list"]),
    ("runs: []\n", ["runs", "at least one run"]),
    ("runs: [1]\n", ["runs.0", "must be a mapping"]),
    ("runs: [{id: a, gpus: 2, value: 1, embsim: [1]}]\n", ["runs.0.embsim", "must be a mapping"]),
    (f"embsim_defaults: [1]\nruns: [{RUN}]\n", ["embsim_defaults", "must be a mapping"]),
    ("runs: [{id: a, gpus: 2, value: 1, scaling_base: [1], embsim: {topology: 1x2, model: tiny-lm}}]\n",
     ["runs.0.scaling_base", "must be a string"]),
    (f"runs: [{RUN}, {RUN}]\n", ["runs.1.id", "earlier run"]),
    ("runs: [{id: a, gpus: 2, value: 1, embsim: {topology: 1x2, model: tiny-lm, options: {nope: 1}}}]\n",
     ["runs.0.embsim.options", "nope"]),
    # a topology from the file is named by its key, not by a --topology flag the user never gave
    ("runs: [{id: a, gpus: 2, value: 1, embsim: {topology: 'h100-pcie:1x2', model: tiny-lm}}]\n",
     ["run a (line 1): embsim.topology 'h100-pcie:1x2'", "did you mean pcie-h100"]),
    ("runs: [{id: a, gpus: 16, value: 1, embsim: {topology: 'dgx-a100:1x16', model: tiny-lm}}]\n",
     ["run a (line 1): embsim.topology", "8 GPUs per node"]),
])
def test_malformed_training_file_is_one_line(tmp_path, capsys, text, words):
    path = tmp_path / "t.yaml"
    path.write_text(text)
    rc = main(["validate", "--training", str(path), "--iterations", "2"])
    err = capsys.readouterr().err.strip()
    assert rc == 2, err
    assert len(err.splitlines()) == 1 and err.startswith("embsim: error:") and str(path) in err, err
    for w in words:
        assert w in err, (w, err)


def test_not_a_regular_file_is_not_called_missing(capsys):
    assert main(["validate", "--training", "/dev/null"]) == 2
    err = capsys.readouterr().err.strip()
    assert "/dev/null" in err and "not a regular file" in err and "no such" not in err


def test_only_unsimulated_runs_print_a_table(tmp_path, capsys):
    # every run has not_simulated: the table lists them; there is no error to average
    path = tmp_path / "t.yaml"
    path.write_text("runs: [{id: a, gpus: 2, value: 1, not_simulated: no model}]\n")
    assert main(["validate", "--training", str(path)]) == 0
    out = capsys.readouterr().out
    assert "no simulated runs" in out and "no model" in out


@pytest.mark.parametrize("kind", ["--training", "--nccl-tests"])
def test_symlink_loop_is_one_line(tmp_path, capsys, kind):
    # Path.resolve() (the given-twice check) raised RuntimeError on a loop
    loop = tmp_path / "loop.yaml"
    loop.symlink_to(loop)
    assert main(["validate", kind, str(loop)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(loop) in err, err
