"""Shared by the held-out training tests: one held-out file's errors, and its summary held
to the achieved bounds (each test file keeps its own counts and bounds)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from embsim.validate.training import HELDOUT_DIR, heldout_files, summary, training_errors


def one_heldout_file(suffix: str):
    """(runs, pairs) of the single held-out file whose path ends with `suffix`."""
    files = [f for f in heldout_files() if f.endswith(suffix)]
    assert len(files) == 1
    return training_errors(files)


def slow_heldout(minutes: int):
    """Skip a bound test whose file takes longer to simulate than the suite's per-test
    timeout, unless EMBSIM_SLOW_HELDOUT=1; .ci/run's gate checks the same bounds always."""
    return pytest.mark.skipif(not os.environ.get("EMBSIM_SLOW_HELDOUT"),
                              reason=f"{minutes} minutes of simulation: set EMBSIM_SLOW_HELDOUT=1 "
                                     f"(.ci/run gates it)")


def heldout_fixture(suffix: str):
    """A module-scoped pytest fixture of one_heldout_file(suffix): the file is simulated once
    per test module, however many of its tests use it."""
    @pytest.fixture(scope="module")
    def errors():
        return one_heldout_file(suffix)
    return errors


def assert_within(runs, pairs, *, counts: dict, mean: float, max_: float,
                  scaling: float | None = None) -> None:
    """The summary's counts equal `counts`; mean/max |error| (and the scaling difference)
    within the bounds."""
    s = summary(runs, pairs)
    assert {k: s[k] for k in counts} == counts
    assert s["mean_abs_error"] <= mean
    assert s["max_abs_error"] <= max_
    if scaling is not None:
        assert s["max_scaling_difference"] <= scaling


def dle_readme_file(name: str, readme: str, runs: int) -> tuple[dict, list[dict]]:
    """A held-out file copied from a DeepLearningExamples README: its source names the
    repository, the README's path and a full commit (in its URL), its note states the
    selection rule, and it holds `runs` runs with distinct ids. Returns (doc, runs)."""
    doc = yaml.safe_load((Path(HELDOUT_DIR) / name).read_text())
    src = doc["source"]
    assert src["repo"] == "NVIDIA/DeepLearningExamples" and len(src["commit"]) == 40
    assert src["path"] == readme
    assert src["url"].startswith("https://github.com/") and src["commit"] in src["url"]
    assert "selection rule" in doc["note"].lower()
    out = doc["runs"]
    assert len(out) == runs and len({r["id"] for r in out}) == runs
    return doc, out
