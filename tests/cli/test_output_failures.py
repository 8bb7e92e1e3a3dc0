"""An output that cannot be written, a reader that went away, a SIGTERM (probe findings):
one line or silence and one exit status for every command, no traceback, and no
temporary file or replaced user file left behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from embsim.cli import main

ROOT = Path(__file__).resolve().parents[2]

# rich's tables (simulate, compare), click.echo (model list, nccl-tests, --json), help
COMMANDS = [["simulate", "--topology", "1x8"], ["simulate", "--topology", "1x8", "--json"],
            ["compare", "--topology", "1x8"], ["model", "list"], ["nccl-tests"], ["--help"]]


def _embsim(args, stdout) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "embsim", *args], stdout=stdout,
                          stderr=subprocess.PIPE, text=True, cwd=ROOT, timeout=120)


@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_a_full_disk_is_one_line(args):
    """`> /dev/full` was a 30-line traceback, exit 1."""
    with open("/dev/full", "w") as full:
        p = _embsim(args, full)
    assert p.returncode == 1, p.stderr
    assert p.stderr == "embsim: error: cannot write the output: No space left on device\n"


@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_a_closed_pipe_is_silent_and_141_for_every_command(args):
    """`| head -1` gave 1 (compare, model list: rich's and click's own exits) or 0
    (nccl-tests); the reader's end is closed before the command writes, so always."""
    read, write = os.pipe()
    os.close(read)
    try:
        p = _embsim(args, write)
    finally:
        os.close(write)
    assert (p.returncode, p.stderr) == (141, "")


# the signal arrives while the trace's temporary file is being written; in a process of
# its own, as a SIGTERM left to its default would end pytest itself
_SIGNAL_WHILE_WRITING = """import os, signal, sys
from embsim.cli import main
fsync = os.fsync
def and_a_signal(fd):
    fsync(fd)
    os.kill(os.getpid(), int(sys.argv[1]))
os.fsync = and_a_signal
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.parametrize("signum, rc, said", [(signal.SIGTERM, 143, "embsim: terminated"),
                                              (signal.SIGINT, 130, "embsim: aborted")])
def test_sigterm_cleans_up_like_ctrl_c(tmp_path, signum, rc, said):
    """SIGTERM (kill, timeout) left an 18.9 MB hidden .x.json.<pid>.<rand>.tmp behind."""
    p = subprocess.run([sys.executable, "-c", _SIGNAL_WHILE_WRITING, str(int(signum)), "simulate",
                        "--topology", "1x8", "--model", "bert-large", "--chrome-trace",
                        str(tmp_path / "x.json")], stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True, cwd=ROOT, timeout=120)
    assert (p.returncode, p.stderr.strip()) == (rc, said)
    assert list(tmp_path.iterdir()) == []


def test_main_puts_sigterm_back(capsys):
    """main() in a test or another program leaves SIGTERM as it found it."""
    before = signal.getsignal(signal.SIGTERM)
    assert main(["model", "list"]) == 0
    assert signal.getsignal(signal.SIGTERM) == before


def test_a_trace_file_that_appears_during_the_run_is_kept(tmp_path, monkeypatch, capsys):
    """The user's file, created while simulate ran, was replaced without --force, exit 0."""
    out = tmp_path / "race.json"
    fsync = os.fsync

    def and_the_user_writes(fd):
        out.write_text("USER DATA\n")
        fsync(fd)
    monkeypatch.setattr(os, "fsync", and_the_user_writes)
    rc = main(["simulate", "--topology", "1x8", "--model", "bert-large", "--chrome-trace", str(out)])
    err = capsys.readouterr().err
    assert rc == 2 and err == (f"embsim: error: --chrome-trace {out}: appeared while embsim ran; "
                               f"not overwritten (choose another name, or add --force)\n")
    assert out.read_text() == "USER DATA\n"
    assert [p.name for p in tmp_path.iterdir()] == ["race.json"]
