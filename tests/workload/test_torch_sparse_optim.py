"""torch.optim's sparse branch after the coalesce: one ATen op per line of Adagrad's and
SparseAdam's sparse step, whatever the dense implementation; TensorFlow's fused apply
and other optimizers keep their own kernels (compute.sparse_apply_kernels)."""

from dataclasses import replace

import pytest

from embsim.workload import load_model
from embsim.workload.compute import optimizer_kernels, sparse_apply_kernels
from embsim.workload.torch_sparse_optim import torch_sparse_apply_kernels


def test_adagrad_and_sparse_adam_are_their_aten_ops():
    ada = torch_sparse_apply_kernels(1000, 64, "adagrad", 4)
    adam = torch_sparse_apply_kernels(1000, 64, "adam", 4)
    assert len(ada) == 8 and len(adam) == 16
    # the dense state and the table are touched only through the rows: index adds and gathers
    assert [k.kind for k in ada].count("scatter") == 2 and [k.kind for k in ada].count("gather") == 1
    assert [k.kind for k in adam].count("scatter") == 3 and [k.kind for k in adam].count("gather") == 2
    assert torch_sparse_apply_kernels(0, 64, "adam", 4) == []
    with pytest.raises(ValueError):
        torch_sparse_apply_kernels(10, 64, "lamb", 4)


@pytest.mark.parametrize("implementation", ["fused", "per-tensor"])
def test_a_pytorch_sparse_table_takes_the_sparse_branch_whatever_the_dense_step(implementation):
    m = load_model("dlrm-criteo-f15", dtype="fp32",
                   overrides={"optimizer": {"name": "adagrad", "implementation": implementation}})
    names = [k.name for k in sparse_apply_kernels(1000, 64, m)]
    assert names[0] == "adagrad.grad_pow2" and names[-1] == "adagrad.param.index_add"


def test_tensorflow_and_plain_optimizers_keep_their_own_step():
    m = load_model("dlrm-criteo-f15", dtype="fp32", overrides={"optimizer": {"name": "adagrad"}})
    tf = replace(m, optimizer=replace(m.optimizer, sparse_dedup="tf-unique"))
    assert sparse_apply_kernels(1000, 64, tf) == optimizer_kernels(64000, tf, kernels=1, index_bytes=8000,
                                                                   table=True)
    lamb = load_model("dlrm-criteo-f15", dtype="fp32", overrides={"optimizer": {"name": "lamb"}})
    assert sparse_apply_kernels(1000, 64, lamb) == optimizer_kernels(64000, lamb, kernels=1,
                                                                     index_bytes=8000, table=True)
