"""FBGEMM's table-batched embedding backward (framework torchrec): the transposition, the
fused row update, and the switch that routes a model's tables through them."""

import pytest

from embsim.errors import InputError
from embsim.topology import load_topology
from embsim.workload import load_model
from embsim.workload.compute import (model_times, sparse_merge_kernels, sparse_optimizer_step_time)
from embsim.workload.embedding_kernels import bag_kernels, embedding_kernels
from embsim.workload.fbgemm_tbe import (RUN_BYTES, optim_type, row_traffic, state_values,
                                        tbe_apply_kernels, tbe_dense_backward_kernels,
                                        tbe_merge_kernels, tbe_update_kernels,
                                        total_hash_size_bits)
from embsim.workload.gpu_compute import for_gpu

A100 = for_gpu(load_topology("dgx-a100:1x1").node.gpu)


def row_kernel(kernels):
    (k,) = [k for k in kernels if k.name.endswith(".tbe.warp_per_row")]
    return k


@pytest.mark.parametrize("rows, bits", [(1, 1), (3, 2), (4, 3), (40_000_000, 26),
                                        (2**26, 27), (4 * 40_000_000, 28)])
def test_the_sort_key_bits_are_int_log2_of_the_rows_plus_one(rows, bits):
    # split_table_batched_embeddings_ops.py: int(log2(float(total_hash_size)) + 1)
    assert total_hash_size_bits(rows) == bits
    ks = tbe_merge_kernels("t", 1e6, 5e5, rows)
    assert sum(".tbe.sort.onesweep." in k.name for k in ks) == -(-bits // 8)


def test_the_merge_is_linearize_sort_run_length_encode_cumsum_with_one_op_and_no_sync():
    n, u = 1e6, 2e5
    ks = tbe_merge_kernels("t", n, u, 40_000_000)
    assert ks[0].name == "t.tbe.linearize" and ks[0].nbytes == n * (8 + 4 + 8)
    sort = [k for k in ks if ".tbe.sort." in k.name]
    assert all(k.nbytes == 2 * n * 12 for k in sort if ".onesweep." in k.name)   # int64 key, int32 info
    tail = [k.name.split(".tbe.")[1] for k in ks if ".tbe.sort." not in k.name][1:]
    assert tail == ["run_lengths_zero", "num_runs_zero", "encode_init", "encode",
                    "cumsum_zero", "cumsum_init", "cumsum"]
    enc = next(k for k in ks if k.name.endswith(".encode"))
    assert enc.nbytes == n * 8 + u * (8 + RUN_BYTES) + RUN_BYTES
    # the scan runs over all n run lengths (zeros_like(indices)), not the u written
    assert next(k for k in ks if k.name.endswith(".cumsum")).nbytes == 2 * n * 4 + 4
    assert sum(k.ops for k in ks) == 1
    assert not any("to_host" in k.name for k in ks)


def test_gradient_rows_are_read_once_per_lookup_weights_and_state_once_per_distinct_row():
    n, u, d = 65536, 5000, 128
    sgd = row_traffic(n, u, d, 4, 4, state_values("EXACT_SGD", d))
    assert sgd.grad_rows == n * d * 4                 # each lookup's bag gradient row, read
    assert sgd.weights == 2 * u * d * 4               # loaded and stored once per distinct row
    assert sgd.state == 0
    assert sgd.indices == n * 4 + u * (8 + 4)
    # the fused kernel moves exactly these bytes (as 32-byte sectors)
    k = row_kernel(tbe_apply_kernels("t", n, u, d, 4, "sgd"))
    assert k.kind == "gather" and k.passes == 1 and k.rows * k.row_bytes == sgd.total


def test_exact_adagrad_keeps_a_value_per_weight_rowwise_one_per_row():
    n, u, d = 65536, 5000, 128
    ada = row_traffic(n, u, d, 4, 4, state_values(optim_type("adagrad"), d))
    assert ada.state == 2 * u * d * 4                 # momentum1[idx * D + d], read and written
    rowwise = row_traffic(n, u, d, 4, 4, state_values("EXACT_ROWWISE_ADAGRAD", d))
    assert rowwise.state == 2 * u * 32                # momentum1[idx]: one sector a row, each way
    assert state_values(optim_type("adam"), d) == 2 * d
    assert row_kernel(tbe_apply_kernels("t", n, u, d, 4, "adagrad")).rows * 32 == ada.total


def test_16_bit_rows_are_whole_sectors():
    t = row_traffic(10, 10, 8, 2, 2, 0)                # 16-byte rows: a 32-byte sector each
    assert t.grad_rows == 10 * 32 and t.weights == 2 * 10 * 32


def test_the_update_zero_fills_and_finds_long_runs_before_the_row_kernels():
    ks = tbe_update_kernels("t", 4096, 100, 64, 4, 4, state=0)
    assert [k.name.split(".tbe.")[1] for k in ks] == [
        "num_long_runs_zero", "num_really_long_runs_zero", "find_long_segments",
        "temp_grad_accum_zero", "cta_per_row", "warp_per_row"]
    assert ks[3].nbytes == (4096 // 1024) * 64 * 4     # (n / 1024) x max_D FP32
    assert all(k.ops == 0 for k in ks)
    # fewer than 1,024 lookups: at::zeros of no element, no launch
    assert not any("temp_grad_accum" in k.name for k in tbe_update_kernels("t", 1000, 10, 64, 4, 4, 0))
    assert tbe_update_kernels("t", 0, 0, 64, 4, 4, 0) == [] == tbe_merge_kernels("t", 0, 0, 10)


def test_a_pooled_lookup_expands_nothing_under_torchrec():
    _, dense, sparse = bag_kernels("b", 300, 100, 64, 1000, 4, framework="torchrec")
    assert sparse == []
    assert not any("expand" in k.name for k in dense)
    _, torch_dense, torch_sparse = bag_kernels("b", 300, 100, 64, 1000, 4)
    assert any("bag_grad_expand" in k.name for k in torch_sparse)
    _, _, plain = embedding_kernels("e", 300, 64, 1000, 4, framework="torchrec")
    assert plain == []


def test_the_dense_mode_zero_fills_the_table_and_writes_each_distinct_row_once():
    ks = tbe_dense_backward_kernels("b", 300, 64, 1000, 4)
    assert ks[0].name == "b.tbe.grad_zero" and ks[0].nbytes == 1000 * 64 * 4
    k = row_kernel(ks)
    assert k.rows * 32 == row_traffic(300, 300, 64, 4, 4, 0, dense=True).total
    assert sum(k.ops for k in ks) == 1


def test_the_torchrec_zoo_models_run_fbgemms_backward():
    for name, optimizer in (("dlrm-torchrec-criteo", "sgd"), ("dlrm-dcnv2-mlperf", "adagrad")):
        m = load_model(name)
        assert (m.framework, m.optimizer.sparse_dedup, m.optimizer.name) == ("torchrec", "tbe", optimizer)
        times = model_times(m, A100)
        assert all(times[l.name].bwd_sparse_s == 0.0 for l in m.layers if l.kind == "embedding")
    # the dense layers keep the file's optimizer implementation
    assert load_model("dlrm-dcnv2-mlperf").optimizer.implementation == "per-tensor"


def test_exact_sgd_merges_unlike_torch_optims_uncoalesced_index_add():
    m = load_model("dlrm-torchrec-criteo")
    merged = sparse_optimizer_step_time(5000, 128, m, A100, 65536, table_rows=40_000_000)
    parts = sparse_merge_kernels("o", 65536, 5000, 128, m, 40_000_000)
    assert len(parts) == 1 and parts[0][0].name == "o.tbe.linearize"
    torch = load_model("dlrm-torchrec-criteo", overrides={"framework": "pytorch"})
    assert merged != sparse_optimizer_step_time(5000, 128, torch, A100, 65536)
    # a larger table sorts over more bits
    assert sparse_optimizer_step_time(5000, 128, m, A100, 65536, table_rows=100) < merged
    with pytest.raises(ValueError, match="table_rows"):
        sparse_optimizer_step_time(5000, 128, m, A100, 65536)


def test_adagrad_is_cheaper_fused_than_torch_optims_sparse_branch():
    m = load_model("dlrm-dcnv2-mlperf")
    torch = load_model("dlrm-dcnv2-mlperf", overrides={"framework": "pytorch"})
    n, u = 8 * 8192 * 100, 6e6
    assert (sparse_optimizer_step_time(u, 128, m, A100, n, table_rows=40_000_000)
            < sparse_optimizer_step_time(u, 128, torch, A100, n))


def test_tbe_goes_with_torchrec_and_only_with_fusable_optimizers():
    with pytest.raises(InputError, match="sparse_dedup tbe goes with framework torchrec"):
        load_model("dlrm-torchrec-criteo", overrides={"optimizer": {"sparse_dedup": "coalesce"}})
    with pytest.raises(InputError, match="sparse_dedup tbe goes with framework torchrec"):
        load_model("ncf-ml20m", overrides={"optimizer": {"sparse_dedup": "tbe"}})
    with pytest.raises(InputError, match="no fused FBGEMM update"):
        load_model("dlrm-torchrec-criteo", overrides={"optimizer": {"name": "lamb"}})
    assert load_model("ncf-ml20m", overrides={"framework": "torchrec", "optimizer": {"name": "adam"}}
                      ).optimizer.sparse_dedup == "tbe"
