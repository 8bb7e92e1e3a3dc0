"""Run sweep points on Dask: a local cluster by default, or an existing scheduler.

Each finished point is appended at once to `results.jsonl` in the output folder (so a
killed sweep loses at most the points in flight); at the end `results.jsonl` is rewritten
with each point's latest row in point order, and `results.csv` from it, so the same sweep
gives the same bytes however its points were scheduled (results.py). A point's wall-clock
time goes to `timing.jsonl`, not into its row. Re-running skips the points whose hash
already has an "ok" row written by this embsim: its version and its fingerprint
(fingerprint.py: the bytes of its code, packaged data and presets); points that failed,
and results of another embsim, are run again. A failing point is recorded with its error
and never stops the sweep. Each row names its sweep: a folder holding another sweep's
results is refused, not mixed into.
"""

from __future__ import annotations

import json
import os
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import click

from ..errors import InputError
from .fingerprint import embsim_fingerprint
from .local import closed_on_exit, local_client
from .results import (CSV, JSONL, TIMING, csv_text, jsonl_text, read_results, refuse_foreign_results,
                      refuse_other_sweep, repair_tail, rewrite)
from .spec import SweepPoint

FINGERPRINT = "embsim_fingerprint"      # the row's key for fingerprint.embsim_fingerprint()


def simulate_point(config: dict) -> dict:
    """What a worker runs for one point: never raises, a failure is a row too. Its
    `wall_s` goes to timing.jsonl, not into the results (_execute)."""
    from ..engine.run import SimulationConfig, simulate
    from ..report.result_json import simulation_json
    t0 = time.perf_counter()
    try:
        result = simulate(SimulationConfig(**config))
        row = {"status": "ok", "error": None, "result": _jsonable(simulation_json(result))}
        row["result"]["n_gpus"] = result.n_gpus
    except Exception as exc:  # noqa: BLE001 -- a sweep records every failure and goes on
        kind = "input" if isinstance(exc, InputError) else "crash"
        row = {"status": "error", "error": f"{type(exc).__name__}: {exc}", "error_kind": kind,
               "result": None}
        if kind == "crash":
            row["traceback"] = traceback.format_exc(limit=6)
    row["wall_s"] = round(time.perf_counter() - t0, 4)
    return row


def _jsonable(value):
    return json.loads(json.dumps(value, default=str))


@dataclass(frozen=True)
class SweepSummary:
    total: int
    skipped: int
    ran: int
    failed: int
    out_dir: Path
    # of the points run, those with an ok result of the same configuration that is not
    # reused: a file they read or embsim (its version or fingerprint) changed since
    stale: int = 0

    @property
    def ok(self) -> int:
        return self.total - self.failed


def reusable(row: dict | None) -> bool:
    """A finished point's row that resume keeps: ok, and simulated by this embsim (its
    version and fingerprint: an edited preset, zoo model or module is another embsim)."""
    from .. import __version__
    return (row is not None and row.get("status") == "ok" and row.get("embsim") == __version__
            and row.get(FINGERPRINT) == embsim_fingerprint())


def unfingerprinted(todo: list[SweepPoint], rows: dict[str, dict]) -> int:
    """How many points to run have an ok row from before rows carried embsim's fingerprint:
    whether embsim changed since cannot be told, so they run again (with a note)."""
    return sum(1 for p in todo if rows.get(p.hash, {}).get("status") == "ok"
               and FINGERPRINT not in rows[p.hash])


def rerun_points(todo: list[SweepPoint], rows: dict[str, dict]) -> list[SweepPoint]:
    """The points to run whose configuration already has an ok row: its hash (the bytes
    of a file the point reads) or embsim (version, fingerprint) differ, so it is run again."""
    def key(config):
        return json.dumps(config, sort_keys=True, default=str)
    finished = {key(r.get("config")) for r in rows.values() if r["status"] == "ok"}
    return [p for p in todo if key(p.config) in finished]


def check_local_workers(workers: int | None) -> None:
    """A local cluster runs one worker per core at most (at least the default 2): more
    only share the cores, each a process holding the simulator (--workers 1000 started a
    thousand)."""
    limit = max(2, os.cpu_count() or 1)
    if workers is not None and workers > limit:
        raise InputError(f"--workers {workers}: more local workers than this machine's {limit} "
                         f"CPU cores (give a Dask scheduler for more)")


