"""Parse the stdout of real nccl-tests runs (all_reduce_perf, all_gather_perf, ...).

The layout (nccl-tests src/common.cu) is a `#` header -- `# nThread 1 nGpus 8 minBytes ...`,
one `#  Rank  R Group G Pid P on HOST device D [BUS] NAME` line per rank, sometimes
`NCCL version 2.x.y+cudaZ` or `# nccl-tests version V nccl-headers=H nccl-library=L` --
a two-row column header (`size count type redop root time algbw busbw #wrong ...`,
out-of-place then in-place), one row per size, and a footer
(`# Out of bounds values : N OK|FAILED`, `# Avg bus bandwidth : X`).

Layouts differ between versions (no `root` or `redop` column, `error` instead of
`#wrong`, no `Group` in the rank lines), logs are often prefixed by the launcher or a log
collector (`[1,0]<stdout>:`, `0: `, SkyPilot's `(head, rank=0, pid=N)`, timestamps:
nccl_tests_lines) or pasted with their `#` stripped, and one file may hold
several runs. Columns are therefore located by the header's names, not positions.
A run whose table is not closed by the footer (the run was cut off) is read as far as its
complete rows go, and says so (`notes`); one with no complete row is rejected.

Pasted logs often leave out the rank lines, or cut a 128-rank list to its first few ("..."),
or start at the column header (no `# nThread` line) and stop before the footer: a table
without its `nThread` line is taken as pasted, whole as far as it goes.
Such a run still parses (`complete` is False): its rank count is what the table itself fixes
(AllGather, ReduceScatter and AlltoAll print a per-rank count, so size / (count x element)
is the rank count), else unknown (0) until the caller names the measured system
(`with_rank_count`), which the run's own busbw/algbw then checks.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..collectives.busbw import DATATYPES, OPS, canonical_op
from ..yamlio import GZIPPED, MAX_NUMBER, check_regular_file, is_gzipped
from .nccl_tests_lines import (OLD_LAYOUT_NOTE, clean, graph_launches, graph_note, old_layout, params,
                               remember_versions)
from .nccl_tests_op import PERF_MENTION, infer_op
from .nccl_tests_ranks import NcclTestsLogError, NotNcclTestsLog, rank_count

MAX_LOG_BYTES = 256 * 1024 * 1024
MAX_GPUS_PER_PROCESS = 64     # nccl-tests -g, as `embsim nccl-tests -g` bounds it
MAX_RANK_DIGITS = 9           # no world has a billion ranks


# Older nccl-tests type names (before 2.x's int8/int32 spelling).
_TYPE_ALIASES = {"char": "int8", "int": "int32", "uint": "uint32", "bf16": "bfloat16",
                 "fp8_e4m3": "f8e4m3", "fp8_e5m2": "f8e5m2"}

_RANK_LINE = re.compile(r"^Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+)\s+device\s+(\d+)"
                        r"\s+\[([^\]]*)\]\s*(.*)$")
# nccl-tests' own abort (src/common.h CUDACHECK / NCCLCHECK): "HOST: Test CUDA failure common.cu:389 '...'"
_TEST_FAILURE = re.compile(r"\bTest (?:CUDA|NCCL|NCCL \w+) failure\b.*")
_OUT_OF_BOUNDS = re.compile(r"^Out of bounds values\s*:\s*(\d{1,18})\b\s*(\w+)?")
_AVG_BUSBW = re.compile(r"^Avg bus bandwidth\s*:\s*([0-9.eE+-]+|nan|inf)")
# AMD devices (rccl-tests' banner: nccl_tests_lines)
_AMD_DEVICE = re.compile(r"^AMD\b|\bInstinct\b|\bRadeon\b")


@dataclass(frozen=True)
class Measurement:
    """One placement (out-of-place or in-place) of one row. Seconds and bytes/s."""

    time_s: float
    algbw: float
    busbw: float
    wrong: int | None              # the `#wrong` count; None for old `error` logs or -c 0


@dataclass(frozen=True)
class NcclTestsRow:
    size: int                      # bytes, nccl-tests "size" convention for the op
    count: int                     # elements, as printed
    dtype: str
    redop: str                     # "none" when the op does not reduce (or not printed)
    root: int                      # -1 when the op has no root (or not printed)
    out_of_place: Measurement | None
    in_place: Measurement | None
    line: int

    def measurement(self, placement: str) -> Measurement | None:
        """placement: "in-place", "out-of-place", or "best" (the faster of the two)."""
        if placement == "out-of-place":
            return self.out_of_place or self.in_place
        if placement == "in-place":
            return self.in_place or self.out_of_place
        both = [m for m in (self.out_of_place, self.in_place) if m is not None]
        return min(both, key=lambda m: m.time_s) if both else None


@dataclass(frozen=True)
class NcclTestsRun:
    source: str
    line: int                      # where the run's header starts
    op: str
    op_from: str                   # how the op was found (for messages)
    ranks: int
    hosts: tuple[str, ...]         # distinct hosts, in rank order
    devices: tuple[str, ...]       # device name per rank
    nccl_version: str | None
    tests_version: str | None
    params: dict                   # the `# nThread ...` line as key -> value
    rows: tuple[NcclTestsRow, ...]
    out_of_bounds: int | None
    avg_busbw: float | None        # bytes/s, as printed by the footer
    dropped: tuple[str, ...] = ()  # rows left out, with the reason
    env_lines: tuple[str, ...] = ()  # NCCL_X=V settings: its command line, NCCL INFO "set by environment" lines
    gpus_per_process: int = 1      # the header's nGpus (nccl-tests -g)
    # the ranks whose '# Rank' line the log shows; `devices` and `hosts` are theirs
    listed_ranks: tuple[int, ...] = ()
    notes: tuple[str, ...] = ()    # what the output must say about how the log was read

    @property
    def complete(self) -> bool:
        """Every rank 0..ranks-1 has its line: the log itself says how many GPUs on which
        hosts. Otherwise `ranks` is the table's own count (0: unknown), and the node count
        is not known."""
        return self.ranks > 0 and self.listed_ranks == tuple(range(self.ranks))

    @property
    def rank_lines_shown(self) -> str:
        """What an incomplete run's log shows of its ranks, for the message asking for the
        measured system."""
        if not self.listed_ranks:
            return "no '# Rank' lines"
        return f"'# Rank' lines for {len(self.listed_ranks)} rank(s), not every rank of the run"

    @property
    def n_nodes(self) -> int:
        return len(self.hosts)

    @property
    def gpus_per_node(self) -> int:
        return self.ranks // max(1, len(self.hosts))

    @property
    def where(self) -> str:
        return f"{self.source} (run at line {self.line})"


@dataclass
class _Partial:
    line: int
    params: dict
    ranks: dict = field(default_factory=dict)          # rank -> (host, device)
    columns: list | None = None
    rows: list = field(default_factory=list)
    op_mentions: list = field(default_factory=list)
    nccl_version: str | None = None
    tests_version: str | None = None
    out_of_bounds: int | None = None
    avg_busbw: float | None = None
    closed: bool = False
    env_lines: list = field(default_factory=list)
    rccl: bool = False                                  # printed by rccl-tests / RCCL
    pasted: bool = False                                # a table without its nThread line
    zero_rows: list = field(default_factory=list)       # lines of 0-byte rows
    bus_ids: dict = field(default_factory=dict)         # rank -> "device D [BUS]" as printed
    cut_row: tuple | None = None                        # (line, error) of a row cut short
    graph: int = 0                                      # -G N on the command line


def _number(token: str, what: str, where: str) -> float | None:
    if token.upper() == "N/A":
        return None
    try:
        value = float(token)
    except ValueError:
        raise NcclTestsLogError(f"{where}: {what} {token!r} is not a number") from None
    if not math.isfinite(value) or abs(value) > MAX_NUMBER:
        raise NcclTestsLogError(f"{where}: {what} {token!r} must be a finite number")
    return value


def _measurement(values: dict, where: str) -> Measurement | None:
    time_us = _number(values["time"], "time", where)
    if time_us is None:
        return None
    if time_us <= 0:
        raise NcclTestsLogError(f"{where}: time {values['time']} us must be positive")
    algbw = _number(values.get("algbw", "N/A"), "algbw", where)
    busbw = _number(values.get("busbw", "N/A"), "busbw", where)
    wrong = values.get("#wrong")
    wrong_n = None if wrong is None or wrong.upper() == "N/A" else int(_number(wrong, "#wrong", where))
    return Measurement(time_s=time_us * 1e-6, algbw=(algbw or 0.0) * 1e9, busbw=(busbw or 0.0) * 1e9,
                       wrong=wrong_n)


def _header_columns(tokens: list[str], where: str) -> list[str]:
    """Column names, the repeated measurement group prefixed 'oop.' then 'ip.'."""
    common = []
    for name in tokens:
        if name in ("time", "algbw", "busbw"):
            break
        common.append(name)
    rest = tokens[len(common):]
    if not {"size", "count"} <= set(common) or not rest or rest[0] != "time":
        raise NcclTestsLogError(f"{where}: unrecognised column header: {' '.join(tokens)}")
    group = rest[:rest.index("time", 1)] if rest.count("time") > 1 else rest
    groups = len(rest) // len(group)
    if groups * len(group) != len(rest) or groups > 2:
        raise NcclTestsLogError(f"{where}: unrecognised column header: {' '.join(tokens)}")
    prefixes = ("oop.", "ip.")[:groups]
    return common + [p + name for p in prefixes for name in group]


def _field_count_error(tokens: list[str], columns: list[str], where: str) -> str | None:
    if len(tokens) == len(columns):
        return None
    return _fields_message(len(tokens), len(columns), where)


def _fields_message(fields: int, columns: int, where: str) -> str:
    return f"{where}: row has {fields} fields but the table has {columns} columns (truncated or corrupted log?)"


def _blank_redop(tokens: list[str], columns: list[str]) -> list[str] | None:
    """alltoall_perf before nccl-tests v2.13.0 printed a redop column and left its cell blank:
    the row with an empty redop, when its field there is the time (a number)."""
    if len(tokens) + 1 != len(columns) or "redop" not in columns or "root" in columns:
        return None
    at = columns.index("redop")
    try:
        float(tokens[at])
    except (ValueError, IndexError):
        return None
    return tokens[:at] + [""] + tokens[at:]


def _row(tokens: list[str], columns: list[str], where: str, line: int) -> NcclTestsRow | None:
    """One size's row; None for a 0-byte row (nothing to time)."""
    tokens = _blank_redop(tokens, columns) or tokens
    error = _field_count_error(tokens, columns, where)
    if error:
        raise NcclTestsLogError(error)
    values = dict(zip(columns, tokens))
    try:
        size, count = int(values["size"]), int(values["count"])
    except ValueError:
        raise NcclTestsLogError(f"{where}: size/count must be integers") from None
    if size == 0 and count == 0:
        # AllGather, ReduceScatter, AlltoAll print "0 0 float none -1 ..." for -b below ranks x
        # element (a per-rank count of 0): a launch with no data, left out by the caller
        return None
    if not (0 < size <= MAX_NUMBER and 0 < count <= MAX_NUMBER):
        raise NcclTestsLogError(f"{where}: size {size} and count {count} must be positive "
                                f"(at most {MAX_NUMBER:g})")
    dtype = values.get("type", "float")
    dtype = _TYPE_ALIASES.get(dtype, dtype)
    if dtype not in DATATYPES:
        raise NcclTestsLogError(f"{where}: unknown data type {values.get('type')!r}")
    # "N/A" in the root column (a rootless op, as some nccl-tests builds print it) = no root
    root = _number(values.get("root", "-1"), "root", where)
    placements = {}
    for prefix in ("oop.", "ip."):
        part = {k[len(prefix):]: v for k, v in values.items() if k.startswith(prefix)}
        if "error" in part:                 # old logs: max abs error, not a count
            part.pop("error")
        placements[prefix] = _measurement(part, where) if part else None
    return NcclTestsRow(size=size, count=count, dtype=dtype, redop=values.get("redop", "none"),
                        root=-1 if root is None else int(root), out_of_place=placements["oop."],
                        in_place=placements["ip."], line=line)


