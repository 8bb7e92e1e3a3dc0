"""CollectiveRuntime: NCCL launch semantics over the shared network, with a fake plan model."""

from dataclasses import dataclass

import numpy as np
import pytest
import simpy

from embsim.collectives.runtime import CollectiveRuntime
from embsim.network import Demand, Network

SHARED_LINK = 100
CAPACITY = np.full(101, 1e9)  # 1 GB/s everywhere keeps hand arithmetic exact


@dataclass(frozen=True)
class FakePlan:
    latency: float
    time: float
    demand: Demand
    algo: str = "ring"
    proto: str = "simple"


class FakeModel:
    """nbytes over each rank's own link and over one link all communicators share."""

    def __init__(self, latency=0.1):
        self.latency = latency
        self.calls = []

    def plan(self, op, nbytes, ranks):
        self.calls.append((op, nbytes, ranks))
        if nbytes == 0:
            return FakePlan(0.0, 0.0, Demand.empty())
        demand = Demand(
            links=list(ranks) + [SHARED_LINK], bytes=[float(nbytes)] * (len(ranks) + 1)
        )
        return FakePlan(self.latency, self.latency + demand.bottleneck_time(CAPACITY), demand)


def setup(latency=0.1):
    env = simpy.Environment()
    model = FakeModel(latency)
    runtime = CollectiveRuntime(env, Network(env, CAPACITY), model)
    return env, runtime, model


def participant(env, runtime, op, nbytes, ranks, rank, arrive_at, done, key=None):
    yield env.timeout(arrive_at)
    record = yield runtime.collective(op, nbytes, ranks, rank, key=key)
    done[rank] = (env.now, record)


def test_starts_at_the_last_arrival_and_everyone_ends_together():
    env, runtime, model = setup()
    ranks, done = (0, 1, 2), {}
    for rank, t in zip(ranks, (0.0, 1.0, 3.0)):
        env.process(participant(env, runtime, "all_reduce", 5e8, ranks, rank, t, done))
    env.run()
    plan_time = 0.1 + 0.5
    assert [done[r][0] for r in ranks] == pytest.approx([3.0 + plan_time] * 3, abs=1e-12)
    (rec,) = runtime.records
    assert done[0][1] is rec
    assert (rec.first_arrival, rec.start) == (0.0, 3.0)
    assert rec.skew == 3.0 and rec.n_ranks == 3
    assert (rec.op, rec.nbytes, rec.algo, rec.proto) == ("all_reduce", 5e8, "ring", "simple")
    assert model.calls == [("all_reduce", 5e8, ranks)]  # planned once per instance


def test_idle_network_time_is_latency_plus_transfer_equals_plan_time():
    env, runtime, _ = setup(latency=2.5e-5)
    ev = runtime.arrive("all_gather", 3e6, (0, 1), (0, 1))
    env.run()
    rec = ev.value
    assert rec.duration == pytest.approx(2.5e-5 + 3e-3, abs=1e-12)
    assert rec.duration == pytest.approx(rec.plan_time, abs=1e-12)
    assert rec.slowdown == pytest.approx(1.0)


def test_overlapping_collectives_are_slowed_exactly_by_sharing():
    # A on (0,1) arrives at 0, B on (2,3) at 0.5; latency 0.1, 1e9 B on the shared link each.
    # A's transfer runs alone 0.1..0.6 (half done), then shares 0.5 GB/s with B: A ends at
    # 0.6 + 0.5/0.5 = 1.6. B has carried 0.5 GB by then, the rest alone: 1.6 + 0.5 = 2.1.
    env, runtime, _ = setup(latency=0.1)
    a, b = {}, {}
    for rank in (0, 1):
        env.process(participant(env, runtime, "all_reduce", 1e9, (0, 1), rank, 0.0, a))
    for rank in (2, 3):
        env.process(participant(env, runtime, "all_reduce", 1e9, (2, 3), rank, 0.5, b))
    env.run()
    assert a[0][0] == pytest.approx(1.6, abs=1e-9)
    assert b[2][0] == pytest.approx(2.1, abs=1e-9)
    assert a[0][1].slowdown == pytest.approx(1.6 / 1.1)


def test_representatives_arrive_for_groups_of_ranks():
    env, runtime, _ = setup(latency=0.0)
    ranks = tuple(range(8))
    events = []

    def group(members, at):
        yield env.timeout(at)
        events.append(runtime.arrive("alltoall", 1e8, ranks, members))

    env.process(group(range(0, 4), 1.0))
    env.process(group((4, 5), 2.0))
    env.process(group((6, 7), 4.0))
    env.run(until=3.0)
    assert runtime.pending() == [(ranks, 0, "alltoall", 6, 8)]
    env.run()
    assert events[0] is events[1] is events[2]
    rec = events[0].value
    assert (rec.first_arrival, rec.start, rec.end) == pytest.approx((1.0, 4.0, 4.1))
    assert runtime.pending() == []


