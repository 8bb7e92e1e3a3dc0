"""Calibrate's outputs and ranks, refused before anything is measured: --out and
--topology-out naming one file (the host topology, written second, replaced the trace
just measured), and more local ranks than the machine has cores or GPUs."""

import pytest

pytest.importorskip("torch")
from embsim.calibrate.config import CalibrateConfig  # noqa: E402
from embsim.calibrate.launch import check_outputs  # noqa: E402
from embsim.errors import InputError  # noqa: E402


def test_one_file_for_both_outputs_is_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg = CalibrateConfig(world=2, backend="gloo", quick=True, out="t.yaml",
                          topology_out=str(tmp_path / "t.yaml"))
    with pytest.raises(InputError, match="--out and --topology-out are one file"):
        check_outputs(cfg)
    assert not (tmp_path / "t.yaml").exists()


def test_more_ranks_than_cores_is_refused_before_spawning(tmp_path, monkeypatch):
    # --world 300 on a 2-core CPU host spawned 300 torch processes (memory exhausted)
    import os

    from embsim.calibrate.launch import run_calibration
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    cfg = CalibrateConfig(world=300, backend="gloo", quick=True, out=str(tmp_path / "t.yaml"))
    with pytest.raises(InputError, match="--world 300: more local ranks than this machine's 4 CPU cores"):
        run_calibration(cfg)
    assert not (tmp_path / "t.yaml").exists()
