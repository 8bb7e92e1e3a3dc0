"""How a command's process ends when something outside it intervenes: Ctrl-C and SIGTERM
(kill, timeout) take the same way out, so an atomic write's temporary file is removed;
an output that cannot be written (a full disk) is told in one line; one whose reader has
gone (`| head`) ends the command silently. cli.main maps them to exit statuses."""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import sys
import threading

import click


class OutputGone(Exception):
    """stdout's reader has closed it (`| head`)."""


class OutputFailed(Exception):
    """stdout cannot be written (a full disk); the message is the reason."""


# what a write to a file or device says when it cannot take the bytes
_WRITE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO}


def _output_failure(exc: BaseException) -> Exception | None:
    """The output failure `exc` is, else None. The library turns every error of a file it
    names into an InputError, so an OSError with no file name is stdout's (or stderr's)."""
    # rich's console exits 1 on a broken pipe, raising from its except clause
    if isinstance(exc, BrokenPipeError) or (isinstance(exc, SystemExit)
                                            and isinstance(exc.__context__, BrokenPipeError)):
        return OutputGone()
    if isinstance(exc, OSError) and exc.filename is None and exc.errno in _WRITE_ERRNOS:
        return OutputFailed(exc.strerror or str(exc))
    return None


@contextlib.contextmanager
def output_failures_raised():
    """An output failure in the block raised as OutputGone or OutputFailed."""
    try:
        yield
    except (OSError, SystemExit) as exc:
        failure = _output_failure(exc)
        if failure is None:
            raise
        raise failure from None


def discard_stdout() -> None:
    """Point stdout at /dev/null: what is still buffered for it would fail again when the
    interpreter flushes at exit, with a message of its own."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (AttributeError, OSError, ValueError):     # no real stdout (a test's capture)
        pass


def say(line: str) -> None:
    """One line on stderr, unless stderr itself cannot be written."""
    try:
        click.echo(line, err=True)
    except (OSError, ValueError):
        pass


@contextlib.contextmanager
def sigterm_interrupts(terminated: list):
    """SIGTERM raises KeyboardInterrupt in the block, as Ctrl-C does, so the clean-up of an
    interrupt runs (the default killed the process mid-write, leaving its temporary
    file); `terminated` records that it came. Left alone when someone set it before us."""
    pid = os.getpid()

    def handler(signum, frame):
        if os.getpid() != pid:      # a forked worker (compare's pool): die as it would have
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        terminated.append(signum)
        # the process is ending: a pool's thread that finds its workers killed by the same
        # SIGTERM (`timeout` signals the whole group) has nothing to add; CPython 3.11's
        # futures print an InvalidStateError traceback there
        threading.excepthook = lambda args: None
        raise KeyboardInterrupt

    installed = False
    try:
        if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
            signal.signal(signal.SIGTERM, handler)
            installed = True
    except ValueError:              # not the main thread: not ours to change
        pass
    try:
        yield
    finally:
        if installed:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
