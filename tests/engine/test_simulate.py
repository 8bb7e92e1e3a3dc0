"""End-to-end behaviour of the training-step engine (issue: training-step simulation)."""

from __future__ import annotations

import json

import pytest

from embsim.engine.run import SimulationConfig, simulate
from embsim.errors import InputError
from embsim.report.chrome_trace import chrome_trace
from embsim.report.result_json import simulation_json


def run(**kw):
    kw.setdefault("iterations", 3)
    return simulate(SimulationConfig(**kw))


@pytest.fixture(scope="module")
def lstm_2x8():
    return run(topology="2x8", model="lstm-lm1b")


def test_one_gpu_has_no_communication():
    r = run(topology="dgx-h100:1x1", model="tiny-lm")
    assert r.run.comm == []
    assert r.comm_bytes_per_gpu == {}
    assert r.exposed_comm == pytest.approx(0.0, abs=1e-12)
    assert r.step_time == pytest.approx(r.compute, rel=1e-9)


def test_ddp_buckets_overlap_backward(lstm_2x8):
    """Communication of the first buckets starts before the backward pass ends."""
    k = 1
    bwd_end = max(c.end for c in lstm_2x8.run.compute if c.iteration == k and c.kind == "bwd")
    starts = [c.start for c in lstm_2x8.run.comm if c.iteration == k]
    assert starts and min(starts) < bwd_end


def test_updates_wait_for_every_gradient_under_ddp(lstm_2x8):
    k = 1
    last_comm = max(c.end for c in lstm_2x8.run.comm if c.iteration == k)
    first_update = min(c.start for c in lstm_2x8.run.compute if c.iteration == k and c.kind == "update")
    assert first_update >= last_comm - 1e-12


def test_allreduce_moves_the_dense_embedding_gradient(lstm_2x8):
    model_bytes = 425_941_375 * 4
    n = 16
    assert lstm_2x8.comm_bytes_per_gpu["all_reduce"] == pytest.approx(model_bytes * 2 * (n - 1) / n, rel=1e-6)


def test_deterministic_under_a_seed():
    a = run(topology="2x8", model="bert-base", seed=3)
    b = run(topology="2x8", model="bert-base", seed=3)
    assert a.step_time == b.step_time
    assert [(c.name, c.start, c.end) for c in a.run.comm] == [(c.name, c.start, c.end) for c in b.run.comm]


def test_chrome_trace_respects_dependencies(lstm_2x8):
    trace = chrome_trace(lstm_2x8.run, lstm_2x8.n_gpus, 8)
    events = [e for e in trace["traceEvents"] if e["ph"] == "X" and e["pid"] == 0]
    compute = [e for e in events if e["tid"] == 0]
    json.dumps(trace)  # serialisable
    # the compute stream never overlaps itself, and forward precedes backward each iteration
    compute.sort(key=lambda e: e["ts"])
    for a, b in zip(compute, compute[1:]):
        assert a["ts"] + a["dur"] <= b["ts"] + 1e-6
    for it in range(3):
        fwd = [e for e in compute if e["args"]["iteration"] == it and e["cat"] == "fwd"]
        bwd = [e for e in compute if e["args"]["iteration"] == it and e["cat"] == "bwd"]
        assert max(e["ts"] for e in fwd) < min(e["ts"] for e in bwd)
    comm = [e for e in events if e["tid"] != 0]
    assert comm and all(e["name"].startswith("all_reduce ") for e in comm)
    # the stream's idle waits sit between its ops, named by the collective they wait for
    waits = [e for e in compute if e["cat"] == "exposed"]
    assert waits and all(e["name"] == "wait: all_reduce" for e in waits)


def test_straggler_slows_everyone():
    # without the GPU-to-GPU speed spread, so the straggler alone sets the slowest GPU, and
    # without interference, whose stretch of compute depends on how much overlaps a collective
    base = run(topology="2x8", model="bert-base", efficiency_baseline=False, gpu_variation=0.0,
               interference=0.0)
    slow = run(topology="2x8", model="bert-base", straggler="gpu:3:1.5", efficiency_baseline=False,
               gpu_variation=0.0, interference=0.0)
    assert slow.step_time > base.step_time * 1.2
    assert slow.compute == pytest.approx(base.compute * 1.5, rel=1e-6)


def test_interference_slows_compute_that_overlaps_communication():
    base = run(topology="2x8", model="bert-base", efficiency_baseline=False)
    slow = run(topology="2x8", model="bert-base", interference=0.5, efficiency_baseline=False)
    assert slow.step_time > base.step_time


def test_memory_warning_when_it_does_not_fit():
    r = run(topology="dgx-a100:1x2", model="llama3-8b", batch=1, seq=512, efficiency_baseline=False)
    assert not r.fits_in_memory
    assert r.memory.total > r.hbm_bytes


def test_roofline_source_is_labelled(lstm_2x8):
    assert "kernel model" in lstm_2x8.compute_source
    assert "kernel model" in json.dumps(simulation_json(lstm_2x8))


