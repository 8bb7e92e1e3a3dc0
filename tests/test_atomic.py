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


# ----- probe H F2 / M6: only regular files are replaced, no folder is planted

def _fifo(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    return fifo


def test_force_never_replaces_a_fifo(tmp_path):
    """`--force` replaced a FIFO (and, as root, would replace /dev/null) with a file."""
    from embsim.atomic import refuse_overwrite
    import stat
    fifo = _fifo(tmp_path)
    for force in (False, True):
        with pytest.raises(InputError) as info:
            refuse_overwrite(fifo, force, "--chrome-trace")
        assert str(info.value) == (f"--chrome-trace {fifo}: cannot write: a FIFO (named pipe), not a "
                                   f"regular file; never replaced, even with --force (give a file name)")
    with pytest.raises(InputError, match=r"a FIFO \(named pipe\), not a regular file"):
        atomic_write_text(fifo, "x")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo"]     # no temporary left


def test_a_link_to_a_fifo_is_refused_and_kept(tmp_path):
    from embsim.atomic import refuse_overwrite
    fifo = _fifo(tmp_path)
    link = tmp_path / "link.json"
    link.symlink_to(fifo)
    with pytest.raises(InputError, match=rf"a FIFO \(named pipe\) \(a link to {fifo}\)"):
        refuse_overwrite(link, True, "--chrome-trace")
    with pytest.raises(InputError, match="not a regular file"):
        atomic_write_text(link, "x")
    assert link.is_symlink()


def test_a_symlink_is_written_through(tmp_path):
    """--force on a link replaced the link itself; now its target gets the new bytes."""
    target = tmp_path / "user.json"
    target.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    atomic_write_text(link, "new")
    assert link.is_symlink() and target.read_text() == "new"


@pytest.mark.parametrize("below", ["nope/x.json", "nope/deeper/x.json"])
def test_a_missing_folder_is_refused_not_created(tmp_path, below):
    from embsim.atomic import refuse_overwrite
    path = tmp_path / below
    with pytest.raises(InputError) as info:
        refuse_overwrite(path, True, "--chrome-trace")
    assert str(info.value) == (f"--chrome-trace {path}: cannot write: no folder {path.parent} "
                               f"(create it first)")
    with pytest.raises(InputError, match=r"cannot write: no folder .* \(create it first\)$"):
        atomic_write_text(path, "x")
    assert not (tmp_path / "nope").exists()


# ----- probe: a file that appears during the run, and the modes a write leaves

def _appearing(monkeypatch, path, text="USER DATA\n"):
    """The user's file appears at `path` while the temporary is being written."""
    fsync = os.fsync

    def and_the_user_writes(fd):
        path.write_text(text)
        fsync(fd)
    monkeypatch.setattr(os, "fsync", and_the_user_writes)


def test_an_output_that_appears_during_the_run_is_not_replaced(tmp_path, monkeypatch):
    """The existence check ran only up front and the write was os.replace: a file created
    meanwhile was replaced, without --force, exit 0."""
    from embsim.atomic import refuse_overwrite
    out = tmp_path / "race.json"
    refuse_overwrite(out, False, "--chrome-trace")
    _appearing(monkeypatch, out)
    with pytest.raises(InputError) as info:
        atomic_write_text(out, "{}")
    assert str(info.value) == (f"--chrome-trace {out}: appeared while embsim ran; not "
                               f"overwritten (choose another name, or add --force)")
    assert out.read_text() == "USER DATA\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["race.json"]     # no temporary left


def test_an_output_that_appeared_before_the_write_is_not_replaced(tmp_path):
    from embsim.atomic import refuse_overwrite
    out = tmp_path / "race.json"
    refuse_overwrite(out, False, "--plot")
    out.write_text("USER DATA\n")
    with pytest.raises(InputError, match=r"^--plot .*race\.json: appeared while embsim ran"):
        atomic_write_text(out, "{}")
    assert out.read_text() == "USER DATA\n"


def test_force_still_replaces_a_file_that_appeared(tmp_path, monkeypatch):
    from embsim.atomic import refuse_overwrite
    out = tmp_path / "race.json"
    refuse_overwrite(out, True, "--chrome-trace")
    _appearing(monkeypatch, out)
    atomic_write_text(out, "{}")
    assert out.read_text() == "{}"


def test_a_new_output_once_written_may_be_rewritten(tmp_path):
    """It is the run's own file now (calibrate checks twice, a command may write twice)."""
    from embsim.atomic import refuse_overwrite
    out = tmp_path / "t.yaml"
    refuse_overwrite(out, False)
    atomic_write_text(out, "one")
    atomic_write_text(out, "two")
    assert out.read_text() == "two"


@pytest.mark.parametrize("appears", [False, True])
def test_without_hard_links_a_new_output_is_still_kept(tmp_path, monkeypatch, appears):
    """A file system without link() (FAT, some network mounts): check, then rename."""
    import errno
    from embsim.atomic import refuse_overwrite

    def no_links(src, dst):
        raise PermissionError(errno.EPERM, "Operation not permitted")
    monkeypatch.setattr(os, "link", no_links)
    out = tmp_path / "o.json"
    refuse_overwrite(out, False, "--out")
    if appears:
        _appearing(monkeypatch, out)
        with pytest.raises(InputError, match="appeared while embsim ran"):
            atomic_write_text(out, "{}")
        assert out.read_text() == "USER DATA\n"
    else:
        atomic_write_text(out, "{}")
        assert out.read_text() == "{}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o.json"]


def test_force_keeps_the_replaced_files_mode(tmp_path):
    """--force over a 0600 file left it 0644: a private file made readable by all."""
    out = tmp_path / "priv.json"
    out.write_text("x")
    out.chmod(0o600)
    atomic_write_text(out, "{}")
    assert out.read_text() == "{}" and (out.stat().st_mode & 0o777) == 0o600
    out.chmod(0o664)
    atomic_write_text(out, "{}")
    assert (out.stat().st_mode & 0o777) == 0o664


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_a_new_file_gets_the_umasks_mode_not_mkstemps(tmp_path, umask):
    from embsim.atomic import refuse_overwrite
    old = os.umask(umask)
    try:
        atomic_write_text(tmp_path / "a.json", "{}")
        refuse_overwrite(tmp_path / "b.json", False)      # the link() way
        atomic_write_text(tmp_path / "b.json", "{}")
    finally:
        os.umask(old)
    for name in ("a.json", "b.json"):
        assert ((tmp_path / name).stat().st_mode & 0o777) == 0o666 & ~umask
