"""`embsim validate`: the numbers it compares, its JSON, and its exit codes."""

import json
from pathlib import Path

import pytest

from embsim.cli import main
from embsim.collectives.busbw import busbw_factor
from embsim.engine.run import SimulationConfig, simulate
from embsim.imports import load_nccl_tests_log
from embsim.trace import (SCHEMA_VERSION, LayerPoint, LayerTiming, Provenance, StepSamples, Trace,
                          write_trace)
from embsim.validate import model_version, run_errors
from embsim.workload import load_model

FIXTURES = Path(__file__).parent.parent / "imports" / "fixtures"
H100_LOG = str(FIXTURES / "h100-2x8-all_reduce.log")


def test_log_rows_compare_time_derived_busbw():
    (run,) = load_nccl_tests_log(H100_LOG)
    curve = run_errors(run, "dgx-h100")
    assert len(curve.points) == len(run.rows) and curve.nccl.startswith("2.26.2")
    row, point = run.rows[-1], curve.points[-1]
    expected = row.size / row.in_place.time_s * busbw_factor("all_reduce", 16) / 1e9
    assert point.measured_busbw == pytest.approx(expected)
    assert point.error == pytest.approx(point.measured_busbw / point.simulated_busbw - 1)


def test_model_version_is_the_table_in_force():
    assert model_version("2.26.2") == "2.26" and model_version("2.30.3") == "2.30"
    assert model_version("2.27.7") == "2.27" and model_version("2.19.4") == "2.19"
    # outside the modelled releases: the nearest table, and the output names it
    assert model_version("2.12.12") == "2.18" and model_version("2.31.1") == "2.30"
    assert model_version(None) is None


