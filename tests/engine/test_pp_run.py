"""Pipeline parallelism through simulate (engine/pp_run.py, engine/run.py): stages, sends,
the per-stage data-parallel sync, memory, refusals, determinism, P=1 unchanged."""

import json

import pytest
from embsim import cli
from embsim.engine.config import SimulationConfig
from embsim.engine.pp_run import stage_context, transfer_bytes
from embsim.engine.run import simulate
from embsim.errors import InputError
from embsim.plan.context import StepContext
from embsim.sweep.spec import config_hash
from embsim.workload import load_model
from embsim.workload.pipeline_parallel import PipelineParallel

BASE = dict(model="gpt2", topology="dgx-h100:1x8", batch=4, seq=1024, dtype="bf16", iterations=2,
            efficiency_baseline=False)
ACT = 4 * 1024 * 768 * 2          # micro-batch x seq x hidden, bf16


def test_p1_is_bit_for_bit_what_main_gave():
    # step time, samples/s, scaling efficiency, memory and events as main (5d42014) gave
    # them before pipeline parallelism existed; re-pinned 2026-12-04 when the token
    # embedding's backward became ATen's kernels (embsim.workload.embedding_kernels), and
    # the memory when PyTorch DDP's flat gradient buckets were counted (schedulers.ddp_passes:
    # + the bucketed gradients, 497,759,232 / 250,530,816 / 1,703,765,500 B)
    cases = [(dict(model="gpt2", topology="dgx-h100:2x8", batch=4, seq=1024, dtype="bf16",
                   iterations=3, accumulate=2),
              (0.03445333655023433, 3715.1699317530806, 0.9136549097141176, 4196574208, 1926)),
             (dict(model="gpt2", topology="dgx-h100:1x8", batch=4, seq=1024, dtype="bf16",
                   iterations=2, tensor_parallel=2, accumulate=3),
              (0.033919630284379894, 1415.1097638025897, 0.9496517128187957, 2112855040, 1872)),
             (dict(model="lstm-lm1b", topology="4x2", iterations=2, efficiency_baseline=False),
              (0.04875522202596483, 21002.87840868951, None, 7134908400, 368))]
    for cfg, want in cases:
        for extra in ({}, {"pipeline_parallel": 1}):
            r = simulate(SimulationConfig(**cfg, **extra))
            assert (r.metrics.step_time, r.samples_per_s, r.scaling_efficiency, r.memory.total,
                    r.events) == want
            assert "pipeline" not in r.compute_source and "pipeline_parallel" not in r.workload
    assert config_hash({"model": "gpt2", "topology": "dgx-h100:1x8"}) == "3ea54af3eb2711f5"
    assert config_hash({"pipeline_parallel": 1}) == config_hash({}) == "6a6bc239fccbb264"
    assert config_hash({"pipeline_parallel": 2}) != config_hash({})


def test_stages_sends_and_per_stage_sync():
    r = simulate(SimulationConfig(**BASE, pipeline_parallel=2, accumulate=4))
    assert "pipeline parallel 2 (1F1B, 4 micro-batches): bubble" in r.compute_source
    assert r.workload["pipeline_parallel"] == 2
    sends = [c for c in r.run.comm if c.iteration == 1 and c.op == "sendrecv"]
    assert len(sends) == 2 * 4 and {c.nbytes for c in sends} == {ACT}
    # each stage all-reduces its own gradients (its DDP buckets) once per step, during its
    # last micro-batch's backward
    for s in (0, 1):
        grads = [c for c in r.run.comm if c.iteration == 1 and c.name.startswith(f"s{s}:bucket")]
        assert grads and all(c.op == "all_reduce" for c in grads)
        last_bwd = min(x.start for x in r.run.compute if x.iteration == 1
                       and x.cls.endswith(f"stage{s}") and x.name.startswith("bwd:")
                       and x.name.endswith("#m3"))
        assert min(c.ready for c in grads) >= last_bwd
    classes = {c.name for c in r.run.classes}
    assert all("/stage" in n for n in classes) and len(classes) == 8
    # throughput counts the replicas: 8 GPUs / 2 stages = 4
    assert r.samples_per_s == pytest.approx(4 * 4 * 4 / r.metrics.step_time)


