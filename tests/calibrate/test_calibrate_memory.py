"""calibrate's memory pre-check (calibrate/memory.py): exact parameter counts, refusal before any rank starts."""

import pytest

from embsim.calibrate import memory
from embsim.calibrate.modules import build_layer
from embsim.calibrate.spec import model_spec
from embsim.cli import main
from embsim.errors import InputError


def test_parameter_count_is_what_calibrate_builds():
    spec = model_spec("tiny-lm")
    built = sum(p.numel() for layer in spec.layers for p in build_layer(layer, spec).parameters())
    assert memory.parameter_count(spec) == built > 0


def test_peak_is_the_documented_copies():
    spec = model_spec("tiny-lm")
    assert memory.PEAK_COPIES == 11
    assert memory.rank_bytes(spec) == 11 * 4 * memory.parameter_count(spec)


def test_host_ranks_share_the_memory(monkeypatch):
    spec = model_spec("tiny-lm")
    need = memory.rank_bytes(spec)
    monkeypatch.setattr(memory, "host_available_bytes", lambda: 3 * need)
    memory.require_fit(spec, 3, "gloo")              # exactly fits
    with pytest.raises(InputError, match=r"--model tiny-lm: calibrating it needs about .* x 4 ranks.*--world"):
        memory.require_fit(spec, 4, "gloo")


def test_unreadable_memory_is_not_a_refusal(monkeypatch):
    monkeypatch.setattr(memory, "host_available_bytes", lambda: None)
    memory.require_fit(model_spec("tiny-lm"), 64, "gloo")


def test_cli_refuses_before_spawning(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(memory, "host_available_bytes", lambda: 1 << 20)
    out = tmp_path / "t.yaml"
    assert main(["calibrate", "--model", "tiny-lm", "--quick", "--backend", "gloo", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "more than the 0.0 GiB of host memory available" in err and len(err.strip().splitlines()) == 1
    assert not out.exists()
