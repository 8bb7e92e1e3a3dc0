"""What the step's figures say about communication: the exposed time attributed to the
collectives the slowest GPUs waited on, how many collectives run, and for how long any runs."""

import pytest

from embsim.engine.config import SimulationConfig
from embsim.engine.run import simulate


@pytest.mark.parametrize("kw", [
    dict(topology="2x8", model="lstm-lm1b", strategy="ps"),
    dict(topology="4x8", model="dlrm-criteo-t3", strategy="embrace", scheduler="embrace-2d", batch=2048),
    dict(topology="2x8", model="tiny-lm", strategy="allgather", straggler="gpu:3:1.5"),
    dict(topology="1x8", model="bert-base", accumulate=2),
    dict(topology="2x8", model="llama3-8b", dtype="bf16", tensor_parallel=8, batch=1, seq=1024),
])
def test_exposed_time_is_attributed_to_the_collectives_waited_on(kw):
    r = simulate(SimulationConfig(iterations=4, **kw))
    waited = sum(r.exposed_by_op.values())
    assert r.exposed_comm > 0
    assert waited == pytest.approx(r.exposed_comm, rel=1e-6, abs=1e-9)
    assert set(r.exposed_by_op) <= set(r.comm_bytes_per_gpu)
    if kw.get("tensor_parallel"):
        # waiting on a collective that queues behind others on its channel is charged to
        # those others: none of TP's is blamed for more than it runs
        for op, s in r.exposed_by_op.items():
            assert s <= r.comm_time[op] * (1 + 1e-9), op


def test_collective_counts_and_busy_wall():
    r = simulate(SimulationConfig(topology="2x8", model="lstm-lm1b", iterations=4))
    assert set(r.comm_count) == set(r.comm_bytes_per_gpu)
    assert all(n >= 1 for n in r.comm_count.values())
    # any collective running: at most the step, at most their summed times, at least the longest op's
    assert max(r.comm_time.values()) / max(r.comm_count.values()) <= r.comm_wall + 1e-12
    assert r.comm_wall <= min(r.step_time, sum(r.comm_time.values())) + 1e-12


def test_one_gpu_waits_on_nothing():
    r = simulate(SimulationConfig(topology="1x1", model="tiny-lm", iterations=3))
    assert r.exposed_by_op == {} and r.comm_wall == 0.0


def test_a_wait_queued_behind_channel_mates_is_charged_to_them():
    """Tensor parallelism's activation collectives run one at a time on their channel: a
    reduce-scatter the stream waits for may first queue behind all-gathers. Before, the
    whole wait went to the reduce-scatter (28.5 ms blamed of its 25.4 ms run on this 2x8
    llama3-8b TP 8 step, the all-gathers 0.6 ms of their 37.9 ms)."""
    r = simulate(SimulationConfig(topology="2x8", model="llama3-8b", dtype="bf16",
                                  tensor_parallel=8, iterations=3))
    assert r.exposed_by_op["tp reduce_scatter"] <= r.comm_time["tp reduce_scatter"]
    assert r.exposed_by_op["tp all_gather"] > 0.25 * r.exposed_comm


def test_blame_splits_a_wait_by_channel_overlap():
    from embsim.engine.wait_blame import ChannelIndex, blame
    from embsim.plan.timeline import CommRecord, WaitRecord

    def rec(name, start, end, channel="tp"):
        return CommRecord(1, name, "all_gather", 1.0, channel, "dense", "Ring", "Simple", start, start, end)
    records = [rec("a", 0.0, 4.0), rec("b", 4.0, 6.0), rec("c", 7.0, 9.0), rec("x", 0.0, 9.0, "dp")]
    index = ChannelIndex(records)
    # the stream idles from 1 to 9 waiting for c: a runs 1-4, b 4-6, nothing on the
    # channel 6-7 (c's inputs), c 7-9; x runs throughout on another channel
    got = {(r.name if r else None): s for r, s in blame(WaitRecord("g", 1, "c", 1.0, 9.0), index)}
    assert got == pytest.approx({"a": 3.0, "b": 2.0, "c": 3.0})
    # concurrent channel-mates covering the window twice over share it
    double = ChannelIndex([rec("a", 0.0, 4.0), rec("b", 0.0, 4.0), rec("c", 4.0, 5.0)])
    got = {r.name: s for r, s in blame(WaitRecord("g", 1, "c", 2.0, 5.0), double)}
    assert got == pytest.approx({"a": 1.0, "b": 1.0, "c": 1.0})
    # a wait that begins once its collective runs stays whole
    assert [(r.name, s) for r, s in blame(WaitRecord("g", 1, "c", 7.5, 9.0), index)] == [("c", 1.5)]


def test_host_work_around_a_transfer_is_counted_apart_from_it():
    # a host-memory table's gradient: a 2 ms copy to the host, then ~110 ms of host allgather
    # and apply on the same stream, which the compute waits for; the transfer sum alone
    # read 2.19 ms beside a 110 ms wait
    r = simulate(SimulationConfig(topology="1x8", model="lstm-lm1b", strategy="allgather",
                                  strategy_options={"table_device": "cpu"}, iterations=3))
    op = "host_allgather"
    assert r.comm_around[op] > 10 * r.comm_time[op]
    assert r.exposed_by_op[op] <= (r.comm_time[op] + r.comm_around[op]) * (1 + 1e-9)


def test_extra_ops_are_timed_by_tag_on_the_slowest_class():
    """A strategy's or DDP's own kernels (extra:TAG:LAYER) are part of `compute`; their time
    per step by tag is what lets the breakdown name them (the DDP bucket copies)."""
    import numpy as np
    from embsim.engine.metrics import step_metrics
    from embsim.plan.timeline import ComputeRecord, EngineRun, RankClass
    run = EngineRun(iterations=3, classes=(RankClass("a", (0,)), RankClass("b", (1,), slowdown=2.0)))
    for it in range(3):
        t0 = it * 10.0
        for cls, k in (("a", 1.0), ("b", 2.0)):
            run.compute.append(ComputeRecord(cls, it, "bwd:l", "bwd", t0, t0 + 4 * k, 4 * k))
            run.compute.append(ComputeRecord(cls, it, "extra:ddp-copy-in:l", "extra", t0 + 4 * k,
                                             t0 + 5 * k, k))
            run.iteration_end[(cls, it)] = t0 + 10.0
    m = step_metrics(run, lambda r: 0.0, {}, np.zeros(0))
    assert m.compute == pytest.approx(10.0)              # class b, the busiest
    assert m.extra_by_tag == {"ddp-copy-in": pytest.approx(2.0)}
