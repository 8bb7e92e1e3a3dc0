"""One pinned case per defect an adversarial pass over every command found: each bad flag
or file is one line on stderr naming the flag/file/key, exit status 2, no traceback; no
existing file is replaced unasked; the same inputs and seed print the same bytes.

Every case fails before anything is simulated, so the matrix runs in-process in a few
seconds (tests/test_fuzz_inputs.py fuzzes the same property over mutated inputs).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from embsim.cli import main

ROOT = Path(__file__).resolve().parents[2]
CURVE = ROOT / "embsim" / "validation_data" / "dgx1-v100-allreduce.yaml"
SWEEP = "name: t\nbase: {model: tiny-lm, iterations: 2}\ngrid: {topology: [1x2]}\n"


def run_cli(argv, capsys) -> tuple[int, str]:
    rc = main([str(a) for a in argv])
    err = capsys.readouterr().err
    return rc, err


def assert_one_line_error(rc: int, err: str, *words: str) -> None:
    assert rc == 2, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("embsim: error:"), err
    for w in words:
        assert w in lines[0], (w, lines[0])


# (argv, words the one error line must contain)
FLAG_CASES = [
    # a parallel size no point can take ran every point to a failed row, exit 1 (sweep.check)
    (["scale", "--model", "gpt2", "--strategy", "allreduce", "--gpus", "8", "--tensor-parallel", "3"],
     ["scale point 0", "--tensor-parallel 3", "does not divide"]),
    # empty values meant "not given" and ran with the default (commands.checks.refuse_empty)
    (["simulate", "--topology", "1x2", "--jitter", ""], ["--jitter", "empty"]),
    (["simulate", "--topology", "1x2", "--straggler", " "], ["--straggler", "empty"]),
    (["simulate", "--topology", "1x2", "--nccl-algo", ""], ["--nccl-algo", "empty"]),
    (["simulate", "--topology", "1x2", "--nccl-proto", ""], ["--nccl-proto", "empty"]),
    (["simulate", "--topology", "1x2", "--nccl-version", ""], ["--nccl-version", "empty"]),
    (["simulate", "--topology", "1x2", "--trace", ""], ["--trace", "empty"]),
    (["simulate", "--topology", "1x2", "--chrome-trace", ""], ["--chrome-trace", "empty"]),
    (["compare", "--topology", "1x2", "--strategies", ""], ["--strategies", "empty"]),
    (["compare", "--topology", "1x2", "--schedulers", ""], ["--schedulers", "empty"]),
    (["scale", "--model", "tiny-lm", "--strategy", "allreduce", "--dask-scheduler", ""],
     ["--dask-scheduler", "empty"]),
    (["nccl-tests", "--topology", "1x2", "--algo", ""], ["--algo", "empty"]),
    (["nccl-tests", "--topology", "1x2", "--proto", ""], ["--proto", "empty"]),
    (["validate", "--nccl-tests", "--op", ""], ["--op", "empty"]),
    (["validate", "--nccl-tests", ""], ["INPUTS", "empty"]),
    # values beyond any sense: NaN step time / silent garbage / a 300-digit message
    (["simulate", "--topology", "1x2", "--jitter", "normal:1e308"], ["--jitter", "at most 1"]),
    (["simulate", "--topology", "1x2", "--jitter", "lognormal:1e308"], ["--jitter", "at most 3"]),
    (["simulate", "--topology", "1x2", "--jitter", "seq:1e300"], ["--jitter", "at most"]),
    (["simulate", "--topology", "1x2", "--nccl-version", "2.18.0.1"], ["--nccl-version"]),
    (["simulate", "--topology", "1x2", "--nccl-version", "2.31"], ["--nccl-version", "2.18 to 2.30"]),
    (["simulate", "--topology", "1x2", "--nccl-version", "2.17"], ["--nccl-version"]),
    (["simulate", "--topology", "1x2", "--nccl-proto", "^Simple,LL,LL128"], ["--nccl-proto", "excludes every"]),
    (["simulate", "--topology", "100000x8"], ["--topology", "at most 16384 nodes"]),
    (["nccl-tests", "--topology", "1x2", "-g", "3"], ["--ngpus 3", "per node"]),
    # conflicting flags: one was silently ignored, or the last silently won
    (["simulate", "--topology", "1x2", "--dtype", "fp32", "--amp", "o2"], ["--amp o2 with --dtype fp32"]),
    (["scale", "--model", "tiny-lm", "--strategy", "allreduce", "--dtype", "tf32", "--amp", "megatron"],
     ["--amp megatron with --dtype tf32"]),
    (["simulate", "--topology", "1x2", "-o", "bucket_bytes=1e6", "-o", "bucket-bytes=2e6"],
     ["--option bucket_bytes: given twice"]),
    # an unknown --op was ignored where no log is read
    (["validate", "--nccl-tests", "--op", "nosuch"], ["--op 'nosuch'"]),
    (["validate", "--nccl-tests", "--op", "all_reduce"], ["--op is for nccl-tests logs"]),
    # Dask could not parse the address: a ValueError traceback
    (["sweep", "{sweep}", "--scheduler", "nosuch", "--out", "{tmp}/s"], ["Dask scheduler nosuch"]),
    # a directory where a topology file belongs was "no such file"
    (["topology", "show", "{tmp}"], ["a directory"]),
    (["calibrate", "--out", ""], ["--out", "empty"]),      # refused at the flag, before torch loads
    # an unknown zoo name was "unknown model 'x'", naming no flag (s4-ux review)
    (["simulate", "--topology", "1x2", "--model", "nosuch"], ["--model nosuch: unknown model 'nosuch'"]),
    # a value the loader's message happens to open with still gets "--model VALUE: "
    (["simulate", "--topology", "1x2", "--model", "unknown"], ["--model unknown: unknown model 'unknown'"]),
    (["compare", "--topology", "1x2", "--model", "nosuch"], ["--model nosuch: unknown model"]),
    (["scale", "--model", "nosuch", "--strategy", "allreduce"], ["--model nosuch: unknown model"]),
    (["calibrate", "--model", "nosuch"], ["--model nosuch: unknown model"]),
    (["import-profile", "{tmp}/p.json", "--model", "nosuch", "--topology", "local-cpu", "--out", "{tmp}/t.yaml"],
     ["--model nosuch: unknown model"]),
    (["simulate", "--topology", "1x2", "--model", "{tmp}/nosuch.yaml"], ["nosuch.yaml: no such file"]),
    # nccl-tests sizes out of order were "sizes: need 1 <= minbytes <= maxbytes", no flag
    (["nccl-tests", "--topology", "1x2", "-b", "0"], ["-b/--minbytes '0'", "at least 1 byte"]),
    (["nccl-tests", "--topology", "1x2", "-b", "4K", "-e", "1K"], ["-e/--maxbytes '1K'", "-b/--minbytes '4K'"]),
    # an output under a file ("cannot write: File exists"), found only after the run
    (["simulate", "--topology", "1x2", "--chrome-trace", "{sweep}/t.json"], ["--chrome-trace", "is a file, not a folder"]),
    (["compare", "--topology", "1x2", "--plot", "{sweep}/c.png"], ["--plot", "is a file, not a folder"]),
    (["calibrate", "--out", "{sweep}/t.yaml"], ["--out", "is a file, not a folder"]),
    (["calibrate", "--topology-out", "{sweep}/h.yaml"], ["--topology-out", "is a file, not a folder"]),
    (["import-nccl-tests", str(ROOT / "tests" / "imports" / "fixtures" / "h100-2x8-all_reduce.log"),
      "--out", "{sweep}/a/t.yaml"], ["--out", "is a file, not a folder"]),
]


@pytest.mark.parametrize("argv,words", FLAG_CASES, ids=[" ".join(a[:4]) + "|" + "|".join(a[4:])
                                                        for a, _ in FLAG_CASES])
def test_bad_flag_is_one_line_exit_2(argv, words, tmp_path, capsys):
    sweep = tmp_path / "t.yaml"
    sweep.write_text(SWEEP)
    argv = [a.format(tmp=tmp_path, sweep=sweep) for a in argv]
    rc, err = run_cli(argv, capsys)
    assert_one_line_error(rc, err, *words)


def _curve(tmp_path: Path, **change) -> Path:
    doc = yaml.safe_load(CURVE.read_text())
    for key, value in change.items():
        if value is KeyError:
            del doc[key]
        else:
            doc[key] = value
    path = tmp_path / "curve.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


# the validation file's shape (collectives/validation_file.py): each was a ValueError,
# TypeError or ZeroDivisionError traceback, or a report of "mean nan%" with exit 0
CURVE_CASES = [
    ({"busbw": {"abc": 1.0}}, "busbw.abc"),
    ({"busbw": {0: 1.0}}, "busbw.0"),
    ({"busbw": [1, 2]}, "busbw"),
    ({"busbw": {}}, "busbw"),
    ({"busbw": {1 << 20: "x"}}, f"busbw.{1 << 20}"),
    ({"busbw": {1 << 20: -1.0}}, f"busbw.{1 << 20}"),
    ({"busbw": {1024: 5.0}}, "no size of at least"),
    ({"nodes": "abc"}, "nodes"),
    ({"nodes": [1]}, "nodes"),
    ({"gpus_per_node": "x"}, "gpus_per_node"),
    ({"op": "nosuch"}, "op"),
    ({"nccl": 2.1}, "nccl"),
    ({"nccl": "abc"}, "nccl"),
    ({"bogus": 1}, "bogus"),
    ({"preset": KeyError}, "missing required key 'preset'"),
    ({"preset": "h100-pcie"}, "preset 'h100-pcie:1x8': unknown preset 'h100-pcie' (did you mean pcie-h100"),
]


@pytest.mark.parametrize("change,words", CURVE_CASES, ids=[w for _, w in CURVE_CASES])
def test_bad_validation_file_is_one_line_exit_2(change, words, tmp_path, capsys):
    path = _curve(tmp_path, **change)
    rc, err = run_cli(["validate", "--nccl-tests", path], capsys)
    assert_one_line_error(rc, err, str(path), words)


@pytest.mark.parametrize("text,words", [
    ("42\n", "must be a mapping"),
    ("points: x\n", "points"),
    ("points:\n- {preset: dgx-h100, nodes: 1, gpus_per_node: 8, op: all_reduce, size: large}\n",
     "exactly one of busbw"),
    ("points:\n- {preset: a100, nodes: 1, gpus_per_node: 8, op: all_reduce, size: large, busbw: 1}\n",
     "points[0].preset 'a100:1x8': unknown preset 'a100' (did you mean dgx-a100"),
])
def test_bad_points_file_is_one_line_exit_2(text, words, tmp_path, capsys):
    path = tmp_path / "points.yaml"
    path.write_text(text)
    rc, err = run_cli(["validate", "--nccl-tests", path], capsys)
    assert_one_line_error(rc, err, words)


@pytest.mark.parametrize("base,words", [
    ("gpu_variation: x", "base.gpu_variation"),            # TypeError traceback
    ("untie_outputs: 'yes'", "base.untie_outputs"),        # counted as true
    ("nccl_env: [[FOO, -1]]", "FOO"),                      # silently ignored
    ("nccl_env: NCCL_BUFFSIZE=1", "base.nccl_env"),        # failed every point at run time
    ("nccl_version: 2.20", "base.nccl_version"),           # YAML reads 2.2
    ("jitter: ''", "base.jitter"),                         # meant the default
    ("seed: -1", "seed -1"),                               # failed every point at run time
])
def test_bad_sweep_value_is_one_line_exit_2(base, words, tmp_path, capsys):
    path = tmp_path / "s.yaml"
    path.write_text(f"name: t\nbase: {{model: tiny-lm, iterations: 2, {base}}}\ngrid: {{topology: [1x2]}}\n")
    rc, err = run_cli(["sweep", path, "--out", tmp_path / "out", "--threads", "--no-progress"], capsys)
    assert_one_line_error(rc, err, words)
    assert not (tmp_path / "out" / "results.csv").exists()


@pytest.mark.parametrize("base,words", [
    ("iterations: 0", "--iterations 0"),
    ("iterations: -5", "--iterations -5"),
    ("iterations: 2, jitter: bogus", "--jitter 'bogus'"),
])
def test_a_sweep_value_the_config_refuses_names_the_file_and_point(base, words, tmp_path, capsys):
    """SimulationConfig's own checks named only the flag: which file, which point?"""
    path = tmp_path / "s.yaml"
    path.write_text(f"name: t\nbase: {{model: tiny-lm, {base}}}\ngrid: {{topology: [1x2]}}\n")
    rc, err = run_cli(["sweep", path, "--out", tmp_path / "out", "--threads", "--no-progress"], capsys)
    assert_one_line_error(rc, err, f"{path}: point 0: {words}")
    assert not (tmp_path / "out").exists()


