"""Memory per GPU: the breakdown adds up, sharding and sparse gradients shrink what they should."""

import pytest

from embsim.errors import InputError
from embsim.workload import load_model
from embsim.workload.memory import memory_per_gpu


def test_breakdown_adds_up_for_adam_fp32():
    m = load_model("bert-base")
    mem = memory_per_gpu(m)
    assert mem.params == 4 * m.params and mem.grads == 4 * m.params
    assert mem.optimizer_state == 8 * m.params and mem.master_weights == 0
    assert mem.activations == sum(layer.activation_bytes for layer in m.layers)
    assert mem.total == mem.params + mem.grads + mem.optimizer_state + mem.activations
    assert sum(mem.by_component.values()) == mem.total
    assert mem.as_dict()["total"] == mem.total


def test_mixed_precision_master_weights():
    m = load_model("llama3-8b", amp="o2")         # model.half()-style: tables 16-bit too
    mem = memory_per_gpu(m)
    assert mem.params == 2 * m.params and mem.master_weights == 4 * m.params
    # 8B params x (2 + 2 + 8 + 4) B = 128 GB before activations: needs sharding on one GPU
    assert mem.total > 139e9
    zero = memory_per_gpu(m, dense_shards=8)
    assert zero.total < mem.total


def _o2_with_16bit_gradients():
    """llama3-8b under apex-style o2 with 16-bit gradients (the zoo default reduces them in
    FP32, as Megatron's recipes do)."""
    from dataclasses import replace
    o2 = load_model("llama3-8b", amp="o2")
    return replace(o2, optimizer=replace(o2.optimizer, fp32_gradients=False))


def test_autocast_keeps_every_parameter_fp32_without_master_copy():
    """torch.cuda.amp autocast never casts the model: every parameter (tables included)
    and its gradient stay FP32 and need no master copy; o2 stores them 16-bit with one."""
    auto, o2 = load_model("llama3-8b", amp="autocast"), _o2_with_16bit_gradients()
    n = auto.params
    a, b = memory_per_gpu(auto), memory_per_gpu(o2)
    assert a.params - b.params == 2 * n and a.grads - b.grads == 2 * n
    assert a.master_weights == 0 and b.master_weights == 4 * n
    assert a.optimizer_state == b.optimizer_state
    # per parameter: FP32 param + FP32 grad = 16-bit param + grad + FP32 master
    assert a.by_component["dense"] == b.by_component["dense"]


def test_sharding_embedding_tables():
    m = load_model("lstm-lm1b")
    full, sharded = memory_per_gpu(m), memory_per_gpu(m, embedding_shards=16)
    table = full.by_component["word"]
    assert sharded.by_component["word"] == pytest.approx(table / 16, rel=1e-3)
    assert sharded.by_component["dense"] == full.by_component["dense"]


def test_sparse_gradients_only_where_the_gradient_is_sparse():
    lm1b = load_model("lstm-lm1b")           # sampled softmax: gradient stays sparse
    assert memory_per_gpu(lm1b, sparse_embedding_grads=True).grads < \
        memory_per_gpu(lm1b).grads / 10
    gpt2 = load_model("gpt2")                 # full softmax over a tied table: dense
    assert memory_per_gpu(gpt2, sparse_embedding_grads=True).grads == memory_per_gpu(gpt2).grads


def test_bad_shards():
    with pytest.raises(InputError, match="embedding_shards"):
        memory_per_gpu(load_model("tiny-lm"), embedding_shards=0)


def test_per_table_shards_and_buffers():
    m = load_model("nmt-iwslt")
    everywhere = memory_per_gpu(m, embedding_shards=4, sparse_embedding_grads=True)
    by_name = memory_per_gpu(m, embedding_shards={t.name: 4 for t in m.tables}, sparse_embedding_grads=True)
    assert everywhere == by_name
    one = m.tables[0].name
    partial = memory_per_gpu(m, embedding_shards={one: 4}, sparse_embedding_grads=True)
    replicated = memory_per_gpu(m, sparse_embedding_grads=True)
    assert everywhere.total < partial.total < replicated.total
    with_buffer = memory_per_gpu(m, buffers={"recv": 1000})
    plain = memory_per_gpu(m)
    assert with_buffer.grads == plain.grads and with_buffer.buffers == 1000   # apart, not as grads
    assert with_buffer.total == plain.total + 1000
    assert with_buffer.by_component["recv"] == 1000