def _finish(p: _Partial, source: str, op_override: str | None) -> NcclTestsRun:
    where = f"{source} (run at line {p.line})"
    if p.columns is None:
        raise NcclTestsLogError(f"{where}: no result table (the 'size count type ...' header)")
    notes = []
    if not p.closed and not p.pasted:
        if not p.rows:
            raise NcclTestsLogError(f"{where}: truncated log: the table is not followed by "
                                    f"'# Avg bus bandwidth' (the run did not finish) and has no "
                                    f"complete row")
        cut = f", the row at line {p.cut_row[0]} cut short (left out)" if p.cut_row else ""
        notes.append(f"the log ends before '# Avg bus bandwidth' (the run did not finish){cut}: "
                     f"its {len(p.rows)} complete row(s) are used")
    elif p.cut_row:          # a pasted table whose last row was cut
        notes.append(f"the row at line {p.cut_row[0]}, the table's last, is cut short (left out)")
    _refuse_rccl(p, where)
    if not p.rows:
        zero = " but 0-byte ones (nothing to time)" if p.zero_rows else ""
        raise NcclTestsLogError(f"{where}: the result table has no rows{zero}")
    blank = [r for r in p.rows if r.redop == ""]
    if blank and len(blank) != len(p.rows):    # one row short in a table that prints its redop
        row = blank[0]
        raise NcclTestsLogError(_fields_message(len(p.columns) - 1, len(p.columns), f"{source} line {row.line}"))
    _refuse_shared_gpus(p, where)
    listed = tuple(sorted(p.ranks))
    if op_override:
        op, op_from = op_override, "--op"
    else:
        op, op_from = infer_op(p, source)
    if op in ("scatter", "gather", "hypercube"):
        raise NcclTestsLogError(f"{where}: {op}_perf results are not modelled by embsim")
    rows = []
    dropped = [f"line {line}: size 0: a launch with no data" for line in p.zero_rows]
    for row in p.rows:
        bad = [m.wrong for m in (row.out_of_place, row.in_place) if m and m.wrong]
        if bad:
            dropped.append(f"line {row.line}: size {row.size}: {sum(bad)} wrong values")
            continue
        rows.append(row)
    if not rows:
        raise NcclTestsLogError(f"{where}: every row reports wrong values (#wrong > 0)")
    n = rank_count(listed, rows, op, where)
    if n == 1:
        raise NcclTestsLogError(f"{where}: one rank: nothing crosses a link between GPUs, so there "
                                f"is nothing to validate (NCCL copies the buffer on the GPU: embsim "
                                f"nccl-tests --topology PRESET:1x1 prints the modelled copy time)")
    gpus = str(p.params.get("nGpus") or "1")
    if not re.fullmatch(r"\d{1,3}", gpus) or not 1 <= int(gpus) <= MAX_GPUS_PER_PROCESS:
        raise NcclTestsLogError(f"{where}: nGpus {gpus[:20]!r}: GPUs driven by one process must be "
                                f"an integer 1..{MAX_GPUS_PER_PROCESS}")
    hosts = tuple(dict.fromkeys(p.ranks[r][0] for r in listed))
    graph = _graph(p)
    if graph:
        notes.append(graph_note(graph))
    if p.nccl_version is None and old_layout(p.columns):
        notes.append(OLD_LAYOUT_NOTE)
    return NcclTestsRun(source=source, line=p.line, op=op, op_from=op_from, ranks=n, hosts=hosts,
                        devices=tuple(p.ranks[r][1] for r in listed), nccl_version=p.nccl_version,
                        tests_version=p.tests_version, params=p.params, rows=tuple(rows),
                        out_of_bounds=p.out_of_bounds, avg_busbw=p.avg_busbw, dropped=tuple(dropped),
                        env_lines=tuple(p.env_lines), gpus_per_process=int(gpus), listed_ranks=listed,
                        notes=tuple(notes))