def test_blank_model_name_is_refused(tmp_path, capsys):
    text = (ROOT / "embsim" / "workload" / "zoo" / "tiny-lm.yaml").read_text().replace("name: word,", "name: ' ',")
    path = tmp_path / "m.yaml"
    path.write_text(text)
    rc, err = run_cli(["simulate", "--topology", "1x2", "--model", path], capsys)
    assert_one_line_error(rc, err, "tables.0.name", "empty")


def test_bad_topology_name_is_refused(tmp_path, capsys):
    text = (ROOT / "topologies" / "dgx-h100.yaml").read_text().replace(
        "model: H100-SXM5-80GB", "model: ''", 1)
    path = tmp_path / "t.yaml"
    path.write_text(text)
    rc, err = run_cli(["topology", "show", path], capsys)
    assert_one_line_error(rc, err, "gpu.model", "empty")


@pytest.mark.parametrize("argv", [
    ["simulate", "--topology", "1x2", "--model", "tiny-lm", "--chrome-trace", "{file}"],
    ["compare", "--topology", "1x2", "--model", "tiny-lm", "--plot", "{file}"],
    ["scale", "--model", "tiny-lm", "--strategy", "allreduce", "--gpus", "2", "--plot", "{file}"],
    ["validate", "--nccl-tests", "--plot", "{file}"],
    ["validate", "--training", "--plot", "{file}"],
])
def test_an_existing_output_file_is_not_replaced(argv, tmp_path, capsys):
    """`simulate --chrome-trace topologies/dgx-h100.yaml` replaced the shipped preset."""
    target = tmp_path / ("mine.png" if "--plot" in argv else "mine.yaml")
    target.write_text("mine\n")
    rc, err = run_cli([a.format(file=target) for a in argv], capsys)
    assert_one_line_error(rc, err, str(target), "--force")
    assert target.read_text() == "mine\n"