def test_the_bubble_comes_out_no_lower_than_the_analytic_fill_and_drain():
    for P, m in ((2, 2), (4, 4), (4, 12)):
        r = simulate(SimulationConfig(**BASE, pipeline_parallel=P, accumulate=m, gpu_variation=0))
        bubble = float(r.compute_source.split("bubble ")[1].split(" %")[0]) / 100
        assert bubble >= 0.95 * (P - 1) / (m + P - 1)
    # more micro-batches, a smaller bubble
    small = simulate(SimulationConfig(**BASE, pipeline_parallel=4, accumulate=4, gpu_variation=0))
    large = simulate(SimulationConfig(**BASE, pipeline_parallel=4, accumulate=16, gpu_variation=0))
    per_mb = [x.metrics.step_time / m for x, m in ((small, 4), (large, 16))]
    assert per_mb[1] < per_mb[0]


def test_composes_with_tensor_parallelism_across_nodes():
    cfg = dict(BASE, topology="dgx-h100:2x8", model="llama3-8b", batch=1, seq=2048)
    r = simulate(SimulationConfig(**cfg, tensor_parallel=2, pipeline_parallel=4, accumulate=4))
    assert "tensor parallel 2 (sequence parallel)" in r.compute_source
    sends = [c for c in r.run.comm if c.iteration == 1 and c.op == "sendrecv"]
    assert {c.nbytes for c in sends} == {1 * 2048 * 4096 * 2 / 2}      # / TP: sequence parallel
    tp = [c for c in r.run.comm if c.iteration == 1 and c.channel.startswith("tp@s")]
    assert {c.channel for c in tp} == {f"tp@s{s}" for s in range(4)}         # each stage its own
    assert len({c.name.split("#m")[1] for c in tp if "#m" in c.name}) == 4   # every micro-batch
    # every TP collective runs in every micro-batch, a stage's first block's overlapped
    # backward ones too (the op after them is a DDP bucket pass or the stage's first update)
    per_collective = {}
    for c in tp:
        per_collective[c.name.split("#")[0]] = per_collective.get(c.name.split("#")[0], 0) + 1
    assert set(per_collective.values()) == {4}
    # stage 1 -> 2 crosses the nodes (ranks 4..7 -> 8..11): the NICs carry it
    assert r.metrics.comm_bytes_per_gpu["pp sendrecv"] > 0


def test_memory_is_the_worst_stage_with_its_in_flight_micro_batches():
    one = simulate(SimulationConfig(**BASE, accumulate=8))
    four = simulate(SimulationConfig(**BASE, pipeline_parallel=4, accumulate=8))
    assert four.memory.params < 0.5 * one.memory.params
    model = load_model("gpt2", batch=4, seq=1024, dtype="bf16")
    # the first stage holds P = 4 micro-batches of its 3 blocks' activations (and the embedding's)
    ctx = StepContext(model=model, n_gpus=2, gpus_per_node=2, layer_fwd={}, layer_bwd={},
                      layer_update={}, sparse_update=None, tables={}, hbm_bytes=0.0)
    layers = PipelineParallel(4).stages("gpt2", model.layers)[0]
    first = stage_context(ctx, layers)
    blocks = [l for l in first.model.layers if l.kind == "transformer_decoder"]
    assert len(blocks) == 3 and first.model.layers[0].kind == "embedding"
    assert first.model.params == sum(l.params for l in layers)
    assert four.memory.activations >= 4 * sum(l.activation_bytes for l in blocks)


def test_transfer_bytes():
    model = load_model("gpt2", batch=4, seq=1024, dtype="bf16")
    assert transfer_bytes(model) == ACT


@pytest.mark.parametrize("kw, message", [
    (dict(pipeline_parallel=3), "--pipeline-parallel 3: does not divide 8 GPUs / --tensor-parallel 1"),
    (dict(pipeline_parallel=8), "does not divide model gpt2's 12 transformer blocks"),
    (dict(pipeline_parallel=2, strategy="fsdp"), "composes with --strategy allreduce or distopt, not fsdp"),
    (dict(pipeline_parallel=2, model="lstm-lm1b"), "has no transformer blocks"),
    (dict(pipeline_parallel=2, model="transformer-wmt"), "other layers between its transformer blocks"),
    (dict(pipeline_parallel=2, accumulate=2, accumulate_sync="every"), "--accumulate-sync every"),
    (dict(pipeline_parallel=2, scheduler="priority"), "composes with --scheduler fifo, not priority"),
])
def test_refusals(kw, message):
    with pytest.raises(InputError, match=message):
        simulate(SimulationConfig(**{**BASE, **kw}))
    with pytest.raises(InputError, match="--pipeline-parallel 0"):
        SimulationConfig(**BASE, pipeline_parallel=0)


