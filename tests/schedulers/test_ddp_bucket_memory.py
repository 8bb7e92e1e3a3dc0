"""The memory a data-parallel wrapper keeps for its gradient buckets (schedulers.ddp_passes
bucket_memory): PyTorch DDP's default keeps a flat tensor per bucket as large as the gradients
it carries, gradient_as_bucket_view keeps none, apex a flat copy of each bucket in flight.

probe U, B1: dlrm-criteo-f15 allreduce on dgx-a100-40gb:1x8 timed the copies into DDP's flat
buckets (26 ms) but counted no bucket storage, so 36.5 of 42.9 GB "fit"; with the buckets it
needs 53.2 GB and does not."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from embsim.engine.run import SimulationConfig, simulate
from embsim.plan.timeline import CommRecord
from embsim.schedulers.ddp_passes import BUCKET_BUFFERS, BucketMemory, peak_in_flight
from embsim.workload import load_model

TORCH, APEX = BUCKET_BUFFERS["torch"], BUCKET_BUFFERS["apex"]


def run(topology="dgx-a100-40gb:1x8", model="dlrm-criteo-f15", strategy="allreduce", ddp="torch", **kw):
    return simulate(SimulationConfig(topology=topology, model=model, strategy=strategy, iterations=2,
                                     efficiency_baseline=False, scheduler_options={"ddp": ddp}, **kw))


def dense_grad_bytes(model):
    m = load_model(model)
    return sum(l.params * m.grad_elem_bytes(l) for l in m.layers if l.params > 0 and l.kind != "embedding")


@pytest.fixture(scope="module")
def criteo():
    return {ddp: run(ddp=ddp) for ddp in ("torch", "torch-view", "apex")}


def test_torch_ddp_holds_a_bucket_as_large_as_every_gradient_it_reduces(criteo):
    torch, view = criteo["torch"], criteo["torch-view"]
    # allreduce buckets every gradient, the tables' dense ones included
    assert torch.memory.by_component[TORCH] == torch.memory.grads
    assert torch.memory.buffers == view.memory.buffers + torch.memory.grads
    assert torch.memory.total == view.memory.total + torch.memory.grads
    # the probe's figures: 36.5 GB "fit" in 42.9; 53.2 GB does not
    assert round(view.memory.total / 1e9, 1) == 36.5 and view.fits_in_memory
    assert round(torch.memory.total / 1e9, 1) == 53.2 and not torch.fits_in_memory
    assert torch.memory.as_dict()["by_component"][TORCH] == torch.memory.grads


def test_gradient_as_bucket_view_keeps_no_bucket_beyond_the_gradients(criteo):
    view = criteo["torch-view"]
    assert TORCH not in view.memory.by_component and APEX not in view.memory.by_component
    assert view.memory.buffers == 0


def test_apex_holds_the_flat_copies_of_the_buckets_in_flight(criteo):
    apex, torch = criteo["apex"], criteo["torch"]
    held = apex.memory.by_component[APEX]
    buckets = sorted((c.nbytes for c in apex.run.comm if c.iteration == 1 and c.name.startswith("bucket")),
                     reverse=True)
    # at least the biggest bucket's copy, at most every bucket's (torch's figure)
    assert buckets[0] <= held <= torch.memory.by_component[TORCH]
    assert apex.memory.total == criteo["torch-view"].memory.total + held


def test_only_the_gradients_through_the_buckets_count():
    # embrace shards the tables (AlltoAll of looked-up rows): the buckets carry the dense layers
    r = run(topology="dgx-h100:1x8", strategy="embrace")
    assert r.memory.by_component[TORCH] == dense_grad_bytes("dlrm-criteo-f15")


def test_one_gpu_runs_no_wrapper_and_holds_no_bucket():
    r = run(topology="dgx-a100-40gb:1x1", batch=1024)
    assert TORCH not in r.memory.by_component


def test_the_memory_line_names_the_buckets(criteo):
    import io
    from rich.console import Console
    from embsim.report.summary import print_summary
    buf = io.StringIO()
    print_summary(criteo["torch"], Console(file=buf, width=200))
    assert "buffers 16.8 GB, of which DDP flat gradient buckets 16.8 GB)" in buf.getvalue()
    assert "WARNING: does not fit: 53.2 GB needed per GPU, 42.9 GB available" in buf.getvalue()


def _record(name, iteration, ready, end, around=0.0, nbytes=1.0):
    return CommRecord(iteration=iteration, name=name, op="all_reduce", nbytes=nbytes, channel="nccl",
                      category="dense", algo="ring", proto="simple", ready=ready, start=ready, end=end,
                      around=around)


def test_peak_in_flight_counts_the_copies_alive_at_once():
    buckets = (("bucket0", 100.0, 0.0), ("bucket1", 10.0, 0.5), ("bucket2", 1.0, 0.0))
    records = [_record("bucket0", 0, 1.0, 2.0, around=1.0),     # alive 1 .. 3
               _record("bucket1", 0, 3.0, 4.0),                 # alive 2.5 .. 4 (its flatten first)
               _record("bucket2", 0, 3.0, 3.5),                 # alive 3 .. 3.5
               _record("other", 0, 0.0, 9.0)]                   # not a bucket
    # 2.5 .. 3: bucket0 and bucket1; at 3 bucket0 is freed as bucket2 is made
    assert peak_in_flight(buckets, records) == 110.0
    whole = BucketMemory(TORCH, "whole", buckets)
    assert whole.bytes_held() == 111.0
    assert BucketMemory(APEX, "in_flight", buckets).bytes_held(SimpleNamespace(comm=records)) == 110.0
    assert whole.renamed("s1:").buckets[0] == ("s1:bucket0", 100.0, 0.0)


def test_pipeline_stages_hold_their_own_buckets():
    kw = dict(model="gpt2", topology="dgx-h100:2x8", batch=4, seq=1024, dtype="bf16", iterations=3,
              accumulate=4, pipeline_parallel=2, efficiency_baseline=False)
    torch = simulate(SimulationConfig(**kw))
    view = simulate(SimulationConfig(**kw, scheduler_options={"ddp": "torch-view"}))
    held = torch.memory.by_component[TORCH]
    # the worst stage's gradients, not the whole model's
    assert 0 < held < dense_grad_bytes("gpt2") + load_model("gpt2").embedding_params * 4
    assert torch.memory.total == view.memory.total + held
