"""workload.pipeline_interleaved: Megatron-Core's interleaved schedule as per-rank programs
(schedule table, warm-up counts, p2p pairing, per-chunk grad sync, in-flight activations)."""

from collections import Counter
from types import SimpleNamespace

import pytest

from embsim.errors import InputError
from embsim.workload import pipeline_interleaved as vpp
from embsim.workload.pipeline_parallel import PipelineParallel

CASES = [(2, 2, 4), (4, 2, 8), (4, 5, 8), (4, 3, 4), (3, 2, 6), (4, 2, 12), (8, 6, 16), (2, 4, 2)]


def test_schedule_table_is_megatrons():
    # schedules.py's own example, PP2 N3 M5 VP2 (group size 3):
    # microbatch_id 0 1 2 0 1 2 3 4 3 4, model_chunk_id 0 0 0 1 1 1 0 0 1 1
    table = vpp.schedule_table(5, 2, 3)
    assert [i for i, _ in table] == [0, 1, 2, 0, 1, 2, 3, 4, 3, 4]
    assert [c for _, c in table] == [0, 0, 0, 1, 1, 1, 0, 0, 1, 1]
    # the default group P: depth-first, P micro-batches through every chunk in turn
    assert vpp.schedule_table(4, 2, 2) == [(0, 0), (1, 0), (0, 1), (1, 1), (2, 0), (3, 0), (2, 1), (3, 1)]


def test_warmup_counts():
    # (P - r - 1) 2 + (V - 1) P, capped at m V
    assert [vpp.warmup(4, 2, r, 8, 4) for r in range(4)] == [10, 8, 6, 4]
    assert [vpp.warmup(4, 3, r, 4, 4) for r in range(4)] == [12, 12, 10, 8]


@pytest.mark.parametrize("P, V, m", CASES)
def test_every_chunk_micro_batch_once_and_each_waits_for_its_input(P, V, m):
    check_inputs_received_before_use(P, V, m, vpp.programs(P, V, m))


def check_inputs_received_before_use(P, V, m, programs):
    for r, prog in enumerate(programs):
        work = [e for e in prog if e[0] in ("F", "B")]
        assert Counter(work) == {(k, c, i): 1 for k in "FB" for c in range(V) for i in range(m)}
        waited = set()
        done = set()
        for e in prog:
            if e[0] == "wait":
                waited |= set(e[1])
            elif e[0] == "F":
                v = e[1] * P + r
                assert v == 0 or ("act", e[2], v - 1, "recv") in waited
                done.add(e)
            elif e[0] == "B":
                v = e[1] * P + r
                assert ("F", e[1], e[2]) in done
                assert v == P * V - 1 or ("grad", e[2], v + 1, "recv") in waited
        # each chunk's gradients are launched once, after its last backward
        syncs = [i for i, e in enumerate(prog) if e[0] == "sync"]
        assert sorted(prog[i][1] for i in syncs) == list(range(V))
        for i in syncs:
            c = prog[i][1]
            assert ("B", c, m - 1) in prog[:i]


@pytest.mark.parametrize("P, V, m", CASES)
def test_v_times_as_many_sends_each_received_once(P, V, m):
    sends, recvs = Counter(), Counter()
    for prog in vpp.programs(P, V, m):
        for e in prog:
            if e[0] == "post":
                for kind, i, v, side in e[1]:
                    (sends if side == "send" else recvs)[(kind, i, v)] += 1
    # every chunk boundary (P V - 1 of them) both ways, every micro-batch
    assert sends == recvs and set(sends.values()) == {1} and len(sends) == 2 * (P * V - 1) * m


