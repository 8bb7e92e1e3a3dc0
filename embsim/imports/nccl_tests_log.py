"""Parse the stdout of real nccl-tests runs (all_reduce_perf, all_gather_perf, ...).

The layout (nccl-tests src/common.cu) is a `#` header -- `# nThread 1 nGpus 8 minBytes ...`,
one `#  Rank  R Group G Pid P on HOST device D [BUS] NAME` line per rank, sometimes
`NCCL version 2.x.y+cudaZ` or `# nccl-tests version V nccl-headers=H nccl-library=L` --
a two-row column header (`size count type redop root time algbw busbw #wrong ...`,
out-of-place then in-place), one row per size, and a footer
(`# Out of bounds values : N OK|FAILED`, `# Avg bus bandwidth : X`).

Layouts differ between versions (no `root` or `redop` column, `error` instead of
`#wrong`, no `Group` in the rank lines), logs are often prefixed by the launcher
(`[1,0]<stdout>:`, `0: `) or pasted with their `#` stripped, and one file may hold
several runs. Columns are therefore located by the header's names, not positions.
A log is accepted only whole: a run whose table is not closed by the footer is rejected.

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
from .nccl_tests_ranks import NcclTestsLogError, NotNcclTestsLog, rank_count

MAX_LOG_BYTES = 256 * 1024 * 1024
MAX_GPUS_PER_PROCESS = 64     # nccl-tests -g, as `embsim nccl-tests -g` bounds it
MAX_RANK_DIGITS = 9           # no world has a billion ranks


# nccl-tests binary names -> the op names embsim uses.
PERF_BINARIES = {
    "all_reduce": "all_reduce", "all_gather": "all_gather", "reduce_scatter": "reduce_scatter",
    "alltoall": "alltoall", "broadcast": "broadcast", "reduce": "reduce", "sendrecv": "sendrecv",
    "scatter": "scatter", "gather": "gather", "hypercube": "hypercube",
}
# Older nccl-tests type names (before 2.x's int8/int32 spelling).
_TYPE_ALIASES = {"char": "int8", "int": "int32", "uint": "uint32", "bf16": "bfloat16",
                 "fp8_e4m3": "f8e4m3", "fp8_e5m2": "f8e5m2"}

# mpirun --tag-output "[1,0]<stdout>:", srun -l "0: ", pdsh "node01: " (before a '#' or a row)
_LAUNCHER_PREFIX = re.compile(r"^\s*(\[\d+,\d+\]<std(?:out|err)>:|\d+:\s|[A-Za-z][\w.-]{0,63}:\s+(?=[#\d]))")
# Not \b: "run1_alltoall_perf.log" has no word boundary between "_" and "alltoall".
_PERF_MENTION = re.compile(r"(?<![A-Za-z0-9])(" + "|".join(sorted(PERF_BINARIES, key=len, reverse=True))
                           + r")_perf(?:_mpi)?(?![A-Za-z0-9])")
_RANK_LINE = re.compile(r"^Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+)\s+device\s+(\d+)"
                        r"\s+\[([^\]]*)\]\s*(.*)$")
# A file named after the op alone ("v100_alltoall.log", "all_reduce.txt"); "_" separates words
_OP_IN_NAME = re.compile(r"(?<![A-Za-z0-9])(" + "|".join(sorted(PERF_BINARIES, key=len, reverse=True))
                         + r")(?![A-Za-z0-9])")
# nccl-tests' own abort (src/common.h CUDACHECK / NCCLCHECK): "HOST: Test CUDA failure common.cu:389 '...'"
_TEST_FAILURE = re.compile(r"\bTest (?:CUDA|NCCL|NCCL \w+) failure\b.*")
_NCCL_ASSIGNMENT = re.compile(r"\bNCCL_[A-Z0-9_]+=\S")
_NCCL_VERSION = re.compile(r"NCCL version (\d+\.\d+\.\d+)")
_LIBRARY_CODE = re.compile(r"nccl-library=(\d{1,9})\b")   # NCCL_VERSION codes (22602)
_TESTS_VERSION = re.compile(r"nccl-tests version (\S+)")
_OUT_OF_BOUNDS = re.compile(r"^Out of bounds values\s*:\s*(\d{1,18})\b\s*(\w+)?")
_AVG_BUSBW = re.compile(r"^Avg bus bandwidth\s*:\s*([0-9.eE+-]+|nan|inf)")
# ROCm's fork prints itself (rccl-tests: Version ..., RCCL version 2.x+hipY) and AMD devices
_RCCL = re.compile(r"\brccl-tests\b|\bRCCL version\b", re.IGNORECASE)
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


def _clean(raw: str) -> str:
    """Drop launcher prefixes and the leading '#', keep the content."""
    text = raw.rstrip("\n")
    for _ in range(2):                      # "[1,0]<stdout>:0: ..." is possible
        text = _LAUNCHER_PREFIX.sub("", text, count=1)
    return text.strip().lstrip("#").strip()


def _params(text: str) -> dict:
    # "nThread 1 nGpus 8 minBytes 8 maxBytes 1G step: 2(factor) warmup iters: 5 iters: 20 ..."
    out, tokens = {}, text.replace(":", " ").split()
    i = 0
    while i + 1 < len(tokens):
        key, value = tokens[i], tokens[i + 1]
        if key == "warmup" and value == "iters":
            key, value, i = "warmup_iters", tokens[i + 2] if i + 2 < len(tokens) else "", i + 1
        elif key == "agg" and value == "iters":
            key, value, i = "agg_iters", tokens[i + 2] if i + 2 < len(tokens) else "", i + 1
        out[key] = value
        i += 2
    return out


def _library_version(code: int) -> str:
    # NCCL_VERSION(X,Y,Z): X*1000+Y*100+Z before 2.9, X*10000+Y*100+Z since (nccl.h).
    if code >= 20900:
        return f"{code // 10000}.{code // 100 % 100}.{code % 100}"
    return f"{code // 1000}.{code // 100 % 10}.{code % 100}"


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


def _row(tokens: list[str], columns: list[str], where: str, line: int) -> NcclTestsRow | None:
    """One size's row; None for a 0-byte row (nothing to time)."""
    if len(tokens) != len(columns):
        raise NcclTestsLogError(f"{where}: row has {len(tokens)} fields but the table has "
                                f"{len(columns)} columns (truncated or corrupted log?)")
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