def test_sequence_order_matches_kth_call_with_kth_call():
    env, runtime, _ = setup(latency=0.0)
    first = runtime.collective("all_reduce", 1e8, (0, 1), 0)
    second = runtime.collective("all_reduce", 2e8, (0, 1), 0)  # rank 0 runs ahead
    assert runtime.collective("all_reduce", 1e8, (0, 1), 1) is first
    env.run()
    assert first.processed and not second.triggered
    assert runtime.pending() == [((0, 1), 1, "all_reduce", 1, 2)]
    assert runtime.collective("all_reduce", 2e8, (0, 1), 1) is second
    env.run()
    assert [r.seq for r in runtime.records] == [0, 1]


def test_stragglers_propagate_through_the_stream():
    # Each rank: compute, collective, compute 1 s, collective. Rank 1 computes 2 s longer first.
    env, runtime, _ = setup(latency=0.0)
    ends = {}

    def rank_loop(rank, first_compute):
        yield env.timeout(first_compute)
        yield runtime.collective("all_reduce", 1e8, (0, 1), rank)
        yield env.timeout(1.0)
        yield runtime.collective("all_reduce", 1e8, (0, 1), rank)
        ends[rank] = env.now

    env.process(rank_loop(0, 1.0))
    env.process(rank_loop(1, 3.0))
    env.run()
    # Both leave the first collective at 3.1 (not rank 0's 1.1), so both end at 4.2.
    assert ends == pytest.approx({0: 4.2, 1: 4.2}, abs=1e-9)


def test_key_names_the_communicator():
    env, runtime, _ = setup(latency=0.0)
    a = runtime.arrive("broadcast", 1e8, (0, 1), (0, 1), key="dp")
    b = runtime.arrive("broadcast", 1e8, (0, 1), (0, 1), key="tp")
    env.run()
    assert a is not b and {r.communicator for r in runtime.records} == {"dp", "tp"}
    assert [r.seq for r in runtime.records] == [0, 0]
    with pytest.raises(ValueError, match="has ranks"):
        runtime.arrive("broadcast", 1e8, (0, 2), (0,), key="dp")


def test_zero_byte_collective_completes_at_once():
    env, runtime, _ = setup()
    ev = runtime.arrive("all_reduce", 0, (0, 1), (1, 0))
    env.run()
    assert ev.value.start == ev.value.end == 0.0


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda rt: rt.collective("all_reduce", 1, (0, 1), 5), "not in communicator"),
        (lambda rt: rt.arrive("all_reduce", 1, (0, 1), (0, 0)), "twice"),
        (lambda rt: rt.arrive("all_reduce", 1, (0, 0), (0,)), "repeated"),
        (lambda rt: rt.arrive("all_reduce", 1, (), ()), "empty"),
    ],
)
def test_rejects_malformed_arrivals(call, match):
    _, runtime, _ = setup()
    with pytest.raises(ValueError, match=match):
        call(runtime)


def test_mismatched_operations_are_an_error():
    _, runtime, _ = setup()
    runtime.collective("all_reduce", 1e8, (0, 1), 0)
    with pytest.raises(ValueError, match="does not match"):
        runtime.collective("all_gather", 1e8, (0, 1), 1)


def test_group_members_must_be_at_the_same_stream_position():
    _, runtime, _ = setup()
    runtime.collective("all_reduce", 1e8, (0, 1, 2), 0)
    with pytest.raises(ValueError, match="different positions"):
        runtime.arrive("all_reduce", 1e8, (0, 1, 2), (0, 1))


def test_a_channel_without_credit_runs_one_at_a_time_in_queue_key_order():
    # three collectives ready at once on one channel, credit None: one in flight; the
    # queue key (a scheduler's priority) orders the waiting ones, not the arrival order
    env = simpy.Environment()
    model = FakeModel(latency=0.0)
    runtime = CollectiveRuntime(env, Network(env, CAPACITY), model, credit=lambda channel: None)
    done = []
    for name, prio in (("a", 0.0), ("b", 2.0), ("c", 1.0)):
        runtime.arrive("all_reduce", 1e8, (0, 1), (0, 1), key=name, tag=name, channel="x",
                       queue_key=(prio,), on_done=lambda r: done.append((r.tag, r.ready, r.start, r.end)))
    env.run()
    assert [d[0] for d in done] == ["a", "c", "b"]
    assert [d[2] for d in done] == pytest.approx([0.0, 0.1, 0.2])   # each starts when the last ends
    assert all(d[1] == 0.0 for d in done)                          # all were ready at once
    assert runtime.records[-1].queued == pytest.approx(0.2)


