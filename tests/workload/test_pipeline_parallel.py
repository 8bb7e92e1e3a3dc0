"""workload.pipeline_parallel: Megatron's stage split, the 1F1B program, refusals."""

from collections import Counter
from types import SimpleNamespace

import pytest

from embsim.errors import InputError
from embsim.workload.pipeline_parallel import PipelineParallel


def layers(*kinds):
    return [SimpleNamespace(name=f"l{i}", kind=k) for i, k in enumerate(kinds)]


LM = layers("embedding", "positional_embedding", *["transformer_decoder"] * 8, "layernorm",
            "output_projection", "softmax_loss")


def test_embedding_on_the_first_stage_output_and_loss_on_the_last():
    stages = PipelineParallel(4).stages("lm", LM)
    assert [[l.kind for l in s] for s in stages] == [
        ["embedding", "positional_embedding"] + ["transformer_decoder"] * 2,
        ["transformer_decoder"] * 2, ["transformer_decoder"] * 2,
        ["transformer_decoder"] * 2 + ["layernorm", "output_projection", "softmax_loss"]]
    assert sum(len(s) for s in stages) == len(LM)
    assert PipelineParallel(1).stages("lm", LM) == (tuple(LM),)


@pytest.mark.parametrize("P, found, message", [
    (3, LM, "does not divide model lm's 8 transformer blocks"),
    (2, layers("embedding", "lstm", "softmax_loss"), "has no transformer blocks"),
    (2, layers("embedding", "transformer_encoder", "embedding", "transformer_decoder"),
     "other layers between its transformer blocks"),
])
def test_refused_splits(P, found, message):
    with pytest.raises(InputError, match=message):
        PipelineParallel(P).stages("lm", found)


def test_sizes_and_world():
    assert not PipelineParallel.of(None).on and PipelineParallel.of(4).size == 4
    for bad in (0, -1, True, 2.0):
        with pytest.raises(InputError, match="--pipeline-parallel"):
            PipelineParallel.of(bad)
    PipelineParallel(4).check_world(16, 2)
    with pytest.raises(InputError, match="does not divide 16 GPUs / --tensor-parallel 4 = 4"):
        PipelineParallel(8).check_world(16, 4)


@pytest.mark.parametrize("P, m", [(2, 1), (2, 8), (4, 3), (4, 8), (8, 8)])
def test_every_micro_batch_forward_then_backward_once_on_every_stage(P, m):
    pp = PipelineParallel(P)
    for s in range(P):
        prog = pp.schedule(s, m)
        work = [e for e in prog if e[0] != "P"]
        assert Counter(e[0] for e in work) == {"F": m, "B": m}
        order = {e: i for i, e in enumerate(work)}
        assert all(order[("F", i)] < order[("B", i)] for i in range(m))
        # warm-up forwards before the first backward, and never more in flight than P - s
        first_b = next(i for i, e in enumerate(work) if e[0] == "B")
        assert first_b == min(pp.warmup(s, m) + 1, m)
        live = peak = 0
        for kind, _ in work:
            live += 1 if kind == "F" else -1
            peak = max(peak, live)
        assert peak == pp.in_flight(s, m)


def test_transfers_pair_up_between_neighbours():
    pp, m = PipelineParallel(4), 6
    sends, recvs = Counter(), Counter()
    for s in range(4):
        for e in pp.schedule(s, m):
            if e[0] == "P":
                for kind, i, side in e[1]:
                    peer = s + 1 if (kind == "act") == (side == "send") else s - 1
                    (sends if side == "send" else recvs)[(kind, i, min(s, peer))] += 1
    assert sends == recvs and len(sends) == 2 * 3 * m