def _infer_op(p: _Partial, source: str) -> tuple[str, str]:
    """The op from the log's own words, else from the file name, else from the columns."""
    if p.op_mentions:
        return PERF_BINARIES[p.op_mentions[-1]], f"'{p.op_mentions[-1]}_perf' in the log"
    name = Path(source).name
    match = _PERF_MENTION.search(name)
    if match:
        return PERF_BINARIES[match.group(1)], f"the file name {name!r}"
    named = set(_OP_IN_NAME.findall(name))
    if len(named) == 1:                  # two ops in one name say neither
        named_op = named.pop()
        return PERF_BINARIES[named_op], f"the file name {name!r}"
    # Size/count relation (src/common.cu setupArgs): AG/RS/A2A print per-rank counts.
    row = p.rows[0]
    # a per-rank count is size / (element x ranks): below size / element
    per_rank = row.count * DATATYPES[row.dtype] < row.size
    reducing = row.redop not in ("none", "")
    if reducing:
        op = "reduce" if row.root >= 0 else ("reduce_scatter" if per_rank else "all_reduce")
    elif row.root >= 0:
        op = "broadcast" if not per_rank else None
    else:
        op = None if per_rank else "sendrecv"
    if op is None:
        raise NcclTestsLogError(f"{source} (run at line {p.line}): cannot tell which collective "
                                f"this is (all_gather, alltoall or gather/scatter); name the file "
                                f"after the binary, e.g. alltoall_perf.log, or pass --op")
    return op, "the columns (redop/root/count)"


