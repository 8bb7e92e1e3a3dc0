"""Rank classes are found from per-rank behaviour: identical GPUs share one compute
stream and distinct ones get their own, even 1,024 of them (how long that takes is a
benchmark figure, benchmarks/simulate_speed.py, not a test: tests check behaviour)."""

import numpy as np

from embsim.engine import run as run_module
from embsim.engine.classes import group_ranks, rank_classes
from embsim.plan.timeline import RankClass


def test_identical_gpus_are_one_class():
    (c,) = rank_classes(64, 8, None)
    assert c.name == "all" and c.ranks == tuple(range(64)) and c.slowdown == 1.0


def test_straggler_classes_keep_their_names_and_order():
    node = rank_classes(32, 8, "node:2:1.5")
    assert [(c.name, c.ranks[0], len(c.ranks), c.slowdown) for c in node] == [
        ("others", 0, 24, 1.0), ("straggler-node2", 16, 8, 1.5)]
    gpu = rank_classes(16, 8, "gpu:0:2")
    assert [c.name for c in gpu] == ["others", "straggler-gpu0"] and gpu[1].ranks == (0,)
    assert rank_classes(16, 8, "gpu:3:1")[0].name == "all"


def test_grouping_is_automatic():
    classes = group_ranks(np.array([2.0, 1.0, 2.0, 3.0, 1.0]))
    assert [(c.ranks, c.slowdown) for c in classes] == [((1, 4), 1.0), ((0, 2), 2.0), ((3,), 3.0)]
    # rows: ranks that differ in any column are different classes
    rows = np.array([[1.0, 2.0], [1.0, 2.0], [1.0, 3.0]])
    assert [c.ranks for c in group_ranks(rows)] == [(0, 1), (2,)]


def test_every_gpu_distinct_at_1024_gpus_runs_one_stream_each(monkeypatch):
    factors = 1.0 + 0.05 * np.random.default_rng(0).random(1024)

    def distinct(n, gpn, straggler):
        return group_ranks(factors[:n]) if n == factors.size else (RankClass("all", tuple(range(n))),)
    monkeypatch.setattr(run_module, "rank_classes", distinct)
    result = run_module.simulate(run_module.SimulationConfig(topology="128x8", strategy="embrace", iterations=4))
    assert len(result.run.classes) == 1024
    # each class ran its own stream at its own speed
    slowest = max(result.run.classes, key=lambda c: c.slowdown)
    fastest = min(result.run.classes, key=lambda c: c.slowdown)
    busy = {c.name: sum(r.end - r.start for r in result.run.compute if r.cls == c.name and r.iteration == 1)
            for c in (slowest, fastest)}
    assert busy[slowest.name] / busy[fastest.name] > 1.0 + 0.9 * (slowest.slowdown / fastest.slowdown - 1.0)
