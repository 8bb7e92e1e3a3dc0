"""The points `embsim scale` would run, captured instead of run (shared by the sweep tests)."""

from __future__ import annotations

import pytest

import embsim.commands.scale as scale_cmd


class ScaleStopped(Exception):
    """Raised in place of running the sweep, once its points are captured."""


@pytest.fixture
def captured(monkeypatch):
    """A list that fills with the points scale would run; scale then raises ScaleStopped."""
    seen = []

    def fake_sweep(points, folder, **kw):
        seen.extend(points)
        raise ScaleStopped
    monkeypatch.setattr(scale_cmd, "run_sweep", fake_sweep)
    return seen