def test_the_first_warmup_forwards_and_sends_wrap_from_the_last_rank_to_the_first():
    prog = vpp.programs(4, 2, 8)
    # rank 0: 10 warm-up forwards, then the first steady forward and backward
    assert [e for e in prog[0] if e[0] in "FB"][:12] == (
        [("F", 0, i) for i in range(4)] + [("F", 1, i) for i in range(4)]
        + [("F", 0, 4), ("F", 0, 5), ("F", 0, 6), ("B", 1, 0)])
    # rank 3's chunk 0 (virtual stage 3) feeds rank 0's chunk 1 (virtual stage 4)
    sent = [t for e in prog[3] if e[0] == "post" for t in e[1] if t[3] == "send" and t[0] == "act"]
    assert ("act", 0, 3, "send") in sent and all(t[2] == 3 for t in sent)
    got = [t for e in prog[0] if e[0] == "post" for t in e[1] if t[3] == "recv"]
    assert ("act", 0, 3, "recv") in got


def test_the_first_rank_holds_the_most_activations():
    progs = vpp.programs(4, 2, 8)
    peaks = [vpp.peak_activations(p, [1.0, 1.0]) for p in progs]
    # rank r: its warm-up forwards (P - r - 1) 2 + (V - 1) P, plus the steady one
    assert peaks == [11, 9, 7, 5]
    # in units of a stage's activations (chunks of 1/V): 5.5 on rank 0 against 1F1B's P = 4
    assert peaks[0] / 2 > PipelineParallel(4).in_flight(0, 8)


def layers(n):
    kinds = ["embedding"] + ["transformer_decoder"] * n + ["layernorm", "output_projection", "softmax_loss"]
    return [SimpleNamespace(name=f"l{i}", kind=k) for i, k in enumerate(kinds)]


def test_chunk_c_of_rank_r_is_virtual_stage_c_p_plus_r():
    pp = PipelineParallel(2, 2)
    stages = pp.stages("lm", layers(8))
    assert len(stages) == 4
    assert [l.name for l in stages[0]] == ["l0", "l1", "l2"]          # rank 0 chunk 0: embedding
    assert [l.name for l in stages[1]] == ["l3", "l4"]                # rank 1 chunk 0
    assert [l.name for l in stages[2]] == ["l5", "l6"]                # rank 0 chunk 1
    assert [l.name for l in stages[3]][-1] == "l11"                   # rank 1 chunk 1: loss
    assert pp.label(8) == "pipeline parallel 2 x 2 virtual (interleaved 1F1B, 8 micro-batches)"


@pytest.mark.parametrize("P, V, m", CASES)
def test_deferred_send_waits_come_one_backward_later(P, V, m):
    # Megatron-Core before 260cba7 waited for a steady forward's activation send when the next
    # forward's send was posted, after the backward between them; from 260cba7 at once. The
    # two programs differ only in where those waits sit.
    for r in range(P):
        now = vpp.program(P, V, r, m)
        later = vpp.program(P, V, r, m, send_wait="deferred")
        assert [e for e in now if e[0] != "wait"] == [e for e in later if e[0] != "wait"]
        assert Counter(e for e in now if e[0] == "wait") == Counter(e for e in later if e[0] == "wait")
        for prog, immediate in ((now, True), (later, False)):
            post_at = [i for i, e in enumerate(prog) if e[0] == "post"]
            for i, e in enumerate(prog):
                if e[0] != "wait":
                    continue
                assert i > post_at[e[1]]                       # after its post
                sends = prog[post_at[e[1]]][1]
                if e[2] == "send" and any(s[0] == "act" for s in sends):
                    between = [x[0] for x in prog[post_at[e[1]] + 1:i]]
                    assert ("B" in between) != immediate, (r, i, between)


@pytest.mark.parametrize("call, message", [
    (lambda: PipelineParallel.of(1, 2), "--virtual-pipeline 2: needs --pipeline-parallel > 1"),
    (lambda: PipelineParallel.of(2, 1, "deferred"), "--p2p-send-wait deferred: only the interleaved"),
    (lambda: PipelineParallel.of(2, 2, "later"), "--p2p-send-wait 'later': expected one of"),
    (lambda: PipelineParallel.of(2, 0), "--virtual-pipeline 0"),
    (lambda: PipelineParallel(2, 3).stages("lm", layers(8)), "--virtual-pipeline 3: .* do not divide"),
    (lambda: PipelineParallel(4, 2).check_micro_batches(6), "--virtual-pipeline 2: .*--accumulate, 6"),
    (lambda: PipelineParallel(4, 2).check_micro_batches(2), "multiple of --pipeline-parallel 4"),
])
def test_refusals(call, message):
    with pytest.raises(InputError, match=message):
        call()
    PipelineParallel(4, 2).check_micro_batches(8)
    PipelineParallel(4).check_micro_batches(3)        # non-interleaved: any count


