"""TensorFlow optimizers' dedup of IndexedSlices (GPU Unique + UnsortedSegmentSum) and the
optimizer option that selects it."""

import pytest

from embsim.errors import InputError
from embsim.topology import load_topology
from embsim.workload import load_model
from embsim.workload.compute import sparse_optimizer_step_time
from embsim.workload.gpu_compute import for_gpu
from embsim.workload.kernel_time import kernels_time
from embsim.workload.precision import precision
from embsim.workload.tf_dedup import tf_dedup_kernels

A100 = for_gpu(load_topology("dgx-a100:1x1").node.gpu)


def test_unique_sorts_the_ids_over_64_bits_then_the_positions_over_log2_n():
    before, after = tf_dedup_kernels("t", 65536, 5000, 16, 4)
    assert sum(".unique.sort.onesweep." in k.name for k in before) == 8
    assert sum(".sort_positions.onesweep." in k.name for k in after) == 2      # ceil(16 / 8)
    assert before[-1].name == "t.unique.count_to_host"                         # the host sync
    # two framework ops (Unique, UnsortedSegmentSum); every other launch is the library's
    assert sum(k.ops for k in before + after) == 2
    atomic = after[-1]
    assert atomic.kind == "scatter" and atomic.rows == 65536 and atomic.row_bytes == 64


def test_the_two_sides_of_the_host_sync_add():
    # wide rows: the summing after the sync is GPU-bound, the launches before it host-bound;
    # without the sync the host would launch the first part while the GPU sums
    before, after = tf_dedup_kernels("t", 65536, 5000, 1024, 4)
    t = lambda ks: kernels_time(ks, A100, precision("fp32"), 4)
    assert t(before) + t(after) > 1.01 * t(before + after)


def model(optimizer="adagrad", dedup="tf-unique"):
    return load_model("merlin-synthetic-tiny", overrides={"optimizer": {"name": optimizer,
                                                                        "sparse_dedup": dedup}})


def test_the_zoo_merlin_models_dedup_as_keras_adagrad_does():
    assert load_model("merlin-synthetic-tiny").optimizer.sparse_dedup == "tf-unique"
    assert load_model("dlrm-torchrec-criteo").optimizer.sparse_dedup == "tbe"      # FBGEMM, fused


def test_tf_unique_costs_more_than_a_coalesce_and_grows_with_the_gradient_rows():
    tf, torch = model(), model(dedup="coalesce")
    small, large = (sparse_optimizer_step_time(5000, 16, tf, A100, n) for n in (8192, 524288))
    assert small > sparse_optimizer_step_time(5000, 16, torch, A100, 8192)
    assert large > small


def test_keras_sgd_without_momentum_merges_nothing_either_way():
    a = sparse_optimizer_step_time(5000, 16, model("sgd"), A100, 65536)
    b = sparse_optimizer_step_time(5000, 16, model("sgd", "coalesce"), A100, 65536)
    assert a == b


def test_an_unknown_dedup_is_refused_with_its_key():
    with pytest.raises(InputError, match="sparse_dedup: must be one of coalesce, tf-unique"):
        model(dedup="hash")


def test_the_run_says_its_sparse_updates_follow_tensorflows_dedup():
    from embsim.engine.run import SimulationConfig, simulate
    kw = dict(topology="dgx-a100:1x8", model="merlin-synthetic-tiny", iterations=2, efficiency_baseline=False)
    sparse = simulate(SimulationConfig(strategy="embrace", strategy_options={"shard": "tables"}, **kw))
    dense = simulate(SimulationConfig(strategy="allreduce", **kw))     # dense table gradients
    assert "TensorFlow's dedup" in sparse.compute_source
    assert "TensorFlow's dedup" not in dense.compute_source
