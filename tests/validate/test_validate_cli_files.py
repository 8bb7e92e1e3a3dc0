"""`embsim validate --nccl-tests FILE.yaml --topology OTHER`: an error names the file."""

import json
from pathlib import Path

import pytest

import embsim
from embsim.cli import main

DATA = Path(embsim.__file__).parent / "validation_data"


def test_packaged_file_on_another_system_names_file_and_topology(capsys):
    path = DATA / "azure-nd-h100-v5-allreduce.yaml"      # NVLS measured; an A100 has none
    assert main(["validate", "--nccl-tests", str(path), "--topology", "dgx-a100"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert str(path) in err and "--topology dgx-a100" in err


@pytest.mark.parametrize("mode", [["--trace", "t.yaml"], ["--training"]])
@pytest.mark.parametrize("flag", [["--topology", "dgx-h100"], ["--op", "alltoall"],
                                  ["--placement", "best"]])
def test_nccl_tests_flags_refused_elsewhere(mode, flag, capsys):
    """--topology/--op/--placement were silently ignored with --trace and --training."""
    assert main(["validate", *mode, *flag]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and flag[0] in err


@pytest.mark.parametrize("mode", ["--nccl-tests", "--training"])
def test_a_file_given_twice_is_refused(mode, capsys, monkeypatch):
    """Overlapping globs once counted a file's curves or runs twice in the headline."""
    monkeypatch.chdir(DATA)
    name = "ext2-points.yaml" if mode == "--nccl-tests" else "training/heldout/nemo-docs-llama3-8b.yaml"
    assert main(["validate", mode, name, f"./{name}"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"{name} given twice (as {name} and ./{name})" in err, err


def test_a_folder_stands_for_its_files(tmp_path, capsys):
    """`validate --nccl-tests DIR` reads DIR's YAML files and logs in name order (not its
    README or subfolders), the same as naming them; a folder with none is refused."""
    names = ["azure-nd-h100-v5-allreduce.yaml", "dgx1-v100-allreduce.yaml"]
    for name in names:
        (tmp_path / name).write_text((DATA / name).read_text())
    (tmp_path / "README.md").write_text("not a curve\n")
    (tmp_path / "held").mkdir()
    (tmp_path / "held" / "x.yaml").write_text("not: read\n")
    assert main(["validate", "--nccl-tests", str(tmp_path), "--json"]) == 0
    folder = capsys.readouterr().out
    assert main(["validate", "--nccl-tests", *(str(tmp_path / n) for n in names), "--json"]) == 0
    assert folder == capsys.readouterr().out
    empty = tmp_path / "held" / "empty"
    empty.mkdir()
    for mode in ("--nccl-tests", "--training"):
        assert main(["validate", mode, str(empty)]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and str(empty) in err and "no .yaml" in err


def test_a_folders_notes_beside_its_logs_are_left_out_not_fatal(tmp_path, capsys):
    """A SOURCES.txt beside the logs: left out with a note, where it used to stop the run;
    named on its own it is still refused."""
    log = Path(__file__).parents[1] / "imports" / "fixtures" / "h100-2x8-all_reduce.log"
    (tmp_path / "h100-2x8-all_reduce.log").write_text(log.read_text())
    (tmp_path / "SOURCES.txt").write_text("where the logs came from\n")
    assert main(["validate", "--nccl-tests", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert "h100-2x8-all_reduce.log" in captured.out
    assert "SOURCES.txt: not nccl-tests output; left out" in captured.err
    assert main(["validate", "--nccl-tests", str(tmp_path / "SOURCES.txt")]) == 2
    (tmp_path / "h100-2x8-all_reduce.log").unlink()
    assert main(["validate", "--nccl-tests", str(tmp_path)]) == 2
    assert "no nccl-tests run to score in" in capsys.readouterr().err


def test_a_curve_or_training_file_may_name_files_beside_it(tmp_path, capsys, monkeypatch):
    # a user's own topology and model files next to the validation file, run from elsewhere
    root = Path(embsim.__file__).resolve().parent.parent
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "box.yaml").write_text((root / "topologies" / "dgx-a100.yaml").read_text())
    (sub / "lm.yaml").write_text((root / "embsim" / "workload" / "zoo" / "tiny-lm.yaml").read_text()
                                 .replace("name: tiny-lm", "name: lm", 1))
    curve = (root / "embsim" / "validation_data" / "azure-nd-a100-v4-allreduce.yaml").read_text()
    (sub / "curve.yaml").write_text(curve.replace("preset: dgx-a100", "preset: box.yaml", 1))
    (sub / "runs.yaml").write_text("runs: [{id: a, gpus: 2, value: 100, "
                                   "embsim: {topology: 'box.yaml:1x2', model: lm.yaml, seq: 8}}]\n")
    monkeypatch.chdir(tmp_path)
    for mode, name in (("--nccl-tests", "curve.yaml"), ("--training", "runs.yaml")):
        assert main(["validate", mode, str(sub / name)]) == 0, capsys.readouterr().err


def _left_out_then_alone(capsys, err: str, mode: str, bad, word: str, folder=None):
    """The bad file named once on stderr as left out (and, given `folder` (path, a good
    file's name), the folder form scoring the same good file); then the bad file alone:
    its one-line error, as before."""
    err = err.strip()
    assert len(err.splitlines()) == 1 and str(bad) in err and word in err and "left out" in err
    if folder is not None:
        assert main(["validate", mode, str(folder[0])]) == 2
        assert folder[1] in capsys.readouterr().out
    assert main(["validate", mode, str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "left out" not in err


def test_a_training_file_that_cannot_run_leaves_the_others_scored(tmp_path, capsys):
    """One file among several with a model embsim has not (a CNN) ended the whole run before
    any table; now the others are scored and printed, the bad one named on stderr, exit 2."""
    bad = tmp_path / "a-cnn.yaml"
    bad.write_text("runs: [{id: one, gpus: 1, value: 1000, embsim: {topology: 1x1, model: resnet50}}]\n")
    good = tmp_path / "b-lm.yaml"
    good.write_text("runs: [{id: one, gpus: 1, value: 1000, embsim: {topology: 1x1, model: tiny-lm}}]\n")
    assert main(["validate", "--training", str(bad), str(good), "--json"]) == 2
    out = capsys.readouterr()
    assert [r["file"] for r in json.loads(out.out)["runs"]] == ["b-lm"]
    _left_out_then_alone(capsys, out.err, "--training", bad, "resnet50",
                         folder=(tmp_path, "b-lm"))


def test_a_curve_file_that_cannot_run_leaves_the_others_scored(tmp_path, capsys):
    """A validation file naming a preset embsim has not (a system newer than its presets)
    ended the whole run; now the others are scored, the bad one named, exit 2."""
    good = DATA / "azure-nd-h100-v5-allreduce.yaml"
    bad = tmp_path / "new-box.yaml"
    bad.write_text(good.read_text().replace("preset: dgx-h100", "preset: mystery-box"))
    assert "mystery-box" in bad.read_text()
    assert main(["validate", "--nccl-tests", str(bad), str(good), "--json"]) == 2
    out = capsys.readouterr()
    assert [c["curve"] for c in json.loads(out.out)["curves"]] == ["azure-nd-h100-v5-allreduce"]
    _left_out_then_alone(capsys, out.err, "--nccl-tests", bad, "mystery-box")