def _graph(p: _Partial) -> int:
    """The CUDA-graph launches of a run: the header's `graph: N`, else -G N on its command line."""
    value = str(p.params.get("graph", ""))
    return int(value) if re.fullmatch(r"\d{1,6}", value) else p.graph


def _refuse_rccl(p: _Partial, where: str) -> None:
    amd = sorted({d for _, d in p.ranks.values() if _AMD_DEVICE.search(d)})
    if p.rccl or amd:
        what = f"AMD device {amd[0]!r}" if amd else "rccl-tests / RCCL banner"
        raise NcclTestsLogError(f"{where}: an RCCL run ({what}): embsim models NVIDIA's NCCL on "
                                f"NVIDIA GPUs, not RCCL's algorithms or AMD's Infinity Fabric links")


def _refuse_shared_gpus(p: _Partial, where: str) -> None:
    """Two ranks on one GPU (the same device ordinal and bus id on the same host): a
    time-shared device, which no topology describes."""
    seen: dict = {}
    for rank in sorted(p.bus_ids):
        key = (p.ranks[rank][0], p.bus_ids[rank])
        if key in seen:
            raise NcclTestsLogError(f"{where}: ranks {seen[key]} and {rank} run on one GPU "
                                    f"({key[1]} on host {key[0]}): a shared GPU is not a system "
                                    f"embsim can model")
        seen[key] = rank