@pytest.mark.parametrize("name,text", [("results.csv", "my,own,data\n"),
                                       ("results.jsonl", "line 1\nhalf a line")])
@pytest.mark.parametrize("command", ["sweep", "scale"])
def test_a_folder_of_foreign_results_is_not_touched(name, text, command, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / name).write_text(text)
    sweep = tmp_path / "t.yaml"
    sweep.write_text(SWEEP)
    argv = (["sweep", sweep, "--threads", "--no-progress"] if command == "sweep" else
            ["scale", "--model", "tiny-lm", "--strategy", "allreduce", "--gpus", "2", "--iterations", "2"])
    rc, err = run_cli(argv + ["--out", out], capsys)
    assert_one_line_error(rc, err, name, "not written by an embsim sweep")
    assert (out / name).read_text() == text
    assert sorted(p.name for p in out.iterdir()) == [name]


def test_force_replaces_the_file(tmp_path, capsys):
    target = tmp_path / "t.json"
    target.write_text("old")
    assert main(["simulate", "--topology", "1x2", "--model", "tiny-lm", "--iterations", "2",
                 "--chrome-trace", str(target), "--force"]) == 0
    assert target.read_text().startswith('{"traceEvents"')


def test_same_inputs_and_seed_print_the_same_bytes_across_hash_seeds():
    """Text (the summary table printed a wall-clock time) and JSON, from fresh processes
    with different PYTHONHASHSEEDs, under jitter and GPU variation."""
    runs = {
        "simulate": ["simulate", "--topology", "dgx-a100:2x2", "--model", "tiny-lm", "--iterations", "3",
                     "--jitter", "lognormal:0.1", "--seed", "5"],
        "compare": ["compare", "--topology", "1x2", "--model", "tiny-lm", "--iterations", "2",
                    "--workers", "1", "--jitter", "normal:0.05", "--json"],
    }
    procs = {(name, seed): subprocess.Popen([sys.executable, "-m", "embsim", *argv], stdout=subprocess.PIPE,
                                            stderr=subprocess.PIPE, env={**os.environ, "PYTHONHASHSEED": seed})
             for name, argv in runs.items() for seed in ("1", "2")}
    outs = {}
    for key, p in procs.items():
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err.decode()
        outs[key] = out
    for name in runs:
        assert outs[(name, "1")] == outs[(name, "2")], name
    assert b"wall" not in outs[("simulate", "1")]


