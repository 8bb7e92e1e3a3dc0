"""Ctrl-C during `embsim sweep` on process workers (probe H F4): one line, exit 130, no
Dask traceback, the finished points kept for the resume.

A terminal's Ctrl-C signals the whole foreground process group: the sweep runs in a
session of its own here and the group gets SIGINT, workers and all."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

SWEEP = """name: interrupted
base: {model: tiny-lm, iterations: 3}
grid:
  topology: [dgx-h100:1x2, dgx-h100:1x4, dgx-h100:1x8, dgx-h100:2x8]
  strategy: [allreduce, allgather]
  hardware: {nic_gbit: [100, 200, 400]}
"""


def _sweep(tmp_path: Path) -> subprocess.Popen:
    (tmp_path / "s.yaml").write_text(SWEEP)
    return subprocess.Popen([sys.executable, "-m", "embsim", "sweep", str(tmp_path / "s.yaml"),
                             "--out", str(tmp_path / "out"), "--no-progress", "--workers", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, cwd=Path(__file__).resolve().parents[2])


def _wait_for(condition, proc, limit=120.0) -> None:
    end = time.monotonic() + limit
    while not condition():
        if proc.poll() is not None or time.monotonic() > end:
            proc.kill()
            pytest.fail(f"the sweep ended (or took too long) first: {proc.communicate()}")
        time.sleep(0.05)


def _rows(tmp_path: Path) -> int:
    path = tmp_path / "out" / "results.jsonl"
    return len(path.read_text().splitlines()) if path.exists() else 0


def _ctrl_c(proc) -> tuple[int, str]:
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    return proc.returncode, err


@pytest.mark.parametrize("when", ["workers starting", "points running"])
def test_ctrl_c_is_one_line_and_keeps_the_finished_points(tmp_path, when):
    proc = _sweep(tmp_path)
    if when == "workers starting":
        # the fork server and its first worker exist: the workers are importing
        _wait_for(lambda: len(psutil.Process(proc.pid).children(recursive=True)) >= 3, proc)
    else:
        _wait_for(lambda: _rows(tmp_path) >= 1, proc)
    rc, err = _ctrl_c(proc)
    assert (rc, err.split()) == (130, ["embsim:", "aborted"]), err
    kept = _rows(tmp_path)
    if when == "points running":
        assert kept >= 1
    # the resume reuses every row written
    done = subprocess.run([sys.executable, "-m", "embsim", "sweep", str(tmp_path / "s.yaml"),
                           "--out", str(tmp_path / "out"), "--no-progress", "--workers", "2"],
                          capture_output=True, text=True, cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr
    assert f"24 points, {kept} already done" in done.stdout
