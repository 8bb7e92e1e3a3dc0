"""Atomic file writes: a reader never sees a half-written file, and an interrupted
write leaves what was on disk before untouched.

The temporary file is `.NAME.<pid>.<random>.tmp` beside the target. A writer killed
with SIGKILL cannot remove it, so every write first removes the temporaries of the same
target whose process is gone. A path that cannot be written is bad input (one line).

Only regular files are ever replaced: renaming over a device, FIFO or socket (as root,
`--chrome-trace /dev/null --force`) would delete it. A symlink is written through: its
target is replaced, the link stays. No folder is created: a typo'd folder is refused,
not planted.

An output that `refuse_overwrite` found absent (no --force) stays new: it is published
with link(), which fails if a file appeared at that name while the run went on, where a
rename would silently replace it. With --force the rename replaces the file, keeping its
permission bits.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import tempfile
from pathlib import Path

from .errors import InputError
from .lifetime import pid_alive


# abspath of each output that refuse_overwrite found absent without --force -> its flag:
# the write must not replace a file that appears there meanwhile. Recorded at the check,
# so no caller between the command and the writer has to carry --force along.
_MUST_BE_NEW: dict[str, str] = {}


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def clean_stale_temporaries(path: Path) -> int:
    """Remove `.NAME.<pid>.*.tmp` left beside `path` by writers that died; returns how many."""
    pattern = re.compile(rf"^\.{re.escape(path.name)}\.(\d+)\.[^.]+\.tmp$")
    removed = 0
    try:
        entries = list(os.scandir(path.parent))
    except OSError:
        return 0
    for entry in entries:
        m = pattern.match(entry.name)
        if m and not pid_alive(int(m.group(1))):
            try:
                os.unlink(entry.path)
                removed += 1
            except OSError:
                pass
    return removed


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    given = Path(path)
    path = write_target(given)
    flag = _MUST_BE_NEW.get(os.path.abspath(given))
    if flag is not None and os.path.lexists(given):
        raise _appeared(flag, given)
    try:
        refuse_special(path, given)
        require_folder(path, given)
        clean_stale_temporaries(path)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp",
                                   dir=path.parent)
    except OSError as exc:
        raise InputError(f"{given}: cannot write: {exc.strerror or exc}") from None
    try:
        # mkstemp creates 0600: give the file the mode of the one it replaces, else the
        # mode an ordinary open() would (a --force must not hide a shared file, nor
        # expose a private one)
        os.fchmod(fd, _mode_for(path))
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if flag is None:
            os.replace(tmp, path)
        else:
            _publish_new(tmp, path)
            _MUST_BE_NEW.pop(os.path.abspath(given), None)    # ours now: a rewrite may replace it
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if flag is not None and isinstance(exc, FileExistsError):
            raise _appeared(flag, given) from None
        if isinstance(exc, OSError):
            raise InputError(f"{given}: cannot write: {exc.strerror or exc}") from None
        raise
    return given


def _appeared(flag: str, given: Path) -> InputError:
    return InputError(f"{flag} {given}: appeared while embsim ran; not overwritten (choose another "
                      f"name, or add --force)")


def _mode_for(path: Path) -> int:
    try:
        return os.stat(path).st_mode & 0o7777
    except OSError:            # nothing there yet
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _publish_new(tmp: str, path: Path) -> None:
    """`tmp` renamed to `path` only if nothing is at `path`: FileExistsError otherwise."""
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS, errno.EMLINK):
            raise
        # a file system without hard links (FAT, some network mounts): check, then
        # rename; the window is this call's, not the run's
        if os.path.lexists(path):
            raise FileExistsError(errno.EEXIST, "exists", str(path)) from None
        os.replace(tmp, path)
        return
    os.unlink(tmp)


def write_target(path: Path) -> Path:
    """The file a write to `path` replaces: a symlink's target (the link itself stays,
    as `>` in a shell leaves it), else `path`."""
    try:
        return Path(os.path.realpath(path)) if path.is_symlink() else path
    except OSError:            # too long to look up: the write says why
        return path


_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISSOCK, "a socket"))


def special_kind(path: Path) -> str | None:
    """What `path` is when it exists and is not a regular file ("a FIFO (named pipe)"),
    else None. Follows symlinks."""
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):   # nothing there (or a file above it)
        return None
    return next((kind for test, kind in _KINDS if test(mode)),
                None if stat.S_ISREG(mode) else "not a regular file")


def refuse_special(path: Path, given: Path, flag: str = "") -> None:
    """One line for a write over something that is not a regular file: never replaced,
    whatever --force says."""
    kind = special_kind(path)
    if kind is not None:
        where = f"{flag} {given}" if flag else f"{given}"
        link = f" (a link to {path})" if path != given else ""
        raise InputError(f"{where}: cannot write: {kind}{link}, not a regular file; "
                         f"never replaced, even with --force (give a file name)")


def require_folder(path: Path, given: Path, flag: str = "") -> None:
    """One line when the folder `path` goes in is missing or a file."""
    where = f"{flag} {given}" if flag else f"{given}"
    blocker = file_in_the_way(path)
    if blocker is not None:
        # mkdir's own "File exists" names neither the file nor why it matters
        raise InputError(f"{where}: cannot write: {blocker} is a file, not a folder")
    if not path.parent.is_dir():
        raise InputError(f"{where}: cannot write: no folder {path.parent} (create it first)")


def file_in_the_way(path: Path) -> Path | None:
    """The nearest existing ancestor of `path` when it is not a folder (a file where a
    folder of the output path belongs), else None."""
    for parent in path.parents:
        try:
            if parent.exists() or parent.is_symlink():
                return None if parent.is_dir() else parent
        except OSError:        # a component too long to look up: not there, look higher
            continue
    return None


def refuse_overwrite(path, force: bool, flag: str = "--out") -> None:
    """An output is never written over an existing file (a user's trace or chart, a
    shipped preset or trace) unless asked (`force`), never over anything but a regular
    file (a device, a FIFO, a folder) even when asked, nor into a missing folder or under
    a file where a folder belongs: checked before anything is read, simulated or measured,
    so a refusal costs nothing. `flag` names the output in the one-line error."""
    if not path:
        return
    given = Path(path)
    target = write_target(given)
    try:
        refuse_special(target, given, flag)
        present = given.exists() or given.is_symlink()
        if present and not force:
            raise InputError(f"{flag} {path}: exists; not overwritten (choose another name, "
                             f"or add --force)")
        if not present and not force:
            _MUST_BE_NEW[os.path.abspath(given)] = flag
        # found now, not after the run it would have been written from
        require_folder(target, given, flag)
    except OSError as exc:     # a name the OS cannot even look up (too long): nor write
        raise InputError(f"{flag} {path}: cannot write: {exc.strerror or exc}") from None
