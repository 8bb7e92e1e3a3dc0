"""The trace file format: round trip, interpolation, and rejection of bad files."""

import pytest

from embsim.trace import (SCHEMA_VERSION, CollectiveCurve, LayerPoint, LayerTiming,
                          OptimizerTiming, Provenance, StepSamples, TokenStatsRecord, Trace,
                          TraceError, dump_trace, load_trace, write_trace)


def make_trace() -> Trace:
    prov = Provenance(host="h", date="2025-01-01T00:00:00Z", command="embsim calibrate", world=2,
                      backend="gloo", backend_version="2.x", torch="2.x", python="3.11",
                      devices=("cpu: test",), label="CPU", loadavg=(1.0, 0.5, 0.25))
    layers = {"embed": LayerTiming("embed", "embedding", "dense-grad", (
        LayerPoint(4, 10e-6, 20e-6, 1e-6, 2e-6, 5), LayerPoint(8, 18e-6, 40e-6, 1e-6, 2e-6, 5)))}
    return Trace(
        schema_version=SCHEMA_VERSION, device="cpu", model="tiny-lm", seq=16,
        topology="local-cpu.yaml", provenance=prov, layers=layers,
        optimizer=(OptimizerTiming("dense", "sgd", 4, 1000, 5e-6, 1e-7, 5),),
        collectives=(CollectiveCurve("all_reduce", 2, "all", (1024, 4096, 16384),
                                     (50e-6, 60e-6, 100e-6), (1e-6, 1e-6, 2e-6)),),
        steps={"allreduce": StepSamples("allreduce", 2, 4, 16, (1e-3, 1.2e-3, 1.1e-3), 1.1e-3)},
        token_stats=(TokenStatsRecord("embed", 1000, 4, 16, 2, "zipf", (40, 42), 70),),
    )


def test_round_trip(tmp_path):
    path = write_trace(tmp_path / "t.yaml", make_trace())
    back = load_trace(path)
    assert back.layers["embed"].points[1].bwd_s == pytest.approx(40e-6)
    assert back.steps["allreduce"].samples_s == pytest.approx((1e-3, 1.2e-3, 1.1e-3))
    assert back.provenance.loadavg == (1.0, 0.5, 0.25)
    assert back.collectives[0].sizes == (1024, 4096, 16384)
    assert dump_trace(back) == dump_trace(make_trace())   # a fixed point of write -> load


def test_interp_is_linear_in_batch():
    t = make_trace()
    assert t.interp("embed", 6) == pytest.approx((14e-6, 30e-6))
    assert t.interp("embed", 16) == pytest.approx((34e-6, 80e-6))   # extrapolated along end segment
    assert t.interp("embed", 4)[0] == pytest.approx(10e-6)
    with pytest.raises(KeyError):
        t.interp("nope", 4)


def test_collective_interpolation():
    c = make_trace().collectives[0]
    assert c.time_at(1024) == pytest.approx(50e-6)
    assert 60e-6 < c.time_at(8192) < 100e-6
    assert c.time_at(32768) == pytest.approx(200e-6)


def test_unknown_version_rejected(tmp_path):
    text = dump_trace(make_trace()).replace(f"schema_version: {SCHEMA_VERSION}", "schema_version: 99")
    (tmp_path / "t.yaml").write_text(text)
    with pytest.raises(TraceError, match=r"line \d+\): unknown trace schema version 99"):
        load_trace(tmp_path / "t.yaml")


@pytest.mark.parametrize("cut", [0.3, 0.6, 0.95])
def test_truncated_rejected(tmp_path, cut):
    text = dump_trace(make_trace())
    (tmp_path / "t.yaml").write_text(text[: int(len(text) * cut)])
    with pytest.raises(TraceError) as info:
        load_trace(tmp_path / "t.yaml")
    assert "\n" not in str(info.value)
    assert "truncated" in str(info.value) or "corrupt" in str(info.value)


def test_corrupt_rejected(tmp_path):
    (tmp_path / "bad.yaml").write_text("kind: embsim-trace\nschema_version: [1\n")
    with pytest.raises(TraceError, match="corrupt trace"):
        load_trace(tmp_path / "bad.yaml")
    (tmp_path / "other.yaml").write_text("nodes: 3\n")
    with pytest.raises(TraceError, match="not an embsim trace"):
        load_trace(tmp_path / "other.yaml")
    with pytest.raises(TraceError, match="no such trace file"):
        load_trace(tmp_path / "missing.yaml")


def test_bad_values_name_key_and_line(tmp_path):
    text = dump_trace(make_trace()).replace("fwd_us: 18.0", "fwd_us: -3.0")
    (tmp_path / "t.yaml").write_text(text)
    with pytest.raises(TraceError, match=r"layers\.0\.points\.1\.fwd_us \(line \d+\).*negative"):
        load_trace(tmp_path / "t.yaml")
    text = dump_trace(make_trace()).replace("  host: h\n", "  host: h\n  colour: red\n")
    (tmp_path / "t.yaml").write_text(text)
    with pytest.raises(TraceError, match="provenance.colour.*unknown key"):
        load_trace(tmp_path / "t.yaml")


def test_write_is_atomic_and_validates(tmp_path):
    path = write_trace(tmp_path / "t.yaml", make_trace())
    before = path.read_text()
    bad = make_trace()
    bad = Trace(**{**bad.__dict__, "seq": 0})
    with pytest.raises(TraceError):
        write_trace(path, bad)
    assert path.read_text() == before
    assert [p.name for p in tmp_path.iterdir()] == ["t.yaml"]


def test_trace_package_does_not_import_torch():
    import subprocess
    import sys
    code = "import sys, embsim.trace; assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)