def test_bad_inputs():
    with pytest.raises(InputError, match="--straggler"):
        run(topology="2x8", model="tiny-lm", straggler="gpu:99:2")
    with pytest.raises(InputError, match="--iterations"):
        run(topology="2x8", model="tiny-lm", iterations=1)
    with pytest.raises(InputError, match="--strategy"):
        run(topology="2x8", model="tiny-lm", strategy="nope")


def test_corpus_token_statistics_change_the_sparse_volume(tmp_path):
    # a corpus with only a few distinct words touches fewer rows than Zipf over 10k
    corpus = tmp_path / "tiny.txt"
    corpus.write_text(("the cat sat on the mat and the dog sat on the log " * 400))
    kw = dict(topology="1x8", model="lstm-lm1b", batch=8, strategy="allgather", efficiency_baseline=False)
    zipf = run(**kw)
    real = run(**kw, corpus=str(corpus))
    assert 0 < real.comm_bytes_per_gpu["all_gather"] < zipf.comm_bytes_per_gpu["all_gather"]
    with pytest.raises(InputError):
        run(topology="1x8", model="tiny-lm", corpus=str(tmp_path / "missing.txt"))


def test_comm_interference_slows_collectives_that_overlap_compute():
    base = run(topology="2x8", model="bert-base", efficiency_baseline=False,
               interference=0.0, comm_interference=0.0)
    slow = run(topology="2x8", model="bert-base", efficiency_baseline=False,
               interference=0.0, comm_interference=1.0)
    k = 1
    def comm_time(r):
        return sum(c.end - c.start for c in r.run.comm if c.iteration == k)
    assert comm_time(slow) > comm_time(base) * 1.2
    assert slow.compute == pytest.approx(base.compute, rel=1e-9)   # compute itself untouched


def test_a_trace_only_transfers_to_the_chip_it_was_measured_on():
    from pathlib import Path
    tiny = str(Path(__file__).resolve().parents[2] / "traces" / "cpu-gloo-tiny-lm.yaml")
    with pytest.raises(InputError, match="do not transfer"):
        run(topology="2x8", model="tiny-lm", trace=tiny)
    ok = run(topology="local-cpu:1x2", model="tiny-lm", batch=16, seq=32, trace=tiny,
             efficiency_baseline=False)
    assert ok.compute_source.startswith("measured:")


def test_a_network_only_trace_replaces_the_collective_model(tmp_path):
    """import-nccl-tests traces carry collective curves and no layers: compute stays the
    labelled roofline, collectives follow the measured curve on that topology."""
    from pathlib import Path

    from embsim import cli
    log = Path(__file__).resolve().parents[1] / "imports" / "fixtures" / "h100-2x8-all_reduce.log"
    out = tmp_path / "net.yaml"
    assert cli.main(["import-nccl-tests", str(log), "--out", str(out), "--topology", "dgx-h100:2x8"]) == 0
    # without interference: other collective times overlap the compute differently
    model_only = run(topology="dgx-h100:2x8", model="bert-base", efficiency_baseline=False, interference=0.0)
    measured = run(topology="dgx-h100:2x8", model="bert-base", trace=str(out), efficiency_baseline=False,
                   interference=0.0)
    assert "kernel model" in measured.compute_source
    assert "collectives: measured" in measured.compute_source
    assert measured.compute == pytest.approx(model_only.compute, rel=1e-9)
    assert measured.comm_time["all_reduce"] != pytest.approx(model_only.comm_time["all_reduce"], rel=1e-3)


def _embedding_update_s(strategy: str, topology: str = "dgx-a100:1x1") -> float:
    r = run(topology=topology, model="gnmt", strategy=strategy, iterations=2, accumulate=1,
            jitter="none", gpu_variation=0.0)
    return max(c.end - c.start for c in r.run.compute
               if c.iteration == 1 and c.kind == "update" and c.name == "update:source_embedding")


def test_one_gpu_steps_a_dense_table_gradient_in_every_row():
    """allreduce is DDP over nn.Embedding(sparse=False): on one GPU too the backward leaves
    a dense vocab x dim gradient and Adam steps every row, as on two (DeepLearningExamples
    GNMT); a sparse-gradient strategy steps only the rows the batch touched."""
    one, two = _embedding_update_s("allreduce"), _embedding_update_s("allreduce", "dgx-a100:1x2")
    assert one == pytest.approx(two, rel=1e-9)
    assert _embedding_update_s("allgather") < 0.5 * one