class _Client:
    """A dask.distributed Client on the given scheduler, or on a LocalCluster we own."""

    def __init__(self, scheduler: str | None, workers: int | None, processes: bool):
        from dask.distributed import Client
        self.cluster = None
        if scheduler:
            try:
                self.client = Client(scheduler, timeout="10s")
            except (OSError, TimeoutError, ValueError) as exc:   # ValueError: not an address
                raise InputError(f"Dask scheduler {scheduler} (sweep --scheduler, scale --dask-scheduler): "
                                 f"cannot reach it: {exc}") from None
        else:
            self.cluster, self.client = local_client(workers or 2, processes)

    def close(self) -> None:
        try:
            self.client.close()
        finally:          # the workers go even when the client's close fails (interrupted)
            if self.cluster is not None:
                self.cluster.close()


def run_sweep(points: list[SweepPoint], out_dir: str | Path, scheduler: str | None = None,
              workers: int | None = None, processes: bool = True, progress: bool = True,
              point_fn: Callable[[dict], dict] = simulate_point, name: str | None = None) -> SweepSummary:
    """`name`: the sweep's, recorded in each row; a folder with rows of another name is
    refused (None: not checked)."""
    out_dir = Path(out_dir)
    if not scheduler:
        check_local_workers(workers)      # before any folder is made
    # the folders mkdir(parents=True) is about to create, deepest first
    try:
        created = [d for d in (out_dir, *out_dir.parents) if not (d.exists() or d.is_symlink())]
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"{out_dir}: cannot create the results folder: {exc.strerror or exc}") from None
    refuse_foreign_results(out_dir)
    done = read_results(out_dir)
    refuse_other_sweep(out_dir, done, name)
    repair_tail(out_dir / JSONL)
    repair_tail(out_dir / TIMING)
    todo = [p for p in points if not reusable(done.get(p.hash))]
    stale = len(rerun_points(todo, done))
    old = unfingerprinted(todo, done)
    if old:
        click.echo(f"note: {out_dir / JSONL}: {old} result{'s' * (old != 1)} recorded by an older "
                   f"embsim (no fingerprint of its code): running {'them' if old != 1 else 'it'} again",
                   err=True)
    failed = 0
    if todo:
        try:
            dask_client = _Client(scheduler, workers, processes)
        except InputError:
            _remove_empty(created)   # an unreachable scheduler leaves no empty folder behind
            raise
        # Ctrl-C: the cluster closed quietly, the rows written so far kept for the resume
        with closed_on_exit(dask_client):
            failed = _execute(dask_client.client, todo, out_dir, done, progress, point_fn, name)
    rows = read_results(out_dir)
    rewrite(out_dir / JSONL, jsonl_text(points, rows))
    rewrite(out_dir / CSV, csv_text(points, rows))
    failed = sum(1 for p in points if rows.get(p.hash, {}).get("status") != "ok")
    return SweepSummary(total=len(points), skipped=len(points) - len(todo), ran=len(todo),
                        failed=failed, out_dir=out_dir, stale=stale)


def _remove_empty(folders: list[Path]) -> None:
    """Remove `folders` (deepest first) while each is empty: what this call created and
    nothing has written into since."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:      # not empty (or gone): it, and the folders above it, stay
            return


def _execute(client, todo, out_dir: Path, done: dict, progress: bool, point_fn, name) -> int:
    from .. import __version__
    from dask.distributed import as_completed
    from rich.progress import Progress
    # pure=False: a point is a simulation to run, not a value Dask may deduplicate.
    futures = {client.submit(point_fn, p.config, key=f"embsim-point-{p.hash}", pure=False): p
               for p in todo}
    failed = 0
    with open(out_dir / JSONL, "a", encoding="utf-8") as log, \
            open(out_dir / TIMING, "a", encoding="utf-8") as timing, \
            Progress(disable=not progress, transient=True) as bar:
        task = bar.add_task("sweep", total=len(todo))
        for future in as_completed(futures):
            p = futures[future]
            try:
                row = future.result()
            except Exception as exc:  # noqa: BLE001 -- the worker itself died
                row = {"status": "error", "error": f"worker lost: {type(exc).__name__}: {exc}",
                       "error_kind": "worker", "result": None}
            wall_s = row.pop("wall_s", None)        # wall-clock: the rows stay reproducible
            row = {"index": p.index, "hash": p.hash, "config": p.config, "embsim": __version__,
                   FINGERPRINT: embsim_fingerprint(), **({"sweep": name} if name is not None else {}),
                   **row}
            failed += row["status"] != "ok"
            log.write(json.dumps(row, sort_keys=True, default=str) + "\n")
            log.flush()
            if wall_s is not None:
                timing.write(json.dumps({"hash": p.hash, "index": p.index, "wall_s": wall_s},
                                        sort_keys=True) + "\n")
                timing.flush()
            done[p.hash] = row
            bar.update(task, advance=1, description=f"sweep ({failed} failed)")
    return failed