def parse_nccl_tests_log(text: str, source: str, op: str | None = None) -> list[NcclTestsRun]:
    """Every run in one log. `op` overrides the collective named by the log."""
    if op is not None:
        op = canonical_op(op)
        if op not in OPS:     # named as the flag it came from, before the log is read
            raise NcclTestsLogError(f"--op {op!r}: known ops are {', '.join(OPS)}")
    runs: list[NcclTestsRun] = []
    # What is printed before a run's `nThread` line (versions, the binary's name) is its own.
    pending = _Partial(line=0, params={})
    current: _Partial | None = None
    for number, raw in enumerate(text.splitlines(), 1):
        text_line = clean(raw)
        if not text_line:
            continue
        where = f"{source} line {number}"
        failure = _TEST_FAILURE.search(text_line)
        if failure:
            raise NcclTestsLogError(f"{where}: the run failed: {failure.group(0)[:200]}")
        if text_line.startswith("nThread "):
            if current is not None and not current.closed:
                if current.columns is None:
                    raise NcclTestsLogError(
                        f"{where}: a second nccl-tests header before any result table: several "
                        f"independent runs are interleaved (nccl-tests launched by mpirun but "
                        f"built without MPI=1?)")
                runs.append(_finish(current, source, op))      # cut off: its complete rows
            current = _Partial(line=number, params=params(text_line),
                               op_mentions=pending.op_mentions, nccl_version=pending.nccl_version,
                               tests_version=pending.tests_version, env_lines=pending.env_lines,
                               rccl=pending.rccl, graph=pending.graph)
            pending = _Partial(line=0, params={})
            continue
        if (current is None or current.closed) and _is_column_header(text_line):
            # a pasted table: from its column header on, without the nThread line
            current = _Partial(line=number, params={}, op_mentions=pending.op_mentions,
                               nccl_version=pending.nccl_version, tests_version=pending.tests_version,
                               env_lines=pending.env_lines, rccl=pending.rccl, pasted=True,
                               graph=pending.graph)
            pending = _Partial(line=0, params={})
        target = pending if current is None or current.closed else current
        mention = PERF_MENTION.search(text_line)
        if mention and target.columns is None:
            target.op_mentions.append(mention.group(1))
            target.graph = target.graph or graph_launches(text_line[mention.end():])
        remember_versions(text_line, target)
        if target is pending:
            continue
        rank = _RANK_LINE.match(text_line)
        if rank:
            if len(rank.group(1)) > MAX_RANK_DIGITS:     # past int()'s 4300 digits, or any world
                raise NcclTestsLogError(f"{where}: rank {rank.group(1)[:20]}... has "
                                        f"{len(rank.group(1)):,} digits")
            r = int(rank.group(1))
            if r in current.ranks:
                raise NcclTestsLogError(f"{where}: rank {r} listed twice: several independent "
                                        f"runs are interleaved (nccl-tests built without MPI=1?)")
            current.ranks[r] = (rank.group(2), rank.group(5).strip())
            current.bus_ids[r] = f"device {rank.group(3)} [{rank.group(4).strip().lower()}]"
            continue
        tokens = text_line.split()
        if current.cut_row and (tokens[0] == "size" or re.fullmatch(r"\d+", tokens[0])
                                or _OUT_OF_BOUNDS.match(text_line) or _AVG_BUSBW.match(text_line)):
            # a short row with more of the table after it: corrupted, not cut off at the end
            raise NcclTestsLogError(current.cut_row[1])
        if tokens[0] == "size" and "count" in tokens:
            if current.columns is not None:
                raise NcclTestsLogError(f"{where}: a second column header inside one run")
            _refuse_rccl(current, where)        # before its rows: RCCL prints rows of its own
            current.columns = _header_columns(tokens, where)
            continue
        oob = _OUT_OF_BOUNDS.match(text_line)
        if oob:
            current.out_of_bounds = int(oob.group(1))
            continue
        avg = _AVG_BUSBW.match(text_line)
        if avg:
            current.avg_busbw = float(avg.group(1)) * 1e9
            current.closed = True
            runs.append(_finish(current, source, op))
            continue
        if current.columns is not None and re.fullmatch(r"\d+", tokens[0]) and len(tokens) > 1:
            short = _field_count_error(_blank_redop(tokens, current.columns) or tokens, current.columns, where)
            if short and len(tokens) < len(current.columns) and not current.closed:
                current.cut_row = (number, short)      # the run's last line, unless more follows
                continue
            row = _row(tokens, current.columns, where, number)
            if row is None:
                current.zero_rows.append(number)
            else:
                current.rows.append(row)
    if current is not None and not current.closed:
        runs.append(_finish(current, source, op))              # cut off, or raises with the reason
    if not runs:
        raise NotNcclTestsLog(f"{source}: not an nccl-tests log (no '# nThread ... nGpus ...' "
                              f"header line nor 'size count type ... time algbw busbw' table)")
    return runs


def _is_column_header(text_line: str) -> bool:
    tokens = text_line.split()
    return bool(tokens) and tokens[0] == "size" and "count" in tokens and "time" in tokens


def load_nccl_tests_log(path: str | Path, op: str | None = None) -> list[NcclTestsRun]:
    path = Path(path)
    check_regular_file(path, "nccl-tests log", NcclTestsLogError, max_bytes=MAX_LOG_BYTES)
    try:
        if is_gzipped(path):
            raise NcclTestsLogError(f"{path}: {GZIPPED}")
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise NcclTestsLogError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return parse_nccl_tests_log(text, str(path), op=op)
