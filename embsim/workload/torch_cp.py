"""PyTorch's experimental context parallelism (torch.distributed.tensor.experimental.
context_parallel, as torchtitan runs it), beside Transformer Engine's p2p ring
(workload.context_parallel). Read from torch/distributed/tensor/experimental/_attention.py of
the torch 2.6.0 release (git 2236df17, branch cut Dec 2024; torchtitan's Dec-2024 runs used the
main-branch nightly 1963fc8 of 2024-12-23). Line numbers below are that file's.

    --context-parallel C --context-parallel-impl torch-allgather | torch-alltoall

Split: `_ContextParallelOptions.enable_load_balance = True` (:58) makes context_parallel()
shard its buffers with `_RoundRobinLoadBalancer` (:1198-1203): 2 C chunks, rank r holds chunks
r and 2C - 1 - r (:1165-1169), TE's balanced causal split. (torch 2.5.1 had no balancer: plain
chunks, steps skipped above the diagonal; torchtitan 9dec370 imports set_rotate_method, which
2.5 lacks, so its runs had the balanced 2.6 code.) torchtitan passes input_ids, labels and
freqs_cis as the buffers (train.py:269-276 @9dec370).

Forward, `_templated_ring_attention` (:473-527): one SDPA call per ring step i = 0 .. C-1,
none skipped under load balance (`_is_causal_behavior`, :79): step 0 the local chunks,
causal; i <= rank the local queries over the first half of the received KV, i > rank the
second half of the queries over all of it, both unmasked (the same products, timed as
s / C queries over s / 2C keys, as TE's). After each call `_SDPAMerger.step` (:179-187,
`convert_to_f32 = True`, :57) casts the output to FP32 and merges it into the running FP32
output with four eager elementwise ops (out - block_out, sigmoid(lse) *, out -, and the
logsumexp's own, :166-167); an i > rank step merges into the second half and writes the
whole output again (`_partial_update`'s torch.cat, :96-117). `results()` casts back (:189-193).
Every step but the last concatenates its K and V (`torch.cat`, :483) for the rotater.
Backward, `_templated_ring_attention_backward` (:606-772): the same per-step calls of the
flash backward; FP32 gradient buffers (:632-635); dK, dV added into them (`_partial_update`
add=True with its cat on i <= rank, :724-741), dQ likewise (:749-759); every step the FP32 dK
and dV are concatenated (:745) and sent to the next rank by an all-to-all permute (the dKV
rotater is always ALL_TO_ALL, :640); the last is waited for after the loop (:765-767).

Rotater (`_cp_options.rotate_method`, default ALL_GATHER, :59; torchtitan's
--experimental.context_parallel_rotate_method, default 'allgather', config_manager.py:365-367
@9dec370): ALL_GATHER gathers every rank's K and V once, posted before step 0 and waited for
before step 1 (`_AllGatherRotater`, :301-328), forward and backward alike; ALL_TO_ALL passes
them on one rank per step (`_AllToAllRotater`, ft_c.permute_tensor, :282-298). The rotater
changes what is sent and when, not the per-step compute.

SDPA backend: torchtitan enters sdpa_kernel([FLASH_ATTENTION, EFFICIENT_ATTENTION])
(utils.py:209-217 @9dec370); PyTorch picks flash first, so aten._scaled_dot_product_flash_attention
and its backward (which recomputes the scores, as any flash backward) run per step (:549-561).
K and V go to SDPA at the query heads' width: torchtitan repeats the KV heads before the call
(models/llama/model.py repeat_kv, :199-200 @9dec370; 2.6's CP ops take no GQA argument), so
that width is what is gathered and sent.

Modelled here as kernels on the slowest rank, C - 1, whose steps are all i <= rank (full
queries): its merges are the full-width ones its ring neighbours wait for through the dKV
chain. Eager (fused_elementwise false) each op is its own pass; compiled (torchtitan
compiles each block, fullgraph=True: parallelize_llama.py:297-304 @9dec370) Inductor fuses each
merge's elementwise chain into one pass and drops the K/V concatenations no collective reads.
The logsumexp's ops (1/head_dim of the output's bytes) are not charged.
"""

from __future__ import annotations

from dataclasses import dataclass

IMPLS = ("te", "torch-allgather", "torch-alltoall")
LABELS = {"te": "TE p2p ring", "torch-allgather": "PyTorch context_parallel, all-gather rotater",
          "torch-alltoall": "PyTorch context_parallel, all-to-all rotater"}


@dataclass(frozen=True)
class Exchange:
    """One ring transfer of one attention layer in one direction. `chunks`: how many KV
    chunks (b x s / C x kv_width elements) it moves; `fp32`: FP32 elements, else the
    activations' 16-bit dtype. Ready once step op `after` ended (-1: the post op before the
    first step) and the previous transfer of its `chain`; the op after step `beside` (or the
    rest of the block, past the last) waits for it."""
    what: str
    op: str            # "sendrecv" | "all_gather"
    chunks: int
    after: int
    beside: int
    chain: str = "ring"
    fp32: bool = False


def te_exchanges(c: int, fwd: bool) -> tuple[Exchange, ...]:
    """Transformer Engine's p2p ring (workload.context_parallel): transfer i beside step i."""
    if c == 1:
        return ()
    if fwd:
        kinds = [("KV", 1)] * (c - 1)
    else:
        kinds = [("KV", 1)] + [("KV+dKV", 2)] * (c - 2) + [("dKV", 1)]
    return tuple(Exchange(w, "sendrecv", n, i - 1, i) for i, (w, n) in enumerate(kinds))


def torch_exchanges(c: int, fwd: bool, impl: str) -> tuple[Exchange, ...]:
    """PyTorch's: the KV by the rotater (one all-gather of the C chunks beside step 0, or
    one permute per step beside it), and backward the FP32 dKV permuted after every step,
    waited for after the next (the last after the loop, beside nothing)."""
    if c == 1:
        return ()
    if impl == "torch-allgather":
        kv = (Exchange("KV all-gather", "all_gather", c, -1, 0, "kv"),)
    else:
        kv = tuple(Exchange("KV", "sendrecv", 1, i - 1, i, "kv") for i in range(c - 1))
    if fwd:
        return kv
    dkv = tuple(Exchange("dKV", "sendrecv", 1, i, i + 1, "dkv", fp32=True) for i in range(c))
    return kv + dkv


def exchanges(impl: str, c: int, fwd: bool) -> tuple[Exchange, ...]:
    return te_exchanges(c, fwd) if impl == "te" else torch_exchanges(c, fwd, impl)
