"""embsim's fingerprint (sweep.fingerprint): it changes with any code, zoo model or packaged
preset and nothing else, is quick, and resume re-runs a result recorded under another one.
The version string alone stayed 0.1.0 while a preset changed, and resume kept stale rows."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import embsim
from embsim.sweep import fingerprint, run_sweep, sweep_from_text
from embsim.sweep import runner
from embsim.topology.clusterspec import preset_dirs

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def package_copy(tmp_path, monkeypatch):
    """A copy of embsim and its presets that the fingerprint reads in place of the real ones."""
    shutil.copytree(REPO / "embsim", tmp_path / "embsim",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "topologies", tmp_path / "topologies")
    monkeypatch.setattr(embsim, "__file__", str(tmp_path / "embsim" / "__init__.py"))
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "prefix"))
    fingerprint.embsim_fingerprint.cache_clear()
    yield tmp_path
    fingerprint.embsim_fingerprint.cache_clear()


def _fresh() -> str:
    fingerprint.embsim_fingerprint.cache_clear()
    return fingerprint.embsim_fingerprint()


@pytest.mark.parametrize("edited", ["topologies/dgx-h100.yaml", "embsim/workload/zoo/tiny-lm.yaml",
                                    "embsim/engine/run.py"])
def test_fingerprint_changes_with_a_preset_zoo_model_or_module(package_copy, edited):
    before = _fresh()
    assert _fresh() == before                                   # deterministic
    with open(package_copy / edited, "a") as f:
        f.write("\n# edited\n")
    assert _fresh() != before


def test_fingerprint_ignores_caches_and_is_the_same_in_another_checkout(package_copy):
    here = _fresh()
    cache = package_copy / "embsim" / "__pycache__"
    cache.mkdir(exist_ok=True)
    (cache / "run.cpython-311.pyc").write_bytes(b"\0compiled")
    (package_copy / "embsim" / ".run.py.swp").write_bytes(b"editor")
    assert _fresh() == here
    # the same files elsewhere: the same fingerprint (paths are relative to the package)
    shutil.copytree(package_copy / "embsim", package_copy / "elsewhere" / "embsim")
    shutil.copytree(package_copy / "topologies", package_copy / "elsewhere" / "topologies")
    embsim.__file__ = str(package_copy / "elsewhere" / "embsim" / "__init__.py")
    assert _fresh() == here


def test_installed_presets_count_too(package_copy):
    before = _fresh()
    share = package_copy / "prefix" / "share" / "embsim" / "topologies"
    share.mkdir(parents=True)
    (share / "mine.yaml").write_text("name: mine\n")
    assert _fresh() != before


def test_packaged_preset_dirs_are_where_the_presets_are_looked_up(monkeypatch):
    monkeypatch.delenv("EMBSIM_TOPOLOGY_PATH", raising=False)
    assert fingerprint.packaged_preset_dirs() == preset_dirs()


def test_fingerprint_is_quick_and_computed_once():
    start = time.perf_counter()
    first = _fresh()
    took = time.perf_counter() - start
    assert took < 1.0, f"{took:.3f} s"
    start = time.perf_counter()
    assert fingerprint.embsim_fingerprint() == first
    assert time.perf_counter() - start < 1e-3


def _point(config):
    return {"status": "ok", "error": None, "result": {"step_time_ms": 1.0}}


POINTS = "name: fp\nbase: {model: tiny-lm, iterations: 2}\ngrid: {topology: [dgx-h100:1x2, dgx-h100:1x4]}\n"


def test_resume_runs_a_result_of_another_embsim_again(tmp_path, monkeypatch):
    points = list(sweep_from_text(POINTS).points)
    kw = dict(workers=1, processes=False, progress=False, point_fn=_point, name="fp")
    assert run_sweep(points, tmp_path, **kw).ran == 2
    assert run_sweep(points, tmp_path, **kw).skipped == 2
    monkeypatch.setattr(runner, "embsim_fingerprint", lambda: "another embsim")
    summary = run_sweep(points, tmp_path, **kw)
    assert (summary.skipped, summary.ran, summary.stale) == (0, 2, 2)
    rows = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert [r["embsim_fingerprint"] for r in rows] == ["another embsim"] * 2


def test_results_without_a_fingerprint_run_again_with_a_note(tmp_path, capsys):
    """A folder an embsim before fingerprints wrote: its results are re-run, one note, no error."""
    points = list(sweep_from_text(POINTS).points)
    kw = dict(workers=1, processes=False, progress=False, point_fn=_point, name="fp")
    run_sweep(points, tmp_path, **kw)
    path = tmp_path / "results.jsonl"
    old = [json.loads(line) for line in path.read_text().splitlines()]
    for row in old:
        del row["embsim_fingerprint"]
    path.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in old))
    capsys.readouterr()
    summary = run_sweep(points, tmp_path, **kw)
    assert (summary.skipped, summary.ran, summary.failed) == (0, 2, 0)
    assert capsys.readouterr().err == (f"note: {path}: 2 results recorded by an older embsim "
                                       f"(no fingerprint of its code): running them again\n")
    assert run_sweep(points, tmp_path, **kw).skipped == 2
    assert capsys.readouterr().err == ""


def test_sweep_reruns_after_a_packaged_preset_changed(tmp_path):
    """The probe's repro: a shipped preset edited under the same embsim version."""
    shutil.copytree(REPO / "embsim", tmp_path / "pkg" / "embsim",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "topologies", tmp_path / "pkg" / "topologies")
    (tmp_path / "s.yaml").write_text(POINTS)
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "pkg")}
    env.pop("EMBSIM_TOPOLOGY_PATH", None)
    sweep = [sys.executable, "-m", "embsim", "sweep", "s.yaml", "--out", "o", "--threads", "--no-progress"]

    def run():
        done = subprocess.run(sweep, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return done.stdout
    run()
    assert "2 already done, 0 run" in run()
    preset = tmp_path / "pkg" / "topologies" / "dgx-h100.yaml"
    text = preset.read_text()
    assert "nvlink_gbps: 450 " in text
    preset.write_text(text.replace("nvlink_gbps: 450 ", "nvlink_gbps: 45 "))
    assert "0 already done, 2 run (2 again: a file read or embsim changed)" in run()
