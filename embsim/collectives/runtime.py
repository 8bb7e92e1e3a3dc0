"""CollectiveRuntime: the SimPy side of a collective (NCCL launch semantics). The training
engine runs every collective through it; nothing else in embsim does.

Every participant enqueues the collective on its communicator; collectives on one
communicator are matched in order, like NCCL's stream order: the k-th call of each rank
joins the k-th instance. An instance is *ready* when its LAST participant arrives (so
stragglers propagate). It then waits in its channel's queue until the channel admits
it, waits the plan's latency, and carries the plan's per-link demand over the shared
network; every participant's event fires when it ends.

Queue: ready instances of one channel start in the order of
(queue_key, instance number, ready time, position, arrival count) — queue_key is the
caller's scheduling key (the training engine passes its scheduler's), position its issue
order among collectives that become ready together. A channel starts the next instance
while the bytes in flight plus its size fit in `credit(channel)` bytes; credit None
means one at a time, and an idle channel always starts one. The default credit is
unlimited: every instance starts when ready. On a `serial(channel)` channel the credit
bounds what is posted, not what runs: the posted NCCL collectives run one after another
in the order they were admitted (one communicator's stream), so a later one waits for
the earlier's end and the queue order, fixed at admission, decides who gets the links;
parameter-server pushes and pulls (not NCCL kernels) still run side by side.

The training engine simulates one representative per class of identical GPUs, so a
caller may arrive on behalf of several ranks at once (:meth:`CollectiveRuntime.arrive`).

The model is duck-typed: ``model.plan(op, nbytes, ranks)`` returns an object with
``latency`` (s), ``time`` (s, idle network) and ``demand`` (embsim.network.Demand), and
optionally ``algo`` and ``proto`` (see embsim/collectives/model.py, CollectiveModel). A
caller may pass a plan it already holds instead (an alltoallv's, say).
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass
from typing import Any, Callable, Hashable, Iterable, Optional

import simpy

from ..network import Network
from ..identity import ByIdentity
from .communicator import Communicator, RankIndex
from .servers import SERVER_OPS


def _unlimited(channel: str) -> float | None:
    return math.inf


@dataclass(frozen=True)
class CollectiveRecord:
    """One completed collective instance (for Chrome traces and exposed-comm accounting)."""

    op: str
    nbytes: float
    algo: str
    proto: str
    n_ranks: int
    first_arrival: float  # s: first participant enqueued it
    start: float  # s: its channel admitted it; latency begins
    end: float  # s: its network transfer finished
    tag: Any
    communicator: Hashable
    seq: int  # index of this instance on its communicator
    plan_time: float  # s: the plan's idle-network time (latency + transfer alone)
    ready: float = 0.0  # s: last participant arrived
    channel: str = ""
    # s of node copies, host work and tail kernels its stream runs around the transfer
    # (a push's gather into host memory, a host table's allgather and apply): the event a
    # consumer waits on fires after them, while start..end is the transfer alone
    around: float = 0.0

    @property
    def queued(self) -> float:
        """Time it waited, ready, for its channel."""
        return self.start - self.ready

    @property
    def duration(self) -> float:
        """Start to end: what the network and latency cost, including sharing."""
        return self.end - self.start

    @property
    def skew(self) -> float:
        """Time the earliest participant waited for the last one."""
        return self.ready - self.first_arrival

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
    channel: str = ""
    queue_key: tuple = ()
    position: int = 0
    plan: Any = None
    on_done: Optional[Callable[[CollectiveRecord], None]] = None
    arrived: int = 0
    ready: float = 0.0
    tail: float = 0.0
    copy_before: Any = None
    copy_after: Any = None
    after: Any = None           # serial channel: the event of the instance posted before it
    done: Any = None            # serial channel: fires when this one leaves the stream
    parts: tuple = ()           # a family's members: (tag, position) each


def _unserial(channel: str) -> bool:
    return False


class CollectiveRuntime:
    """Matches participants of collectives, queues ready instances per channel and runs
    each over ``network``."""

    def __init__(self, env: simpy.Environment, network: Network, model: Any = None,
                 credit: Callable[[str], float | None] = _unlimited,
                 serial: Callable[[str], bool] = _unserial):
        self.env = env
        self.network = network
        self.model = model
        self.credit = credit
        self.serial = serial
        self._rules: dict[str, tuple[float | None, bool]] = {}   # channel -> (credit, serial)
        self._stream_tail: dict[str, simpy.Event] = {}    # serial channel -> last posted
        self.records: list[CollectiveRecord] = []
        self._communicators: dict[Hashable, Communicator] = {}
        self._rank_indexes = ByIdentity()                 # a rank tuple -> its RankIndex
        self._ready: dict[str, list] = {}                 # channel -> heap of ready instances
        self._in_flight_bytes: dict[str, list[float]] = {}
        self._arrivals = 0
        self.in_flight = 0          # instances running (latency or transfer) on any channel
        # fires (and is replaced) whenever in_flight goes from 0 to >0 or back
        self.changed = env.event()
        # instances running per rank tuple (few distinct tuples, so a rank is busy when a
        # busy tuple holds it: no per-rank counts, which cost O(ranks) per instance at
        # 16,384 GPUs), and the events of ranks someone watches (rank_changed), fired when
        # that rank goes from idle to busy or back
        self._running: dict[RankIndex, int] = {}
        self._rank_events: dict[int, simpy.Event] = {}

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
        *,
        channel: str = "",
        queue_key: tuple = (),
        position: int = 0,
        plan: Any = None,
        on_done: Optional[Callable[[CollectiveRecord], None]] = None,
        tail: float = 0.0,
        copy_before: Any = None,
        copy_after: Any = None,
        parts: tuple = (),
    ) -> simpy.Event | tuple[simpy.Event, ...]:
        """Ranks ``participants`` (a subset of ``ranks``) enqueue the collective at once.

        Returns the instance's event; its value is the :class:`CollectiveRecord`.
        ``on_done(record)`` runs when it ends, before the channel starts its next instance.
        ``tail`` seconds of kernels run on the collective's stream after the transfer (a
        data-parallel wrapper's post-all-reduce passes): the channel stays busy and the
        instance in flight until they end; the record's ``end`` is the transfer's.
        ``copy_before`` / ``copy_after`` (anything with ``latency`` seconds and a network
        ``demand``, plan.ops.NodeCopy) are copies inside the nodes on the same stream before
        / after the transfer (a parameter-server push's gather into host memory, a pull's
        copy back), carried by the network beside everything else; the record's ``start``
        and ``end`` are the transfer's own.
        The first arrival's ``channel``, ``queue_key``, ``position``, ``plan``, ``on_done``,
        ``tail`` and copies hold for the instance.

        ``parts``: a family of identical collectives that always arrive together (the
        partitions of one tensor), one (tag, position) each: counted as one arrival on
        one communicator and, once ready, queued as separate instances in this order,
        as if each had arrived alone; ``on_done`` runs for each (its record's ``tag``
        says which). Returns their events.
        """
        comm = self._communicator(tuple(ranks), key)
        group = comm.group(participants)
        seq = comm.take_seq(group)
        inst = comm.open.get(seq)
        if inst is None:
            inst = _Instance(op, nbytes, seq, tag, self.env.event(), self.env.now, channel,
                             queue_key, position, plan, on_done, tail=tail,
                             copy_before=copy_before, copy_after=copy_after, parts=parts)
            if parts:
                inst.event = tuple(self.env.event() for _ in parts)
            comm.open[seq] = inst
        elif inst.op != op or inst.nbytes != nbytes:
            raise ValueError(
                f"collective #{seq} on {comm.key!r}: {op} of {nbytes} B does not match "
                f"{inst.op} of {inst.nbytes} B enqueued by other ranks"
            )
        if inst.tag is None:
            inst.tag = tag
        inst.arrived += group.positions.size
        if inst.arrived == len(comm.ranks):
            del comm.open[seq]
            if inst.parts:
                for (part_tag, part_position), event in zip(inst.parts, inst.event):
                    part = object.__new__(_Instance)   # a shallow copy: copy.copy and
                    part.__dict__.update(inst.__dict__)  # dataclasses.replace cost ~10 µs each
                    part.tag, part.position, part.event, part.parts = part_tag, part_position, event, ()
                    self._make_ready(comm, part)
            else:
                self._make_ready(comm, inst)
        return inst.event

    def rank_busy(self, rank: int) -> bool:
        """Whether a collective `rank` takes part in is running (latency or transfer)."""
        return any(rank in index.position for index in self._running)

    def rank_changed(self, rank: int) -> simpy.Event:
        """An event that fires when rank_busy(rank) next changes."""
        ev = self._rank_events.get(rank)
        if ev is None:
            ev = self._rank_events[rank] = self.env.event()
        return ev

    def pending(self) -> list[tuple[Hashable, int, str, int, int]]:
        """Instances still waiting for ranks: (communicator, seq, op, arrived, size)."""
        return [
            (comm.key, inst.seq, inst.op, inst.arrived, len(comm.ranks))
            for comm in self._communicators.values()
            for inst in comm.open.values()
        ]

    # ---------------------------------------------------------------- internals
    def _communicator(self, ranks: tuple[int, ...], key: Optional[Hashable]) -> Communicator:
        ident = ranks if key is None else key
        comm = self._communicators.get(ident)
        if comm is None:
            if not ranks:
                raise ValueError("collective: empty rank list")
            if len(set(ranks)) != len(ranks):
                raise ValueError(f"collective: repeated rank in {ranks!r}")
            comm = Communicator(ident, self._rank_index(ranks))
            self._communicators[ident] = comm
        elif comm.ranks is not ranks and comm.ranks != ranks:
            raise ValueError(
                f"collective: communicator {ident!r} has ranks {comm.ranks!r}, not {ranks!r}"
            )
        return comm

    def _rank_index(self, ranks: tuple[int, ...]) -> RankIndex:
        return self._rank_indexes.get((ranks,), lambda: RankIndex(ranks))

    def _make_ready(self, comm: Communicator, inst: _Instance) -> None:
        inst.ready = self.env.now
        self._arrivals += 1
        order = inst.queue_key + (inst.seq, inst.ready, inst.position, self._arrivals)
        heapq.heappush(self._ready.setdefault(inst.channel, []), (order, comm, inst))
        self._dispatch(inst.channel)

    def _dispatch(self, channel: str) -> None:
        heap = self._ready.get(channel)
        in_flight = self._in_flight_bytes.setdefault(channel, [])
        rule = self._rules.get(channel)
        if rule is None:         # a channel's rule is fixed: asked once, not at every dispatch
            rule = self._rules[channel] = (self.credit(channel), self.serial(channel))
        credit, serial = rule
        while heap:
            _, comm, inst = heap[0]
            if in_flight and (credit is None or sum(in_flight) + inst.nbytes > credit):
                return
            heapq.heappop(heap)
            in_flight.append(inst.nbytes)
            if serial and inst.op not in SERVER_OPS:   # not NCCL kernels
                inst.after = self._stream_tail.get(channel)
                inst.done = self._stream_tail[channel] = self.env.event()
            self._set_in_flight(+1, comm)
            self.env.process(self._run(comm, inst))

    def _set_in_flight(self, delta: int, comm: Communicator) -> None:
        before = self.in_flight
        self.in_flight += delta
        if (before == 0) != (self.in_flight == 0):
            old, self.changed = self.changed, self.env.event()
            old.succeed()
        index = comm.index
        running = self._running.get(index, 0) + delta
        if running:
            self._running[index] = running
            if running != delta:        # was busy already
                return
        else:
            del self._running[index]
        # the tuple went idle -> busy or back: so did each of its ranks no other busy tuple
        # holds; watched ones fire in the tuple's order
        watched = sorted((index.position[rank], rank) for rank in self._rank_events
                         if rank in index.position and not self._busy_elsewhere(rank, index))
        for _, rank in watched:
            self._rank_events.pop(rank).succeed()

    def _busy_elsewhere(self, rank: int, index: RankIndex) -> bool:
        return any(rank in other.position for other in self._running if other is not index)

    def _carry(self, step, tag: str):
        """Wait `step.latency` seconds, then carry `step.demand` over the shared network
        (the collective's plan, or a copy before or after it)."""
        if step.latency > 0:
            yield self.env.timeout(step.latency)
        yield self.network.transfer(step.demand, tag=tag,
                                    data_factor=getattr(step, "data_factor", 1.0))

    def _run(self, comm: Communicator, inst: _Instance):
        plan = inst.plan if inst.plan is not None else self.model.plan(inst.op, inst.nbytes, comm.ranks)
        if plan.latency < 0:
            raise ValueError(f"collective plan for {inst.op}: negative latency {plan.latency}")
        tag = inst.tag if inst.tag is not None else f"{inst.op} {inst.nbytes:g} B"
        if inst.after is not None and not inst.after.processed:
            yield inst.after        # the collective posted before it on the stream
        began = self.env.now
        if inst.copy_before is not None:
            yield from self._carry(inst.copy_before, f"{tag} (copies before)")
        start = self.env.now
        yield from self._carry(plan, tag)
        end = self.env.now
        if inst.copy_after is not None:
            yield from self._carry(inst.copy_after, f"{tag} (copies after)")
        if inst.tail > 0:
            yield self.env.timeout(inst.tail)
        record = CollectiveRecord(
            op=inst.op,
            nbytes=inst.nbytes,
            algo=str(getattr(plan, "algo", "")),
            proto=str(getattr(plan, "proto", "")),
            n_ranks=len(comm.ranks),
            first_arrival=inst.first_arrival,
            start=start,
            end=end,
            tag=tag,
            communicator=comm.key,
            seq=inst.seq,
            plan_time=float(plan.time),
            ready=inst.ready,
            channel=inst.channel,
            around=(start - began) + (self.env.now - end),
        )
        self.records.append(record)
        self._in_flight_bytes[inst.channel].remove(inst.nbytes)
        if inst.done is not None:
            inst.done.succeed()
        self._set_in_flight(-1, comm)
        inst.event.succeed(record)
        if inst.on_done is not None:
            inst.on_done(record)
        self._dispatch(inst.channel)
