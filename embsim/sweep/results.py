"""The files a sweep leaves in its results folder: `results.jsonl` (one row a point, each
appended as it finishes, then rewritten in point order), `results.csv` (the table, point
order) and `timing.jsonl` (each run point's wall-clock time, kept out of the rows so that
the same sweep gives the same results bytes). Reading them back for a resume, and the
refusals: a file a sweep did not write, another sweep's rows.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
from pathlib import Path
from typing import Iterable

from ..atomic import atomic_write_text
from ..errors import InputError
from ..yamlio import check_regular_file
from .spec import HARDWARE_KEYS, SweepPoint

JSONL, CSV, TIMING = "results.jsonl", "results.csv", "timing.jsonl"
RESULT_COLUMNS = ("n_gpus", "step_time_ms", "samples_per_s", "tokens_per_s", "compute_ms",
                  "exposed_comm_ms", "scaling_efficiency", "fits_in_memory", "compute_source")
CONFIG_COLUMNS = ("topology", "model", "strategy", "scheduler", "batch", "seq", "iterations", "seed")


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
# so "config" comes first (a timing.jsonl row's "hash"); results.csv starts with its header.
_JSONL_START = b'{"config": '
_CSV_START = b"index,hash,status,"
_TIMING_START = b'{"hash": '


def refuse_foreign_results(out_dir: Path) -> None:
    """--out may be any folder: a results.jsonl, results.csv or timing.jsonl there that a
    sweep did not write (a user's own file) is neither appended to, cut nor replaced."""
    for name, start in ((JSONL, _JSONL_START), (CSV, _CSV_START), (TIMING, _TIMING_START)):
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


def jsonl_text(points: list[SweepPoint], rows: dict[str, dict]) -> str:
    """results.jsonl as the sweep leaves it: each point's latest row in point order (its
    index the point's own), then the rows of hashes no point has now (a grid value since
    removed: kept, not lost) by index and hash; the same whatever order points finished in."""
    lines, current = [], set()
    for p in points:
        if p.hash in rows:
            lines.append({**rows[p.hash], "index": p.index})
            current.add(p.hash)
    others = [r for h, r in rows.items() if h not in current]
    lines += sorted(others, key=lambda r: (r["index"] if type(r.get("index")) is int else -1, r["hash"]))
    return "".join(json.dumps(r, sort_keys=True, default=str) + "\n" for r in lines)


def rewrite(path: Path, text: str) -> None:
    """Write `text` atomically unless the file holds it already (a resume that ran nothing
    leaves the folder as it was)."""
    try:
        if path.read_bytes() == text.encode("utf-8"):
            return
    except OSError:
        pass                  # missing or unreadable: written (atomic_write_text's errors)
    atomic_write_text(path, text)


def _cell(value):
    if value is None:
        return ""
    return json.dumps(value, sort_keys=True, default=str) if isinstance(value, (dict, list, tuple)) else value


def csv_text(points: Iterable[SweepPoint], rows: dict[str, dict]) -> str:
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