def test_credit_admits_as_many_bytes_as_fit_and_channels_are_independent():
    env = simpy.Environment()
    runtime = CollectiveRuntime(env, Network(env, CAPACITY), FakeModel(latency=0.0),
                                credit=lambda channel: 2.5e8 if channel == "x" else None)
    for i in range(3):
        runtime.arrive("all_reduce", 1e8, (0, 1), (0, 1), key=f"x{i}", channel="x")
    runtime.arrive("all_reduce", 1e8, (2, 3), (2, 3), key="y", channel="y")
    starts = []
    env.process(_watch(env, runtime, starts))
    env.run()
    by_key = {r.communicator: r.start for r in runtime.records}
    assert by_key["x0"] == by_key["x1"] == by_key["y"] == 0.0     # 2 x 1e8 B fit in the credit
    assert by_key["x2"] > 0.0                                      # the third waits for one to end


def test_a_serial_channel_posts_within_credit_and_runs_the_posted_in_order():
    # ByteScheduler's credit on one NCCL stream: three 1e8 B collectives fit a 2.5e8 B
    # credit two at a time, but the stream runs the posted ones back to back, each paying
    # its own latency; a parameter server's push on the channel overlaps them
    env = simpy.Environment()
    runtime = CollectiveRuntime(env, Network(env, CAPACITY), FakeModel(latency=0.1),
                                credit=lambda channel: 2.5e8, serial=lambda channel: True)
    for i in range(3):
        runtime.arrive("all_reduce", 1e8, (0, 1), (0, 1), key=f"x{i}", channel="x", queue_key=(i,))
    runtime.arrive("ps_push", 1e8, (2, 3), (2, 3), key="push", channel="x", queue_key=(9,))
    env.run()
    by_key = {r.communicator: r for r in runtime.records}
    # x0 and x1 are posted at 0; x1 starts when x0 ends (0.1 latency + 0.1 s on its links)
    assert by_key["x0"].start == 0.0
    assert by_key["x1"].start == pytest.approx(by_key["x0"].end)
    assert by_key["x2"].start == pytest.approx(by_key["x1"].end)
    # the push, queued last, was posted when credit freed (x1's end) and ran beside x2
    assert by_key["push"].start == pytest.approx(by_key["x1"].end)
    assert by_key["push"].start < by_key["x2"].end


def _watch(env, runtime, starts):
    # in_flight counts running instances; `changed` fires when it leaves or reaches 0
    assert runtime.in_flight == 3
    yield runtime.changed
    starts.append(env.now)
    assert runtime.in_flight == 0


def test_node_copies_and_tail_run_on_the_channel_around_the_transfer():
    """`copy_before` is carried before the transfer and `copy_after` after it, both over
    the network (latency, then link bytes), then the `tail`: the record's start/end are the
    transfer's, the event fires after the tail, and the channel's next instance waits for
    all of it on a one-at-a-time channel (a ps push's gather, a pull's copy-back)."""
    from embsim.plan.ops import NodeCopy
    env = simpy.Environment()
    runtime = CollectiveRuntime(env, Network(env, CAPACITY), FakeModel(0.1), credit=lambda channel: None)
    ranks, ends = (0, 1), {}
    before = NodeCopy(0.05, Demand(links=[5], bytes=[4.5e8]))       # 0.05 + 0.45 s
    after = NodeCopy(0.0, Demand(links=[6], bytes=[1.5e8]))         # 0.15 s

    def issue(name, copy_before, copy_after, tail):
        record = yield runtime.arrive("ps_push", 1e9, ranks, ranks, key=name, tag=name, channel="embedding",
                                      copy_before=copy_before, copy_after=copy_after, tail=tail)
        ends[name] = (env.now, record)

    env.process(issue("a", before, after, 0.1))
    env.process(issue("b", None, None, 0.0))
    env.run()
    now_a, a = ends["a"]
    now_b, b = ends["b"]
    # a: 0.5 of copies, 0.1 latency, 1 s over 1 GB/s links, 0.15 of copies, 0.1 tail
    assert a.start == pytest.approx(0.5) and a.end == pytest.approx(1.6)
    assert now_a == pytest.approx(1.85)
    assert b.start == pytest.approx(1.85) and now_b == pytest.approx(1.85 + 1.1)


