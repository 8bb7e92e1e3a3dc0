"""nn.Embedding / nn.EmbeddingBag kernels: the forward gather and both gradients."""

from embsim.workload.embedding_kernels import (FEATURE_KERNEL_MAX_INDICES, bag_kernels,
                                               dense_backward_kernels, embedding_kernels)


def names(ks, prefix="e."):
    return [k.name.removeprefix(prefix) for k in ks]


def test_up_to_3072_indices_take_the_unsorted_feature_kernel():
    ks = dense_backward_kernels("e", FEATURE_KERNEL_MAX_INDICES, 64, 1000, 4)
    assert names(ks) == ["zero_grad", "feature_kernel"]
    assert ks[1].kind == "scatter" and ks[1].rows == FEATURE_KERNEL_MAX_INDICES
    assert "sort" in " ".join(names(dense_backward_kernels("e", FEATURE_KERNEL_MAX_INDICES + 1, 64, 1000, 4)))


def test_the_sort_runs_over_all_64_bits_of_the_index():
    ks = dense_backward_kernels("e", 100_000, 64, 1000, 4)     # 1,000 rows need 10 bits
    assert sum(".onesweep." in k.name for k in ks) == 8
    assert all(k.nbytes == 2 * 100_000 * 16 for k in ks if ".onesweep." in k.name)


def test_the_backward_is_one_op_and_its_kernels_are_launches():
    ks = dense_backward_kernels("e", 100_000, 64, 1000, 4)
    assert ks[0].name == "e.zero_grad" and ks[0].ops == 1
    assert sum(k.ops for k in ks) == 1
    assert names(ks)[-3:] == ["segment_sum", "partials", "row_write"]


def test_embedding_bag_always_sorts():
    _, dense, _ = bag_kernels("b", 100, 10, 64, 1000, 4)
    assert any(".sort." in k.name for k in dense)
    _, dense, _ = embedding_kernels("e", 100, 64, 1000, 4)
    assert names(dense) == ["zero_grad", "feature_kernel"]


def test_tensorflow_makes_the_dense_gradient_with_unsorted_segment_sum():
    _, dense, _ = embedding_kernels("e", 100_000, 64, 1000, 4, framework="tensorflow")
    assert names(dense) == ["zero_grad", "segment_sum.atomic_add"]
    assert dense[1].kind == "scatter" and dense[1].rows == 100_000 and dense[1].ops == 0
    _, dense, sparse = bag_kernels("b", 300, 100, 64, 1000, 4, framework="tensorflow")
    assert names(dense, "b.") == ["bag_grad_expand", "zero_grad", "segment_sum.atomic_add"]
    assert dense[0] == sparse[0]            # the pooled gradient expanded to rows, as sparse


def test_the_model_framework_picks_the_kernels():
    from embsim.workload import load_model
    tf = load_model("wide-deep-outbrain")
    assert tf.framework == "tensorflow" and tf.optimizer.sparse_dedup == "tf-unique"
    emb = next(l for l in tf.layers if l.kind == "embedding")
    assert any(k.name.endswith("segment_sum.atomic_add") for k in emb.kernels.bwd)
    torch = load_model("wide-deep-outbrain", overrides={"framework": "pytorch"})
    assert torch.framework == "pytorch" and torch.optimizer.sparse_dedup == "coalesce"
    emb = next(l for l in torch.layers if l.kind == "embedding")
    assert not any("atomic" in k.name for k in emb.kernels.bwd)
