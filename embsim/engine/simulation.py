"""The training-step simulation: SimPy processes where time passes.

One compute stream per *class* of identical GPUs (symmetry: without stragglers every GPU
behaves the same, so one process stands for all of them; a straggling GPU or node is its
own class). Communication runs through collectives.runtime.CollectiveRuntime: each class
arrives at a collective when its inputs are ready there, the collective is ready when the
last class arrives (NCCL starts a collective when its last participant arrives), the
scheduler's queue key and channel credit order ready collectives per channel, and each
runs as latency + a flow group on the shared network, so concurrent collectives slow
each other exactly where they share links.
"""

from __future__ import annotations

import numpy as np
import simpy

from ..collectives.runtime import CollectiveRecord, CollectiveRuntime
from ..collectives.servers import SERVER_OPS
from ..plan.names import OpId
from ..plan.ops import CommOp, ComputeOp, StepPlan
from ..plan.timeline import CommRecord, ComputeRecord, EngineRun, RankClass, WaitRecord
from .families import Family, FamilyWait, families, family_waits


class Engine:
    def __init__(self, plan: StepPlan, scheduler, classes: tuple[RankClass, ...], collectives,
                 network_factory, ranks: tuple[int, ...], iterations: int = 5,
                 interference: float = 0.0, comm_interference: float = 0.0,
                 groups: dict | None = None):
        # iterations >= 2 (a warm-up and a measured step): SimulationConfig checks it
        self.plan = plan
        self.scheduler = scheduler
        self.classes = classes
        self.collectives = collectives
        self.ranks = ranks
        # CommOp.group -> the disjoint rank groups it runs over at once (tensor
        # parallelism); a group not named runs over every rank
        self.groups = dict(groups or {})
        self.iterations = iterations
        # Compute and communication sharing one resource (gloo's threads and compute on the
        # same cores; NCCL kernels and compute on the same SMs): compute runs 1/(1+f) as fast
        # while a collective is in flight, collectives 1/(1+g) as fast while compute runs.
        self.interference = interference
        self.comm_interference = comm_interference
        self._computing = 0
        self.env = simpy.Environment()
        self.network = network_factory(self.env)
        self.run_record = EngineRun(iterations=iterations, classes=classes)

        self.runtime = CollectiveRuntime(self.env, self.network,
                                         credit=lambda channel: scheduler.channel_rule(channel).credit,
                                         serial=lambda channel: scheduler.channel_rule(channel).serial)
        self._comm_index = {c.name: i for i, c in enumerate(plan.comms)}
        for c in plan.comms:
            if not c.ready_after:
                raise ValueError(f"comm op {c.name}: needs at least one dependency")
            if any(offset != 0 for _, offset in c.ready_after):
                raise ValueError(f"comm op {c.name}: ready_after offsets other than 0 unsupported")
        # like collectives issued together (one tensor's partitions) are counted, arrived
        # at and waited for once per family (engine.families)
        self._families = families(plan.comms)
        self._family_of = {c.name: f for f in self._families for c in f.members}
        self._member_index = {c.name: i for f in self._families for i, c in enumerate(f.members)}
        self._parts = {f: tuple((c.name, self._comm_index[c.name]) for c in f.members)
                       for f in self._families if len(f.members) > 1}
        # compute OpId or comm op name -> families (same iteration) that wait for it
        self._dependents: dict[OpId | str, list[Family]] = {}
        for f in self._families:
            for dep, _ in f.first.ready_after:
                self._dependents.setdefault(dep, []).append(f)
        self._waits = {op_id: family_waits(deps, self._family_of)
                       for op_id, deps in plan.comm_waits.items()}
        # (iteration, family) -> its members' end times so far, in member order; the
        # family's event fires with the last
        self._member_ends: dict[tuple[int, Family], list] = {}
        self._members_left: dict[tuple[int, Family], int] = {}
        # a finished family's (ends, ends as an array, the latest end before each member)
        self._family_ends: dict[tuple[int, Family], tuple] = {}
        self._family_done: dict[tuple[int, Family], simpy.Event] = {}
        self._pending: dict[tuple[str, int, str], int] = {}  # (class, iteration, family's first) -> deps left
        # per-class streams (pipeline stages): a class waits only for the dependencies its
        # own stream holds, and joins only the collectives its ranks take part in
        self._streams = {c.name: tuple(plan.streams.get(c.name, plan.stream)) for c in classes}
        self._own_deps: dict[str, dict[str, int]] = {}   # class -> comm op -> its deps there
        if plan.streams:
            counted: dict[int, dict[str, int]] = {}     # per distinct stream (one per stage)
            for cls in classes:
                stream = self._streams[cls.name]
                if id(stream) not in counted:
                    ids = {op.id for op in stream}
                    counted[id(stream)] = {c.name: sum(1 for d, _ in c.ready_after
                                                       if isinstance(d, str) or d in ids)
                                           for c in plan.comms}
                self._own_deps[cls.name] = counted[id(stream)]
        self._comm_done: dict[tuple[int, str], simpy.Event] = {}
        self._plans: dict[str, object] = {}  # comm op -> collective plan (same every iteration)

    # ----------------------------------------------------------------- public
    def run(self) -> EngineRun:
        for cls in self.classes:
            self.env.process(self._stream(cls))
        self.env.run()
        last = self.iterations - 1
        missing = [c.name for c in self.classes if (c.name, last) not in self.run_record.iteration_end]
        if missing:
            raise RuntimeError(f"simulation deadlocked: classes {missing} never finished "
                               f"(check the step plan's dependencies)")
        self.run_record.sim_events += (len(self.run_record.compute) + len(self.run_record.comm)
                                       + getattr(self.network, "recomputations", 0))
        return self.run_record

    # ---------------------------------------------------------------- compute
    def _comm_event(self, iteration: int, name: str) -> simpy.Event:
        return self._event(self._comm_done, (iteration, name))

    def _event(self, events: dict, key) -> simpy.Event:
        """The event under `key`, made on first ask (a waiter may come before or after it fires)."""
        ev = events.get(key)
        if ev is None:
            ev = events[key] = self.env.event()
        return ev

    def _stream(self, cls: RankClass):
        env = self.env
        rec = self.run_record
        for k in range(self.iterations):
            for op in self._streams[cls.name]:
                if op.lagged and k == 0:
                    self._compute_done(cls, k, op)
                    continue
                for wait in self._waits.get(op.id, ()):
                    if type(wait) is FamilyWait:
                        if k + wait.offset >= 0:
                            yield from self._wait_family(cls, k, wait)
                        continue
                    dep, offset = wait
                    if k + offset >= 0:
                        idle = env.now
                        yield self._comm_event(k + offset, dep)
                        if env.now > idle:
                            rec.waits.append(WaitRecord(cls.name, k, dep, idle, env.now, k + offset))
                start = env.now
                work = op.duration * _slowdown(cls, op)
                self._set_computing(+1)
                yield from self._busy(work, cls.ranks[0])
                self._set_computing(-1)
                rec.compute.append(ComputeRecord(cls.name, k, op.name, op.kind, start, env.now, work))
                self._compute_done(cls, k, op)
            rec.iteration_end[(cls.name, k)] = env.now
            if cls is self.classes[0]:
                rec.link_bytes_at[k] = self.network.bytes_carried.copy()
                rec.link_data_at[k] = self.network.data_sent

    def _wait_family(self, cls: RankClass, k: int, wait: FamilyWait):
        """Wait for every member of a family, writing the wait records that waiting for
        each member in turn writes: one per member that ended after the one before."""
        source = k + wait.offset
        idle = self.env.now
        done = self._family_event(source, wait.family)
        if not done.processed:
            yield done
        ends, arr, earlier = self._family_ends[(source, wait.family)]
        # member i ends a wait where it ends after everything before it and after `idle`;
        # each record starts at that running maximum (the family's part kept at its end)
        before = np.maximum(earlier, idle)
        members, waits = wait.family.members, self.run_record.waits
        for i in np.flatnonzero(arr > before).tolist():
            waits.append(WaitRecord(cls.name, k, members[i].name, float(before[i]), ends[i], source))

    def _family_event(self, iteration: int, family: Family) -> simpy.Event:
        return self._event(self._family_done, (iteration, family))

    def _set_computing(self, delta: int) -> None:
        before = self._computing
        self._computing += delta
        if self.comm_interference > 0 and (before == 0) != (self._computing == 0):
            self.network.set_capacity_scale(
                1.0 / (1.0 + self.comm_interference) if self._computing else 1.0)

    def _busy(self, duration: float, rank: int):
        """Occupy the compute stream for `duration` of work; with interference, work
        proceeds 1/(1+f) as fast while a collective of its own GPUs is in flight (`rank`:
        the class's first; a class's GPUs take part in the same collectives). Another
        pipeline stage's collectives run on other GPUs and do not slow it."""
        if self.interference <= 0.0:
            yield self.env.timeout(duration)
            return
        remaining = duration
        runtime = self.runtime
        while remaining > 1e-15:
            rate = 1.0 / (1.0 + self.interference) if runtime.rank_busy(rank) else 1.0
            start = self.env.now
            timer = self.env.timeout(remaining / rate)
            fired = yield timer | runtime.rank_changed(rank)
            if timer in fired:
                break
            remaining -= (self.env.now - start) * rate

    def _compute_done(self, cls: RankClass, k: int, op: ComputeOp) -> None:
        for family in self._dependents.get(op.id, ()):
            self._dep_satisfied(cls, k, family)

    def _dep_satisfied(self, cls: RankClass, k: int, family: Family) -> None:
        c = family.first
        key = (cls.name, k, c.name)
        own = self._own_deps.get(cls.name)
        left = self._pending.get(key, len(c.ready_after) if own is None else own[c.name]) - 1
        if left:
            self._pending[key] = left
            return
        self._pending.pop(key, None)
        # this class's GPUs arrive; the runtime starts the collective after the last class
        parts = self._parts.get(family, ())
        comms = self.plan.comms      # a family member's record names it (its tag)
        on_done = ((lambda record, k=k: self._comm_finished(k, comms[self._comm_index[record.tag]], record))
                   if parts else (lambda record, k=k, c=c: self._comm_finished(k, c, record)))
        self.runtime.arrive(c.op, c.nbytes, c.ranks or self.ranks, cls.ranks, key=c.name, tag=c.name,
                            channel=c.channel, queue_key=self.scheduler.queue_key(c, k),
                            position=self._comm_index[c.name], plan=self._plan(c), tail=c.tail,
                            copy_before=c.copy_before, copy_after=c.copy_after,
                            on_done=on_done, parts=parts)

    # ------------------------------------------------------------------- comm
    def _plan(self, c: CommOp):
        plan = self._plans.get(c.name)
        if plan is None:
            plan = self._plans[c.name] = (
                self.collectives.plan_servers(c.op, c.matrix, self.ranks) if c.op in SERVER_OPS
                else self.collectives.plan_alltoallv(c.matrix, self.ranks) if c.matrix is not None
                else self.collectives.plan_groups(c.op, c.nbytes, self.groups[c.group])
                if c.group in self.groups
                else self.collectives.plan(c.op, c.nbytes, c.ranks or self.ranks))
        return plan

    def _comm_finished(self, k: int, c: CommOp, r: CollectiveRecord) -> None:
        self.run_record.comm.append(CommRecord(k, c.name, c.op, c.nbytes, c.channel, c.category,
                                               r.algo, r.proto, r.ready, r.start, r.end,
                                               len(c.ranks) if c.ranks else 0, r.around))
        self._comm_event(k, c.name).succeed()
        family = self._family_of[c.name]
        if len(family.members) > 1:
            key = (k, family)
            ends = self._member_ends.get(key)
            if ends is None:
                ends = self._member_ends[key] = [None] * len(family.members)
                self._members_left[key] = len(family.members)
            ends[self._member_index[c.name]] = self.env.now
            self._members_left[key] -= 1
            if not self._members_left[key]:
                # the members' ends and, for each, the latest end before it: every class
                # waiting on the family reads them (_wait_family)
                arr = np.asarray(ends)
                earlier = np.empty_like(arr)
                earlier[0] = -np.inf
                np.maximum.accumulate(arr[:-1], out=earlier[1:])
                self._family_ends[key] = (ends, arr, earlier)
                del self._member_ends[key], self._members_left[key]
                self._family_event(k, family).succeed()
        # comm ops may depend on other comm ops (e.g. an index exchange before an AlltoAll)
        for d in self._dependents.get(c.name, ()):
            ranks = d.first.ranks
            for cls in self.classes:
                if not ranks or set(cls.ranks) <= set(ranks):
                    self._dep_satisfied(cls, k, d)


def _slowdown(cls: RankClass, op: ComputeOp) -> float:
    """The class's multiplier for one op: parameter-sized ops (ComputeOp.param_sized: the
    optimizer update, a DDP wrapper's bucket passes) take its param_slowdown, which leaves
    out the batch-length jitter (a padded or token-budget batch moves the forward and
    backward only)."""
    return cls.param_slowdown if op.param_sized and cls.param_slowdown is not None else cls.slowdown
