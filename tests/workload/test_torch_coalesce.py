"""PyTorch's sparse coalesce as its three host-separated parts."""

import pytest

from embsim.topology.clusterspec import load_topology
from embsim.workload import load_model
from embsim.workload.compute import sparse_optimizer_step_time
from embsim.workload.gpu_compute import for_gpu
from embsim.workload.torch_coalesce import coalesce_kernels

A100 = for_gpu(load_topology("dgx-a100:1x1").node.gpu)


def test_three_parts_split_at_the_merge_sorts_sync_and_the_unique_count_read():
    sort, unique, values = coalesce_kernels("o", 65536, 5000, 64, 4)
    assert sort[0].name == "o.coalesce.flatten_indices" and sort[0].ops == 1   # the op's dispatch
    assert any(".sort.merge." in k.name for k in sort)
    assert [k.name.rsplit(".", 1)[1] for k in unique] == ["unique_init", "unique_by_key", "count_to_host"]
    assert [k.name for k in values] == ["o.coalesce.values"]
    assert sum(k.ops for part in (sort, unique, values) for k in part) == 1


def test_values_read_every_gradient_row_and_write_each_distinct_row():
    (_, _, (values,)) = coalesce_kernels("o", 65536, 5000, 64, 4)
    assert values.kind == "gather" and values.passes == 1
    assert values.rows == 65536 + 5000 and values.row_bytes == 256


def test_no_gradient_rows_no_kernels():
    assert coalesce_kernels("o", 0, 0, 64, 4) == []


def test_more_repeated_lookups_cost_more_to_merge_for_the_same_rows():
    adagrad = load_model("dlrm-criteo-f15", dtype="fp32", overrides={"optimizer": {"name": "adagrad"}})
    few, many = (sparse_optimizer_step_time(5000, 64, adagrad, A100, n) for n in (65536, 524288))
    assert many > few > sparse_optimizer_step_time(5000, 64, adagrad, A100)
    # a few repeats on a small table: the step is its launches and dispatches either way
    assert sparse_optimizer_step_time(5000, 64, adagrad, A100, 8192) == pytest.approx(
        sparse_optimizer_step_time(5000, 64, adagrad, A100), rel=1e-12)
