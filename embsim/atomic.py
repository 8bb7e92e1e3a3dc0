"""Atomic file writes: a reader never sees a half-written file, and an interrupted
write leaves what was on disk before untouched.

The temporary file is `.NAME.<pid>.<random>.tmp` beside the target. A writer killed
with SIGKILL cannot remove it, so every write first removes the temporaries of the same
target whose process is gone. A path that cannot be written is bad input (one line).
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

from .errors import InputError
from .lifetime import pid_alive


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
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_dir():
            raise IsADirectoryError(21, "is a directory")
        clean_stale_temporaries(path)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp",
                                   dir=path.parent)
    except OSError as exc:
        blocker = file_in_the_way(path)
        if blocker is not None:
            # mkdir's own "File exists" names neither the file nor why it matters
            raise InputError(f"{path}: cannot write: {blocker} is a file, not a folder") from None
        raise InputError(f"{path}: cannot write: {exc.strerror or exc}") from None
    try:
        # mkstemp creates 0600; give the file the mode an ordinary open() would
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(exc, OSError):
            raise InputError(f"{path}: cannot write: {exc.strerror or exc}") from None
        raise
    return path


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
    shipped preset or trace) unless asked (`force`), nor under a file where a folder
    belongs: checked before anything is read, simulated or measured, so a refusal costs
    nothing. `flag` names the output in the one-line error."""
    try:
        present = bool(path) and (Path(path).exists() or Path(path).is_symlink())
    except OSError as exc:     # a name the OS cannot even look up (too long): nor write
        raise InputError(f"{flag} {path}: cannot write: {exc.strerror or exc}") from None
    if present and not force:
        raise InputError(f"{flag} {path}: exists; not overwritten (choose another name, "
                         f"or add --force)")
    blocker = file_in_the_way(Path(path)) if path else None
    if blocker is not None:
        # found now, not after the run it would have been written from
        raise InputError(f"{flag} {path}: cannot write: {blocker} is a file, not a folder")
