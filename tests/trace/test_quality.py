"""trace.quality: layer points measured on a noisy host are named by every output that
reads them (a --quick calibration on a loaded host had a 56 % spread, and nothing said)."""

from dataclasses import replace
from pathlib import Path

from embsim.engine.measured import MeasuredInputs
from embsim.trace import load_trace
from embsim.trace.quality import NOISY_SPREAD, noisy_points, quality_note

TRACES = Path(__file__).resolve().parents[2] / "traces"


def test_the_shipped_captures_are_steady():
    for path in TRACES.glob("*.yaml"):
        trace = load_trace(path)
        assert noisy_points(trace) == [] and quality_note(trace) is None, path


def test_a_noisy_point_is_named_with_the_load():
    trace = load_trace(TRACES / "cpu-gloo-tiny-lm.yaml")
    layer = trace.layers["loss"]
    point = replace(layer.points[0], bwd_spread_s=layer.points[0].bwd_s * (NOISY_SPREAD + 0.06))
    noisy = replace(trace, layers={**trace.layers, "loss": replace(layer, points=(point, *layer.points[1:]))})
    note = quality_note(noisy)
    assert note.startswith("noisy measurements: 1 layer point(s) spread over 50% of their median")
    assert f"worst loss at batch {point.batch}: 56%" in note and "load average at calibration" in note
    assert note in MeasuredInputs(noisy, True).compute_source
