"""Sweeps: the YAML dialect, and a real Dask LocalCluster run with a failing point and resume."""

import csv
import json

import pytest

from embsim.errors import InputError
from embsim.sweep import config_hash, read_results, run_sweep, sweep_from_text

SWEEP = """
name: small
base: {model: tiny-lm, iterations: 2}
grid:
  topology: [dgx-h100:1x2, dgx-h100:1x4]
  strategy: [allreduce, no-such-strategy]
  hardware: {oversubscription: [1, 2]}
"""


def test_grid_expansion_is_ordered_and_hashed():
    spec = sweep_from_text(SWEEP)
    assert len(spec.points) == 8 and spec.name == "small"
    first = spec.points[0].config
    assert first == {"model": "tiny-lm", "iterations": 2, "topology": "dgx-h100:1x2",
                     "strategy": "allreduce", "hardware": {"oversubscription": 1.0}}
    assert len({p.hash for p in spec.points}) == 8
    assert sweep_from_text(SWEEP).points[5].hash == spec.points[5].hash   # stable
    # defaults spelled out or not: same configuration, same hash
    assert config_hash({"model": "tiny-lm"}) == config_hash({"model": "tiny-lm", "seed": 0})


@pytest.mark.parametrize("text, where", [
    ("grid: {strategy: [a]}\nbogus: 1\n", "bogus (line 2)"),
    ("grid:\n  strategy: [a]\n  hardware: {nic_gbps: [1]}\n", "grid.hardware.nic_gbps (line 3)"),
    ("grid:\n  topology: []\n", "needs at least one value"),
    ("base: {iterations: two}\ngrid: {strategy: [a]}\n", "base.iterations"),
    ("grid: {strategy: [a, a]}\n", "same configuration"),
])
def test_bad_sweep_files(text, where):
    with pytest.raises(InputError, match=where.replace("(", r"\(").replace(")", r"\)")):
        sweep_from_text(text, "s.yaml")


def test_sweep_on_local_cluster_with_failure_and_resume(tmp_path):
    points = list(sweep_from_text(SWEEP).points)
    summary = run_sweep(points[:4], tmp_path, workers=2, processes=False, progress=False)
    assert (summary.total, summary.ran, summary.failed) == (4, 4, 2)
    rows = read_results(tmp_path)
    bad = [r for r in rows.values() if r["status"] == "error"]
    assert len(bad) == 2 and all("no-such-strategy" in r["error"] for r in bad)
    good = [r for r in rows.values() if r["status"] == "ok"]
    assert all(r["result"]["step_time_ms"] > 0 for r in good)

    # Resume with the whole grid: the 2 good points are skipped, failed ones retried.
    summary = run_sweep(points, tmp_path, workers=2, processes=False, progress=False)
    assert (summary.total, summary.skipped, summary.ran, summary.failed) == (8, 2, 6, 4)
    # rewritten at the end: each point's latest row (a retried point's new one), in point order
    lines = (tmp_path / "results.jsonl").read_text().splitlines()
    assert [json.loads(line)["index"] for line in lines] == list(range(8))
    with open(tmp_path / "results.csv") as f:
        table = list(csv.DictReader(f))
    assert [int(r["index"]) for r in table] == list(range(8))
    assert {r["status"] for r in table} == {"ok", "error"}
    assert table[0]["hardware.oversubscription"] == "1.0" and table[0]["scheduler"] == "fifo"

    # A half-written last line (a killed sweep) is ignored, its point runs again.
    with open(tmp_path / "results.jsonl", "a") as f:
        f.write('{"hash": "trunc')
    assert len(read_results(tmp_path)) == 8


def test_resume_after_a_torn_last_line_keeps_every_finished_point(tmp_path):
    points = list(sweep_from_text(SWEEP).points)[:2]
    run_sweep(points[:1], tmp_path, workers=1, processes=False, progress=False)
    with open(tmp_path / "results.jsonl", "ab") as f:
        f.write(b'{"hash": "torn", "status": "o')           # killed mid-write
    summary = run_sweep(points, tmp_path, workers=1, processes=False, progress=False)
    assert (summary.skipped, summary.ran) == (1, 1)
    lines = (tmp_path / "results.jsonl").read_text().splitlines()
    assert len(lines) == 2 and all(json.loads(line)["hash"] for line in lines)
    assert set(read_results(tmp_path)) == {p.hash for p in points}
    with open(tmp_path / "results.csv") as f:
        assert len(list(csv.DictReader(f))) == 2


