"""--grad-compress in the DDP wrapper's passes (schedulers/ddp_passes.py): the buckets'
all-reduce carries half the bytes, the casts cost what HBM bandwidth says, 16-bit gradients
and one GPU change nothing, and a plan without a DDP bucket is refused."""

from __future__ import annotations

import pytest

from embsim.engine.run import SimulationConfig, simulate
from embsim.errors import InputError, ModelNotSupported
from embsim.topology import load_topology
from embsim.workload import load_model
from embsim.workload.gpu_compute import for_gpu

TOPO = "dgx-a100:1x8"


def run(compress=None, topology=TOPO, model="bert-base", dtype="tf32", **options):
    return simulate(SimulationConfig(topology=topology, model=model, dtype=dtype, iterations=3,
                                     efficiency_baseline=False, scheduler_options=options,
                                     gpu_variation=0.0, grad_compress=compress))


def comm(r, k=1):
    return sorted((c for c in r.run.comm if c.iteration == k), key=lambda c: c.start)


def records(r, tag, k=1):
    return [c for c in r.run.compute if c.iteration == k and c.name.startswith(f"extra:{tag}")]


def fp32_numel(model="bert-base"):
    m = load_model(model, dtype="tf32")
    assert {m.grad_elem_bytes(l) for l in m.layers if l.params > 0} == {4}
    return sum(l.params for l in m.layers if l.params > 0)


def copy_bps(topology=TOPO):
    gpu = for_gpu(load_topology(topology).node.gpu)
    return gpu.hbm_bps * gpu.hbm_fraction


@pytest.mark.parametrize("compress", ["fp16", "bf16"])
def test_every_bucket_all_reduces_half_the_bytes(compress):
    plain, half = comm(run()), comm(run(compress))
    assert [c.name for c in half] == [c.name for c in plain]
    assert [c.nbytes for c in half] == [c.nbytes / 2 for c in plain]
    assert sum(c.nbytes for c in half) == 2 * fp32_numel()
    assert run(compress).exposed_comm < run().exposed_comm


def test_casts_cost_what_hbm_bandwidth_says():
    r = run("fp16", ddp="torch-view")
    casts = records(r, "grad-compress-fp16")
    assert casts
    numel = fp32_numel()
    # cast FP32 -> 16 bits (read 4 B, write 2 B) + the hook's divide of the 16-bit copy
    # (read 2 B, write 2 B), each a few kernel launches above the bandwidth figure
    ideal = numel * (4 + 2 + 2 + 2) / copy_bps()
    assert ideal <= sum(c.end - c.start for c in casts) < 1.1 * ideal
    # the cast back (read 2 B, write 4 B) holds the bucket's all-reduce stream after the
    # transfer: the optimizer starts no earlier than the last bucket's end plus its cast
    last = comm(r)[-1]
    first_update = min(c.start for c in r.run.compute if c.iteration == 1 and c.kind == "update")
    assert first_update - last.end >= (last.nbytes / 2) * (2 + 4) / copy_bps() * 0.99


def test_the_hook_replaces_the_reducers_divide():
    """torch-view: with a comm hook DDP's reducer no longer divides each gradient; the
    hook divides the 16-bit copy. torch: the copies in and out stay (FP32 bucket)."""
    view = run("fp16", ddp="torch-view")
    assert not records(view, "ddp-divide") and records(run(ddp="torch-view"), "ddp-divide")
    torch = run("fp16", ddp="torch")
    assert records(torch, "ddp-copy-in") and records(torch, "ddp-copy-out")
    assert records(torch, "grad-compress-fp16")


def test_apex_and_none_cast_without_a_hook_divide():
    for style in ("apex", "none"):
        r = run("fp16", ddp=style)
        casts = records(r, "grad-compress-fp16")
        ideal = fp32_numel() * (4 + 2) / copy_bps()
        assert ideal <= sum(c.end - c.start for c in casts) < 1.1 * ideal, style
        assert sum(c.nbytes for c in comm(r)) == 2 * fp32_numel()


def test_sixteen_bit_gradients_are_a_said_no_op():
    plain = run(model="bert-large", dtype="fp16")          # zoo amp o2: 16-bit gradients
    same = run("fp16", model="bert-large", dtype="fp16")
    assert same.step_time == plain.step_time
    assert [c.nbytes for c in comm(same)] == [c.nbytes for c in comm(plain)]
    assert "no effect, the gradients are already 16-bit" in same.compute_source


def test_one_gpu_is_a_said_no_op():
    plain, same = run(topology="dgx-a100:1x1"), run("fp16", topology="dgx-a100:1x1")
    assert same.step_time == plain.step_time
    assert "no effect on one GPU" in same.compute_source


def test_output_says_it_ran_compressed_and_is_deterministic():
    a, b = run("fp16"), run("fp16")
    assert a.step_time == b.step_time and a.compute_source == b.compute_source
    assert "gradient compression fp16: FP32 gradient buckets" in a.compute_source
    assert "compression" not in run().compute_source


def test_hybrid_strategies_compress_their_dense_buckets_only():
    base = dict(topology="dgx-a100:1x8", model="lstm-lm1b", dtype="tf32", iterations=2,
                efficiency_baseline=False, gpu_variation=0.0)
    for strategy in ("allgather", "embrace", "s2reducer"):
        plain = simulate(SimulationConfig(**base, strategy=strategy))
        half = simulate(SimulationConfig(**base, strategy=strategy, grad_compress="fp16"))
        dense = {c.name: c.nbytes for c in comm(plain) if c.category == "dense"}
        assert dense, strategy
        assert {c.name: c.nbytes for c in comm(half) if c.category == "dense"} == \
            {n: b / 2 for n, b in dense.items()}
        sparse = sorted((c.name, c.nbytes) for c in comm(plain) if c.category != "dense")
        assert sorted((c.name, c.nbytes) for c in comm(half) if c.category != "dense") == sparse


@pytest.mark.parametrize("strategy, scheduler", [("fsdp", "fifo"), ("allreduce", "priority")])
def test_a_plan_without_ddp_buckets_is_refused(strategy, scheduler):
    with pytest.raises(ModelNotSupported, match=r"^--grad-compress fp16: strategy .* no DDP gradient bucket"):
        simulate(SimulationConfig(topology=TOPO, model="gpt2", dtype="tf32", iterations=2,
                                  strategy=strategy, scheduler=scheduler, grad_compress="fp16"))


def test_bf16_is_refused_on_v100():
    with pytest.raises(InputError, match=r"^--grad-compress bf16: V100"):
        run("bf16", topology="dgx1-v100:1x8", dtype="fp32")
