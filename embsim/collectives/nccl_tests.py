"""Simulated nccl-tests: the same size sweep, conventions and table as NVIDIA/nccl-tests.

The time of a row is the simulated time of one operation on an idle network
(CollectivePlan.time). With `-g G` one process drives G GPUs; no host launch floor is
added for it: the published `-g 8` / `-g 4` curves time ops below G x 5 µs (XLA's launch
overhead) -- 25.6 µs at 1 KiB on 8 H100s, 15.4 µs on 4 B200s -- so a serial per-GPU
launch cost is refuted by the data, and NCCL's latency already bounds small ops. Yet
other `-g 8` runs sit on a floor of 35-58 µs up to 2-4 MiB (stas00's and Modal's A100,
Together's H100 Ring): a host's launch rate, which no constant of the model carries, so
every output of a `-g G > 1` run says so (launch_note).
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass

from embsim.errors import InputError

from .busbw import OPS, algbw_busbw, datatype_size, size_convention
from .model import CollectiveModel
from .one_rank import one_rank_copy

MAX_BYTES = 1 << 40          # -b/-e beyond 1 TiB is no message size a GPU holds
MAX_SIZES = 10_000           # rows in one sweep (-f 1.0000001 would ask for billions)
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(text, flag: str = "size") -> int:
    """nccl-tests sizes: plain bytes or K/M/G suffixes (powers of 1024)."""
    m = _SIZE.match(str(text))
    if not m:
        raise InputError(f"{flag} {text!r}: not a size (use bytes or a K/M/G suffix, e.g. 128M)")
    value = float(m.group(1)) * _UNITS[m.group(2).lower()]
    if not value <= MAX_BYTES:
        raise InputError(f"{flag} {text!r}: at most 1T (a single collective of 1 TiB)")
    return int(value)


@dataclass(frozen=True)
class Row:
    size: int
    count: int
    type: str
    redop: str
    root: int
    time_us: float
    algbw: float
    busbw: float
    algo: str
    proto: str
    note: str = ""      # how a row was made where the table's columns cannot say (one rank)


def sweep_sizes(minbytes: int | str, maxbytes: int | str, stepfactor: float) -> list[int]:
    """The sizes nccl-tests -b/-e/-f would run: from minbytes, times stepfactor, up to
    maxbytes. The bounds are byte counts or size texts (128M, parse_size); errors name
    them by the nccl-tests flags and as given."""
    lo, hi = parse_size(minbytes, "-b/--minbytes"), parse_size(maxbytes, "-e/--maxbytes")
    if lo < 1:
        raise InputError(f"-b/--minbytes {minbytes!r}: must be at least 1 byte")
    if hi < lo:
        raise InputError(f"-e/--maxbytes {maxbytes!r}: smaller than -b/--minbytes {minbytes!r}")
    minbytes, maxbytes = lo, hi
    if not (math.isfinite(stepfactor) and 1 < stepfactor <= MAX_BYTES):
        raise InputError(f"--stepfactor {stepfactor}: must be a number > 1 and at most {MAX_BYTES}")
    # Sizes grow by at least one byte a step, so count them before making them.
    n, s = 0, minbytes
    while s <= maxbytes:
        n += 1
        if n > MAX_SIZES:
            raise InputError(f"--stepfactor {stepfactor}: more than {MAX_SIZES} sizes from "
                             f"{minbytes} to {maxbytes}; use a larger factor")
        nxt = int(s * stepfactor)
        s = nxt if nxt > s else s + 1
    out, s = [], minbytes
    while s <= maxbytes:
        out.append(int(s))
        nxt = int(s * stepfactor)
        s = nxt if nxt > s else s + 1
    return out


def launch_note(gpus_per_process: int) -> str:
    """What a `-g G > 1` comparison must say: its host launch floor is not modelled."""
    if gpus_per_process <= 1:
        return ""
    return (f"-g {gpus_per_process}: one process launches for {gpus_per_process} GPUs, a host "
            f"launch floor (25-58 µs up to 2-4 MiB in published -g 8 runs) not modelled")


def run(model: CollectiveModel, op: str, sizes: list[int], datatype: str = "float",
        ranks=None, gpus_per_process: int = 1, source: str = "") -> list[Row]:
    """`source`: the measurement (a log, a file's `how:`) whose `-g` this is, for its
    errors; "" for the command's own --ngpus."""
    if op not in OPS:
        raise InputError(f"--op {op!r}: known ops are {', '.join(OPS)}")
    said = (f"{source}: its process drove {gpus_per_process} GPUs, -g {gpus_per_process}" if source
            else f"--ngpus {gpus_per_process}")
    if gpus_per_process < 1:
        raise InputError(f"{said}: must be >= 1")
    per_node = model.topology.gpus_per_node
    if per_node % gpus_per_process:
        # nccl-tests runs whole processes on a node: -g 3 on 2 (or 8) GPUs per node is no run
        fix = ("use a topology whose nodes hold that many GPUs" if source
               else "use a divisor of it")
        raise InputError(f"{said}: a process drives GPUs of one node, and "
                         f"{model.topology.preset} has {per_node} per node ({fix})")
    dtype, elt = datatype_size(datatype)
    ranks = tuple(range(model.topology.n_gpus)) if ranks is None else tuple(ranks)
    n = len(ranks)
    rows = []
    for requested in sizes:
        ts = size_convention(op, requested, elt, n)
        plan = model.plan(op, ts.size, ranks)
        t, note = plan.time, ""
        if n == 1:
            # no peer, but nccl-tests still times NCCL's copy into the receive buffer
            copy = one_rank_copy(op, ts.size, model.topology.node.gpu)
            t, note = copy.seconds, copy.note
        alg, bus = algbw_busbw(op, ts.size, t, n)
        rows.append(Row(ts.size, ts.count, dtype, ts.redop, ts.root, t * 1e6, alg, bus, plan.algo, plan.proto,
                        note))
    return rows


def format_table(rows: list[Row], header: str = "") -> str:
    lines = [header] if header else []
    lines.append(f"#{'size':>11} {'count':>12} {'type':>8} {'redop':>6} {'root':>5} "
                 f"{'time':>10} {'algbw':>8} {'busbw':>8} {'algo':>9} {'proto':>6}")
    lines.append(f"#{'(B)':>11} {'(elements)':>12} {'':>8} {'':>6} {'':>5} "
                 f"{'(us)':>10} {'(GB/s)':>8} {'(GB/s)':>8} {'':>9} {'':>6}")
    for r in rows:
        lines.append(f" {r.size:>11} {r.count:>12} {r.type:>8} {r.redop:>6} {r.root:>5} "
                     f"{r.time_us:>10.2f} {r.algbw:>8.2f} {r.busbw:>8.2f} {r.algo:>9} {r.proto:>6}")
    for note in dict.fromkeys(r.note for r in rows if r.note):
        lines.append(f"# {note}")
    if rows:
        avg = sum(r.busbw for r in rows) / len(rows)
        lines.append(f"# Avg bus bandwidth    : {avg:.4f}")
    return "\n".join(lines)


def rows_json(rows: list[Row]) -> list[dict]:
    keep = ("size", "count", "type", "time_us", "algbw", "busbw", "algo", "proto")
    return [{**{k: asdict(r)[k] for k in keep}, **({"note": r.note} if r.note else {})} for r in rows]