@pytest.mark.parametrize("damage", [b"\xff\xfe not utf-8\n", b"[1, 2]\n", b'{"hash": 3}\n',
                                    b'{"hash": "x", "status": "ok", "result": 5}\n'])
def test_damaged_results_rows_are_skipped(tmp_path, damage):
    (tmp_path / "results.jsonl").write_bytes(damage)
    assert read_results(tmp_path) == {}


def test_results_file_that_is_a_directory_is_one_line(tmp_path):
    (tmp_path / "results.jsonl").mkdir()
    with pytest.raises(InputError, match="not a regular file|a directory"):
        read_results(tmp_path)


def test_sweep_name_cannot_escape_the_sweeps_folder():
    spec = sweep_from_text("name: ../../../escaped\ngrid: {strategy: [allreduce]}\n")
    assert spec.name == "escaped" and "/" not in spec.name


def test_bad_grid_value_is_refused_before_anything_runs(tmp_path, capsys):
    from embsim.cli import main
    path = tmp_path / "s.yaml"
    path.write_text(SWEEP)
    assert main(["sweep", str(path), "--out", str(tmp_path / "o"), "--threads", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no-such-strategy" in err and "point 2" in err
    assert not (tmp_path / "o").exists()
    assert main(["scale", "--model", "tiny-lm", "--strategy", "nosuch", "--gpus", "1,2"]) == 2
    assert main(["scale", "--model", "tiny-lm", "--strategy", "allreduce", "--gpus", "1,2",
                 "--iterations", "0"]) == 2
    # the same bound as simulate's --accumulate, refused at the flag (5000 ran for minutes)
    capsys.readouterr()
    assert main(["scale", "--model", "tiny-lm", "--strategy", "allreduce", "--gpus", "1,2",
                 "--accumulate", "5000"]) == 2
    assert "--accumulate" in capsys.readouterr().err
    path.write_text("base: {model: tiny-lm, iterations: 2, accumulate: 5000}\n"
                    "grid: {topology: [dgx-h100:1x2]}\n")
    assert main(["sweep", str(path), "--out", str(tmp_path / "o"), "--threads", "--no-progress"]) == 2
    assert "accumulate 5000" in capsys.readouterr().err and not (tmp_path / "o").exists()


def test_sweep_where_nothing_succeeds_exits_non_zero(tmp_path, capsys, monkeypatch):
    import embsim.engine.run as run
    from embsim.cli import main

    def broken(cfg):
        raise RuntimeError("simulated crash")
    monkeypatch.setattr(run, "simulate", broken)
    path = tmp_path / "s.yaml"
    path.write_text("base: {model: tiny-lm, iterations: 2}\ngrid: {topology: [dgx-h100:1x2]}\n")
    assert main(["sweep", str(path), "--out", str(tmp_path / "o"), "--threads", "--no-progress"]) == 1
    assert "no point succeeded" in capsys.readouterr().err


def test_sweep_command_and_scale(tmp_path, capsys):
    from embsim.cli import main
    path = tmp_path / "s.yaml"
    path.write_text(SWEEP)
    path.write_text(SWEEP.replace(", no-such-strategy", ", allgather"))
    assert main(["sweep", str(path), "--out", str(tmp_path / "o"), "--threads", "--no-progress"]) == 0
    assert "8 points, 0 already done, 8 run, 0 failed" in capsys.readouterr().out
    rc = main(["scale", "--model", "tiny-lm", "--strategy", "allreduce", "--gpus", "1,2,4",
               "--iterations", "2", "--json", "--plot", str(tmp_path / "scale.png")])
    assert rc == 0
    curve = json.loads(capsys.readouterr().out)["points"]
    assert [c["gpus"] for c in curve] == [1, 2, 4] and curve[0]["efficiency"] == 1.0
    assert all(0 < c["efficiency"] <= 1.0 + 1e-9 for c in curve)
    assert (tmp_path / "scale.png").stat().st_size > 1000


def test_trainer_inputs_are_checked_before_anything_runs(tmp_path, capsys):
    """A padding that cannot run at the point's seq, or a corpus --jitter without sample
    lengths, was a failed row per point and exit 1 after the sweep ran: now exit 2 up front."""
    from embsim.cli import main
    assert main(["scale", "--model", "tiny-lm", "--strategy", "allreduce", "--gpus", "1,2",
                 "--jitter", "bucket:4"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("embsim: error: scale point 0: jitter bucket:4: needs sample lengths (corpus or "
                   "lengths), and the model's defaults give none"), err
    path = tmp_path / "s.yaml"
    path.write_text("base: {model: tiny-lm, iterations: 2, lengths: wikipedia}\n"
                    "grid: {topology: [dgx-h100:1x2], padding: [longest:8, 'bins:64']}\n")
    assert main(["sweep", str(path), "--out", str(tmp_path / "o"), "--threads", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert "point 1: --padding bins:64: --seq 35 must be a multiple" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_an_unreachable_scheduler_leaves_no_empty_results_folder(tmp_path, monkeypatch):
    """A scheduler that cannot be reached (runner._Client's one-line InputError) fails
    before any point runs; the results folder the sweep created is not left behind, and a
    folder that existed is kept. (_Client is replaced: a real failed dask Client leaves
    the process's event loop in a state later tests trip over.)"""
    import embsim.sweep.runner as runner

    def unreachable(scheduler, workers, processes):
        raise InputError(f"Dask scheduler {scheduler} (sweep --scheduler, scale --dask-scheduler): "
                         f"cannot reach it: refused")
    monkeypatch.setattr(runner, "_Client", unreachable)
    points = list(sweep_from_text(SWEEP).points)
    out = tmp_path / "new"
    with pytest.raises(InputError, match="cannot reach it"):
        run_sweep(points, out, scheduler="tcp://127.0.0.1:9")
    assert not out.exists()
    kept = tmp_path / "kept"
    kept.mkdir()
    with pytest.raises(InputError, match="cannot reach it"):
        run_sweep(points, kept, scheduler="tcp://127.0.0.1:9")
    assert kept.is_dir()
    # --out a/b/c: the parents mkdir(parents=True) made go too, the folder above stays
    nested = kept / "a" / "b" / "c"
    with pytest.raises(InputError, match="cannot reach it"):
        run_sweep(points, nested, scheduler="tcp://127.0.0.1:9")
    assert not (kept / "a").exists() and kept.is_dir()
    # only what this call created goes: a parent that was there (with a file) stays
    (kept / "a").mkdir()
    (kept / "a" / "notes.txt").write_text("mine\n")
    with pytest.raises(InputError, match="cannot reach it"):
        run_sweep(points, kept / "a" / "b", scheduler="tcp://127.0.0.1:9")
    assert not (kept / "a" / "b").exists() and (kept / "a" / "notes.txt").read_text() == "mine\n"


def test_csv_has_a_column_for_every_varied_grid_key(tmp_path):
    # two points that differ only in dtype and accumulate: the table must tell them apart
    text = """
name: varied
base: {model: tiny-lm, iterations: 2, topology: dgx-h100:1x2}
grid:
  dtype: [fp32, fp16]
  accumulate: [1, 2]
"""
    points = list(sweep_from_text(text).points)
    run_sweep(points, tmp_path, workers=1, processes=False, progress=False)
    with open(tmp_path / "results.csv") as f:
        table = list(csv.DictReader(f))
    assert [(r["dtype"], r["accumulate"]) for r in table] == [
        ("fp32", "1"), ("fp32", "2"), ("fp16", "1"), ("fp16", "2")]
    assert "recompute" not in table[0]          # fixed fields stay out of the way
    assert len({r["step_time_ms"] for r in table}) == 4
