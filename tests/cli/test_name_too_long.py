"""A name longer than the file system takes (ENAMETOOLONG) made Path.exists()/is_file()
raise OSError: a traceback from preset and zoo look-ups, the overwrite check and the sweep
folder. Now one line, exit 2, for inputs and outputs alike."""

from __future__ import annotations

from pathlib import Path

import pytest

from embsim.cli import main

LONG = "a" * 300
LOG = "tests/imports/fixtures/h100-2x8-all_reduce.log"


@pytest.mark.parametrize("argv", [
    ["topology", "show", LONG],
    ["nccl-tests", "--topology", f"{LONG}:1x2"],
    ["model", "show", LONG],
    ["simulate", "--topology", "1x2", "--model", LONG],
    ["simulate", "--topology", "1x2", "--model", "tiny-lm", "--chrome-trace", "{tmp}/" + LONG + ".json"],
    ["simulate", "--topology", "1x2", "--model", "tiny-lm", "--chrome-trace", "{tmp}/" + LONG + "/x.json"],
    ["import-nccl-tests", LOG, "--out", "{tmp}/" + LONG + ".yaml"],
    ["scale", "--model", "tiny-lm", "--strategy", "allreduce", "--gpus", "2", "--topology", "local-cpu",
     "--iterations", "2", "--out", "{tmp}/" + LONG],
])
def test_overlong_name_is_one_line(tmp_path, capsys, argv):
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("embsim: error:"), err
    assert list(tmp_path.iterdir()) == []


def test_overlong_topology_file_and_search_folder(tmp_path, capsys, monkeypatch):
    assert main(["topology", "show", f"{tmp_path}/{LONG}.yaml:1x2"]) == 2
    assert "File name too long" in capsys.readouterr().err
    monkeypatch.setenv("EMBSIM_TOPOLOGY_PATH", f"{tmp_path}/{LONG}")
    assert main(["topology", "list"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "EMBSIM_TOPOLOGY_PATH" in err and "not a folder" in err


def test_overlong_names_inside_inputs(tmp_path, capsys):
    # a trace whose topology: names a file too long to look up; scale's --corpus likewise
    trace = (Path(__file__).resolve().parents[2] / "traces" / "cpu-gloo-tiny-lm.yaml").read_text()
    path = tmp_path / "t.yaml"
    path.write_text(trace.replace("topology: local-cpu.yaml", f"topology: {LONG}.yaml", 1))
    assert main(["simulate", "--trace", str(path), "--iterations", "2"]) == 2
    assert "not found" in capsys.readouterr().err
    assert main(["scale", "--model", "tiny-lm", "--strategy", "allreduce", "--gpus", "2",
                 "--corpus", f"{tmp_path}/{LONG}"]) == 2
    assert "--corpus" in capsys.readouterr().err
