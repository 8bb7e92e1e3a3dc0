"""Child processes that die with their parent, and temporary folders a killed run left.

A worker process (compare's pool, calibrate's ranks) re-parented to init after its
parent was killed would run on for ever holding the caller's pipes: on Linux it asks the
kernel to SIGKILL it when its parent dies. Temporary folders carry the creating
process's id, so a later run can remove those whose process is gone.
"""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import signal
import sys
import tempfile
from pathlib import Path

_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """Call first thing in a child process: the kernel kills it when its parent exits.
    Does nothing where prctl is not available (not Linux)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:        # the parent died before prctl took effect
        os._exit(1)


def pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:      # someone else's live process
        return True
    except (OverflowError, ValueError):
        return False
    return True


def temp_dir(prefix: str) -> tempfile.TemporaryDirectory:
    """A TemporaryDirectory named PREFIX<pid>-..., after removing the PREFIX<pid>-...
    folders of processes that no longer exist (killed before they could clean up)."""
    clean_stale_temp_dirs(prefix)
    return tempfile.TemporaryDirectory(prefix=f"{prefix}{os.getpid()}-")


def clean_stale_temp_dirs(prefix: str, where: str | None = None) -> int:
    pattern = re.compile(rf"^{re.escape(prefix)}(\d+)-")
    removed = 0
    root = Path(where or tempfile.gettempdir())
    try:
        entries = list(root.iterdir())
    except OSError:
        return 0
    for path in entries:
        m = pattern.match(path.name)
        if m and path.is_dir() and not path.is_symlink() and not pid_alive(int(m.group(1))):
            shutil.rmtree(path, ignore_errors=True)
            removed += 1
    return removed