def test_a_table_held_elsewhere_costs_nothing():
    m = load_model("nmt-iwslt")
    names = [t.name for t in m.tables]
    held = memory_per_gpu(m, embedding_shards={n: 1 for n in names}, sparse_embedding_grads=True)
    none = memory_per_gpu(m, embedding_shards={n: 0 for n in names}, sparse_embedding_grads=True)
    assert none.params == held.params - sum(t.vocab * t.dim * m.table_bytes for t in m.tables)
    assert all(none.by_component[n] == 0 for n in names)
    with pytest.raises(InputError, match=r"embedding_shards\[.*\]: must be an integer >= 0"):
        memory_per_gpu(m, embedding_shards={names[0]: -1})


def test_fp32_gradients_hold_an_fp32_gradient_buffer():
    """A 16-bit model whose optimizer keeps FP32 gradients (Megatron's grad_reduce_in_fp32,
    a script all-reducing FP32 copies) holds 4 bytes of gradient per parameter."""
    from dataclasses import replace
    o2 = _o2_with_16bit_gradients()
    fp32 = replace(o2, optimizer=replace(o2.optimizer, fp32_gradients=True))
    a, b = memory_per_gpu(o2), memory_per_gpu(fp32)
    assert a.grads == 2 * o2.params and b.grads == 4 * o2.params
    assert b.total - a.total == 2 * o2.params
    assert sum(b.by_component.values()) == b.total


def test_optimizer_shards_split_only_the_state_and_master_weights():
    m = load_model("llama3-8b", amp="o2")
    whole, eight = memory_per_gpu(m), memory_per_gpu(m, optimizer_shards=8)
    assert (eight.params, eight.grads) == (whole.params, whole.grads)
    assert eight.optimizer_state == pytest.approx(whole.optimizer_state / 8, abs=64)
    assert eight.master_weights == pytest.approx(whole.master_weights / 8, abs=64)
    assert sum(eight.by_component.values()) == eight.total
    with pytest.raises(InputError, match="optimizer_shards"):
        memory_per_gpu(m, optimizer_shards=0)


def test_host_memory_rides_with_the_breakdown_outside_the_hbm_total():
    """A strategy's host-memory need (ps servers' shards) is carried, not added to HBM."""
    from embsim.workload.host_memory import HostMemoryNeed
    m = load_model("tiny-lm")
    need = HostMemoryNeed("servers", 10**12, None)
    with_host = memory_per_gpu(m, host=need)
    assert with_host.host is need and with_host.total == memory_per_gpu(m).total
    assert memory_per_gpu(m).host is None


def test_a_wrappers_bucket_buffer_adds_to_buffers_and_is_named():
    """MemoryBreakdown.with_buffer: the data-parallel wrapper's gradient buckets, added once the
    scheduler has bucketed the gradients (schedulers.ddp_passes.bucket_memory), count in the
    buffers and the total under their own name; nothing to add leaves it as it was."""
    mem = memory_per_gpu(load_model("bert-base"))
    held = mem.with_buffer("DDP flat gradient buckets", mem.grads + 0.5)
    assert held.buffers == mem.buffers + mem.grads + 1          # whole bytes, rounded up
    assert held.total == mem.total + mem.grads + 1
    assert held.by_component["DDP flat gradient buckets"] == mem.grads + 1
    assert sum(held.by_component.values()) == held.total
    assert "DDP flat gradient buckets" not in mem.by_component   # the original is unchanged
    assert mem.with_buffer("DDP flat gradient buckets", 0) is mem