def test_json_and_max_error_exit_codes(capsys):
    assert main(["validate", "--nccl-tests", H100_LOG, "--topology", "dgx-h100", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {"size", "measured_busbw", "simulated_busbw", "error"} <= set(out["rows"][0])
    mean, worst = out["mean_abs_error"], out["max_abs_error"]
    errs = [abs(r["error"]) for r in out["rows"] if r["size"] >= out["min_size"]]
    assert mean == pytest.approx(sum(errs) / len(errs)) and worst == pytest.approx(max(errs))
    assert 0 < mean <= worst
    assert main(["validate", "--nccl-tests", H100_LOG, "--topology", "dgx-h100",
                 "--mean-error", str(mean * 1.01), "--max-error", str(worst * 1.01)]) == 0
    assert main(["validate", "--nccl-tests", H100_LOG, "--topology", "dgx-h100",
                 "--max-error", str(worst * 0.99)]) == 1
    assert "exceeds --max-error" in capsys.readouterr().err
    assert main(["validate", "--nccl-tests", H100_LOG, "--topology", "dgx-h100",
                 "--mean-error", str(mean * 0.99)]) == 1
    assert "exceeds --mean-error" in capsys.readouterr().err


@pytest.mark.parametrize("args, message", [
    (["validate", "--nccl-tests", H100_LOG, "--topology", "dgx-h100:1x8"], "16 ranks"),
    (["validate", "--nccl-tests", str(FIXTURES / "interleaved.log"), "--topology", "dgx-h100"], "interleaved"),
    (["validate"], "exactly one of"),
])
def test_bad_input_exits_2(args, message, capsys):
    assert main(args) == 2
    assert message in capsys.readouterr().err


def test_a_logs_sxm_device_name_picks_its_board_and_says_so(capsys, tmp_path):
    """No --topology: the log's 'NVIDIA H100 80GB HBM3' ranks on two hosts are dgx-h100:2x8,
    the same numbers as naming it, and the output says where the system came from."""
    assert main(["validate", "--nccl-tests", H100_LOG, "--json"]) == 0
    inferred = json.loads(capsys.readouterr().out)
    assert main(["validate", "--nccl-tests", H100_LOG, "--topology", "dgx-h100:2x8", "--json"]) == 0
    named = json.loads(capsys.readouterr().out)
    assert [r["simulated_busbw"] for r in inferred["rows"]] == [r["simulated_busbw"] for r in named["rows"]]
    assert main(["validate", "--nccl-tests", H100_LOG]) == 0
    out = capsys.readouterr().out
    assert "inferred from the log's device name 'NVIDIA H100 80GB HBM3': preset dgx-h100" in out
    assert "the preset's network stands in" in out
    # a PCIe card names no layout: refused, naming the device and the flag
    pcie = tmp_path / "pcie.log"
    pcie.write_text(Path(H100_LOG).read_text().replace("NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe"))
    assert main(["validate", "--nccl-tests", str(pcie)]) == 2
    err = capsys.readouterr().err
    assert "NVIDIA H100 PCIe" in err and "pass --topology" in err and err.count("\n") == 1


def test_packaged_validation_files(capsys):
    assert main(["validate", "--nccl-tests", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["curves"]) >= 4 and out["mean_abs_error"] > 0
    for c in out["curves"]:
        assert c["mean_abs_error"] <= c["max_abs_error"]


def _trace(tmp_path, measured_s):
    model = load_model("tiny-lm", batch=4, seq=16)
    layers = {l.name: LayerTiming(l.name, l.kind, "", (LayerPoint(4, 50e-6, 100e-6, 1e-6, 1e-6, 5),
                                                      LayerPoint(8, 90e-6, 180e-6, 1e-6, 1e-6, 5)))
              for l in model.layers}
    prov = Provenance(host="h", date="2025-01-01T00:00:00Z", command="test", world=2, backend="nccl",
                      backend_version="x", torch="x", python="3.11", devices=("NVIDIA H100 80GB HBM3",) * 2)
    trace = Trace(SCHEMA_VERSION, "NVIDIA H100 80GB HBM3", "tiny-lm", 16, "dgx-h100", prov, layers, (), (),
                  {"allreduce": StepSamples("allreduce", 2, 4, 16, (measured_s,), measured_s)}, ())
    return write_trace(tmp_path / "t.yaml", trace)


def test_trace_steps(tmp_path, capsys):
    path = _trace(tmp_path, 1.0)
    simulated = simulate(SimulationConfig(topology="dgx-h100:1x2", model="tiny-lm", batch=4, seq=16,
                                          trace=str(path), efficiency_baseline=False)).step_time
    path = _trace(tmp_path, simulated * 1.25)          # simulated is 20 % below "measured"
    assert main(["validate", "--trace", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    (row,) = out["rows"]
    assert row["strategy"] == "allreduce" and row["world"] == 2
    assert row["error"] == pytest.approx(-0.2, abs=1e-6)
    assert out["mean_abs_error"] == pytest.approx(0.2, abs=1e-6)
    assert out["max_abs_error"] == pytest.approx(0.2, abs=1e-6)
    assert main(["validate", "--trace", str(path), "--max-error", "0.25"]) == 0
    assert main(["validate", "--trace", str(path), "--max-error", "0.1"]) == 1


def test_a_log_without_rank_lines_runs_on_the_named_system(capsys, tmp_path):
    """Rank lines left out of a pasted log: refused without --topology (the GPUs and nodes
    are unknown), compared on it with --topology, whose GPU count the table checks."""
    log = tmp_path / "all_reduce_perf.log"
    log.write_text("\n".join(l for l in Path(H100_LOG).read_text().splitlines()
                             if " Rank " not in l) + "\n")
    assert main(["validate", "--nccl-tests", str(log)]) == 2
    err = capsys.readouterr().err
    assert "no '# Rank' lines" in err and "--topology PRESET:NxG" in err and err.count("\n") == 1
    assert main(["validate", "--nccl-tests", str(log), "--topology", "dgx-h100:2x8", "--json"]) == 0
    bare = json.loads(capsys.readouterr().out)
    assert main(["validate", "--nccl-tests", H100_LOG, "--topology", "dgx-h100:2x8", "--json"]) == 0
    whole = json.loads(capsys.readouterr().out)
    assert [r["simulated_busbw"] for r in bare["rows"]] == [r["simulated_busbw"] for r in whole["rows"]]
    assert main(["validate", "--nccl-tests", str(log), "--topology", "dgx-h100:1x8"]) == 2
    assert "8 GPUs and the table disagree" in capsys.readouterr().err
