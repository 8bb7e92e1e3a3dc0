"""scale takes --seed with --jitter and its JSON and text say what was simulated; sweep rows
carry the token distribution; a binary corpus is refused before any point runs; an empty
--gpus item is refused (probe H F7, F9, M4)."""

from __future__ import annotations

import json

import pytest

from embsim.cli import main
from embsim.errors import InputError
from embsim.sweep import parse_gpus, simulate_point
from embsim.sweep.check import check_points
from embsim.sweep.spec import sweep_from_text
from scale_capture import ScaleStopped, captured  # noqa: F401  (fixture)

SCALE = ["scale", "--model", "tiny-lm", "--strategy", "allreduce", "--iterations", "2", "--gpus", "1,2"]


def test_seed_reaches_every_point(captured):
    with pytest.raises(ScaleStopped):
        main(SCALE + ["--jitter", "normal:0.05", "--seed", "3"])
    assert {p.simulation_config().seed for p in captured} == {3}


def test_without_seed_the_points_are_as_before(captured):
    """no --seed: no new key, so an old --out's rows still match their points"""
    with pytest.raises(ScaleStopped):
        main(SCALE + ["--jitter", "normal:0.05"])
    assert all("seed" not in p.config for p in captured)


def test_scale_json_and_text_record_the_workload(capsys):
    """F9: a jittered and an un-jittered scale JSON differed only in their numbers."""
    assert main(SCALE + ["--jitter", "normal:0.05", "--seed", "3", "--json", "--workers", "1"]) == 0
    points = json.loads(capsys.readouterr().out)["points"]
    assert [(p["workload"]["jitter"], p["workload"]["seed"]) for p in points] == [("normal:0.05", 3)] * 2
    assert main(SCALE + ["--jitter", "normal:0.05", "--seed", "3", "--workers", "1"]) == 0
    out = capsys.readouterr().out
    assert "jitter normal:0.05 (seed 3)" in next(line for line in out.splitlines()
                                                  if line.startswith("workload"))


def test_sweep_rows_carry_the_token_distribution():
    row = simulate_point({"model": "tiny-lm", "topology": "dgx-h100:1x2", "iterations": 2, "zipf_s": 2.0})
    assert row["status"] == "ok", row
    assert (row["result"]["workload"]["zipf"], row["result"]["workload"]["corpus"]) == (2.0, None)


def test_a_binary_corpus_in_a_sweep_is_refused_up_front(tmp_path):
    blob = tmp_path / "bin.dat"
    blob.write_bytes(b"\x00\xff" * 1000)
    spec = sweep_from_text(f"name: c\nbase: {{model: tiny-lm, iterations: 2, corpus: '{blob}'}}\n"
                           f"grid: {{topology: ['dgx-h100:1x2']}}\n")
    with pytest.raises(InputError, match=rf"^s.yaml: point 0: {blob}: cannot read corpus: not a text "
                                         rf"file \(a NUL byte at byte 0\); give UTF-8 text$"):
        check_points(list(spec.points), "s.yaml:")


def test_a_text_corpus_cut_mid_character_is_accepted(tmp_path):
    """`head -c` cuts a multi-byte character at the end: still text"""
    from embsim.sweep.check import check_corpus_text
    cut = tmp_path / "c.txt"
    cut.write_bytes("naïve café ".encode() * 100 + "é".encode()[:1])
    check_corpus_text(cut)


@pytest.mark.parametrize("text", ["8,,16", "8,16,", ",8"])
def test_an_empty_gpus_item_is_refused(text):
    """M4: `--gpus 8,,16` ran 8 and 16 as if nothing were missing."""
    with pytest.raises(InputError, match=rf"^--gpus '{text}': an empty item"):
        parse_gpus(text)
