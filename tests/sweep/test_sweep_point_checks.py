"""Every value of a sweep point that simulate() would refuse is refused before anything
runs (exit 2, one line naming the point): a straggler beyond the topology, an NCCL_ALGO /
NCCL_PROTO typo, a missing corpus, an unknown dtype or amp style, a scheduler the strategy
cannot run under, a trace measured on another device, a tensor / pipeline / context
parallel size the topology cannot take. Each ran the whole sweep as a
failed row per point and exit 1 before."""

from __future__ import annotations

from pathlib import Path

import pytest

from embsim.cli import main

TRACE = Path(__file__).resolve().parents[2] / "traces" / "cpu-gloo-tiny-lm.yaml"

BASE = "base: {model: tiny-lm, iterations: 2, topology: 1x2, %s}\ngrid: {seed: [0, 1]}\n"


@pytest.mark.parametrize("setting, words", [
    ("straggler: 'gpu:9:2'", ["point 0", "--straggler", "out of range"]),
    ("nccl_algo: Foo", ["point 0", "--nccl-algo", "unknown algo"]),
    ("nccl_proto: '^LL,LL128,Simple'", ["point 0", "--nccl-proto", "excludes every proto"]),
    ("corpus: /nonexistent/corpus.txt", ["point 0", "no such corpus"]),
    ("dtype: fp64", ["point 0", "--dtype 'fp64'"]),
    ("amp: junk", ["point 0", "--amp 'junk'"]),
    ("scheduler: embrace-2d", ["point 0", "--scheduler embrace-2d with --strategy allreduce"]),
    (f"trace: {TRACE}", ["point 0", "measured on 'cpu'", "do not transfer"]),
    # parallel sizes the point's topology cannot take (simulate's engine.run.prepare)
    ("tensor_parallel: 4", ["point 0", "--tensor-parallel 4", "does not divide the 2 GPUs per node"]),
    ("pipeline_parallel: 4", ["point 0", "--pipeline-parallel 4", "does not divide 2 GPUs"]),
    ("context_parallel: 4", ["point 0", "--context-parallel 4", "does not divide 2 GPUs"]),
    # a Zipf exponent, as --zipf takes it (0, uniform, is one)
    ("zipf_s: -1", ["point 0", "zipf_s -1", "0 <= s <= 10"]),
    ("zipf_s: 11", ["point 0", "zipf_s 11", "0 <= s <= 10"]),
])
def test_bad_point_value_is_refused_up_front(tmp_path, capsys, setting, words):
    path = tmp_path / "s.yaml"
    path.write_text(BASE % setting)
    out = tmp_path / "o"
    assert main(["sweep", str(path), "--out", str(out), "--threads", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("embsim: error:") and str(path) in err, err
    for w in words:
        assert w in err, (w, err)
    assert not out.exists()          # nothing ran, no results folder


def test_trace_of_another_model_is_refused_up_front(tmp_path, capsys):
    path = tmp_path / "s.yaml"
    path.write_text(f"base: {{model: bert-base, iterations: 2, topology: local-cpu, trace: {TRACE}}}\n"
                    "grid: {seed: [0, 1]}\n")
    assert main(["sweep", str(path), "--out", str(tmp_path / "o"), "--threads", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    # simulate --trace's own refusal (engine.trace_defaults), not a missing layer further on
    assert "point 0" in err and "--model bert-base: the trace" in err and "measured tiny-lm, not bert-base" in err
    assert len(err.splitlines()) == 1 and not (tmp_path / "o").exists()
