"""Families of collectives: identical collectives that always become ready together.

A partitioning scheduler (P3/ByteScheduler's priority, embrace-2d) cuts a tensor into
pieces that share everything but their name -- op, size, channel, priority, rank group
and the compute they wait for -- so every rank class arrives at all of them at the same
instant, and a per-layer update waits for all of them in order. At Merlin's jumbo model
that is 10^5 partitions a step times every rank class, and bookkeeping per (class,
partition) was most of a run's time. The engine therefore counts dependencies and
arrivals once per family, and a stream that waits for a whole family waits once and
writes the same wait records a wait per member would have. The members still run as
separate collectives, queued in their issue order (collectives.runtime, ``parts``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from ..plan.ops import CommOp


@dataclass(frozen=True, eq=False)
class Family:
    """Consecutive collectives of a step plan that differ only in name (one member: an
    ordinary collective)."""

    members: tuple[CommOp, ...]

    @property
    def first(self) -> CommOp:
        return self.members[0]


@dataclass(frozen=True)
class FamilyWait:
    """A compute op's wait for every member of `family`, in member order, `offset`
    iterations away."""

    family: Family
    offset: int


def _likeness(c: CommOp) -> tuple:
    # everything that decides when a collective becomes ready, where it queues and what it
    # carries; the matrix and copies are compared by identity (partitions share them)
    return (c.op, c.nbytes, c.category, c.channel, c.ready_after, c.priority, c.tensors,
            c.tail, c.group, c.ranks, id(c.matrix), id(c.copy_before), id(c.copy_after))


def families(comms: Iterable[CommOp]) -> tuple[Family, ...]:
    """The step's collectives in issue order, runs of like ones joined into a family."""
    runs: list[list[CommOp]] = []
    last = None
    for c in comms:
        like = _likeness(c)
        if runs and like == last:
            runs[-1].append(c)
        else:
            runs.append([c])
        last = like
    return tuple(Family(tuple(run)) for run in runs)


def family_waits(deps: tuple, family_of: Mapping[str, Family]) -> tuple:
    """A compute op's comm waits ((name, offset) pairs), each run that lists a whole
    family of two or more in member order at one offset replaced by one FamilyWait."""
    out: list = []
    i = 0
    while i < len(deps):
        name, offset = deps[i]
        family = family_of.get(name) if isinstance(name, str) else None
        n = len(family.members) if family is not None else 0
        if (n > 1 and i + n <= len(deps)
                and all(deps[i + j] == (m.name, offset) for j, m in enumerate(family.members))):
            out.append(FamilyWait(family, offset))
            i += n
        else:
            out.append(deps[i])
            i += 1
    return tuple(out)