def test_every_config_field_is_type_checked_in_sweep_files():
    """A SimulationConfig field the sweep dialect does not type reaches the simulator as
    whatever YAML made of it (gpu_variation: x was a TypeError traceback)."""
    from embsim.sweep.spec import _FIELD_TYPES, CONFIG_FIELDS
    assert set(CONFIG_FIELDS) <= set(_FIELD_TYPES)


@pytest.mark.parametrize("argv", [
    ["compare", "--topology", "1x2", "--model", "tiny-lm", "--plot", "{file}"],
    ["scale", "--model", "tiny-lm", "--strategy", "allreduce", "--gpus", "2", "--plot", "{file}"],
    ["validate", "--nccl-tests", "--plot", "{file}"],
])
def test_a_plot_that_is_not_a_png_name_is_refused(argv, tmp_path, capsys):
    """The charts are PNG: x.txt would get a PNG under a text name (matplotlib picks the
    format from the suffix), and nothing is written."""
    target = tmp_path / "chart.txt"
    rc, err = run_cli([a.format(file=target) for a in argv], capsys)
    assert_one_line_error(rc, err, "--plot", ".png")
    assert not target.exists()


def test_a_sweep_topology_is_named_by_its_key_with_the_nearest_preset(tmp_path, capsys):
    path = tmp_path / "s.yaml"
    path.write_text("name: t\nbase: {model: tiny-lm, iterations: 2}\ngrid: {topology: ['h100-pcie:1x2']}\n")
    rc, err = run_cli(["sweep", path, "--out", tmp_path / "out", "--threads", "--no-progress"], capsys)
    assert_one_line_error(rc, err, "point 0: topology 'h100-pcie:1x2': unknown preset 'h100-pcie' "
                                   "(did you mean pcie-h100")


