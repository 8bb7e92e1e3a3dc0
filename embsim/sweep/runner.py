"""Run sweep points on Dask: a local cluster by default, or an existing scheduler.

Each finished point is appended at once to `results.jsonl` in the output folder (so a
killed sweep loses at most the points in flight), and `results.csv` is rewritten from it
in point order at the end. Re-running skips the points whose hash already has an "ok"
row written by this embsim version; points that failed, and results of another version,
are run again. A failing point is recorded with its error and never stops the sweep. Each
row names its sweep: a folder holding another sweep's results is refused, not mixed into.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import os
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

from ..atomic import atomic_write_text
from ..errors import InputError
from ..yamlio import check_regular_file
from .local import closed_on_exit, local_client
from .spec import HARDWARE_KEYS, SweepPoint

JSONL, CSV = "results.jsonl", "results.csv"
RESULT_COLUMNS = ("n_gpus", "step_time_ms", "samples_per_s", "tokens_per_s", "compute_ms",
                  "exposed_comm_ms", "scaling_efficiency", "fits_in_memory", "compute_source")
CONFIG_COLUMNS = ("topology", "model", "strategy", "scheduler", "batch", "seq", "iterations", "seed")


def simulate_point(config: dict) -> dict:
    """What a worker runs for one point: never raises, a failure is a row too."""
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
    # reused: a file they read or the embsim version changed since
    stale: int = 0

    @property
    def ok(self) -> int:
        return self.total - self.failed


def read_results(out_dir: Path) -> dict[str, dict]:
    """hash -> the latest row recorded for it (a retried point's new row wins)."""
    path = Path(out_dir) / JSONL
    rows: dict[str, dict] = {}
    if not path.exists() and not path.is_symlink():
        return rows
    check_regular_file(path, "sweep results file", max_bytes=1 << 30)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read sweep results file: {exc.strerror or exc}") from None
    for line in data.split(b"\n"):
        if not line.strip():
            continue
        try:
            row = json.loads(line.decode("utf-8"))
        except (ValueError, RecursionError):
            # A line torn by a kill, or damaged (not UTF-8, not JSON, a number past Python's
            # int digit limit): its point simply runs again.
            continue
        if (isinstance(row, dict) and isinstance(row.get("hash"), str)
                and row.get("status") in ("ok", "error")
                and (row["status"] != "ok" or isinstance(row.get("result"), dict))):
            rows[row["hash"]] = row
    return rows


# How the files a sweep writes begin: a results.jsonl row is json.dumps(sort_keys=True),
# so "config" comes first; results.csv starts with its header.
_JSONL_START = b'{"config": '
_CSV_START = b"index,hash,status,"


def refuse_foreign_results(out_dir: Path) -> None:
    """--out may be any folder: a results.jsonl / results.csv there that a sweep did not
    write (a user's own file) is neither appended to, cut nor replaced."""
    for name, start in ((JSONL, _JSONL_START), (CSV, _CSV_START)):
        path = out_dir / name
        if not path.exists() and not path.is_symlink():
            continue
        check_regular_file(path, "sweep results file", max_bytes=1 << 30)
        try:
            with open(path, "rb") as f:
                head = f.read(len(start))
        except OSError as exc:
            raise InputError(f"{path}: cannot read sweep results file: {exc.strerror or exc}") from None
        # a row torn by a kill can be shorter than the prefix; an empty file is a sweep's too
        if not start.startswith(head):
            raise InputError(f"{path}: not written by an embsim sweep; not touched (choose another --out)")


def refuse_other_sweep(out_dir: Path, rows: dict[str, dict], name: str | None) -> None:
    """Rows of another sweep (a second sweep given the first one's --out) are neither
    appended to nor dropped from its table. Rows of embsim versions that did not record the
    sweep's name are not judged."""
    if name is None:
        return
    others = sorted({r["sweep"] for r in rows.values() if isinstance(r.get("sweep"), str)} - {name})
    if others:
        raise InputError(f"{out_dir}: holds the results of sweep {others[0]!r}, not {name!r}; "
                         f"not touched (choose another --out)")


def reusable(row: dict | None) -> bool:
    """A finished point's row that resume keeps: ok, and simulated by this embsim version."""
    from .. import __version__
    return row is not None and row.get("status") == "ok" and row.get("embsim") == __version__


def rerun_points(todo: list[SweepPoint], rows: dict[str, dict]) -> list[SweepPoint]:
    """The points to run whose configuration already has an ok row: its hash (the bytes
    of a file the point reads) or its embsim version differ, so it is run again."""
    def key(config):
        return json.dumps(config, sort_keys=True, default=str)
    finished = {key(r.get("config")) for r in rows.values() if r["status"] == "ok"}
    return [p for p in todo if key(p.config) in finished]


def repair_tail(path: Path) -> None:
    """Cut a torn last line (a sweep killed mid-write) so that the next row appended
    starts on a line of its own instead of being glued onto the fragment."""
    try:
        with open(path, "rb+") as f:
            size = f.seek(0, 2)
            if size == 0:
                return
            f.seek(size - 1)
            if f.read(1) == b"\n":
                return
            # find the last newline: everything after it is the torn fragment
            pos = size
            while pos > 0:
                step = min(pos, 1 << 16)
                f.seek(pos - step)
                chunk = f.read(step)
                cut = chunk.rfind(b"\n")
                if cut >= 0:
                    f.truncate(pos - step + cut + 1)
                    return
                pos -= step
            f.truncate(0)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise InputError(f"{path}: cannot repair sweep results file: {exc.strerror or exc}") from None


def _varied_columns(fulls: list[dict]) -> list[str]:
    """The other SimulationConfig fields whose value differs between the points (a grid
    key such as tensor_parallel, recompute or dtype): without them two rows of the table
    that differ only there could not be told apart."""
    if not fulls:
        return []
    fixed = set(CONFIG_COLUMNS) | {"hardware"}
    return [k for k in fulls[0] if k not in fixed
            and len({json.dumps(f[k], sort_keys=True, default=str) for f in fulls}) > 1]


def _cell(value):
    if value is None:
        return ""
    return json.dumps(value, sort_keys=True, default=str) if isinstance(value, (dict, list, tuple)) else value


def _csv_text(points: Iterable[SweepPoint], rows: dict[str, dict]) -> str:
    buf = io.StringIO()
    points = list(points)
    fulls = [dataclasses.asdict(p.simulation_config()) for p in points]    # defaults shown, not blanks
    varied = _varied_columns(fulls)
    header = (["index", "hash", "status"] + list(CONFIG_COLUMNS) + varied
              + [f"hardware.{k}" for k in HARDWARE_KEYS] + list(RESULT_COLUMNS) + ["error"])
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header)
    for p, full in zip(points, fulls):
        row = rows.get(p.hash)
        if row is None:
            continue
        result = row.get("result") or {}
        hw = full["hardware"]
        writer.writerow([p.index, p.hash, row["status"]]
                        + ["" if full[k] is None else full[k] for k in CONFIG_COLUMNS]
                        + [_cell(full[k]) for k in varied]
                        + [hw.get(k, "") for k in HARDWARE_KEYS]
                        + [result.get(k, "") for k in RESULT_COLUMNS] + [row.get("error") or ""])
    return buf.getvalue()


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
    todo = [p for p in points if not reusable(done.get(p.hash))]
    stale = len(rerun_points(todo, done))
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
    atomic_write_text(out_dir / CSV, _csv_text(points, rows))
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
            Progress(disable=not progress, transient=True) as bar:
        task = bar.add_task("sweep", total=len(todo))
        for future in as_completed(futures):
            p = futures[future]
            try:
                row = future.result()
            except Exception as exc:  # noqa: BLE001 -- the worker itself died
                row = {"status": "error", "error": f"worker lost: {type(exc).__name__}: {exc}",
                       "error_kind": "worker", "result": None}
            row = {"index": p.index, "hash": p.hash, "config": p.config, "embsim": __version__,
                   **({"sweep": name} if name is not None else {}), **row}
            failed += row["status"] != "ok"
            log.write(json.dumps(row, sort_keys=True, default=str) + "\n")
            log.flush()
            done[p.hash] = row
            bar.update(task, advance=1, description=f"sweep ({failed} failed)")
    return failed
