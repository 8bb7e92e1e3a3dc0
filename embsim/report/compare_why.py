"""Why one row of a compare matrix beats another, in words: a scheduler that loses to fifo
(its bottleneck: the compute stream, its collectives slowing the compute, the network
where it loads it more, collective latency, the schedule or ordering, and whether the gap is
within the model's error), and the
best row against the best row of another strategy and plan (the step split into
computation, compute slowed by collectives in flight, and exposed communication, and what
the communication is). Every gap is a share of the faster row's step (compare.trails_by),
as the resolution line judges it.

"Computation" is the compute stream's work at full speed. What it ran longer because its
GPUs' collectives were in flight (interference) is communication's cost, named apart: a
row that keeps more communication in flight otherwise seemed to "compute more"."""


from __future__ import annotations

from ..compare import TRAINING_MEAN_ERROR, CompareRow, best_fitting, rank_key, trails_by
from .units import human_bytes, human_time


def _work(row: CompareRow) -> float:
    """The compute stream's work at full speed: its time less the interference stretch."""
    return row.compute - row.compute_stretch


def waited_on(row: CompareRow, most: int = 2) -> str:
    """'alltoall 4.97 ms, all_gather 1.20 ms': what the row's exposed time waited for, most
    first (CompareRow.exposed_by_op is already engine.result.most_first's order)."""
    return ", ".join(f"{op} {human_time(s)}" for op, s in row.exposed_by_op[:most])


def comm_shape(row: CompareRow) -> str:
    """'N collectives a step at R GB/s per GPU while they run' (what the bytes cost)."""
    if row.collectives is None or row.comm_rate is None:
        return ""
    return f"{row.collectives:,.0f} collectives a step at {row.comm_rate / 1e9:,.1f} GB/s per GPU while they run"


# A link class is busy enough for its bandwidth to be what a step waits on when its hottest
# link carries at least this share of its capacity averaged over the step; below it the
# links sit idle most of the step, and more exposed communication at the same bytes comes
# from when and in how many pieces the collectives were issued, not from the links' rate.
LINK_BOUND_UTILISATION = 0.5
# bytes per GPU within this fraction of the other row's are the same bytes
SAME_BYTES = 0.01
# a hottest link's utilisation within this fraction of the other row's is the same load
SAME_UTILISATION = 0.01


def links_text(row: CompareRow, fifo: CompareRow) -> str:
    """'hottest link nic busy 7 % of the step on average (fifo: 8 %)': a link's utilisation
    is its bytes over capacity x the step, a step average (a burst at line rate in 5 % of
    the step reads 5 %), so the hottest link's is the most any link of the run was used."""
    if row.busiest_link is None:
        return ""
    kind, _, hottest = row.busiest_link
    text = f"hottest link {kind} busy {hottest * 100:.0f} % of the step on average"
    if fifo.busiest_link is not None:
        theirs, _, their_hottest = fifo.busiest_link
        where = "" if theirs == kind else f"{theirs} "
        text += f" ({fifo.scheduler}: {where}{their_hottest * 100:.0f} %)"
    return text + _caveat(row, kind)


def _caveat(row: CompareRow, kind: str) -> str:
    """'; ps-cpu is the servers' summation rate, an assumed 20 GB/s a server (...)': what the
    link's capacity rests on when nobody measured it (Strategy.link_caveats), "" otherwise."""
    said = dict(row.link_caveats).get(kind)
    return f"; {kind} is {said}" if said else ""


def _link_bound(row: CompareRow) -> bool:
    """The row's hottest link busy at least LINK_BOUND_UTILISATION of the step: its
    communication waits on the links' bandwidth."""
    return row.busiest_link is not None and row.busiest_link[2] >= LINK_BOUND_UTILISATION


def _ran(row: CompareRow, other: CompareRow) -> str:
    """': priority's collectives run X a step against fifo's Y' ("" when either is not
    measured); each row named, since "its" could be either."""
    if row.comm_wall is None or other.comm_wall is None:
        return ""
    return (f": {row.scheduler}'s collectives run {human_time(row.comm_wall)} a step against "
            f"{other.scheduler}'s {human_time(other.comm_wall)}")


