"""A trace calibrated from a model file keeps the file's sha256: editing the file after the
calibration ran another model under "measured" times, with nothing said (31 -> 135 ms in a
stranger's probe, 2026-12-05)."""

import json
from dataclasses import replace
from pathlib import Path

import pytest

from embsim.cli import main
from embsim.trace import load_trace, write_trace
from embsim.workload import ZOO_DIR
from embsim.yamlio import file_sha256

TRACE = Path(__file__).resolve().parents[2] / "traces" / "cpu-gloo-tiny-lm.yaml"


def _trace_of_a_model_file(tmp_path):
    model = tmp_path / "my-lm.yaml"
    model.write_text((ZOO_DIR / "tiny-lm.yaml").read_text())
    trace = replace(load_trace(TRACE), model=str(model), model_sha256=file_sha256(model))
    path = write_trace(tmp_path / "t.yaml", trace)
    return model, Path(path)


def test_the_digest_survives_a_round_trip_and_an_unchanged_file_runs(tmp_path, capsys):
    model, path = _trace_of_a_model_file(tmp_path)
    assert load_trace(path).model_sha256 == file_sha256(model)
    assert main(["simulate", "--trace", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["compute_source"].startswith("measured")


def test_an_edited_model_file_is_refused(tmp_path, capsys):
    model, path = _trace_of_a_model_file(tmp_path)
    model.write_text(model.read_text() + "# edited after the calibration\n")
    assert main(["simulate", "--trace", str(path)]) == 2
    err = capsys.readouterr().err
    assert "changed since the calibration" in err and err.count("\n") == 1


def test_a_malformed_digest_is_refused_with_its_line(tmp_path):
    _, path = _trace_of_a_model_file(tmp_path)
    text = path.read_text()
    path.write_text(text.replace("model_sha256: ", "model_sha256: xyz", 1))
    with pytest.raises(Exception, match=r"model_sha256 \(line \d+\): must be 64 lowercase hex"):
        load_trace(path)
