"""Output files of simulate / scale through the command line (probe H F2, M6, M7): --force
never replaces a FIFO (nor, as root, /dev/null), a missing folder is refused rather than
created, and a bad --option number is echoed as typed."""

from __future__ import annotations

import os
import stat

from embsim.cli import main

RUN = ["simulate", "--topology", "1x8", "--model", "tiny-lm", "--iterations", "2"]


def test_force_does_not_replace_a_fifo(tmp_path, capsys):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for extra in ([], ["--force"]):
        assert main(RUN + ["--chrome-trace", str(fifo), *extra]) == 2
        assert capsys.readouterr().err == (
            f"embsim: error: --chrome-trace {fifo}: cannot write: a FIFO (named pipe), not a regular "
            f"file; never replaced, even with --force (give a file name)\n")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_plot_over_a_fifo_is_refused(tmp_path, capsys):
    fifo = tmp_path / "curve.png"
    os.mkfifo(fifo)
    assert main(["scale", "--model", "tiny-lm", "--strategy", "allreduce", "--gpus", "1",
                 "--plot", str(fifo), "--force"]) == 2
    assert "--plot" in capsys.readouterr().err and stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_missing_folder_is_refused_not_created(tmp_path, capsys):
    """M6: `--chrome-trace /nonexistent/dir/x.json` created /nonexistent/dir."""
    target = tmp_path / "typo" / "deeper" / "x.json"
    assert main(RUN + ["--chrome-trace", str(target)]) == 2
    assert capsys.readouterr().err == (f"embsim: error: --chrome-trace {target}: cannot write: no "
                                       f"folder {target.parent} (create it first)\n")
    assert not (tmp_path / "typo").exists()


def test_force_writes_through_a_symlink(tmp_path, capsys):
    target = tmp_path / "mine.json"
    target.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    assert main(RUN + ["--chrome-trace", str(link), "--force"]) == 0
    assert link.is_symlink() and target.read_text().startswith("{")


def test_an_overflowing_option_is_echoed_as_typed(capsys):
    """M7: `--option partition_bytes=1e999` said partition_bytes=inf."""
    assert main(RUN + ["--option", "partition_bytes=1e999"]) == 2
    assert capsys.readouterr().err == "embsim: error: --option partition_bytes=1e999: not a finite number\n"
