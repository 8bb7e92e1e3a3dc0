"""Atomic writes: nothing half-written, no temporaries left by dead writers, one line
for a path that cannot be written."""

import os
import subprocess
import sys

import pytest

from embsim.atomic import atomic_write_text
from embsim.errors import InputError
from embsim.lifetime import clean_stale_temp_dirs


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_temporaries_of_dead_writers_are_removed(tmp_path):
    dead = _dead_pid()
    stale = tmp_path / f".out.json.{dead}.tmpabc123.tmp"
    stale.write_text("half")
    live = tmp_path / f".out.json.{os.getppid()}.tmpdef456.tmp"     # a live process's
    live.write_text("in progress")
    other = tmp_path / f".other.json.{dead}.tmpxyz.tmp"              # another target's
    other.write_text("half")
    atomic_write_text(tmp_path / "out.json", "{}")
    assert (tmp_path / "out.json").read_text() == "{}"
    assert not stale.exists() and live.exists() and other.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out.json.") and p != live]


@pytest.mark.parametrize("target", ["/proc/nope/x.png", "DIR"])
def test_unwritable_path_is_one_line(tmp_path, target):
    path = tmp_path if target == "DIR" else target
    with pytest.raises(InputError) as info:
        atomic_write_text(path, "x")
    assert str(path) in str(info.value) and "cannot write" in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("below", ["x.png", "a/b/x.png"])
def test_a_file_where_a_folder_belongs_is_named(tmp_path, below):
    """mkdir said only 'File exists' (of a path that did not exist)."""
    blocker = tmp_path / "notes.txt"
    blocker.write_text("mine")
    with pytest.raises(InputError) as info:
        atomic_write_text(blocker / below, "x")
    assert str(info.value) == f"{blocker / below}: cannot write: {blocker} is a file, not a folder"
    assert blocker.read_text() == "mine"


def test_stale_temp_dirs_of_dead_runs_are_removed(tmp_path):
    dead = _dead_pid()
    (tmp_path / f"embsim-calibrate-{dead}-abc").mkdir()
    (tmp_path / f"embsim-calibrate-{os.getpid()}-def").mkdir()
    (tmp_path / "unrelated").mkdir()
    assert clean_stale_temp_dirs("embsim-calibrate-", str(tmp_path)) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"embsim-calibrate-{os.getpid()}-def",
                                                          "unrelated"]


def test_refuse_overwrite_names_the_flag(tmp_path):
    from embsim.atomic import refuse_overwrite
    old = tmp_path / "t.yaml"
    old.write_text("old\n")
    with pytest.raises(InputError, match=r"^--plot .*t\.yaml: exists; not overwritten .*--force\)$"):
        refuse_overwrite(old, False, "--plot")
    refuse_overwrite(old, True, "--plot")             # asked: allowed
    refuse_overwrite(tmp_path / "new.yaml", False)    # nothing there: allowed
    with pytest.raises(InputError, match=r"^--out .*: cannot write: .*t\.yaml is a file, not a folder$"):
        refuse_overwrite(old / "x.yaml", True)       # --force cannot write under a file
    assert old.read_text() == "old\n"


def test_a_folder_name_too_long_is_one_input_error(tmp_path):
    from embsim.atomic import atomic_write_text, refuse_overwrite
    from embsim.errors import InputError
    target = tmp_path / ("a" * 300) / "x.json"
    with pytest.raises(InputError, match="cannot write: File name too long"):
        refuse_overwrite(str(target), False, "--out")
    with pytest.raises(InputError, match="cannot write: File name too long"):
        atomic_write_text(target, "x")
