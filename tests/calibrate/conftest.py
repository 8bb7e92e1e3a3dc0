"""Shared by calibrate's end-to-end tests."""

from pathlib import Path

import pytest

from embsim.calibrate.config import CalibrateConfig
from embsim.calibrate.launch import NoHostTopology, run_calibration


def _calibrated(cfg: CalibrateConfig) -> Path:
    try:
        return run_calibration(cfg)
    except NoHostTopology as exc:
        return exc.path


@pytest.fixture(scope="session")
def calibrated():
    """Run a real calibration and give the trace's path, also when a loaded machine left
    no usable link fit (NoHostTopology: the trace is written without a host topology, and
    the tests that need one allow for it)."""
    return _calibrated
