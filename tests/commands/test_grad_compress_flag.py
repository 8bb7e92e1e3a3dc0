"""--grad-compress (commands/options.py) reaches simulate, compare and sweep files (scale:
tests/sweep/test_scale_options.py);
a bad value is one line naming the flag, exit 2."""

from __future__ import annotations

import json

import pytest

from embsim.cli import main
from embsim.sweep import sweep_from_text

RUN = ["--topology", "dgx-a100:1x8", "--model", "bert-base", "--dtype", "tf32", "--iterations", "2"]


def _json(capsys, argv) -> dict:
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def _sent(doc) -> float:
    return sum(doc["comm_bytes_per_gpu"].values())


def test_simulate_halves_the_all_reduce_and_says_so(capsys):
    plain = _json(capsys, ["simulate", *RUN, "--json"])
    half = _json(capsys, ["simulate", *RUN, "--grad-compress", "fp16", "--json"])
    assert _sent(half) == pytest.approx(_sent(plain) / 2, rel=1e-12)
    assert "gradient compression fp16" in half["compute_source"]
    assert "compression" not in plain["compute_source"]
    assert main(["simulate", *RUN, "--grad-compress", "fp16"]) == 0
    table = " ".join(capsys.readouterr().out.replace("│", " ").split())    # the wrapped cell
    assert "gradient compression fp16" in table


def test_compare_runs_the_ddp_rows_compressed_and_lists_the_others_refused(capsys):
    argv = ["compare", *RUN, "--strategies", "allreduce,fsdp", "--schedulers", "fifo", "--json"]
    plain, half = _json(capsys, argv), _json(capsys, argv + ["--grad-compress", "fp16"])
    rows = {r["strategy"]: r for r in half["rows"]}
    before = {r["strategy"]: r for r in plain["rows"]}
    assert rows["allreduce"]["comm_bytes_per_gpu_total"] == pytest.approx(before["allreduce"]["comm_bytes_per_gpu_total"] / 2)
    assert rows["allreduce"]["comm_bytes_per_gpu"]["all_reduce"] == pytest.approx(
        before["allreduce"]["comm_bytes_per_gpu"]["all_reduce"] / 2)
    assert "--grad-compress fp16" in rows["fsdp"]["refused"]


def test_sweep_files_take_the_key_typed():
    spec = sweep_from_text("base: {model: tiny-lm, iterations: 2}\n"
                           "grid: {grad_compress: [none, fp16, BF16]}\n")
    assert [p.simulation_config().grad_compress for p in spec.points] == ["none", "fp16", "bf16"]


@pytest.mark.parametrize("argv", [
    ["simulate", *RUN, "--grad-compress", "fp8"],
    ["compare", *RUN, "--grad-compress", "powersgd"],
    ["scale", "--model", "tiny-lm", "--strategy", "allreduce", "--gpus", "1,2", "--grad-compress", "int8"],
    ["simulate", "--topology", "dgx1-v100:1x8", "--model", "bert-base", "--dtype", "fp32",
     "--iterations", "2", "--grad-compress", "bf16"],
    ["simulate", *RUN, "--strategy", "fsdp", "--grad-compress", "fp16"],
    ["scale", "--model", "tiny-lm", "--strategy", "allreduce", "--topology", "dgx1-v100",
     "--gpus", "1,2", "--grad-compress", "bf16"],
])
def test_bad_values_are_one_line_naming_the_flag(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("embsim: error: --grad-compress"), err


def test_a_bad_sweep_value_is_refused_before_anything_runs(tmp_path, capsys):
    path = tmp_path / "s.yaml"
    path.write_text("base: {model: tiny-lm, iterations: 2}\ngrid: {grad_compress: [fp16, fp4]}\n")
    assert main(["sweep", str(path), "--out", str(tmp_path / "o"), "--threads", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--grad-compress 'fp4'" in err, err
    assert not (tmp_path / "o").exists()
