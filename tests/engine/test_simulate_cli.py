"""`embsim simulate` on the command line: JSON keys, the human table, bad input."""

from __future__ import annotations

import json

import pytest

from embsim import cli

KEYS = {"topology", "model", "strategy", "scheduler", "step_time_ms", "samples_per_s", "tokens_per_s",
        "compute_ms", "exposed_comm_ms", "comm_bytes_per_gpu", "memory_per_gpu_bytes",
        "fits_in_memory", "compute_source", "events"}


def test_json_has_the_documented_keys(capsys):
    assert cli.main(["simulate", "--topology", "2x8", "--model", "tiny-lm", "--iterations", "3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert KEYS <= set(out)
    assert out["topology"] == {"preset": "dgx-h100", "nodes": 2, "gpus_per_node": 8, "gpus": 16,
                               "file": "topologies/dgx-h100.yaml", "file_from": "packaged preset",
                               "file_sha256": out["topology"]["file_sha256"]}
    assert out["compute_source"].startswith("compute: kernel model")
    assert out["step_time_ms"] > 0 and out["memory_per_gpu_bytes"] > 0
    # what the collectives are: how many a step, and how long any of them runs (overlaps once)
    assert set(out["collectives_per_step"]) == set(out["comm_bytes_per_gpu"])
    assert 0 < out["comm_wall_ms"] <= sum(out["comm_ms"].values()) + 1e-9
    assert sum(out["exposed_by_op_ms"].values()) == pytest.approx(out["exposed_comm_ms"])


def test_human_table_and_chrome_trace(tmp_path, capsys):
    path = tmp_path / "t.json"
    assert cli.main(["simulate", "--topology", "2x8", "--model", "tiny-lm", "--iterations", "3",
                     "--chrome-trace", str(path)]) == 0
    out = capsys.readouterr().out
    for words in ("step time", "exposed communication", "memory per GPU", "kernel model",
                  "collectives running", "of the step", "1 collective, ", " summed", "waiting on"):
        assert words in out
    trace = json.loads(path.read_text())
    assert any(e["ph"] == "X" for e in trace["traceEvents"])
    # the file says what it is a timeline of, and where its compute times came from
    about = trace["otherData"]
    assert about["model"] == "tiny-lm" and about["strategy"] == "allreduce"
    assert about["topology"]["gpus"] == 16 and about["compute_source"].startswith("compute: kernel model")
    assert about["generator"].startswith("embsim ")


def test_bad_input_is_one_line_and_exit_2(capsys):
    for argv in (["simulate", "--topology", "0x8"], ["simulate", "--model", "nope"],
                 ["simulate", "--straggler", "gpu:x"], ["simulate", "--iterations", "1"]):
        assert cli.main(argv) == 2, argv
        err = capsys.readouterr().err.strip()
        assert err.startswith("embsim: error:") and "\n" not in err and "Traceback" not in err


@pytest.mark.parametrize("cmd", ["simulate", "compare"])
def test_bad_nccl_algo_names_the_flag_typed(cmd, capsys):
    from embsim.cli import main
    assert main([cmd, "--topology", "1x2", "--model", "tiny-lm", "--nccl-algo", "Bogus"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("embsim: error: --nccl-algo 'Bogus'")
    assert main([cmd, "--topology", "1x2", "--model", "tiny-lm", "--nccl-proto", "^LL,LL128,Simple"]) == 2
    assert "--nccl-proto" in capsys.readouterr().err


def test_compute_source_names_only_the_data_this_model_lacked(capsys):
    """The LSTM-step fit is named only where the model has an LSTM to time with it."""
    def source(model):
        assert cli.main(["simulate", "--topology", "1x2", "--model", model, "--iterations", "2",
                         "--json"]) == 0
        return json.loads(capsys.readouterr().out)["compute_source"]
    assert "LSTM step" not in source("bert-base")
    assert "LSTM step (DeepBench V100 fit" in source("tiny-lm")


def test_output_says_what_workload_was_simulated(capsys):
    """Two runs that differ only in a flag (precision, accumulation, a straggler) can be
    told apart from their output alone."""
    argv = ["simulate", "--topology", "1x2", "--model", "tiny-lm", "--iterations", "2",
            "--dtype", "bf16", "--accumulate", "2", "--straggler", "gpu:1:1.5", "--batch", "4"]
    assert cli.main(argv + ["--json"]) == 0
    w = json.loads(capsys.readouterr().out)["workload"]
    assert w == {"batch": 4, "seq": w["seq"], "dtype": "bf16", "amp": "autocast", "params": "fp32", "tables": "fp32",
                 "accumulate": 2, "accumulate_sync": "last", "throughput": "time", "jitter": None, "lengths": None,
                 "token_fill": None, "padding": None, "straggler": "gpu:1:1.5", "seed": 0,
                 "gpu_variation": 0.08, "optimizer": "sgd", "zipf": 1.05, "corpus": None}
    assert cli.main(argv) == 0
    text = " ".join(capsys.readouterr().out.replace("│", " ").split())    # cells wrap
    assert "batch 4 x seq" in text and "bf16 (autocast; parameters and tables FP32)" in text
    assert "accumulate 2" in text and "optimizer sgd" in text
    assert cli.main(argv + ["--amp", "o2"]) == 0          # apex O2: 16-bit parameters and tables
    assert "bf16 (o2)" in " ".join(capsys.readouterr().out.replace("│", " ").split())
    assert cli.main(argv + ["--accumulate-sync", "every"]) == 0
    assert "accumulate 2 (synchronised every micro-batch)" in " ".join(
        capsys.readouterr().out.replace("│", " ").split())


@pytest.mark.parametrize("name", ["-", "timeline.png"])
def test_a_chrome_trace_must_be_a_json_file_name(name, tmp_path, monkeypatch, capsys):
    """'-' was written as a file named '-', an image name got JSON (a stranger's probe)."""
    monkeypatch.chdir(tmp_path)
    assert cli.main(["simulate", "--topology", "1x8", "--model", "tiny-lm", "--chrome-trace", name]) == 2
    assert "name a .json file" in capsys.readouterr().err and not list(tmp_path.iterdir())


def test_collectives_running_says_what_exposed_communication_adds(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")          # one row, one line
    # a PS's pushes gather into host memory first: copies the compute stream waits for
    # (exposed communication) that are not transfers (collectives running); probe M read
    # "exposed 43.82 ms > collectives running 43.02 ms" as an arithmetic error
    assert cli.main(["simulate", "--topology", "2x8", "--model", "ncf-ml20m", "--strategy", "ps",
                     "--iterations", "3"]) == 0
    out = capsys.readouterr().out
    assert "any of them; their copies and host work around them, which exposed communication " \
           "counts, not included" in out
    assert cli.main(["simulate", "--topology", "2x8", "--model", "tiny-lm", "--iterations", "3"]) == 0
    assert "copies and host work around them, which" not in capsys.readouterr().out
