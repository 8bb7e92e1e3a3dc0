"""Megatron-Core / Transformer Engine context parallelism, the p2p ring of key/value
exchanges (TE transformer_engine/pytorch/attention/dot_product_attention/
context_parallel.py, AttnFuncWithCPAndKVP2P; Megatron's --context-parallel-size with
--cp-comm-type p2p, its default).

    --context-parallel C [--context-parallel-impl te]

(PyTorch's experimental context_parallel, as torchtitan runs it, is --context-parallel-impl
torch-allgather | torch-alltoall: workload.torch_cp; the split, groups and token-wise share
below are the same.)

A CP group is C ranks with the same tensor-parallel index (Megatron's rank order
tp-cp-dp-pp: stride TP, parallel_state.py). Each rank holds s / C of every sequence: every
token-wise op (GEMMs, norms, MLP, embedding, output layer and loss) runs on b x s / C
tokens, and so do the activations it keeps. Attention needs every key: the C ranks pass
their key/value chunks around the ring while they compute.

Causal load balancing (TE; Megatron's get_batch_on_this_cp_rank): the sequence is cut into
2 C chunks and rank r holds chunks r and 2C - 1 - r, so each rank does 1/C of the causal
work; the sequence must divide into 2 C chunks (a non-causal block needs C). Per attention
layer, forward (AttnFuncWithCPAndKVP2P.forward, `for i in range(cp_size + 1)`): step i
waits for the KV received in step i - 1, posts the send of the KV it holds to the next CP
rank (and the receive from the previous) when i < C - 1, then runs step i's attention:
  * step 0: the rank's own 2 chunks, causal (flash attention over s / C queries and keys);
  * steps 1 .. C - 1: no mask; either all s / C queries over half the received chunk pair
    (i <= rank) or the later half of the queries over all of it (i > rank): the same
    (s / C) x (s / 2C) products, timed here as s / C queries over s / 2C keys;
  * non-causal: every step s / C queries over s / C keys.
So C - 1 exchanges each run beside one step's attention. Backward (`for i in
range(cp_size)`): step i waits for the previous step's transfer, sends the KV (step 0), the
KV and the accumulated dKV (steps 1 .. C - 2) or the dKV alone (step C - 1), then runs step
i's attention backward and waits for the transfer: C exchanges. A KV chunk is b x s / C x
2 kv_dim of the activations' 16-bit dtype (kv_dim / TP under tensor parallelism); the dKV
buffer has the same shape and dtype (FP8 attention, TE's uint8 buffers, is not modelled).

The engine (engine.cp_plan) places these as `sendrecv` collectives over the CP groups
(the network model's ring shift: NVLink inside a node, the NICs across nodes) and the steps
as compute ops that wait for them: what the exchange exposes comes out of the simulation.

Data parallelism: Megatron reduces the gradients over the data-parallel group with CP
(data_parallel_group_with_cp: every rank with the same TP index), so the strategies' view
is world / (TP PP) ranks; throughput counts world / (TP CP PP) replicas, each b sequences
of s tokens.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InputError
from .tensor_parallel import BLOCK_KINDS, parallel_size
from .torch_cp import IMPLS, LABELS, Exchange, exchanges

# layer kinds that work token by token (a rank's s / C tokens on their own), beside the
# transformer blocks whose attention the ring serves
TOKEN_WISE = ("embedding", "positional_embedding", "linear", "layernorm", "output_projection",
              "softmax_loss")
IMPL_FLAG = "--context-parallel-impl"


def check_impl(impl) -> str:
    """te (default), torch-allgather or torch-alltoall (workload.torch_cp)."""
    if impl is None:
        return "te"
    if impl not in IMPLS:
        raise InputError(f"{IMPL_FLAG} {impl!r}: expected one of {', '.join(IMPLS)}")
    return impl


@dataclass(frozen=True)
class ContextParallel:
    size: int = 1
    # whose implementation: "te" (this module) or PyTorch's with its KV rotater
    # ("torch-allgather", "torch-alltoall": workload.torch_cp)
    impl: str = "te"

    @classmethod
    def of(cls, size: "int | None", impl: "str | None" = None) -> "ContextParallel":
        return cls(parallel_size(size, "--context-parallel"), check_impl(impl))

    @property
    def torch(self) -> bool:
        return self.impl != "te"

    @property
    def on(self) -> bool:
        return self.size > 1

    def check_world(self, n_gpus: int, tp: int, pp: int) -> None:
        """C must divide the GPUs a tensor- and pipeline-parallel split leaves."""
        rest = n_gpus // (tp * pp) if n_gpus % (tp * pp) == 0 else 0
        if self.on and (rest == 0 or rest % self.size):
            raise InputError(f"--context-parallel {self.size}: does not divide {n_gpus} GPUs / "
                             f"(--tensor-parallel {tp} x --pipeline-parallel {pp}) = "
                             f"{n_gpus / (tp * pp):g}")

    def check_model(self, name: str, layers, seq: int) -> None:
        """Refuse a model CP cannot split: no transformer block, a layer that is not
        token-wise, an attention TE's CP does not run (unfused, cross-attention), or a
        sequence the load-balanced split does not divide. `layers`: (kind, params)."""
        if not self.on:
            return
        flag = f"--context-parallel {self.size}"
        blocks = [(k, p) for k, p in layers if k in BLOCK_KINDS]
        if not blocks:
            raise InputError(f"{flag}: model {name} has no transformer blocks to split")
        other = sorted({k for k, _ in layers if k not in BLOCK_KINDS and k not in TOKEN_WISE})
        if other:
            raise InputError(f"{flag}: model {name} has {', '.join(other)} layers, which do not "
                             f"work token by token on a rank's share of the sequence")
        for kind, p in blocks:
            if not p.get("flash_attention"):
                raise InputError(f"{flag}: model {name}'s blocks use unfused attention; TE's "
                                 f"context parallelism runs the flash/fused attention kernels only")
            if p.get("cross_attention"):
                raise InputError(f"{flag}: model {name}'s blocks have cross-attention (not modelled "
                                 f"with context parallelism)")
        causal = any(k == "transformer_decoder" for k, _ in blocks)
        if self.torch and not causal:
            raise InputError(f"{IMPL_FLAG} {self.impl}: model {name}'s attention is not causal; "
                             f"PyTorch's load-balanced context_parallel refuses it (_attention.py:446)")
        chunks = self.chunks(causal)
        if seq % chunks:
            raise InputError(f"{flag}: seq {seq} does not divide into {chunks} chunks"
                             + (" (TE's load-balanced causal split: 2 x C)" if chunks > self.size else ""))

    def chunks(self, causal: bool) -> int:
        return 2 * self.size if causal else self.size

    def local_seq(self, seq: int) -> int:
        """Tokens of one sequence on one CP rank."""
        return seq // self.size

    def exchanges(self, fwd: bool) -> tuple[tuple[str, int], ...]:
        """One attention layer's ring transfers in one direction, in step order, as (what,
        KV chunks); TE: forward C - 1 KV sends; backward KV, then KV + dKV, then dKV."""
        return tuple((x.what, x.chunks) for x in self.transfers(fwd))

    def transfers(self, fwd: bool) -> tuple[Exchange, ...]:
        """The same with their collective, dtype and place in the steps (torch_cp.Exchange)."""
        return exchanges(self.impl, self.size, fwd)

    def label(self, causal: bool) -> str:
        if not self.on:
            return ""
        return (f"context parallel {self.size} ({LABELS[self.impl]}"
                + (", load-balanced causal" if causal else "") + ")")
