"""The 1F1B pipeline through the engine (engine/pp_plan.py on engine/simulation.py): the
bubble comes out of the simulated stage streams; with free communication and uniform
stages the step is the analytic (m + P - 1)(t_f + t_b)."""

from types import SimpleNamespace

import numpy as np
import pytest
import simpy

from embsim.engine.pp_plan import pipeline_plan
from embsim.engine.simulation import Engine
from embsim.network import Demand, Network
from embsim.plan.names import bwd_name, fwd_name, update_name
from embsim.plan.ops import ComputeOp, StepPlan
from embsim.plan.timeline import RankClass
from embsim.workload.pipeline_parallel import PipelineParallel


class FreeComms:
    """Collectives that take no time (the analytic cross-check's 'comm is free')."""

    def _free(self, op, nbytes):
        return SimpleNamespace(op=op, latency=0.0, time=0.0, demand=Demand.empty(), algo="none",
                               proto="none")

    def plan(self, op, nbytes, ranks):
        return self._free(op, nbytes)

    def plan_groups(self, op, nbytes, groups):
        return self._free(op, nbytes)


class SendRecvComms(FreeComms):
    """Stage-to-stage sends of `seconds` each (other collectives free)."""

    def __init__(self, seconds):
        self.seconds = seconds

    def plan_groups(self, op, nbytes, groups):
        c = self._free(op, nbytes)
        if op == "sendrecv":
            c.latency = c.time = self.seconds
        return c

    def plan(self, op, nbytes, ranks):
        return self.plan_groups(op, nbytes, None)


class Fifo:
    def channel_rule(self, channel):
        return SimpleNamespace(credit=None, serial=False)

    def queue_key(self, c, k):
        return ()


def uniform(P, m, tf, tb, update=0.0, per_stage=1, slow=None, V=1, send_wait=None, comms=None,
            overlap=None):
    """A stage's t_f and t_b split evenly over its V chunks (virtual stage v = c P + r)."""
    plans, ranks = [], []
    for v in range(P * V):
        s = v % P
        layer = f"block{v}"
        f, b = tf / V, tb / V
        if slow is not None and s == slow[0]:
            f, b = f * slow[1], b * slow[1]
        stream = (ComputeOp(fwd_name(layer), f), ComputeOp(bwd_name(layer), b),
                  ComputeOp(update_name(layer), update, param_sized=True))
        plans.append(StepPlan(stream=stream, comms=()))
    ranks = [tuple(range(s * per_stage, (s + 1) * per_stage)) for s in range(P)]
    plan, streams, groups = pipeline_plan(PipelineParallel(P, V, send_wait, overlap), m, plans, ranks, act_bytes=1.0)
    classes = tuple(RankClass(f"stage{s}", ranks[s]) for s in range(P))
    plan = StepPlan(stream=plan.stream, comms=plan.comms, comm_waits=plan.comm_waits,
                    streams={f"stage{s}": streams[s] for s in range(P)})
    everyone = tuple(r for rs in ranks for r in rs)
    engine = Engine(plan, Fifo(), classes, comms or FreeComms(), lambda env: Network(env, np.ones(1)),
                    everyone, iterations=3, groups=groups)
    run = engine.run()
    ends = [max(run.iteration_end[(c.name, k)] for c in classes) for k in range(3)]
    return ends[2] - ends[1], run


@pytest.mark.parametrize("P,m", [(2, 4), (4, 8), (4, 4), (3, 7), (4, 2), (8, 16)])
def test_uniform_stages_with_free_comm_match_the_analytic_bubble(P, m):
    tf, tb = 1.0e-3, 2.0e-3
    step, _ = uniform(P, m, tf, tb)
    assert step == pytest.approx((m + P - 1) * (tf + tb), rel=1e-9)


def test_one_micro_batch_per_stage_is_fully_serial():
    step, _ = uniform(4, 1, 1.0, 2.0)
    assert step == pytest.approx(4 * 3.0)


def test_a_slow_stage_sets_the_steady_state():
    # stage 1 twice as slow: it is busy m x 2 (t_f + t_b), after stage 0's first forward
    # and before its last backward; its one wait (for stage 2's first backward, t_f + t_b -
    # 2 t_f) is the rest. Well under a pipeline uniformly that slow.
    tf, tb, m = 1.0, 2.0, 8
    step, _ = uniform(3, m, tf, tb, slow=(1, 2.0))
    busy = m * 2 * (tf + tb)
    assert step == pytest.approx(tf + busy + (tf + tb - 2 * tf) + tb)
    assert step < (m + 2) * 2 * (tf + tb)


def test_the_schedule_is_one_f_one_b():
    pp = PipelineParallel(4)
    prog = [e for e in pp.schedule(0, 6) if e[0] != "P"]
    assert prog == [("F", 0), ("F", 1), ("F", 2), ("F", 3), ("B", 0), ("F", 4), ("B", 1),
                    ("F", 5), ("B", 2), ("B", 3), ("B", 4), ("B", 5)]
    last = [e for e in pp.schedule(3, 3) if e[0] != "P"]
    assert last == [("F", 0), ("B", 0), ("F", 1), ("B", 1), ("F", 2), ("B", 2)]
    # the first stage never receives activations, the last never sends them
    assert all(t[0] != "act" or t[2] != "recv" for e in pp.schedule(0, 6) if e[0] == "P" for t in e[1])
    assert all(t[0] != "act" or t[2] != "send" for e in pp.schedule(3, 6) if e[0] == "P" for t in e[1])
    assert [pp.in_flight(s, 6) for s in range(4)] == [4, 3, 2, 1]


