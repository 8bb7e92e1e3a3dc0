"""A data-parallel wrapper's passes over the gradient buckets (schedulers.ddp_passes)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

import embsim

from embsim.engine.run import SimulationConfig, simulate
from embsim.errors import InputError
from embsim.schedulers.fifo import FifoOptions
from embsim.topology import load_topology
from embsim.workload import load_model
from embsim.workload.gpu_compute import for_gpu

TOPO = "dgx-a100:1x8"


def run(topology=TOPO, model="bert-base", **options):
    # every GPU alike (no GPU-to-GPU speed spread): one rank class, whose records are the passes
    return simulate(SimulationConfig(topology=topology, model=model, iterations=3,
                                     efficiency_baseline=False, scheduler_options=options,
                                     gpu_variation=0.0))


def records(r, tag, k=1):
    return [c for c in r.run.compute if c.iteration == k and c.name.startswith(f"extra:{tag}:")]


def grad_bytes(model="bert-base"):
    m = load_model(model)
    return sum(l.params * m.grad_elem_bytes(l) for l in m.layers if l.params > 0)


def copy_bps(topology=TOPO):
    gpu = for_gpu(load_topology(topology).node.gpu)
    return gpu.hbm_bps * gpu.hbm_fraction


def test_torch_ddp_copies_each_gradient_in_and_back_at_copy_bandwidth():
    r = run(ddp="torch")
    into, back = records(r, "ddp-copy-in"), records(r, "ddp-copy-out")
    assert into and back
    ideal = 2 * grad_bytes() / copy_bps()         # one read + one write of every gradient byte
    for ops in (into, back):
        seconds = sum(c.end - c.start for c in ops)
        assert ideal <= seconds < 2 * ideal        # plus a kernel gap per parameter tensor
    # copies back run after their bucket's all-reduce, before the optimizer
    last_comm = max(c.end for c in r.run.comm if c.iteration == 1)
    first_update = min(c.start for c in r.run.compute if c.iteration == 1 and c.kind == "update")
    assert max(c.end for c in back) <= first_update + 1e-12
    assert max(c.end for c in back) >= last_comm


def test_passes_cost_time_only_with_more_than_one_gpu():
    one = run(topology="dgx-a100:1x1", ddp="torch")
    assert not [c for c in one.run.compute if c.name.startswith("extra:ddp-")]
    none, torch = run(ddp="none"), run(ddp="torch")
    assert not [c for c in none.run.compute if c.name.startswith("extra:ddp-")]
    assert torch.step_time > none.step_time


def test_bucket_view_divides_in_place_and_copies_nothing_back():
    view = run(ddp="torch-view")
    assert records(view, "ddp-divide") and not records(view, "ddp-copy-in")
    assert not records(view, "ddp-copy-out")
    hook = run(ddp="torch-view", hook_divides=2, bucket_bytes=1e12)
    divides = records(hook, "ddp-hook-divide")
    assert len(divides) == 2                       # DDP's 1 MiB first bucket, then the rest
    ideal = 2 * 2 * grad_bytes() / copy_bps()      # two divides, each a read and a write
    assert ideal <= sum(c.end - c.start for c in divides) < 1.5 * ideal
    assert run(ddp="torch").step_time > view.step_time


def test_apex_flattens_on_the_compute_stream_and_holds_its_bucket_stream_after():
    apex, none = run(ddp="apex"), run(ddp="none")
    flat = records(apex, "ddp-flatten")
    assert flat
    ideal = 2 * grad_bytes() / copy_bps()
    assert ideal <= sum(c.end - c.start for c in flat) < 1.5 * ideal
    # average + unflatten copy after the last all-reduce: 2 more passes before the update
    last_comm = max(c.end for c in apex.run.comm if c.iteration == 1)
    first_update = min(c.start for c in apex.run.compute if c.iteration == 1 and c.kind == "update")
    last_bucket = max((c for c in apex.run.comm if c.iteration == 1), key=lambda c: c.end)
    assert first_update - last_comm >= 2 * 2 * last_bucket.nbytes / copy_bps() * 0.99
    assert apex.step_time > none.step_time


def _buckets(r, k=1):
    return sorted((c for c in r.run.comm if c.iteration == k and c.name.startswith("bucket")),
                  key=lambda c: c.start)


def test_apex_buckets_close_at_message_size_elements_with_no_small_first_bucket():
    m = load_model("bert-base")
    elem = {m.grad_elem_bytes(l) for l in m.layers if l.params > 0}
    assert len(elem) == 1
    (elem,) = elem
    sizes = [l.params for l in reversed(m.layers) if l.params > 0]   # backward arrival order
    expect, numel = [], 0
    for n in sizes:
        numel += n
        if numel >= 10_000_000:
            expect.append(numel)
            numel = 0
    if numel:
        expect.append(numel)
    apex = _buckets(run(ddp="apex"))
    assert [c.nbytes / elem for c in apex] == expect
    assert apex[0].nbytes / elem >= 10_000_000                 # no 1 MiB first bucket
    # message_size is apex's own knob; torch's byte caps are refused with apex
    small = _buckets(run(ddp="apex", message_size=2_000_000))
    assert len(small) > len(apex) and sum(c.nbytes for c in small) == sum(c.nbytes for c in apex)
    torch = _buckets(run(ddp="torch"))
    assert torch[0].nbytes <= 1024 * 1024 + max(sizes) * elem and torch[0].nbytes < apex[0].nbytes


def test_seq2seq_zoo_models_use_apex_ddp():
    for name in ("gnmt", "transformer-wmt"):
        zoo = Path(embsim.__file__).parent / "workload" / "zoo" / f"{name}.yaml"
        assert yaml.safe_load(zoo.read_text())["defaults"]["options"]["ddp"] == "apex"


def test_megatron_core_llama3_has_no_ddp_passes():
    # Megatron-Core DDP: main_grad views into one contiguous grad buffer (no bucket copies)
    # and average_in_collective=True in the Megatron-Bridge recipe (no scaling pass)
    zoo = Path(embsim.__file__).parent / "workload" / "zoo" / "llama3-8b.yaml"
    assert yaml.safe_load(zoo.read_text())["defaults"]["options"]["ddp"] == "none"


def test_bad_ddp_options():
    with pytest.raises(InputError, match="ddp"):
        FifoOptions(ddp="horovod")
    with pytest.raises(InputError, match="hook_divides"):
        FifoOptions(ddp="torch", hook_divides=1)
    with pytest.raises(InputError, match="hook_divides"):
        FifoOptions(ddp="torch-view", hook_divides=-1)
    with pytest.raises(InputError, match="message_size"):
        FifoOptions(ddp="apex", bucket_bytes=4e7)
    with pytest.raises(InputError, match="message_size"):
        FifoOptions(ddp="torch", message_size=1e6)
    with pytest.raises(InputError, match="message_size"):
        FifoOptions(ddp="apex", message_size=0)


def test_apex_buckets_run_one_bucket_per_element_type_and_leftovers_half_first():
    from types import SimpleNamespace

    from embsim.plan.names import bwd_name
    from embsim.plan.ops import SyncTensor
    from embsim.schedulers.fifo import FifoScheduler

    elem = {"a": 4, "b": 2, "c": 4, "d": 2}        # FP32 and 16-bit gradients interleaved
    numel = {"a": 6e6, "b": 3e6, "c": 5e6, "d": 1e6}
    model = SimpleNamespace(grad_elem_bytes=lambda layer: elem[layer.name])
    ctx = SimpleNamespace(model=model, layer=lambda name: SimpleNamespace(name=name))
    tensors = [SyncTensor(name=f"grad:{n}", layer=n, op="all_reduce", nbytes=numel[n] * elem[n],
                          category="dense", ready_after=bwd_name(n)) for n in "abcd"]
    comms = FifoScheduler.from_options({"ddp": "apex"}).build(tensors, ctx)
    # a + c reach 10M FP32 elements; b + d (4M half) are left over, shipped after the backward
    assert [c.tensors for c in comms] == [("grad:a", "grad:c"), ("grad:b", "grad:d")]
    assert [c.priority for c in comms] == [0.0, 1.0]
