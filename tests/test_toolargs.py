"""embsim.toolargs: the `python -m` analysis tools' arguments -- a bad one is one line naming
it, exit status 2; a single-valued option given twice is refused; no prefix matching."""

from __future__ import annotations

import pytest

from embsim.toolargs import ToolParser, positive_int, repeated_option


def parser() -> ToolParser:
    ap = ToolParser(prog="tool")
    ap.add_argument("--model")
    ap.add_argument("-b", "--batch", type=positive_int)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--env", action="append")
    ap.add_argument("files", nargs="*")
    return ap


@pytest.mark.parametrize("args, found", [
    (["--model", "a", "--model", "b"], "--model given twice"),
    (["--model=a", "--model", "b"], "--model given twice"),
    (["-b", "8", "--batch", "16"], "-b given twice (as -b and --batch)"),
    (["-b8", "-b", "16"], "-b given twice"),
    (["--json", "--json"], "--json given twice"),
])
def test_a_repeated_option_is_found(args, found):
    assert found in repeated_option(parser(), args)


@pytest.mark.parametrize("args", [
    ["--env", "A=1", "--env", "B=2"],              # append repeats
    ["--model", "--model"],                        # a value that looks like the flag
    ["--model", "a", "--", "--model", "b"],        # after --, arguments
    ["--model", "a", "x.yaml", "y.yaml"],
])
def test_what_may_repeat_is_left_alone(args):
    assert repeated_option(parser(), args) is None


@pytest.mark.parametrize("args, words", [
    (["--model", "a", "--model", "b"], "--model given twice"),
    (["--mod", "a"], "unrecognized arguments: --mod"),      # no prefix matching
    (["--batch", "0"], "--batch: '0': must be at least 1"),
    (["--batch", "x"], "--batch: 'x': not an integer"),
    (["--bogus"], "unrecognized arguments: --bogus"),
])
def test_errors_are_one_line_and_exit_2(args, words, capsys):
    with pytest.raises(SystemExit) as exc:
        parser().parse_args(args)
    err = capsys.readouterr().err
    assert exc.value.code == 2
    assert len(err.strip().splitlines()) == 1 and err.startswith("tool: error:") and words in err, err


def test_good_arguments_parse():
    args = parser().parse_args(["--model", "a", "-b4", "--env", "X", "--env", "Y", "f.yaml"])
    assert (args.model, args.batch, args.env, args.files) == ("a", 4, ["X", "Y"], ["f.yaml"])


def test_a_tool_without_arguments_refuses_any(capsys, monkeypatch):
    """python -m tools that take no arguments (the fits, kernel_check, ...) say so in one
    line and exit 2 instead of running their report whatever they were given."""
    import subprocess
    import sys
    from embsim.toolargs import no_arguments
    monkeypatch.setattr(sys, "argv", ["x"])
    no_arguments("embsim.workload.fit", "Fit something.\n\nMore.")       # nothing given: runs
    monkeypatch.setattr(sys, "argv", ["x", "--bogus"])
    with pytest.raises(SystemExit) as exc:
        no_arguments("embsim.workload.fit", "Fit something.")
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["python -m embsim.workload.fit: error: unrecognized arguments: --bogus (see --help)"]
    out = subprocess.run([sys.executable, "-m", "embsim.collectives.fit_net", "extra"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1
