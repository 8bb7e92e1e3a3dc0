"""Activation recomputation (activation checkpointing): a block keeps only its input in
forward and runs its forward again in backward.

    --recompute none | full | every:K | selective

* `full`: every transformer block is checkpointed (llm-foundry's `activation_checkpointing:
  true` wraps each MPTBlock in FSDP's checkpoint_wrapper; Megatron's --recompute-granularity
  full --recompute-method uniform --recompute-num-layers 1).
* `every:K`: every K-th block, the K-th, 2K-th, ... (torchtitan's selective layer AC,
  `selective_ac_option` K: a block is wrapped when its running count is a multiple of K).

Time: a checkpointed block's backward is its own backward plus its forward again (the same
kernels: the recompute is the forward). Memory: a checkpointed block holds its input
(batch x seq x dim activations) instead of everything its backward reads, plus, during
backward, one block's full activations while its recompute lives.

* `selective`: Megatron's --recompute-granularity selective (Korthikanti et al. 2022,
  sec. 5): each transformer block's attention core -- the scores GEMM, scale/mask, softmax,
  dropout and the context GEMM, or the fused flash kernel -- runs its forward again in
  backward (Megatron-Core attention.py `_checkpointed_attention_forward` under
  `checkpoint_core_attention`; with a fused kernel it is still re-run). The block keeps Q,
  K and V but not the (batch x heads x seq x seq) scores, softmax and dropout tensors
  (Layer.core_saved; nothing with flash attention, which never stores them), and holds one
  block's while its core recomputes.

torchtitan's `op` policy (a saved-tensor list per op) is not modelled: it is refused, not
read as anything else. Only transformer blocks are checkpointed: embeddings, heads and
LSTMs keep their activations.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InputError

BLOCK_KINDS = ("transformer_encoder", "transformer_decoder")
FORMS = ("none, full, every:K (every K-th transformer block) or selective (each block's "
         "attention core, Megatron's selective granularity)")


@dataclass(frozen=True)
class Recompute:
    every: int = 0          # 0: no whole block recomputed; K: the K-th, 2K-th, ... block
    selective: bool = False     # every block's attention core recomputed (not with every)

    @classmethod
    def parse(cls, text: "str | Recompute | None", flag: str = "--recompute") -> "Recompute":
        if isinstance(text, Recompute):
            return text
        if text is None:
            return cls()
        key = str(text).strip().lower()
        if key in ("none", "off", "false", "no"):
            return cls()
        if key in ("full", "true", "every:1"):
            return cls(1)
        if key == "selective":
            return cls(0, selective=True)
        if key.startswith("every:"):
            try:
                k = int(key[len("every:"):])
            except ValueError:
                k = 0
            if k >= 1:
                return cls(k)
        raise InputError(f"{flag} {text!r}: must be {FORMS}")

    @property
    def on(self) -> bool:
        return self.every > 0 or self.selective

    def __str__(self) -> str:
        if self.selective:
            return "selective"
        return "none" if not self.on else "full" if self.every == 1 else f"every:{self.every}"

    def blocks(self, layers) -> tuple[str, ...]:
        """Names of the wholly checkpointed layers, in forward order."""
        if self.every <= 0:
            return ()
        out, count = [], 0
        for layer in layers:
            if layer.kind in BLOCK_KINDS:
                count += 1
                if count % self.every == 0:
                    out.append(layer.name)
        return tuple(out)

    def core_blocks(self, layers) -> tuple[str, ...]:
        """Names of the blocks whose attention core alone is recomputed (selective)."""
        if not self.selective:
            return ()
        return tuple(layer.name for layer in layers if layer.kind in BLOCK_KINDS)

    def label(self, layers) -> str:
        """What the outputs say (empty when off)."""
        if not self.on:
            return ""
        n = sum(1 for layer in layers if layer.kind in BLOCK_KINDS)
        if self.selective:
            # a fused (flash) attention kernel keeps no scores: the rerun buys no memory
            freed = ("" if any(getattr(layer, "core_saved", 0) > 0 for layer in layers
                               if layer.kind in BLOCK_KINDS)
                     else "; frees no memory here: the fused attention kernel stores no scores")
            return (f"activation recompute selective: the attention core of {n} transformer "
                    f"blocks runs its forward again in backward (Megatron's selective "
                    f"granularity){freed}")
        return (f"activation recompute {self}: {len(self.blocks(layers))} of {n} transformer "
                f"blocks run their forward again in backward")
