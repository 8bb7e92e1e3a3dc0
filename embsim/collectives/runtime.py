"""CollectiveRuntime: the SimPy side of a collective (NCCL launch semantics).

Every participant enqueues the collective on its communicator; collectives on one
communicator are matched in order, like NCCL's stream order: the k-th call of each rank
joins the k-th instance. An instance starts when its LAST participant arrives (so
stragglers propagate), waits the plan's latency, then carries the plan's per-link demand
over the shared network; every participant's event fires when it ends.

The training engine simulates one representative per class of identical GPUs, so a
caller may arrive on behalf of several ranks at once (:meth:`CollectiveRuntime.arrive`).

The model is duck-typed: ``model.plan(op, nbytes, ranks)`` returns an object with
``latency`` (s), ``time`` (s, idle network) and ``demand`` (embsim.network.Demand), and
optionally ``algo`` and ``proto`` (see embsim/collectives/model.py, CollectiveModel).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Hashable, Iterable, Optional

import numpy as np
import simpy

from embsim.network import Network


@dataclass(frozen=True)
class CollectiveRecord:
    """One completed collective instance (for Chrome traces and exposed-comm accounting)."""

    op: str
    nbytes: float
    algo: str
    proto: str
    n_ranks: int
    first_arrival: float  # s: first participant enqueued it
    start: float  # s: last participant arrived; latency begins
    end: float  # s: its network transfer finished
    tag: Any
    communicator: Hashable
    seq: int  # index of this instance on its communicator
    plan_time: float  # s: the plan's idle-network time (latency + transfer alone)

    @property
    def duration(self) -> float:
        """Start to end: what the network and latency cost, including sharing."""
        return self.end - self.start

    @property
    def skew(self) -> float:
        """Time the earliest participant waited for the last one."""
        return self.start - self.first_arrival

    @property
    def slowdown(self) -> float:
        """Duration over the idle-network time (1.0 when nothing else shared its links)."""
        return self.duration / self.plan_time if self.plan_time > 0 else 1.0


@dataclass(eq=False)
class _Instance:
    op: str
    nbytes: float
    seq: int
    tag: Any
    event: simpy.Event
    first_arrival: float
    arrived: int = 0


class _Communicator:
    """Ranks of one communicator, each rank's next sequence index, and open instances."""

    def __init__(self, key: Hashable, ranks: tuple[int, ...]):
        self.key = key
        self.ranks = ranks
        self.position = {r: i for i, r in enumerate(ranks)}
        self.next_seq = np.zeros(len(ranks), dtype=np.int64)
        self.open: dict[int, _Instance] = {}  # seq -> instance, insertion-ordered

    def positions(self, participants: Iterable[int]) -> np.ndarray:
        try:
            pos = np.fromiter((self.position[r] for r in participants), dtype=np.int64)
        except KeyError as err:
            raise ValueError(
                f"collective: rank {err.args[0]} is not in communicator {self.key!r}"
            ) from None
        if pos.size == 0:
            raise ValueError(f"collective: no participant ranks for communicator {self.key!r}")
        if np.unique(pos).size != pos.size:
            raise ValueError(f"collective: a rank arrives twice at once on {self.key!r}")
        return pos


class CollectiveRuntime:
    """Matches participants of collectives and runs each instance over ``network``."""

    def __init__(self, env: simpy.Environment, network: Network, model: Any):
        self.env = env
        self.network = network
        self.model = model
        self.records: list[CollectiveRecord] = []
        self._communicators: dict[Hashable, _Communicator] = {}

    # ------------------------------------------------------------------ public
    def collective(
        self,
        op: str,
        nbytes: float,
        ranks: tuple[int, ...],
        rank: int,
        key: Optional[Hashable] = None,
        tag: Any = None,
    ) -> simpy.Event:
        """Rank ``rank`` enqueues ``op`` of ``nbytes`` on communicator ``key`` (or ``ranks``)."""
        return self.arrive(op, nbytes, ranks, (rank,), key=key, tag=tag)

    def arrive(
        self,
        op: str,
        nbytes: float,
        ranks: tuple[int, ...],
        participants: Iterable[int],
        key: Optional[Hashable] = None,
        tag: Any = None,
    ) -> simpy.Event:
        """Ranks ``participants`` (a subset of ``ranks``) enqueue the collective at once.

        Returns the instance's event; its value is the :class:`CollectiveRecord`.
        """
        comm = self._communicator(tuple(ranks), key)
        pos = comm.positions(participants)
        seqs = comm.next_seq[pos]
        seq = int(seqs[0])
        if np.any(seqs != seq):
            raise ValueError(
                f"collective: ranks arriving together on {comm.key!r} are at different "
                f"positions of its stream ({int(seqs.min())}..{int(seqs.max())})"
            )
        comm.next_seq[pos] += 1
        inst = comm.open.get(seq)
        if inst is None:
            inst = _Instance(op, nbytes, seq, tag, self.env.event(), self.env.now)
            comm.open[seq] = inst
        elif inst.op != op or inst.nbytes != nbytes:
            raise ValueError(
                f"collective #{seq} on {comm.key!r}: {op} of {nbytes} B does not match "
                f"{inst.op} of {inst.nbytes} B enqueued by other ranks"
            )
        if inst.tag is None:
            inst.tag = tag
        inst.arrived += pos.size
        if inst.arrived == len(comm.ranks):
            del comm.open[seq]
            self.env.process(self._run(comm, inst))
        return inst.event

    def pending(self) -> list[tuple[Hashable, int, str, int, int]]:
        """Instances still waiting for ranks: (communicator, seq, op, arrived, size)."""
        return [
            (comm.key, inst.seq, inst.op, inst.arrived, len(comm.ranks))
            for comm in self._communicators.values()
            for inst in comm.open.values()
        ]

    # ---------------------------------------------------------------- internals
    def _communicator(self, ranks: tuple[int, ...], key: Optional[Hashable]) -> _Communicator:
        ident = ranks if key is None else key
        comm = self._communicators.get(ident)
        if comm is None:
            if not ranks:
                raise ValueError("collective: empty rank list")
            if len(set(ranks)) != len(ranks):
                raise ValueError(f"collective: repeated rank in {ranks!r}")
            comm = _Communicator(ident, ranks)
            self._communicators[ident] = comm
        elif comm.ranks != ranks:
            raise ValueError(
                f"collective: communicator {ident!r} has ranks {comm.ranks!r}, not {ranks!r}"
            )
        return comm

    def _run(self, comm: _Communicator, inst: _Instance):
        start = self.env.now
        plan = self.model.plan(inst.op, inst.nbytes, comm.ranks)
        if plan.latency < 0:
            raise ValueError(f"collective plan for {inst.op}: negative latency {plan.latency}")
        tag = inst.tag if inst.tag is not None else f"{inst.op} {inst.nbytes:g} B"
        if plan.latency > 0:
            yield self.env.timeout(plan.latency)
        yield self.network.transfer(plan.demand, tag=tag)
        record = CollectiveRecord(
            op=inst.op,
            nbytes=inst.nbytes,
            algo=str(getattr(plan, "algo", "")),
            proto=str(getattr(plan, "proto", "")),
            n_ranks=len(comm.ranks),
            first_arrival=inst.first_arrival,
            start=start,
            end=self.env.now,
            tag=tag,
            communicator=comm.key,
            seq=inst.seq,
            plan_time=float(plan.time),
        )
        self.records.append(record)
        inst.event.succeed(record)
