"""Sweep runs: a results.jsonl row holding a number past Python's int digit limit is a
damaged row (its point runs again), not a ValueError traceback on resume; more local
workers than cores are refused before anything is made."""

from embsim.sweep import read_results


def test_overlong_integer_row_is_skipped(tmp_path):
    (tmp_path / "results.jsonl").write_bytes(b'{"hash": "x", "status": "ok", "result": {"n": 1'
                                             + b"0" * 5000 + b"}}\n")
    assert read_results(tmp_path) == {}


def test_more_local_workers_than_cores_is_refused_before_anything(tmp_path, monkeypatch, capsys):
    # sweep/scale --workers 1000 started a thousand local worker processes
    import os

    from embsim.cli import main
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    path = tmp_path / "s.yaml"
    path.write_text("base: {model: tiny-lm, iterations: 2}\ngrid: {topology: [1x2]}\n")
    assert main(["sweep", str(path), "--out", str(tmp_path / "o"), "--workers", "1000",
                 "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--workers 1000: more local workers than this machine's 4 CPU cores" in err
    assert not (tmp_path / "o").exists()
