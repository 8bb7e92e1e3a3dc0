"""Which collective an nccl-tests run timed: from the binary named in the log, else the
file's name, else the table's own columns."""

from __future__ import annotations

import re
from pathlib import Path

from ..collectives.busbw import DATATYPES
from .nccl_tests_ranks import NcclTestsLogError

# nccl-tests binary names -> the op names embsim uses.
PERF_BINARIES = {
    "all_reduce": "all_reduce", "all_gather": "all_gather", "reduce_scatter": "reduce_scatter",
    "alltoall": "alltoall", "broadcast": "broadcast", "reduce": "reduce", "sendrecv": "sendrecv",
    "scatter": "scatter", "gather": "gather", "hypercube": "hypercube",
}
# Not \b: "run1_alltoall_perf.log" has no word boundary between "_" and "alltoall".
PERF_MENTION = re.compile(r"(?<![A-Za-z0-9])(" + "|".join(sorted(PERF_BINARIES, key=len, reverse=True))
                          + r")_perf(?:_mpi)?(?![A-Za-z0-9])")
# A file named after the op alone ("v100_alltoall.log", "all_reduce.txt", "sb-allgather.log",
# "h100-all-reduce.log"): the two-word ops first, so "all-reduce" is not read as "reduce".
_NAME_SPELLINGS = (
    (r"all[_-]?reduce", "all_reduce"), (r"all[_-]?gather", "all_gather"),
    (r"reduce[_-]?scatter", "reduce_scatter"), (r"all[_-]?to[_-]?all", "alltoall"),
    (r"send[_-]?recv", "sendrecv"), (r"broadcast", "broadcast"), (r"reduce", "reduce"),
    (r"scatter", "scatter"), (r"gather", "gather"), (r"hypercube", "hypercube"),
)
_OP_IN_NAME = re.compile(r"(?<![A-Za-z0-9])(?:" + "|".join(f"({p})" for p, _ in _NAME_SPELLINGS)
                         + r")(?![A-Za-z0-9])", re.IGNORECASE)


def _ops_in_name(name: str) -> set[str]:
    return {_NAME_SPELLINGS[m.lastindex - 1][1] for m in _OP_IN_NAME.finditer(name)}


def infer_op(p, source: str) -> tuple[str, str]:
    """The op from the log's own words, else from the file name, else from the columns
    (`p`: the reader's partial run, with its mentions, column names and rows)."""
    if p.op_mentions:
        return PERF_BINARIES[p.op_mentions[-1]], f"'{p.op_mentions[-1]}_perf' in the log"
    name = Path(source).name
    match = PERF_MENTION.search(name)
    if match:
        return PERF_BINARIES[match.group(1)], f"the file name {name!r}"
    named = _ops_in_name(name)
    if len(named) == 1:                  # two ops in one name say neither
        return named.pop(), f"the file name {name!r}"
    # Size/count relation (src/common.cu setupArgs): AG/RS/A2A print per-rank counts.
    row = p.rows[0]
    # a per-rank count is size / (element x ranks): below size / element
    per_rank = row.count * DATATYPES[row.dtype] < row.size
    reducing = row.redop not in ("none", "")
    columns = p.columns or []
    if reducing:
        op = "reduce" if row.root >= 0 else ("reduce_scatter" if per_rank else "all_reduce")
    elif row.root >= 0:
        op = "broadcast" if not per_rank else None
    elif "redop" in columns and "root" not in columns and row.redop == "":
        # before nccl-tests v2.13.0 only alltoall_perf printed a redop column left blank
        return "alltoall", "the columns (a blank redop column: alltoall_perf before nccl-tests v2.13.0)"
    elif "redop" not in columns and "root" not in columns and per_rank:
        # before v2.13.0 all_gather_perf printed neither column (hypercube_perf too: --op hypercube)
        return "all_gather", "the columns (no redop/root, per-rank counts: all_gather_perf before nccl-tests v2.13.0)"
    else:
        op = None if per_rank else "sendrecv"
    if op is None:
        raise NcclTestsLogError(f"{source} (run at line {p.line}): cannot tell which collective "
                                f"this is (all_gather, alltoall or gather/scatter); name the file "
                                f"after the binary, e.g. alltoall_perf.log, or pass --op")
    return op, "the columns (redop/root/count)"
