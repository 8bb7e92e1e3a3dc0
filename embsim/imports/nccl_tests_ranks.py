"""How many ranks an nccl-tests run had, from what its log shows.

The `# Rank` lines list them, but pasted logs often leave them out or cut a long list short.
The table itself fixes the count two ways: AllGather, ReduceScatter and AlltoAll print each
rank's count (size / (count x element) is the rank count), and every op prints busbw/algbw,
which is the op's factor for its rank count (collectives.busbw). A count from one source is
checked against the others; a log whose sources disagree was cut or merged wrongly, or the
system named for it is not the one measured.
"""

from __future__ import annotations

from dataclasses import replace

from ..collectives.busbw import DATATYPES, busbw_factor
from ..errors import InputError

# ops whose printed count is per rank (size = count x element x ranks)
PER_RANK_COUNT_OPS = ("all_gather", "reduce_scatter", "alltoall", "gather", "scatter")


class NcclTestsLogError(InputError):
    """A log that is not (a whole) nccl-tests output."""


class NotNcclTestsLog(NcclTestsLogError):
    """A file with no nccl-tests run at all (a README beside the logs in a folder)."""


def _per_rank_multiple(rows) -> int | None:
    """AllGather, ReduceScatter and AlltoAll (and gather/scatter) print each rank's count
    (nccl-tests src/*.cu GetCollByteCount: paramcount = count / nranks): size = count x
    element x ranks. The multiple when every row gives the same one above 1."""
    multiples = set()
    for row in rows:
        unit = row.count * DATATYPES[row.dtype]
        if row.size % unit:
            return None
        multiples.add(row.size // unit)
    if len(multiples) != 1:
        return None
    k = multiples.pop()
    return k if k > 1 else None


def rank_count(listed: tuple[int, ...], rows, op: str, where: str) -> int:
    """How many ranks ran: the rank lines' count when they are 0..k-1 and the table does not
    say more (a table that says fewer was cut or merged wrongly); else, rank lines left out
    or cut short, the table's own per-rank count, else 0 (unknown)."""
    multiple = _per_rank_multiple(rows) if op in PER_RANK_COUNT_OPS else None
    n = len(listed) if listed == tuple(range(len(listed))) else 0
    says_more = n and (multiple > n if multiple else _more_ranks(rows, op, n))
    if n and not says_more:
        if multiple and multiple != n:
            raise NcclTestsLogError(f"{where}: {n} rank lines but the table's counts give "
                                    f"{multiple} ranks")
        _check_rank_count(rows, op, n, where)
        return n
    if multiple:
        _check_listed(listed, multiple, where, f"the table's counts give {multiple} ranks")
        _check_rank_count(rows, op, multiple, where, "its per-rank counts")
    return multiple or 0


def _check_listed(listed: tuple[int, ...], n: int, where: str, says: str) -> None:
    if listed and listed[-1] >= n:
        raise NcclTestsLogError(f"{where}: a rank line names rank {listed[-1]} but {says}")


def with_rank_count(run, n: int, system: str):
    """An incomplete run (an nccl_tests_log.NcclTestsRun, not imported: that module imports
    this one) given its rank count by the caller (`system`: the measured system it names,
    with n GPUs), checked against what the log shows: the listed ranks, the table's own
    count, and busbw/algbw, which is the op's factor for n ranks."""
    if run.complete:
        return run
    if n < 2:
        raise NcclTestsLogError(f"{run.where}: {system} has one GPU: nothing crosses a link "
                                f"(busbw is 0 by definition); embsim models collectives of 2 or more GPUs")
    if run.ranks and run.ranks != n:
        raise NcclTestsLogError(f"{run.where}: the table's counts give {run.ranks} ranks but "
                                f"{system} has {n} GPUs")
    _check_listed(run.listed_ranks, n, run.where, f"{system} has {n} GPUs")
    _check_rank_count(run.rows, run.op, n, run.where, f"{system}'s {n} GPUs")
    return replace(run, ranks=n)


def _ratio_off(rows, op: str, n: int):
    """busbw/algbw printed by nccl-tests is the op's factor for its rank count: the first row
    whose ratio is off n's factor, as (row, ratio, factor), or None."""
    factor = busbw_factor(op, n)
    for row in rows:
        m = row.measurement("in-place")
        if m is None or m.algbw < 1e9:      # below 1 GB/s two printed decimals are too coarse
            continue
        ratio = m.busbw / m.algbw
        if abs(ratio - factor) > 0.02 * factor + 0.01e9 / m.algbw:
            return row, ratio, factor
    return None


def _more_ranks(rows, op: str, n: int) -> bool:
    """The table's busbw/algbw is the factor of more ranks than n (a cut rank list)."""
    off = _ratio_off(rows, op, n)
    return off is not None and off[1] > off[2]


def _check_rank_count(rows, op: str, n: int, where: str, counted: str = "the rank lines") -> None:
    """A rank count (from the log's counts, or the system named for it) that the table's
    own busbw/algbw contradicts: the log was cut or merged wrongly, or the system is not
    the one measured."""
    off = _ratio_off(rows, op, n)
    if off:
        row, ratio, factor = off
        raise NcclTestsLogError(f"{where}: line {row.line}: busbw/algbw = {ratio:.3f} but {op} on "
                                f"{n} ranks gives {factor:.3f}; {counted} and the table disagree")
