"""A sweep's results.jsonl is the same bytes however its points were scheduled: rows in
point order once the sweep ends, and no wall-clock time in them (that is timing.jsonl's).
It was written in completion order, each row with its `wall_s`."""

from __future__ import annotations

import json
import time

import pytest

from embsim.errors import InputError
from embsim.sweep import run_sweep, sweep_from_text

SWEEP = ("name: order\nbase: {model: tiny-lm, iterations: 2}\n"
         "grid: {topology: [dgx-h100:1x1, dgx-h100:1x2, dgx-h100:1x4, dgx-h100:1x8]}\n")


def _slow_first(config):
    """The first point finishes last: completion order is not point order."""
    t0 = time.perf_counter()
    if config["topology"] == "dgx-h100:1x1":
        time.sleep(0.5)
    return {"status": "ok", "error": None, "result": {"n_gpus": int(config["topology"][-1])},
            "wall_s": round(time.perf_counter() - t0, 4)}


def _run(out):
    points = list(sweep_from_text(SWEEP).points)
    return run_sweep(points, out, workers=2, processes=False, progress=False,
                     point_fn=_slow_first, name="order")


def test_results_are_in_point_order_without_wall_clock_time(tmp_path):
    _run(tmp_path / "a")
    _run(tmp_path / "b")
    rows = [json.loads(line) for line in (tmp_path / "a" / "results.jsonl").read_text().splitlines()]
    assert [r["index"] for r in rows] == [0, 1, 2, 3]
    assert not any("wall_s" in r for r in rows)
    for name in ("results.jsonl", "results.csv"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    timing = [json.loads(line) for line in (tmp_path / "a" / "timing.jsonl").read_text().splitlines()]
    assert sorted(t["index"] for t in timing) == [0, 1, 2, 3]
    assert max(timing, key=lambda t: t["wall_s"])["index"] == 0


def test_a_resumed_sweep_ends_as_a_fresh_one(tmp_path):
    """Rows appended by an interrupted run (here: a part of the grid first, then a retried
    point) end as a fresh run's file: one row a point, in point order."""
    points = list(sweep_from_text(SWEEP).points)
    kw = dict(workers=2, processes=False, progress=False, point_fn=_slow_first, name="order")
    run_sweep(points[2:], tmp_path / "resumed", **kw)
    with open(tmp_path / "resumed" / "results.jsonl", "a") as f:   # an older, failed attempt
        f.write(json.dumps({"config": points[0].config, "hash": points[0].hash, "index": 0,
                            "status": "error", "error": "x", "result": None, "sweep": "order"}) + "\n")
    run_sweep(points, tmp_path / "resumed", **kw)
    _run(tmp_path / "fresh")
    assert ((tmp_path / "resumed" / "results.jsonl").read_bytes()
            == (tmp_path / "fresh" / "results.jsonl").read_bytes())


def test_rows_of_points_no_longer_in_the_grid_are_kept_after_them(tmp_path):
    points = list(sweep_from_text(SWEEP).points)
    kw = dict(workers=2, processes=False, progress=False, point_fn=_slow_first, name="order")
    run_sweep(points, tmp_path, **kw)
    # two grid values removed: the others are points 0 and 1 now, the removed ones' rows stay
    fewer = list(sweep_from_text(SWEEP.replace("dgx-h100:1x1, dgx-h100:1x2, ", "")).points)
    assert [p.hash for p in fewer] == [p.hash for p in points[2:]]
    run_sweep(fewer, tmp_path, **kw)
    rows = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert [(r["hash"], r["index"]) for r in rows] == [(points[2].hash, 0), (points[3].hash, 1),
                                                       (points[0].hash, 0), (points[1].hash, 1)]


def test_a_timing_file_a_sweep_did_not_write_is_refused(tmp_path):
    (tmp_path / "timing.jsonl").write_text("my own notes\n")
    with pytest.raises(InputError, match="timing.jsonl: not written by an embsim sweep"):
        _run(tmp_path)
    assert (tmp_path / "timing.jsonl").read_text() == "my own notes\n"