def test_a_node_copy_shares_its_link_with_a_concurrent_transfer():
    """A copy crossing a link a collective is using at the same time gets half of it."""
    from embsim.plan.ops import NodeCopy
    env = simpy.Environment()
    runtime = CollectiveRuntime(env, Network(env, CAPACITY), FakeModel(0.0))
    ends = {}

    def issue(name, nbytes, ranks, copy_before):
        record = yield runtime.arrive("all_reduce", nbytes, ranks, ranks, key=name, tag=name,
                                      channel=name, copy_before=copy_before)
        ends[name] = record

    env.process(issue("dense", 1e9, (0, 1), None))                  # rank links 0, 1 and link 100
    env.process(issue("push", 0.0, (2, 3), NodeCopy(0.0, Demand(links=[0], bytes=[5e8]))))
    env.run()
    # link 0 carries 1e9 (dense) + 5e8 (copy) at 1 GB/s shared: the copy ends at 1.0 s, not 0.5
    assert ends["push"].start == pytest.approx(1.0)


def test_rank_busy_follows_the_collectives_a_rank_takes_part_in():
    """rank_busy(r): an instance of one of r's communicators is running; rank_changed(r)
    fires when that flips, not when other ranks' collectives start or end."""
    env = simpy.Environment()
    runtime = CollectiveRuntime(env, Network(env, CAPACITY), FakeModel(latency=0.0))
    runtime.arrive("all_reduce", 1e8, (0, 1), (0, 1), key="a", channel="a")
    seen = []

    def watch():
        yield env.timeout(0)
        assert runtime.rank_busy(0) and runtime.rank_busy(1)
        assert not runtime.rank_busy(2) and not runtime.rank_busy(7)
        runtime.arrive("all_reduce", 4e8, (2, 3), (2, 3), key="b", channel="b")
        assert runtime.rank_busy(2)
        yield runtime.rank_changed(0)          # a ends: 0 is idle, b still runs
        seen.append((env.now, runtime.rank_busy(0), runtime.rank_busy(2)))
        yield runtime.rank_changed(3)
        seen.append((env.now, runtime.rank_busy(3)))

    env.process(watch())
    env.run()
    ends = {r.communicator: r.end for r in runtime.records}
    assert seen == [(ends["a"], False, True), (ends["b"], False)]
    assert ends["a"] < ends["b"]


def test_a_family_arrives_once_and_runs_as_its_members_would_alone():
    """Parts of one tensor: one arrival per rank group for the whole family, then each
    part is queued and run in order as if it had arrived by itself."""
    def run(family):
        env = simpy.Environment()
        runtime = CollectiveRuntime(env, Network(env, CAPACITY), FakeModel(0.1),
                                    credit=lambda channel: 2e8, serial=lambda channel: True)
        ranks, done = (0, 1), []
        parts = (("t#p0", 3), ("t#p1", 4), ("t#p2", 5))

        def group(members, at):
            yield env.timeout(at)
            if family:
                runtime.arrive("all_reduce", 1e8, ranks, members, key="t#p0", tag="t#p0",
                               channel="c", position=3, parts=parts, on_done=done.append)
            else:
                for tag, position in parts:
                    runtime.arrive("all_reduce", 1e8, ranks, members, key=tag, tag=tag,
                                   channel="c", position=position, on_done=done.append)

        env.process(group((0,), 0.5))
        env.process(group((1,), 1.0))
        env.run()
        return [(r.tag, r.ready, r.start, r.end) for r in done]

    alone = run(family=False)
    assert run(family=True) == alone
    assert [tag for tag, *_ in alone] == ["t#p0", "t#p1", "t#p2"]
    assert alone[0][1] == 1.0 and alone[1][2] == pytest.approx(alone[0][3])   # serial stream


def test_a_rank_is_busy_while_any_collective_it_is_in_runs():
    env, runtime, _ = setup(latency=0.0)
    changes = []

    def watch(rank):
        while True:
            yield runtime.rank_changed(rank)
            changes.append((rank, env.now, runtime.rank_busy(rank)))

    for rank in (0, 2):
        env.process(watch(rank))

    def issue():
        yield env.timeout(1.0)
        runtime.arrive("all_reduce", 1e9, (0, 1), (0, 1))
        runtime.arrive("all_reduce", 2e9, (0, 1, 2, 3), (0, 1, 2, 3))

    env.process(issue())
    env.run(until=10.0)
    # the first ends at 3 s (sharing every link half and half), the second at 4 s: rank 0
    # stays busy through the first one's end, and both go idle with the second
    assert changes == [(0, 1.0, True), (2, 1.0, True), (0, 4.0, False), (2, 4.0, False)]
