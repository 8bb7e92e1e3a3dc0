"""Why one row of a compare matrix beats another, in words: a scheduler that loses to fifo
(its bottleneck: the compute stream or the network, and whether its collectives got more and
slower), and the best row against the best row of another strategy (the step split into
computation and exposed communication, and what the communication is)."""

from __future__ import annotations

from ..compare import TRAINING_MEAN_ERROR, CompareRow, best_fitting, rank_key
from .units import human_bytes, human_time


def waited_on(row: CompareRow, most: int = 2) -> str:
    """'alltoall 4.97 ms, all_gather 1.20 ms': what the row's exposed time waited for, most
    first (CompareRow.exposed_by_op is already engine.result.most_first's order)."""
    return ", ".join(f"{op} {human_time(s)}" for op, s in row.exposed_by_op[:most])


def comm_shape(row: CompareRow) -> str:
    """'N collectives a step at R GB/s per GPU while they run' (what the bytes cost)."""
    if row.collectives is None or row.comm_rate is None:
        return ""
    return f"{row.collectives:,.0f} collectives a step at {row.comm_rate / 1e9:,.1f} GB/s per GPU while they run"


# a row whose collectives run this much slower per byte than the other's, and are this many
# times as many, pays for their number: each pays NCCL's fixed per-operation and per-step costs
LATENCY_RATE_DROP = 0.67
LATENCY_COUNT_RISE = 1.5


def _latency_bound(row: CompareRow, other: CompareRow) -> bool:
    if None in (row.comm_rate, other.comm_rate, row.collectives, other.collectives):
        return False
    return (row.comm_rate < other.comm_rate * LATENCY_RATE_DROP
            and row.collectives > other.collectives * LATENCY_COUNT_RISE)


def bottleneck(row: CompareRow, fifo: CompareRow) -> str:
    """Why `row` is slower than the same strategy under fifo: the compute stream (more
    computation or updates serialised on it) or the network (more exposed
    communication), with the busiest link class, and, where its collectives got many more
    and slower per byte, latency (the bytes cut into many small collectives). Otherwise the
    same collectives sat less under compute, which the exposed figure already says."""
    d_step = row.step_time - fifo.step_time
    d_compute = row.compute - fifo.compute
    d_exposed = row.exposed_comm - fifo.exposed_comm
    if d_compute >= d_exposed:
        return (f"{row.label} loses to {fifo.label} by {d_step * 1e3:.2f} ms: bottleneck the compute "
                f"stream (+{d_compute * 1e3:.2f} ms of computation)")
    link = ""
    if row.busiest_link is not None:
        kind, mean, peak = row.busiest_link
        link = f", busiest link class {kind} at {mean * 100:.0f} % mean / {peak * 100:.0f} % peak utilisation"
    why = ""
    if _latency_bound(row, fifo):
        same = (row.comm_bytes_per_gpu is not None and fifo.comm_bytes_per_gpu
                and abs(row.comm_bytes_per_gpu / fifo.comm_bytes_per_gpu - 1) < 0.01)
        why = (f"; latency: {comm_shape(row)}, against fifo's {comm_shape(fifo)}: "
               f"{'the same bytes' if same else 'its bytes'} in smaller collectives, each paying "
               f"its fixed costs")
    return (f"{row.label} loses to {fifo.label} by {d_step * 1e3:.2f} ms: bottleneck the network "
            f"(+{d_exposed * 1e3:.2f} ms of exposed communication{link}){why}")


def why_best(rows) -> str | None:
    """Why the best fitting row beats the best fitting row of any other strategy: its step
    split into computation and exposed communication against the other's, and what its
    communication is (bytes per GPU, collectives, their rate while running). None when no
    other strategy has a fitting row."""
    best = best_fitting(rows)
    if best is None:
        return None
    others = [r for r in rows if r.refused is None and r.fits_in_memory and r.strategy != best.strategy]
    if not others:
        return None
    other = min(others, key=rank_key)
    d_step = other.step_time - best.step_time
    terms = [("exposed communication", best.exposed_comm, other.exposed_comm),
             ("computation", best.compute, other.compute)]
    terms.sort(key=lambda t: -(t[2] - t[1]))          # what it gains most on first
    parts = [f"{name} {human_time(mine)} against {human_time(theirs)} ({(mine - theirs) * 1e3:+.2f} ms)"
             for name, mine, theirs in terms]
    gap = d_step / other.step_time
    if gap < 1e-9:
        lead = f"{best.label} ties with {other.label}, the best row of another strategy"
    else:
        share = f"{gap:.1%}" if gap >= 1e-3 else f"{gap:.2%}"      # a 0.04 ms lead is not "0.0%"
        lead = (f"{best.label} {'beats' if gap >= TRAINING_MEAN_ERROR else 'leads'} {other.label}, the best "
                f"row of another strategy, by {d_step * 1e3:.2f} ms a step ({share} of its step"
                + ("" if gap >= TRAINING_MEAN_ERROR else
                   f", within the model's {TRAINING_MEAN_ERROR:.1%} mean error: not resolved") + ")")
    text = f"{lead}: " + ", ".join(parts)
    if waited_on(best) or waited_on(other):
        text += (f"; its compute waits on {waited_on(best) or 'nothing'}, "
                 f"{other.label}'s on {waited_on(other) or 'nothing'}")
    if best.comm_bytes_per_gpu is not None and other.comm_bytes_per_gpu is not None:
        text += (f"; it sends {human_bytes(best.comm_bytes_per_gpu)} per GPU"
                 + (f" in {comm_shape(best)}" if comm_shape(best) else "")
                 + f", against {human_bytes(other.comm_bytes_per_gpu)}"
                 + (f" in {comm_shape(other)}" if comm_shape(other) else ""))
    return text


def losses_to_fifo(rows) -> list[str]:
    """One line per row whose scheduler is slower than fifo for the same strategy."""
    fifo = {r.strategy: r for r in rows if r.scheduler == "fifo" and r.refused is None}
    return [bottleneck(r, fifo[r.strategy]) for r in rows
            if r.refused is None and r.scheduler != "fifo" and r.strategy in fifo
            and r.step_time > fifo[r.strategy].step_time * (1 + 1e-9)]
