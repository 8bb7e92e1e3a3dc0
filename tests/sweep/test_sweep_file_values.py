"""Values of a sweep file as the command line takes them: a seed in --seed's whole range
(a grid refused past 1e15), and a relative file path read from the sweep file's folder (a
same-named file where embsim ran was read instead), a preset or zoo name staying a name."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from embsim.commands.checks import MAX_SEED as FLAG_MAX_SEED
from embsim.errors import InputError
from embsim.sweep import load_sweep, sweep_from_text
from embsim.sweep.spec import MAX_SEED

REPO = Path(__file__).resolve().parents[2]
TRACE = REPO / "traces" / "cpu-gloo-tiny-lm.yaml"
ZOO_TINY = REPO / "embsim" / "workload" / "zoo" / "tiny-lm.yaml"
PRESET = REPO / "topologies" / "dgx-h100.yaml"


def test_a_grid_takes_the_seeds_the_flag_takes():
    assert MAX_SEED == FLAG_MAX_SEED
    spec = sweep_from_text(f"base: {{model: tiny-lm}}\ngrid:\n  seed: [0, {2 ** 62}, {MAX_SEED}]\n")
    assert [p.config["seed"] for p in spec.points] == [0, 2 ** 62, MAX_SEED]


@pytest.mark.parametrize("value, message", [
    (str(MAX_SEED + 1), f"grid.seed.0 (line 3): seed {MAX_SEED + 1}: need an integer 0..{MAX_SEED}"),
    ("-1", f"grid.seed.0 (line 3): seed -1: need an integer 0..{MAX_SEED}"),
    ("true", "grid.seed.0 (line 3): must be an integer, got bool True"),
])
def test_a_seed_beyond_the_flags_range_is_one_line(value, message):
    with pytest.raises(InputError) as exc:
        sweep_from_text(f"base: {{model: tiny-lm}}\ngrid:\n  seed: [{value}]\n", "s.yaml")
    assert str(exc.value) == f"s.yaml: {message}"


@pytest.fixture
def folders(tmp_path, monkeypatch):
    """sub/ holds the sweep file and its inputs; the working folder holds same-named files
    that must not be read."""
    sub = tmp_path / "sub"
    sub.mkdir()
    shutil.copy(TRACE, sub / "t.yaml")
    shutil.copy(ZOO_TINY, sub / "m.yaml")
    shutil.copy(PRESET, sub / "node.yaml")
    (sub / "c.txt").write_text("the quick brown fox\n")
    for name in ("t.yaml", "m.yaml", "node.yaml", "c.txt"):
        (tmp_path / name).write_text("garbage: [\n")
    monkeypatch.chdir(tmp_path)
    return Path("sub")


def test_relative_paths_are_read_beside_the_sweep_file(folders):
    (folders / "s.yaml").write_text("base: {iterations: 2, model: m.yaml, corpus: c.txt}\n"
                                    "grid: {topology: [node.yaml:1x2, ./node.yaml]}\n")
    first, second = (p.config for p in load_sweep(folders / "s.yaml").points)
    assert (first["model"], first["corpus"], first["topology"], second["topology"]) == (
        "sub/m.yaml", "sub/c.txt", "sub/node.yaml:1x2", "sub/node.yaml")
    (folders / "ts.yaml").write_text("base: {iterations: 2, trace: t.yaml}\n"
                                          "grid: {strategy: [allreduce]}\n")
    point = load_sweep(folders / "ts.yaml").points[0].config
    assert point["trace"] == "sub/t.yaml" and point["model"] == "tiny-lm"   # the trace's


def test_names_and_absolute_paths_stay_as_written(folders):
    # a file named as a preset or zoo model beside the sweep file: still the preset, the model
    (folders / "dgx-h100").write_text("garbage: [\n")
    (folders / "tiny-lm").write_text("garbage: [\n")
    (folders / "s.yaml").write_text(f"base: {{iterations: 2, model: tiny-lm, trace: {TRACE}}}\n"
                                    f"grid: {{topology: [dgx-h100:1x2, 1x2, {PRESET}:1x2]}}\n")
    tops = [p.config["topology"] for p in load_sweep(folders / "s.yaml").points]
    assert tops == ["dgx-h100:1x2", "1x2", f"{PRESET}:1x2"]
    assert load_sweep(folders / "s.yaml").points[0].config["trace"] == str(TRACE)
    # a sweep file in the working folder: its paths as they were (and its points' hashes)
    Path("s.yaml").write_text("base: {iterations: 2, model: m.yaml}\ngrid: {strategy: [allreduce]}\n")
    assert load_sweep("s.yaml").points[0].config["model"] == "m.yaml"


def test_a_sweep_runs_the_trace_beside_it(folders, capsys):
    from embsim.cli import main
    (folders / "s.yaml").write_text("base: {iterations: 2, trace: t.yaml}\ngrid: {strategy: [allreduce]}\n")
    assert main(["sweep", str(folders / "s.yaml"), "--out", "o", "--threads", "--no-progress"]) == 0
    assert "1 points, 0 already done, 1 run, 0 failed" in capsys.readouterr().out
