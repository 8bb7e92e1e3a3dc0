"""--out and --topology-out naming one file: the host topology, written second, replaced
the trace just measured. Refused before anything is measured."""

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