def _bound_by(row: CompareRow) -> str:
    """Whether a row's communication waits on the links' bandwidth (_link_bound), else on
    fixed costs and ordering (a faster network would then barely move it)."""
    kind, _, hottest = row.busiest_link
    busy = f"{row.label}'s hottest link {kind} busy {hottest * 100:.0f} % of the step{_caveat(row, kind)}"
    if _link_bound(row):
        return f"bandwidth-bound ({busy})"
    return (f"not the links' bandwidth ({busy}, under {LINK_BOUND_UTILISATION * 100:.0f} %): "
            f"collectives' fixed costs and when they run")


def _more_bytes(row: CompareRow, other: CompareRow) -> bool:
    return (row.comm_bytes_per_gpu is not None and bool(other.comm_bytes_per_gpu)
            and row.comm_bytes_per_gpu > other.comm_bytes_per_gpu * (1 + SAME_BYTES))


def _more_net_bytes(row: CompareRow, other: CompareRow) -> bool:
    """More bytes into the network a node (what crosses the NICs; bytes per GPU count the
    traffic inside a node too, and the two can rank the other way)."""
    return (row.net_bytes_per_node is not None and bool(other.net_bytes_per_node)
            and row.net_bytes_per_node > other.net_bytes_per_node * (1 + SAME_BYTES))


def _busier_links(row: CompareRow, other: CompareRow) -> bool:
    """`row` link-bound (_link_bound) with its hottest link busier than `other`'s (or `other`
    unmeasured). At the same bytes a slower row's links are busy a smaller share of its
    longer step, so a saturated cell alone does not make the network what it lost on."""
    if not _link_bound(row):
        return False
    if other.busiest_link is None:
        return True
    return row.busiest_link[2] > other.busiest_link[2] * (1 + SAME_UTILISATION)


def _bytes_word(row: CompareRow, other: CompareRow) -> str:
    """'the same bytes' where the bytes per GPU agree within SAME_BYTES, else 'X's bytes'."""
    same = (row.comm_bytes_per_gpu is not None and bool(other.comm_bytes_per_gpu)
            and abs(row.comm_bytes_per_gpu / other.comm_bytes_per_gpu - 1) < SAME_BYTES)
    return "the same bytes" if same else f"{row.scheduler}'s bytes"


def _longer_and_more(row: CompareRow, other: CompareRow, d_exposed: float) -> bool:
    """More collectives than `other`, running longer by at least half the extra exposure:
    the extra pieces' fixed costs, not their overlap, lost the time."""
    if None in (row.comm_wall, other.comm_wall, row.collectives, other.collectives):
        return False
    return row.collectives > other.collectives and row.comm_wall - other.comm_wall >= d_exposed / 2


def loss_lead(row: CompareRow, other: CompareRow) -> str:
    """'X loses to Y by 0.11 ms (0.7% of its step, within the model's 6.3% mean error: not
    resolved)': a gap the model's validated error covers is said to be one (as why_best)."""
    d_step = row.step_time - other.step_time
    gap = trails_by(other, row)
    return (f"{row.label} loses to {other.label} by {d_step * 1e3:.2f} ms ({_share(gap)} of "
            f"{other.label}'s step{_unresolved(gap)})")


def _share(gap: float) -> str:
    return f"{gap:.1%}" if gap >= 1e-3 else f"{gap:.2%}"      # a 0.04 ms lead is not "0.0%"


def _unresolved(gap: float) -> str:
    """The caveat on a gap the model's validated error covers (compare.unresolved_with_best)."""
    return (f", within the model's {TRAINING_MEAN_ERROR:.1%} mean error: not resolved"
            if gap < TRAINING_MEAN_ERROR else "")


