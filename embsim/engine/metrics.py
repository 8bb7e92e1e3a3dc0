"""Turn an EngineRun's timeline into the figures people ask for: steady-state step time,
compute vs exposed communication, bytes per GPU by collective, link utilisation."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..plan.names import OpId
from ..plan.ops import channel_family
from ..plan.timeline import EngineRun
from .wait_blame import ChannelIndex, blame


@dataclass(frozen=True)
class StepMetrics:
    step_time: float                 # s, steady state (mean over iterations after the first)
    compute: float                   # s of compute-stream work per step (slowest class)
    exposed_comm: float              # s per step the slowest class's stream waits on communication
    comm_bytes_per_gpu: dict         # op -> bytes sent per GPU per step
    comm_time: dict                  # op -> s of collective time per step (wall, summed)
    # link kind -> (mean over its links, its hottest link's) utilisation, each link's bytes
    # over capacity x the steady state: step averages, not peaks in time (a link saturated
    # for 5 % of the step reads 5 %)
    link_utilisation: dict
    iterations_measured: int
    # op -> collectives per step (a collective of some ranks only counts for its share)
    comm_count: dict = field(default_factory=dict)
    # s per step during which at least one collective runs (overlapping ones counted once)
    comm_wall: float = 0.0
    # op -> s per step the slowest GPUs' compute stream sat waiting for it: the exposed
    # communication, by the collective it waited on
    exposed_by_op: dict = field(default_factory=dict)
    # op -> s per step of node copies, host work and tail kernels its collectives' streams
    # ran around the transfers (comm_time is the transfers alone); what a consumer also waits for
    comm_around: dict = field(default_factory=dict)
    # s per step of `compute` that the slowest class's compute ran slowed while its own
    # collectives were in flight (interference): communication's cost, paid on the compute stream
    compute_stretch: float = 0.0
    # link kind -> bytes per step its links carried together (every link of the kind, each
    # direction its own link: a byte between nodes crosses two "nic" links)
    link_bytes: dict = field(default_factory=dict)
    # extra op tag -> s per step of `compute` the slowest class ran ops of that tag (a
    # strategy's or DDP's own kernels: the bucket copies, engine.bucket_passes)
    extra_by_tag: dict = field(default_factory=dict)


def steady_window(run: EngineRun) -> tuple[int, int]:
    """Iterations [first, last] whose ends bound the measured steady state: the first
    iteration is warm-up (no overlap with a previous step)."""
    return 0, run.iterations - 1


def busy_wall(intervals) -> float:
    """Length of the union of (start, end) intervals: the time during which any runs."""
    total, reach = 0.0, float("-inf")
    for start, end in sorted(intervals):
        if end <= reach:
            continue
        total += end - max(start, reach)
        reach = end
    return total


def step_metrics(run: EngineRun, bytes_per_gpu, link_kinds: dict, capacity: np.ndarray) -> StepMetrics:
    first, last = steady_window(run)
    n = last - first
    ends = {c.name: (run.iteration_end[(c.name, first)], run.iteration_end[(c.name, last)])
            for c in run.classes}
    step = max((b - a) / n for a, b in ends.values())

    busy: dict[str, float] = {}
    work: dict[str, float] = {}
    extra: dict[tuple[str, str], float] = {}     # (class, tag) -> s
    for r in run.compute:
        if first < r.iteration <= last:
            busy[r.cls] = busy.get(r.cls, 0.0) + (r.end - r.start)
            work[r.cls] = work.get(r.cls, 0.0) + r.work
            if r.kind == "extra":
                key = (r.cls, OpId.parse(r.name).tag)
                extra[key] = extra.get(key, 0.0) + (r.end - r.start)
    busiest = max(busy, key=busy.get, default=None)         # the class with the most compute
    compute = busy.get(busiest, 0.0) / n
    extra_by_tag = {tag: s / n for (cls, tag), s in extra.items() if cls == busiest}

    comm_bytes: dict[str, float] = {}
    comm_time: dict[str, float] = {}
    comm_around: dict[str, float] = {}
    comm_count: dict[str, float] = {}
    # per GPU over the whole cluster: a collective of some ranks only (a pipeline stage's
    # gradient sync) counts for its share of the GPUs
    world = sum(len(c.ranks) for c in run.classes)
    op_of: dict[str, str] = {}        # collective name -> the key its figures go under
    for r in run.comm:
        # tensor parallelism's activation collectives apart from the gradients' (engine.tp_plan)
        # and pipeline parallelism's stage-to-stage sends and step-end collectives (engine.pp_plan)
        # a stage pair's "pp:<s>" is "pp", a pipeline stage's own "tp@s<s>" is "tp"
        family = channel_family(r.channel).split(":")[0]
        key = op_of[r.name] = f"{family} {r.op}" if family in ("tp", "pp") else r.op
        if first < r.iteration <= last:
            share = min(1.0, r.ranks / world) if r.ranks and world else 1.0
            comm_bytes[key] = comm_bytes.get(key, 0.0) + bytes_per_gpu(r) * share
            # per GPU as the bytes are: a stage's collective occupies its own GPUs only
            comm_time[key] = comm_time.get(key, 0.0) + (r.end - r.start) * share
            if r.around:
                comm_around[key] = comm_around.get(key, 0.0) + r.around * share
            comm_count[key] = comm_count.get(key, 0.0) + share
    comm_bytes = {k: v / n for k, v in comm_bytes.items()}
    comm_time = {k: v / n for k, v in comm_time.items()}
    comm_around = {k: v / n for k, v in comm_around.items()}
    comm_count = {k: v / n for k, v in comm_count.items()}
    # the GPUs with the most compute: the others' extra waits are for them, not for the network
    slowest = max(ends, key=lambda c: (busy.get(c, 0.0), ends[c][1] - ends[c][0]))
    exposed_by_op: dict[str, float] = {}
    waits = [w for w in run.waits if w.cls == slowest and first < w.iteration <= last]
    index = ChannelIndex(run.comm) if waits else None
    for w in waits:
        for r, seconds in blame(w, index):
            key = op_of.get(w.comm, w.comm) if r is None else op_of[r.name]
            exposed_by_op[key] = exposed_by_op.get(key, 0.0) + seconds / n
    wall = busy_wall([(r.start, r.end) for r in run.comm if first < r.iteration <= last]) / n

    util: dict[str, tuple[float, float]] = {}
    link_bytes: dict[str, float] = {}
    if first in run.link_bytes_at and last in run.link_bytes_at:
        t0 = run.iteration_end[(run.classes[0].name, first)]
        t1 = run.iteration_end[(run.classes[0].name, last)]
        carried = run.link_bytes_at[last] - run.link_bytes_at[first]
        # occupancy (a collective's demand is scaled to its modelled time) gives how busy a
        # link was; the data its transfers were given gives the bytes that crossed it
        sent = run.link_data_at[last] - run.link_data_at[first]
        if t1 > t0:
            for kind, ids in link_kinds.items():
                if len(ids):
                    u = carried[ids] / (capacity[ids] * (t1 - t0))     # each link's step average
                    util[kind] = (float(u.mean()), float(u.max()))     # (mean, hottest link)
                    link_bytes[kind] = float(sent[ids].sum()) / n
    return StepMetrics(step_time=step, compute=compute, exposed_comm=max(0.0, step - compute),
                       comm_bytes_per_gpu=comm_bytes, comm_time=comm_time,
                       link_utilisation=util, iterations_measured=n, comm_count=comm_count,
                       comm_wall=wall, exposed_by_op=exposed_by_op, comm_around=comm_around,
                       compute_stretch=max(0.0, compute - work.get(busiest, 0.0) / n),
                       link_bytes=link_bytes, extra_by_tag=extra_by_tag)