# --- overlap_p2p_comm False, batch_p2p_comm True: the blocking batched calls
# (schedules.py forward_backward_pipelining_with_interleaving, d98e8a6 / 8a78edd)


@pytest.mark.parametrize("P, V, m", CASES)
def test_blocking_p2p_runs_the_overlapped_schedules_work_in_the_same_order(P, V, m):
    for r in range(P):
        overlapped = vpp.program(P, V, r, m)
        blocking = vpp.program(P, V, r, m, overlap=False)
        # the same forwards, backwards and gradient syncs in the same order: only the calls differ
        assert ([e for e in blocking if e[0] in ("F", "B", "sync")]
                == [e for e in overlapped if e[0] in ("F", "B", "sync")])


@pytest.mark.parametrize("P, V, m", CASES)
def test_blocking_p2p_waits_for_every_transfer_in_its_own_call(P, V, m):
    for prog in vpp.programs(P, V, m, overlap=False):
        posts = [i for i, e in enumerate(prog) if e[0] == "post"]
        assert len(posts) == sum(e[0] == "wait" for e in prog)
        for i in posts:
            # batch_isend_irecv, then every request waited for before any compute
            assert prog[i + 1] == ("wait", prog[i][1])


@pytest.mark.parametrize("P, V, m", CASES)
def test_blocking_p2p_receives_every_input_before_use(P, V, m):
    check_inputs_received_before_use(P, V, m, vpp.programs(P, V, m, overlap=False))


@pytest.mark.parametrize("P, V, m", [(4, 2, 8), (4, 3, 4), (8, 6, 16), (3, 2, 6)])
def test_blocking_p2p_makes_megatrons_calls(P, V, m):
    # a middle rank makes every call non-empty: recv_forward, one per warm-up forward, one
    # combined send_forward_backward_recv_forward_backward per steady step, one per cool-down
    # backward (or, with every micro-batch a warm-up one, a recv_backward before them)
    for r in range(1, P - 1):
        prog = vpp.program(P, V, r, m, overlap=False)
        warm, total = vpp.warmup(P, V, r, m, P), m * V
        rest = total - warm
        posts = [e for e in prog if e[0] == "post"]
        assert len(posts) == 1 + warm + rest + (total - rest) + (rest == 0)
        # each steady call sends the forward's activation and the backward's gradient
        steady = posts[1 + warm:1 + warm + rest]
        assert all(sorted(kind for kind, _, _ in e[1]) == ["act", "grad"] for e in steady)
        # the last warm-up call also receives the first backward's gradient
        if rest:
            assert posts[warm][3] == 1 and all(e[3] == 0 for e in posts[:warm])


@pytest.mark.parametrize("call, message", [
    (lambda: PipelineParallel.of(2, 1, None, False), "--no-p2p-overlap: only the interleaved"),
    (lambda: PipelineParallel.of(2, 1, None, True), "--p2p-overlap: only the interleaved"),
    (lambda: PipelineParallel.of(2, 2, "deferred", False), "--p2p-send-wait deferred: only with overlapped"),
    (lambda: PipelineParallel.of(2, 2, None, "off"), "p2p_overlap 'off': expected true or false"),
])
def test_p2p_overlap_refusals(call, message):
    with pytest.raises(InputError, match=message):
        call()
    pp = PipelineParallel.of(2, 2, None, False)
    assert pp.programs(4) == vpp.programs(2, 2, 4, None, "immediate", False)
    assert pp.label(4).endswith("blocking batched p2p (no overlap_p2p_comm))")
