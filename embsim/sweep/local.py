"""The local Dask cluster a sweep runs on without --scheduler, and a Ctrl-C that stops it
in one line.

A terminal's Ctrl-C signals the whole foreground process group. Dask's worker processes
got it too and died wherever they were (importing, running a point, closing), each
printing a traceback over embsim's one line. Here they are forked from a fork server
started with SIGINT ignored, which its children keep, so only embsim's own process is
interrupted: it closes the cluster with a second Ctrl-C ignored and Dask's shutdown
logging off, and the rows already written stay for the resume.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing.forkserver
import os
import signal


@contextlib.contextmanager
def _sigint_handled_by(handler):
    """SIGINT handled by `handler` (SIG_IGN: ignored, by this process and the processes it
    starts) inside the block."""
    try:
        previous = signal.signal(signal.SIGINT, handler)
    except ValueError:         # not the main thread: the signal is not ours to change
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def sigint_ignored():
    return _sigint_handled_by(signal.SIG_IGN)


def local_client(workers: int, processes: bool):
    """(a LocalCluster of `workers` one-thread workers, a Client on it). A Ctrl-C while
    they start (a second or two) is held until they have, then they are closed and it is
    raised: an interrupted start left half-started workers that each printed a traceback."""
    from dask.distributed import Client, LocalCluster
    held = []
    # held, however often it comes: `timeout -s INT` signals the process and its group
    with _sigint_handled_by(lambda signum, frame: held.append(signum)):
        if processes:
            _forkserver_ignoring_sigint()
        # no dashboard; the scheduler's HTTP server (health routes, always started) on a
        # free loopback port: at its default 8787 a second sweep warned "Port 8787 is
        # already in use" in four lines
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=processes,
                               dashboard_address=None,
                               scheduler_kwargs={"dashboard_address": "127.0.0.1:0"})
        client = Client(cluster)
        if held:
            _close_quietly(client, cluster)
            raise KeyboardInterrupt
    return cluster, client


def _forkserver_ignoring_sigint() -> None:
    """Worker processes forked from a fork server that ignores SIGINT: Python keeps an
    inherited SIG_IGN, and the fork server hands its own first handler to each child. The
    server starts once per process. The workers' Dask logging is off: at a Ctrl-C they log
    the point cancelled and the scheduler gone as errors (a failed point is a row, and so
    is a lost worker)."""
    import dask
    from distributed.utils import get_mp_context
    dask.config.set({"distributed.worker.multiprocessing-method": "forkserver"})
    get_mp_context()          # distributed's preload list, set before the server starts
    saved = os.environ.get("DASK_LOGGING__DISTRIBUTED")
    os.environ["DASK_LOGGING__DISTRIBUTED"] = "critical"    # read by the server's import
    try:
        # ignored for the ~20 ms the server takes to start (a Ctrl-C in them is lost: a
        # blocked one would wait, but the fork server's start clears the signal mask)
        with sigint_ignored():
            multiprocessing.forkserver.ensure_running()
    finally:
        if saved is None:
            del os.environ["DASK_LOGGING__DISTRIBUTED"]
        else:
            os.environ["DASK_LOGGING__DISTRIBUTED"] = saved


@contextlib.contextmanager
def closed_on_exit(client):
    """Close `client` (its close()) when the block ends, uninterrupted by Ctrl-C. A Ctrl-C
    in the block turns logging off at once (Dask's event-loop thread logs the calls the
    interrupt cut short, and its nanny each worker stopped mid-point), and any repeat of
    it is ignored until the client is closed; then it is raised."""
    def interrupted(signum, frame):
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        _quiet(True)
        raise KeyboardInterrupt

    with _sigint_handled_by(interrupted):
        try:
            yield client
        except KeyboardInterrupt:
            _close_quietly(client)
            raise
        except BaseException:
            with sigint_ignored():
                client.close()
            raise
        with sigint_ignored():
            client.close()


def _close_quietly(*closeable) -> None:
    """Close each, SIGINT ignored and logging off; as an interrupt's clean-up, a failure
    to close is not reported over the interrupt (the process is ending)."""
    _quiet(True)
    try:
        with sigint_ignored():
            for c in closeable:
                with contextlib.suppress(Exception):
                    c.close()
    finally:
        _quiet(False)


def _quiet(on: bool) -> None:
    """Logging off in this process (on=True), or back on. Dask's event-loop thread logs
    through loggers of its own (distributed.*, tornado.*) at once; embsim prints with click."""
    logging.disable(logging.CRITICAL if on else logging.NOTSET)