def test_every_micro_batch_and_update_runs_once_per_stage():
    _, run = uniform(3, 5, 1.0, 2.0)
    for s in range(3):
        names = [r.name for r in run.compute if r.cls == f"stage{s}" and r.iteration == 1]
        assert sum(n.startswith("fwd:") for n in names) == 5
        assert sum(n.startswith("bwd:") for n in names) == 5
        assert sum(n.startswith("update:") for n in names) == 1
    sends = [c for c in run.comm if c.iteration == 1 and c.op == "sendrecv"]
    assert len(sends) == 2 * 2 * 5        # 2 stage pairs x (activation, gradient) x m


@pytest.mark.parametrize("P,V,m", [(2, 2, 4), (4, 2, 8), (4, 5, 8), (4, 2, 4), (3, 2, 6), (8, 6, 16),
                                   (2, 4, 2)])
@pytest.mark.parametrize("send_wait", [None, "deferred"])
def test_interleaved_uniform_chunks_with_free_comm_match_the_analytic_bubble(P, V, m, send_wait):
    # each chunk t_f / V and t_b / V: the fill and drain shrink to (P - 1)(t_f + t_b) / V, the
    # bubble fraction (P - 1) / (V m) of the ideal m (t_f + t_b) (Narayanan et al. 2021, 2.2.2);
    # with free communication when a send is waited for cannot matter
    tf, tb = 1.0e-3, 2.0e-3
    step, _ = uniform(P, m, tf, tb, V=V, send_wait=send_wait)
    assert step == pytest.approx((m + (P - 1) / V) * (tf + tb), rel=1e-9)
    assert step / (m * (tf + tb)) - 1 == pytest.approx((P - 1) / (V * m), rel=1e-9)


@pytest.mark.parametrize("P,V,m", [(4, 2, 8), (2, 4, 4), (4, 5, 8)])
def test_a_deferred_send_wait_hides_a_costly_send_behind_the_backward(P, V, m):
    # sends as long as a chunk's forward: waiting for each at once idles the sender, waiting
    # at the next send (Megatron-Core before 2026-04-16) lets it run beside the backward
    tf, tb = 1.0e-3, 2.0e-3
    comms = SendRecvComms(tf / V)
    immediate, _ = uniform(P, m, tf, tb, V=V, comms=comms)
    deferred, _ = uniform(P, m, tf, tb, V=V, send_wait="deferred", comms=comms)
    free, _ = uniform(P, m, tf, tb, V=V)
    assert free < deferred < immediate


def test_each_stage_pair_sends_in_order_while_other_pairs_send_beside_it():
    # PyTorch runs a pair's isend/irecv on that pair's own NCCL communicator: one channel per
    # stage pair (pp:<s>, pp:wrap), one transfer at a time on it, different pairs at once
    tf, tb = 1.0e-3, 2.0e-3
    _, run = uniform(4, 8, tf, tb, V=2, comms=SendRecvComms(tf / 2))
    sends = [r for r in run.comm if r.iteration == 1 and r.op == "sendrecv"]
    assert {r.channel for r in sends} == {"pp:0", "pp:1", "pp:2", "pp:wrap"}
    overlap = lambda a, b: a.start < b.end - 1e-12 and b.start < a.end - 1e-12
    for ch in {r.channel for r in sends}:
        mine = sorted((r for r in sends if r.channel == ch), key=lambda r: r.start)
        assert all(not overlap(a, b) for a, b in zip(mine, mine[1:]))
    assert any(overlap(a, b) for a in sends for b in sends if a.channel != b.channel)


@pytest.mark.parametrize("P,V,m", [(2, 2, 4), (4, 2, 8), (4, 5, 8), (4, 2, 4), (3, 2, 6), (8, 6, 16),
                                   (2, 4, 2)])
def test_blocking_p2p_with_free_comm_matches_the_analytic_bubble(P, V, m):
    # overlap_p2p_comm False: the same work order, so with free transfers the same
    # (m + (P - 1) / V)(t_f + t_b)
    tf, tb = 1.0e-3, 2.0e-3
    step, _ = uniform(P, m, tf, tb, V=V, overlap=False)
    assert step == pytest.approx((m + (P - 1) / V) * (tf + tb), rel=1e-9)


@pytest.mark.parametrize("P,V,m", [(4, 2, 8), (2, 4, 4), (4, 5, 8), (3, 2, 6)])
def test_blocking_p2p_exposes_costly_sends_the_overlapped_path_hides(P, V, m):
    # sends as long as a chunk's forward: the blocking batched calls wait for every receive
    # too, where the overlapped path prefetches the next input behind the compute
    tf, tb = 1.0e-3, 2.0e-3
    comms = SendRecvComms(tf / V)
    immediate, _ = uniform(P, m, tf, tb, V=V, comms=comms)
    blocking, _ = uniform(P, m, tf, tb, V=V, overlap=False, comms=comms)
    free, _ = uniform(P, m, tf, tb, V=V, overlap=False)
    assert free < immediate < blocking
    again, _ = uniform(P, m, tf, tb, V=V, overlap=False, comms=comms)
    assert again == blocking


def test_interleaved_sends_cross_every_chunk_boundary_including_the_wrap():
    P, V, m = 4, 2, 4
    _, run = uniform(P, m, 1.0, 2.0, V=V)
    sends = [c for c in run.comm if c.iteration == 1 and c.op == "sendrecv"]
    assert len(sends) == 2 * (P * V - 1) * m         # V x as many boundaries as 1F1B's P - 1
    wrap = [c for c in sends if c.name in ("pp:act:s3:m0", "pp:grad:s4:m0")]
    assert len(wrap) == 2