def bottleneck(row: CompareRow, fifo: CompareRow) -> str:
    """Why `row` is slower than the same strategy under fifo, in the order the evidence allows:
    the compute stream (more work at full speed, or updates serialised on it, than exposed
    communication gained); its collectives slowing the compute (more of the compute ran
    while its collectives were in flight); the network only where the slower row loads it
    more: it sends more bytes per GPU or into the network a node, or its hottest link is
    busy (LINK_BOUND_UTILISATION of the step) and busier than fifo's; collective latency when
    the same bytes went as more collectives that ran longer on links mostly idle; on busy
    links no busier than fifo's, the schedule (more collectives that ran longer) or the
    ordering; otherwise ordering: the links were idle enough that the extra exposure is when
    the collectives ran against the compute, not the network.

    probe Q D5: a busy link was tested before what differs, so embrace/embrace-2d, sending
    fifo's bytes in 12 collectives against 8 with its NIC 88 % busy against fifo's 91 %, was
    told "bottleneck the network"; the link's load did not differ, the schedule did."""
    lead = loss_lead(row, fifo)
    d_work = _work(row) - _work(fifo)
    d_stretch = row.compute_stretch - fifo.compute_stretch
    d_exposed = row.exposed_comm - fifo.exposed_comm
    if d_work >= max(d_exposed, d_stretch):
        return f"{lead}: bottleneck the compute stream (+{d_work * 1e3:.2f} ms of computation)"
    if d_stretch >= d_exposed:
        return (f"{lead}: bottleneck {row.scheduler}'s collectives slowing the compute (+{d_stretch * 1e3:.2f} ms "
                f"of compute slowed while they are in flight, {d_work * 1e3:+.2f} ms of "
                f"computation){_ran(row, fifo)}")
    exposed = f"+{d_exposed * 1e3:.2f} ms of exposed communication"
    links = links_text(row, fifo)
    detail = f"{exposed}; {links}" if links else exposed
    more = _longer_and_more(row, fifo, d_exposed)
    shapes = f"{comm_shape(row)}, against {fifo.scheduler}'s {comm_shape(fifo)}"
    if _more_bytes(row, fifo):
        return (f"{lead}: bottleneck the network ({detail}): {row.scheduler} sends "
                f"{human_bytes(row.comm_bytes_per_gpu)} per GPU against {fifo.scheduler}'s "
                f"{human_bytes(fifo.comm_bytes_per_gpu)}")
    if _more_net_bytes(row, fifo):
        return (f"{lead}: bottleneck the network ({detail}): {row.scheduler} sends "
                f"{row.net_bytes_per_node / 1e6:,.1f} MB into the network a node a step against "
                f"{fifo.scheduler}'s {fifo.net_bytes_per_node / 1e6:,.1f} MB")
    if _busier_links(row, fifo):
        # a busier link: more, smaller collectives still wait on its bandwidth (their pipeline
        # fill grows as the link slows), so "fixed costs" would say a faster link won't help
        return f"{lead}: bottleneck the network ({detail})" + (f": {shapes}" if more else "")
    if _link_bound(row):
        # busy links, but no busier than fifo's and no more bytes: what differs is when and
        # in how many pieces the collectives ran, not the load on the network (nor "fixed
        # costs": on links this busy each piece's pipeline fill is stretched by their rate)
        calm = f"{row.scheduler}'s links no busier than {fifo.scheduler}'s"
        if more:
            return (f"{lead}: bottleneck the schedule, not the network's load ({detail}): "
                    f"{_bytes_word(row, fifo)} in {shapes}"
                    f"{_ran(row, fifo)}")
        return (f"{lead}: bottleneck ordering, not the network's load ({detail}): "
                f"{_bytes_word(row, fifo)}, {calm}{_ran(row, fifo)}")
    if more:
        return (f"{lead}: bottleneck collective latency ({detail}): {shapes}: "
                f"{_bytes_word(row, fifo)} in smaller collectives, each paying its own fixed costs")
    if row.busiest_link is None:
        return f"{lead}: bottleneck the network ({detail})"
    return (f"{lead}: bottleneck ordering/latency, not the network's bandwidth ({detail}, under "
            f"{LINK_BOUND_UTILISATION * 100:.0f} %){_ran(row, fifo)}")


