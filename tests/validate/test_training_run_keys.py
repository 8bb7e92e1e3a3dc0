"""A published-throughput file's run keys (found by a stranger's probe, 2026-12-05): a typo
or a pasted thousands separator used to be read silently and change the result; scaling_base
mistakes were found after every run was simulated, or not at all."""

from __future__ import annotations

import pytest

from embsim.cli import main

TAIL = "embsim: {topology: 1x2, model: tiny-lm}"


@pytest.mark.parametrize("runs, words", [
    # YAML reads `value: 100,000` in a flow mapping as value 100 and a key 0
    (f"[{{id: a, gpus: 2, value: 100,000, {TAIL}}}]", ["runs.0", "key 0 is not a name", "write 100000"]),
    (f"[{{id: a, gpus: 2, valeu: 5, value: 5, {TAIL}}}]", ["runs.0.valeu", "did you mean value?"]),
    (f"[{{id: a, gpus: 2, value: 5, {TAIL}}}, {{id: b, gpus: 2, value: 5, scailng_base: a, {TAIL}}}]",
     ["runs.1.scailng_base", "did you mean scaling_base?"]),
    (f"[{{id: a, gpus: 2, value: 5, scaling_base: a, {TAIL}}}]", ["runs.0.scaling_base", "this run itself"]),
    (f"[{{id: a, gpus: 2, value: 5, scaling_base: zzz, {TAIL}}}]",
     ["runs.0.scaling_base (line", "'zzz' is no run id of this file"]),
])
def test_run_key_mistakes_are_one_line_before_any_simulation(tmp_path, capsys, runs, words):
    path = tmp_path / "t.yaml"
    path.write_text(f"runs: {runs}\n")
    assert main(["validate", "--training", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(path) in err, err
    assert all(w in err for w in words), err


def test_descriptive_keys_stay_free(tmp_path, capsys):
    """The shared format describes each published row in keys embsim does not read."""
    path = tmp_path / "t.yaml"
    path.write_text(f"runs: [{{id: a, gpus: 2, value: 5, system: x, precision: AMP, batch_per_gpu: 8, "
                    f"published_weak_scaling: 1.9, configuration: MLPerf, {TAIL}}}]\n")
    assert main(["validate", "--training", str(path), "--iterations", "2"]) == 0


@pytest.mark.parametrize("flag", ["--mean-error", "--max-error"])
def test_an_error_bound_reads_as_a_fraction_or_a_percentage(tmp_path, capsys, flag):
    path = tmp_path / "t.yaml"
    path.write_text(f"runs: [{{id: a, gpus: 2, value: 5, {TAIL}}}]\n")
    # the run is off by far more than 15 %: "15%" gates like 0.15
    assert main(["validate", "--training", str(path), "--iterations", "2", flag, "15%"]) == 1
    assert "exceeds" in capsys.readouterr().err
    # a bare 15 is 1500 %, as the held-out gates above 100 % need; the command says so
    main(["validate", "--training", str(path), "--iterations", "2", flag, "15"])
    assert f"{flag} 15 is 1500%; for 15 % write 0.15 or 15%" in capsys.readouterr().err