@pytest.mark.parametrize("form", ["v2.21.5-1", "2.21.5+cuda12.4", "2.21.5-1"])
def test_a_curve_files_nccl_release_takes_the_banner_and_tag_forms(form, tmp_path, capsys):
    # --nccl-version took them; the file key refused what a log's banner or a tag says
    def last_line(nccl):
        assert main(["validate", "--nccl-tests", str(_curve(tmp_path, nccl=nccl))]) == 0
        return capsys.readouterr().out.strip().splitlines()[-1]
    assert last_line(form) == last_line("2.21.5")


def test_curve_sizes_may_be_written_as_nccl_tests_writes_them(tmp_path, capsys):
    # a JSON-converted file's keys are strings; nccl-tests' -b/-e notation is 128K, 1M, 8G
    curve = yaml.safe_load(CURVE.read_text())
    plain = tmp_path / "plain.yaml"
    plain.write_text(yaml.safe_dump(curve))
    for size in list(curve["busbw"]):
        text = f"{size >> 20}M" if size % (1 << 20) == 0 else str(size)
        curve["busbw"][text] = curve["busbw"].pop(size)
    texts = tmp_path / "texts.yaml"
    texts.write_text(yaml.safe_dump(curve))

    def last_line(path):
        assert main(["validate", "--nccl-tests", str(path)]) == 0
        return capsys.readouterr().out.strip().splitlines()[-1]
    assert last_line(texts) == last_line(plain)


@pytest.mark.parametrize("key, words", [("1.5", "whole number of bytes"), ("1K", "given twice"),
                                        ("12Q", "K/M/G form")])
def test_a_bad_or_repeated_text_size_is_refused(key, words, tmp_path, capsys):
    curve = yaml.safe_load(CURVE.read_text())
    curve["busbw"][key] = 1.0
    curve["busbw"][1024] = 1.0
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(curve))
    rc, err = run_cli(["validate", "--nccl-tests", path], capsys)
    assert_one_line_error(rc, err, words)