def why_best(rows) -> str | None:
    """Why the best fitting row beats the best fitting row of any other strategy and plan:
    its step split into computation and exposed communication against the other's, and what
    its communication is (bytes per GPU, collectives, their rate while running). None when
    no other strategy has a fitting row of another plan."""
    best = best_fitting(rows)
    if best is None:
        return None
    # another strategy's row that runs a plan of the best's own strategy (a dense fallback
    # runs allreduce's) is no other strategy's result
    own = {plan_of(r) for r in rows if r.strategy == best.strategy and r.refused is None}
    others = [r for r in rows if r.refused is None and r.fits_in_memory and r.strategy != best.strategy
              and plan_of(r) not in own]
    if not others:
        return None
    other = min(others, key=rank_key)
    d_step = other.step_time - best.step_time
    terms = [("exposed communication", best.exposed_comm, other.exposed_comm),
             ("computation", _work(best), _work(other))]
    if best.compute_stretch or other.compute_stretch:
        terms.append(("compute slowed by collectives in flight", best.compute_stretch,
                      other.compute_stretch))
    terms.sort(key=lambda t: -(t[2] - t[1]))          # what it gains most on first
    parts = [f"{name} {human_time(mine)} against {human_time(theirs)} ({(mine - theirs) * 1e3:+.2f} ms)"
             for name, mine, theirs in terms]
    gap = trails_by(best, other)
    alike = [r.label for r in rows if r is not best and r.refused is None and r.same_plan_as == best.label]
    who = f"{best.label} (the same plan as {', '.join(alike)})" if alike else best.label
    if gap < 1e-9:
        lead = f"{who} ties with {other.label}, the best row of another strategy"
    else:
        lead = (f"{who} {'beats' if gap >= TRAINING_MEAN_ERROR else 'leads'} {other.label}, the best "
                f"row of another strategy, by {d_step * 1e3:.2f} ms a step ({_share(gap)} of "
                f"{best.label}'s step{_unresolved(gap)})")
    text = f"{lead}: " + ", ".join(parts)
    # the row that waits on more communication: on what it waits
    exposed_more = max((other, best), key=lambda r: r.exposed_comm)
    if best.exposed_comm != other.exposed_comm and exposed_more.busiest_link:
        text += f"; {exposed_more.label}'s exposed communication is {_bound_by(exposed_more)}"
    if waited_on(best) or waited_on(other):
        text += (f"; {best.label}'s compute waits on {waited_on(best) or 'nothing'}, "
                 f"{other.label}'s on {waited_on(other) or 'nothing'}")
    if best.comm_bytes_per_gpu is not None and other.comm_bytes_per_gpu is not None:
        text += (f"; {best.label} sends {human_bytes(best.comm_bytes_per_gpu)} per GPU"
                 + (f" in {comm_shape(best)}" if comm_shape(best) else "")
                 + f", against {human_bytes(other.comm_bytes_per_gpu)}"
                 + (f" in {comm_shape(other)}" if comm_shape(other) else ""))
    if best.net_bytes_per_node is not None and other.net_bytes_per_node is not None:
        # per GPU counts traffic inside a node too; what crosses the NICs can rank the other way
        # in MB: two rows' network bytes are often within a few percent of each other
        text += (f"; into the network {best.net_bytes_per_node / 1e6:,.1f} MB a node a step, against "
                 f"{other.net_bytes_per_node / 1e6:,.1f} MB")
    return text


def losses_to_fifo(rows) -> list[str]:
    """One line per row whose scheduler is slower than fifo for the same strategy; rows whose
    plan and fifo's plan are those of a line already written are named on that line."""
    fifo = {r.strategy: r for r in rows if r.scheduler == "fifo" and r.refused is None}
    lines: dict[tuple, tuple[str, list[str]]] = {}
    for r in rows:
        if (r.refused is not None or r.scheduler == "fifo" or r.strategy not in fifo
                or r.step_time <= fifo[r.strategy].step_time * (1 + 1e-9)):
            continue
        f = fifo[r.strategy]
        key = (plan_of(r), plan_of(f))
        if key in lines:
            lines[key][1].append(r.label)
        else:
            lines[key] = (bottleneck(r, f), [])
    return [text + (f"; likewise {', '.join(alike)} (the same plans)" if alike else "")
            for text, alike in lines.values()]


def plan_of(row: CompareRow) -> str:
    """The label of the row that stands for `row`'s plan (itself unless same_plan_as)."""
    return row.same_plan_as or row.label