def test_a_measured_curve_for_other_rank_counts_is_named_as_not_used(tmp_path):
    """A trace's curve replaces the model only at its own rank count: at 16x8 a 16-rank
    curve is said not to be used (and the step is the model's), at 2x8 it is used."""
    from pathlib import Path

    from embsim import cli
    log = Path(__file__).resolve().parents[1] / "imports" / "fixtures" / "h100-2x8-all_reduce.log"
    out = tmp_path / "net.yaml"
    assert cli.main(["import-nccl-tests", str(log), "--out", str(out), "--topology", "dgx-h100:2x8"]) == 0
    big = run(topology="dgx-h100:16x8", model="bert-base", trace=str(out), efficiency_baseline=False)
    plain = run(topology="dgx-h100:16x8", model="bert-base", efficiency_baseline=False)
    assert "measured curves (all_reduce at 16 ranks) are not for this run's 128 ranks: not used" in big.compute_source
    assert "; collectives: NCCL" in big.compute_source and "other collectives" not in big.compute_source
    assert big.step_time == plain.step_time
    small = run(topology="dgx-h100:2x8", model="bert-base", trace=str(out), efficiency_baseline=False)
    assert "collectives: measured (" in small.compute_source and "all_reduce at 16 ranks" in small.compute_source
    assert "other collectives: NCCL" in small.compute_source


def test_json_has_what_the_table_shows(lstm_2x8):
    # the table's "all_reduce per GPU <bytes> in <time>": both halves in the JSON
    out = simulation_json(lstm_2x8)
    assert set(out["comm_ms"]) == set(out["comm_bytes_per_gpu"]) == set(lstm_2x8.comm_time)
    for op, t in lstm_2x8.comm_time.items():
        assert out["comm_ms"][op] == pytest.approx(t * 1e3) and t > 0


def test_superlinear_efficiency_says_why(lstm_2x8):
    # FSDP updates 1/N of the parameters per GPU, the one-GPU baseline all of them: above
    # 100 % is real, and the output says so instead of leaving a number that looks wrong
    r = run(topology="dgx-h100:2x8", model="mpt-7b", strategy="fsdp", iterations=2, gpu_variation=0.0)
    assert r.scaling_efficiency > 1.0
    said = [n for n in r.notes if n.startswith("scaling efficiency")]
    assert len(said) == 1 and "FSDP shards the optimizer step" in said[0] and "1/16" in said[0]
    assert lstm_2x8.scaling_efficiency < 1.0
    assert not any(n.startswith("scaling efficiency") for n in lstm_2x8.notes)


def test_workload_names_the_optimizer_and_untied_outputs():
    # two runs that differ only in --optimizer or --untie-outputs must be told apart
    def opt(name):
        return {"optimizer": {"name": name}}       # what --optimizer sets
    sgd = run(topology="dgx-h100:1x2", model="gpt2", model_overrides=opt("sgd"), iterations=2,
              efficiency_baseline=False)
    lamb = run(topology="dgx-h100:1x2", model="gpt2", model_overrides=opt("lamb"), iterations=2,
               efficiency_baseline=False)
    assert (sgd.workload["optimizer"], lamb.workload["optimizer"]) == ("sgd", "lamb")
    assert simulation_json(lamb)["workload"]["optimizer"] == "lamb"
    untied = run(topology="dgx-h100:1x2", model="gpt2", untie_outputs=True, iterations=2, efficiency_baseline=False)
    assert untied.workload["untie_outputs"] is True and "untie_outputs" not in sgd.workload
    assert "--untie-outputs has no effect" not in untied.compute_source


def test_untie_outputs_on_a_model_without_a_tied_output_says_so():
    r = run(topology="dgx-h100:1x2", model="ncf-ml20m", untie_outputs=True, iterations=2, efficiency_baseline=False)
    plain = run(topology="dgx-h100:1x2", model="ncf-ml20m", iterations=2, efficiency_baseline=False)
    assert r.step_time == plain.step_time
    assert "--untie-outputs has no effect: ncf-ml20m ties no output projection" in r.compute_source


def test_one_gpu_says_the_strategy_changes_nothing_and_keeps_no_sync_remarks():
    fsdp = run(topology="dgx-h100:1x1", model="gpt2", strategy="fsdp", iterations=2)
    plain = run(topology="dgx-h100:1x1", model="gpt2", iterations=2)
    assert fsdp.step_time == plain.step_time
    assert "one GPU: nothing to synchronise, so --strategy fsdp and --scheduler fifo change nothing" \
        in fsdp.compute_source
    assert fsdp.notes == ()            # no "FULL_SHARD, 12 blocks" for a run that shards nothing
    two = run(topology="dgx-h100:1x2", model="gpt2", strategy="fsdp", iterations=2, efficiency_baseline=False)
    assert "nothing to synchronise" not in two.compute_source and two.notes


def test_one_gpu_says_what_the_strategy_still_changes():
    """On one GPU a dense strategy steps each sparse-capable table as vocab x dim and a sparse
    one as its looked-up rows: the steps differ, and the label says so instead of "nothing"."""
    dense = run(topology="dgx-h100:1x1", model="deepfm-criteo", strategy="allreduce", iterations=2)
    sparse = run(topology="dgx-h100:1x1", model="deepfm-criteo", strategy="allgather", iterations=2)
    assert dense.step_time != sparse.step_time
    for r, kind in ((dense, "dense (vocab x dim)"), (sparse, "sparse (the rows looked up)")):
        assert "change nothing" not in r.compute_source
        assert f"only the tables' gradient: {kind}" in r.compute_source