def test_cli_flag_one_line_refusal_and_determinism(capsys):
    args = ["simulate", "--model", "gpt2", "--topology", "dgx-h100:1x8", "--iterations", "2",
            "--batch", "4", "--seq", "1024"]
    assert cli.main(args + ["--pipeline-parallel", "3"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--pipeline-parallel 3" in err
    outs = []
    for _ in range(2):
        assert cli.main(args + ["--pipeline-parallel", "2", "--accumulate", "4", "--json"]) == 0
        outs.append(json.loads(capsys.readouterr().out))
    assert outs[0] == outs[1]
    assert "pipeline parallel 2 (1F1B, 4 micro-batches)" in outs[0]["compute_source"]
    assert cli.main(args + ["--pipeline-parallel", "2", "--accumulate", "4"]) == 0
    assert "of 4 x one pipeline of 2 stages" in capsys.readouterr().out
    assert cli.main(["compare", "--model", "gpt2", "--topology", "dgx-h100:1x8", "--pipeline-parallel", "2",
                     "--strategies", "allreduce", "--schedulers", "fifo", "--iterations", "2", "--json"]) == 0
    assert "pipeline parallel 2" in capsys.readouterr().out


def test_the_strategies_see_the_data_parallel_ranks_of_a_stage():
    from embsim.engine.context import step_context
    from embsim.topology import load_topology
    from embsim.workload.tensor_parallel import TensorParallel
    cfg = SimulationConfig(**BASE, pipeline_parallel=2, tensor_parallel=2)
    model = load_model("gpt2", batch=4, seq=1024, dtype="bf16", tensor_parallel=TensorParallel.of(2))
    ctx, _ = step_context(model, load_topology("dgx-h100:1x8"), None, cfg, True)
    assert (ctx.n_gpus, ctx.gpus_per_node) == (8 // 4, 2)
    # and the DDP buckets of each stage compress as without a pipeline
    r = simulate(SimulationConfig(**{**BASE, "dtype": "fp32"}, pipeline_parallel=2, accumulate=4,
                                  grad_compress="fp16"))
    assert "gradient compression fp16" in r.compute_source


def test_distopt_per_stage_gathers_once_per_step_and_reduce_scatters_its_own_buckets():
    cfg = dict(BASE, topology="dgx-h100:2x8", model="llama3-8b", batch=1, seq=2048, strategy="distopt")
    runs = {m: simulate(SimulationConfig(**cfg, tensor_parallel=2, pipeline_parallel=2, accumulate=m))
            for m in (2, 8)}
    by = {m: r.metrics.comm_bytes_per_gpu for m, r in runs.items()}
    # the parameters are gathered once per optimizer step whatever the micro-batch count
    assert by[2]["all_gather"] == pytest.approx(by[8]["all_gather"], rel=1e-12)
    assert by[2]["reduce_scatter"] == pytest.approx(by[8]["reduce_scatter"], rel=1e-12)
    gathers = [c for c in runs[8].run.comm if c.iteration == 1 and c.op == "all_gather"
               and not c.channel.startswith("tp@")]
    assert gathers and all("#m" not in c.name for c in gathers)
    assert {c.name.split(":")[0] for c in gathers} == {"s0", "s1"}     # each stage its own


def test_bytes_per_gpu_count_a_stage_collective_for_its_share_of_the_gpus():
    """A GPU takes part in its own stage's collectives only: per-GPU bytes under P stages
    are the stage's, not the sum over stages."""
    cfg = dict(BASE, topology="dgx-h100:2x8", model="llama3-8b", batch=1, seq=2048, accumulate=4)
    one = simulate(SimulationConfig(**cfg, tensor_parallel=2)).metrics.comm_bytes_per_gpu
    two = simulate(SimulationConfig(**cfg, tensor_parallel=2, pipeline_parallel=2)).metrics.comm_bytes_per_gpu
    # a stage holds half of the blocks: about half of the TP traffic per GPU
    assert two["tp all_gather"] == pytest.approx(one["tp all_gather"] / 2, rel=0.05)
    # each GPU's gradients are its stage's: the two stages' sum would be the whole model's
    assert two["all_reduce"] < 0.6 * one["all_reduce"]


def test_interleaved_chunks_sends_and_per_chunk_sync():
    r = simulate(SimulationConfig(**BASE, pipeline_parallel=2, virtual_pipeline=2, accumulate=4,
                                  strategy="distopt"))
    assert ("pipeline parallel 2 x 2 virtual (interleaved 1F1B, 4 micro-batches): bubble"
            in r.compute_source and "per chunk boundary" in r.compute_source)
    assert r.workload["virtual_pipeline"] == 2
    sends = [c for c in r.run.comm if c.iteration == 1 and c.op == "sendrecv"]
    assert len(sends) == 2 * 3 * 4 and {c.nbytes for c in sends} == {ACT}
    # each chunk (virtual stage v = c P + r, 3 of gpt2's 12 blocks) reduce-scatters its own
    # buckets, launched after its last micro-batch's backward (the aligned grad_sync_func)
    for v in range(4):
        grads = [c for c in r.run.comm if c.iteration == 1 and c.name.startswith(f"s{v}:distopt-rs")]
        assert grads and all(c.op == "reduce_scatter" for c in grads)
        blocks = {f"bwd:decoder.{3 * v + k}#m3" for k in range(3)}
        last_bwd = max(x.end for x in r.run.compute if x.iteration == 1 and x.name in blocks)
        assert min(c.ready for c in grads) >= last_bwd
    # PyTorch DDP's buckets (their reduced copy waited for in the backward) under allreduce
    ddp = simulate(SimulationConfig(**BASE, pipeline_parallel=2, virtual_pipeline=2, accumulate=4))
    assert {c.name.split(":")[0] for c in ddp.run.comm if c.op == "all_reduce" and c.channel != "pp"} == {
        "s0", "s1", "s2", "s3"}
    # V = 1 is the non-interleaved schedule, and its sweep hash is unchanged
    assert config_hash({"virtual_pipeline": 1}) == config_hash({})
    assert config_hash({"pipeline_parallel": 2, "virtual_pipeline": 2}) != config_hash({"pipeline_parallel": 2})


def test_interleaved_memory_holds_the_schedules_in_flight_chunks():
    flat = simulate(SimulationConfig(**BASE, pipeline_parallel=2, accumulate=4))
    vp = simulate(SimulationConfig(**BASE, pipeline_parallel=2, virtual_pipeline=2, accumulate=4))
    # the same layers per rank (params alike); rank 0 holds 5 chunk micro-batches at once
    # ((P - 1) 2 + (V - 1) P warm-up + 1) of half a stage each, 1F1B's first stage 2 stages'
    assert vp.memory.params == flat.memory.params
    assert vp.memory.activations > flat.memory.activations


@pytest.mark.parametrize("args, message", [
    (["--virtual-pipeline", "2"], "--virtual-pipeline 2: needs --pipeline-parallel > 1"),
    (["--pipeline-parallel", "2", "--virtual-pipeline", "2", "--accumulate", "3"],
     "--virtual-pipeline 2: the interleaved schedule needs the micro-batch count (--accumulate, 3)"),
    (["--pipeline-parallel", "2", "--virtual-pipeline", "4", "--accumulate", "4"],
     "--virtual-pipeline 4: --pipeline-parallel 2 x 4 virtual stages do not divide"),
    (["--pipeline-parallel", "2", "--accumulate", "4", "--p2p-send-wait", "deferred"],
     "--p2p-send-wait deferred: only the interleaved schedule"),
])
def test_interleaved_cli_refusals_and_determinism(capsys, args, message):
    base = ["simulate", "--model", "gpt2", "--topology", "dgx-h100:1x8", "--iterations", "2",
            "--batch", "4", "--seq", "1024"]
    assert cli.main(base + args) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and message in err
    if args[0] == "--virtual-pipeline":
        outs = []
        for _ in range(2):
            assert cli.main(base + ["--pipeline-parallel", "2", "--virtual-pipeline", "3",
                                    "--accumulate", "2", "--strategy", "distopt", "--json"]) == 0
            outs.append(json.loads(capsys.readouterr().out))
        assert outs[0] == outs[1] and outs[0]["workload"]["virtual_pipeline"] == 3


@pytest.mark.parametrize("args, message", [
    (["--pipeline-parallel", "2", "--accumulate", "4", "--no-p2p-overlap"],
     "--no-p2p-overlap: only the interleaved schedule (--virtual-pipeline > 1)"),
    (["--pipeline-parallel", "2", "--accumulate", "4", "--p2p-overlap"],
     "--p2p-overlap: only the interleaved schedule (--virtual-pipeline > 1)"),
    (["--pipeline-parallel", "2", "--virtual-pipeline", "2", "--accumulate", "4", "--no-p2p-overlap",
      "--p2p-send-wait", "deferred"], "--p2p-send-wait deferred: only with overlapped p2p"),
])
def test_blocking_p2p_cli_refusals(capsys, args, message):
    base = ["simulate", "--model", "gpt2", "--topology", "dgx-h100:1x8", "--iterations", "2",
            "--batch", "4", "--seq", "1024"]
    assert cli.main(base + args) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and message in err and "Traceback" not in err


def test_blocking_p2p_runs_deterministically_and_no_faster_than_overlapped(capsys):
    base = ["simulate", "--model", "gpt2", "--topology", "dgx-h100:2x8", "--iterations", "2",
            "--batch", "4", "--seq", "1024", "--pipeline-parallel", "4", "--virtual-pipeline", "3",
            "--accumulate", "4", "--strategy", "distopt", "--json"]
    outs = []
    for extra in (["--no-p2p-overlap"], ["--no-p2p-overlap"], []):
        assert cli.main(base + extra) == 0
        outs.append(json.loads(capsys.readouterr().out))
    assert outs[0] == outs[1] and outs[0]["workload"]["p2p_overlap"] is False
    assert "p2p_overlap" not in outs[2]["workload"]
    # the same work, every transfer (4 stages across 2 nodes: NIC sends) waited for in its call
    assert outs[0]["step_time_ms"] > outs[2]["step_time_ms"]


def test_each_stage_runs_its_collectives_on_its_own_channels():
    # a stage's TP (and data-parallel) collectives run on its own GPUs' communicators: they
    # queue behind that stage's earlier ones only, and run beside the other stages'. With one
    # channel for the whole pipeline (the bug before 2026-12-03) no two stages' TP collectives
    # ever overlapped, and every stage waited for the others' to go by
    cfg = dict(BASE, topology="dgx-h100:1x8", model="llama3-8b", batch=1, seq=2048)
    r = simulate(SimulationConfig(**cfg, tensor_parallel=2, pipeline_parallel=4, accumulate=8,
                                  gpu_variation=0))
    tp = [c for c in r.run.comm if c.iteration == 1 and c.channel.startswith("tp@s")]
    by_stage: dict = {}
    for c in tp:
        by_stage.setdefault(c.channel, []).append((c.start, c.end))
    for spans in by_stage.values():     # one at a time on a stage's own channel
        spans.sort()
        assert all(a[1] <= b[0] + 1e-12 for a, b in zip(spans, spans[1:]))
    overlapping = sum(1 for a in by_stage["tp@s0"] for b in by_stage["tp@s1"]
                      if a[0] < b[1] and b[0] < a[1])
    assert overlapping > 0
    # the per-GPU figures count each stage's collectives on that stage's GPUs only
    whole = sum(c.end - c.start for c in tp) / (r.metrics.iterations_measured or 1)
    assert sum(v for k, v in r.comm_time.items() if k.startswith("tp ")) < whole


def test_a_stage_is_slowed_only_by_its_own_gpus_collectives():
    # interference (compute slowed while collectives run) counts the collectives a stage's
    # GPUs take part in: another stage's TP collectives run on other GPUs. Before 2026-12-03
    # any collective in flight anywhere slowed every stage
    cfg = dict(BASE, topology="dgx-h100:1x4", model="llama3-8b", batch=1, seq=2048,
               tensor_parallel=2, pipeline_parallel=2, accumulate=4, gpu_variation=0)
    slowed = simulate(SimulationConfig(**cfg, interference=1.0)).run
    plain = simulate(SimulationConfig(**cfg, interference=0.0)).run
    nominal = {(r.cls, r.iteration, r.name): r.end - r.start for r in plain.compute}

    def own(channel: str, stage: int) -> bool:
        return (channel.endswith(f"@s{stage}") or channel == "pp:0"       # its pair's sends
                or channel == "pp")                                         # the step-end ones
    grew = 0
    for r in slowed.compute:
        if r.end - r.start > nominal[(r.cls, r.iteration, r.name)] * (1 + 1e-9) + 1e-12:
            grew += 1
            stage = int(r.cls.rsplit("stage", 1)[1])
            assert any(own(c.channel, stage) and c.start < r.end and r.start < c.end
                       for c in slowed.comm), (r.cls, r.name)
    assert grew > 0
