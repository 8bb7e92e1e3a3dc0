"""Chrome trace JSON (Perfetto / chrome://tracing) of a simulated run.

One process per GPU, or per node when there are more than `max_gpu_processes` GPUs
(then each node shows its first GPU, which stands for the node). Thread 0 is the
compute stream; each communication channel gets its own thread, and more where its
transfers overlap (one lane each, so no slice is drawn inside another it is not part of).
Times in µs.
"""

from __future__ import annotations

import json

from ..atomic import atomic_write_text
from ..plan.timeline import EngineRun
from .units import human_bytes


def chrome_trace(run: EngineRun, n_gpus: int, gpus_per_node: int,
                 max_gpu_processes: int = 16) -> dict:
    per_gpu = n_gpus <= max_gpu_processes
    if per_gpu:
        procs = [(r, f"GPU {r} (node {r // gpus_per_node})", r) for r in range(n_gpus)]
    else:
        procs = [(n, f"node {n} (GPU {n * gpus_per_node})", n * gpus_per_node)
                 for n in range(max(1, n_gpus // gpus_per_node))]
    class_of = {}
    for c in run.classes:
        for r in c.ranks:
            class_of[r] = c.name
    lane_of, lanes = _lanes(run.comm)
    tid_of = {key: i + 1 for i, key in enumerate(lanes)}

    events: list[dict] = []
    by_class: dict[str, list] = {}
    for r in run.compute:
        by_class.setdefault(r.cls, []).append(r)
    waits: dict[str, list] = {}
    for w in run.waits:
        waits.setdefault(w.cls, []).append(w)
    op_of = {r.name: r.op for r in run.comm}
    for pid, label, rank in procs:
        events.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": label}})
        events.append({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": pid}})
        events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": 0, "args": {"name": "compute"}})
        for (ch, lane), tid in tid_of.items():
            events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                           "args": {"name": f"comm: {ch}" + (f" ({lane + 1})" if lane else "")}})
        cls = class_of.get(rank, run.classes[0].name)
        for r in by_class.get(cls, ()):
            events.append({"ph": "X", "name": r.name, "cat": r.kind, "pid": pid, "tid": 0,
                           "ts": r.start * 1e6, "dur": (r.end - r.start) * 1e6,
                           "args": {"iteration": r.iteration}})
        # the compute stream idle on a collective: exposed communication, named by what it waits for
        for w in waits.get(cls, ()):
            events.append({"ph": "X", "name": f"wait: {op_of.get(w.comm, w.comm)}", "cat": "exposed",
                           "pid": pid, "tid": 0, "ts": w.start * 1e6, "dur": (w.end - w.start) * 1e6,
                           "args": {"iteration": w.iteration, "tensor": w.comm}})
        for i, r in enumerate(run.comm):
            events.append({"ph": "X", "name": f"{r.op} {human_bytes(r.nbytes)}", "cat": r.category,
                           "pid": pid, "tid": tid_of[(r.channel, lane_of[i])], "ts": r.start * 1e6,
                           "dur": (r.end - r.start) * 1e6,
                           "args": {"iteration": r.iteration, "tensor": r.name, "bytes": r.nbytes,
                                    "algo": r.algo, "proto": r.proto,
                                    "waited_us": (r.start - r.ready) * 1e6}})
    return {"traceEvents": events, "displayTimeUnit": "ms"}


def _lanes(records) -> tuple[list[int], list[tuple[str, int]]]:
    """A lane per record within its channel, so that no two slices of one thread overlap
    (Perfetto draws a slice that starts inside another and ends after it wrongly): a
    channel's parameter-server transfers run side by side, and so do collectives of
    channels that admit several. (lane of each record, the (channel, lane) threads in order)."""
    ends: dict[str, list[float]] = {}
    lane_of = [0] * len(records)
    for i in sorted(range(len(records)), key=lambda i: (records[i].start, records[i].end, i)):
        r = records[i]
        busy = ends.setdefault(r.channel, [])
        free = next((k for k, end in enumerate(busy) if end <= r.start), None)
        if free is None:
            busy.append(r.end)
            free = len(busy) - 1
        else:
            busy[free] = r.end
        lane_of[i] = free
    lanes = [(ch, k) for ch in sorted(ends) for k in range(len(ends[ch]))]
    return lane_of, lanes


def write_chrome_trace(path, run: EngineRun, n_gpus: int, gpus_per_node: int,
                       about: dict | None = None) -> None:
    """`about`: what was simulated and where its compute times came from, kept in the
    file's `otherData` (the Trace Event Format's free metadata, shown by Perfetto's info
    page): a timeline without it cannot be told from another run's."""
    doc = chrome_trace(run, n_gpus, gpus_per_node)
    if about:
        doc["otherData"] = about
    atomic_write_text(path, json.dumps(doc))