def _finish(p: _Partial, source: str, op_override: str | None) -> NcclTestsRun:
    where = f"{source} (run at line {p.line})"
    if p.columns is None:
        raise NcclTestsLogError(f"{where}: no result table (the 'size count type ...' header)")
    if not p.closed and not p.pasted:
        raise NcclTestsLogError(f"{where}: truncated log: the table is not followed by "
                                f"'# Avg bus bandwidth' (the run did not finish)")
    _refuse_rccl(p, where)
    if not p.rows:
        zero = " but 0-byte ones (nothing to time)" if p.zero_rows else ""
        raise NcclTestsLogError(f"{where}: the result table has no rows{zero}")
    _refuse_shared_gpus(p, where)
    listed = tuple(sorted(p.ranks))
    if op_override:
        op, op_from = op_override, "--op"
    else:
        op, op_from = _infer_op(p, source)
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
    return NcclTestsRun(source=source, line=p.line, op=op, op_from=op_from, ranks=n, hosts=hosts,
                        devices=tuple(p.ranks[r][1] for r in listed), nccl_version=p.nccl_version,
                        tests_version=p.tests_version, params=p.params, rows=tuple(rows),
                        out_of_bounds=p.out_of_bounds, avg_busbw=p.avg_busbw, dropped=tuple(dropped),
                        env_lines=tuple(p.env_lines), gpus_per_process=int(gpus), listed_ranks=listed)


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
        text_line = _clean(raw)
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
                runs.append(_finish(current, source, op))      # raises: truncated
            current = _Partial(line=number, params=_params(text_line),
                               op_mentions=pending.op_mentions, nccl_version=pending.nccl_version,
                               tests_version=pending.tests_version, env_lines=pending.env_lines,
                               rccl=pending.rccl)
            pending = _Partial(line=0, params={})
            continue
        if (current is None or current.closed) and _is_column_header(text_line):
            # a pasted table: from its column header on, without the nThread line
            current = _Partial(line=number, params={}, op_mentions=pending.op_mentions,
                               nccl_version=pending.nccl_version, tests_version=pending.tests_version,
                               env_lines=pending.env_lines, rccl=pending.rccl, pasted=True)
            pending = _Partial(line=0, params={})
        target = pending if current is None or current.closed else current
        mention = _PERF_MENTION.search(text_line)
        if mention and target.columns is None:
            target.op_mentions.append(mention.group(1))
        _remember_versions(text_line, target)
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
            row = _row(tokens, current.columns, where, number)
            if row is None:
                current.zero_rows.append(number)
            else:
                current.rows.append(row)
    if current is not None and not current.closed:
        runs.append(_finish(current, source, op))              # raises with the reason
    if not runs:
        raise NotNcclTestsLog(f"{source}: not an nccl-tests log (no '# nThread ... nGpus ...' "
                              f"header line nor 'size count type ... time algbw busbw' table)")
    return runs


def _is_column_header(text_line: str) -> bool:
    tokens = text_line.split()
    return bool(tokens) and tokens[0] == "size" and "count" in tokens and "time" in tokens


def _remember_versions(text_line: str, run: _Partial) -> None:
    if _RCCL.search(text_line):
        run.rccl = True
    # NCCL's own "NAME set by environment to V" INFO lines, and the NAME=V settings of a
    # command line before the run (`NCCL_ALGO=Tree ./build/...`, mpirun's `-x NAME=V`)
    if (" set by environment to " in text_line or _NCCL_ASSIGNMENT.search(text_line)) \
            and len(run.env_lines) < 256:
        run.env_lines.append(text_line)
    m = _NCCL_VERSION.search(text_line)
    if m:
        run.nccl_version = m.group(1)
    m = _LIBRARY_CODE.search(text_line)
    if m and run.nccl_version is None:
        run.nccl_version = _library_version(int(m.group(1)))
    m = _TESTS_VERSION.search(text_line)
    if m:
        run.tests_version = m.group(1)


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
