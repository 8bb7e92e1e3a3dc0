"""Megatron-style tensor parallelism (Shoeybi et al. 2019, "Megatron-LM"; sequence
parallelism: Korthikanti et al. 2022, "Reducing Activation Recomputation").

    --tensor-parallel K [--sequence-parallel | --no-sequence-parallel]

A TP group of K consecutive ranks of one node (Megatron's default rank order tp-cp-dp-pp)
holds one model replica: in every transformer block the QKV and MLP-up (and gate) GEMMs are
column-parallel and the attention-output and MLP-down GEMMs row-parallel, so each GPU runs
1/K of the block's GEMM columns (rows) and 1/K of the attention heads (query and key/value
groups); the vocab embedding, output layer and cross-entropy are vocab-parallel (1/K of
the vocab rows). Weights, gradients and optimizer state per GPU are 1/K of those layers';
norms stay whole on every GPU. The data-parallel group is world / K GPUs.

The activations' collectives over the TP group, per transformer block (b x s x h elements
of the model dtype each, nccl-tests sizes; `block_collectives`):
  * no sequence parallelism (Megatron's f/g operators, tensor_parallel/mappings.py):
    forward 2 all-reduces (after the attention-out and MLP-down row-parallel GEMMs),
    backward 2 all-reduces (the input gradients of the QKV and MLP-up column-parallel GEMMs);
  * sequence parallelism: each becomes a reduce-scatter / all-gather pair; norms, dropout
    and residuals run on 1/K of the sequence. Forward: all-gather before QKV and MLP-up,
    reduce-scatter after attention-out and MLP-down. Backward: the reduce-scatters'
    gradients are all-gathers, and each column-parallel GEMM all-gathers its saved input
    again for the weight gradient and reduce-scatters its input gradient.

What Megatron overlaps by default (tensor_parallel/layers.py,
LinearWithGradAccumulationAndAsyncCommunication.backward, no --tp-comm-overlap): the input
gradient's all-reduce (or reduce-scatter) of a column-parallel GEMM is launched
asynchronously and runs while the weight-gradient GEMM computes; with sequence parallelism
the re-gather of the input runs while the input-gradient GEMM computes. Everything else
waits for its collective. The engine (engine.tp_plan) places these as blocking
collectives on the compute timeline and the overlappable ones beside an extra compute op
holding the QKV and MLP-up GEMMs' weight (and, with sequence parallelism, input) gradients.
Transformer Engine's userbuffer overlap (--tp-comm-overlap) is not modelled.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InputError
from .fp8_comm import TP_NOTE, tp_gathers_fp8

BLOCK_KINDS = ("transformer_encoder", "transformer_decoder")


def parallel_size(size, flag: str) -> int:
    """A tensor/pipeline/context-parallel size as given (None: 1), refused in one line
    naming its flag unless a positive integer."""
    if size is None:
        return 1
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise InputError(f"{flag} {size!r}: must be a positive integer")
    return size


@dataclass(frozen=True)
class TensorParallel:
    size: int = 1
    sequence: bool = False      # sequence parallelism (only with size > 1)

    @classmethod
    def of(cls, size: "int | None", sequence: "bool | None" = None) -> "TensorParallel":
        """`sequence` None: on whenever size > 1 (the NeMo / Megatron-Bridge LLM recipes'
        setting with TP > 1)."""
        size = parallel_size(size, "--tensor-parallel")
        if sequence and size == 1:
            raise InputError("--sequence-parallel needs --tensor-parallel > 1")
        return cls(size, size > 1 if sequence is None else bool(sequence))

    @property
    def on(self) -> bool:
        return self.size > 1

    def __str__(self) -> str:
        return f"{self.size}" + (" (sequence parallel)" if self.sequence else "")

    def check_model(self, name: str, layers) -> None:
        """Refuse a model whose blocks K does not divide (heads, key/value heads, hidden,
        FFN), or that has no transformer block to split. `layers`: (kind, params) pairs."""
        if not self.on:
            return
        blocks = [p for kind, p in layers if kind in BLOCK_KINDS]
        if not blocks:
            raise InputError(f"--tensor-parallel {self.size}: model {name} has no transformer "
                             f"blocks to split")
        for p in blocks:
            for key in ("heads", "kv_heads", "dim", "ffn"):
                v = p.get(key, p.get("heads")) if key == "kv_heads" else p[key]
                if v % self.size:
                    raise InputError(f"--tensor-parallel {self.size}: does not divide model "
                                     f"{name}'s {key} {v}")

    def check_node(self, gpus_per_node: int, n_gpus: int) -> None:
        if self.size > 1 and (gpus_per_node % self.size or n_gpus % self.size):
            raise InputError(f"--tensor-parallel {self.size}: does not divide the {gpus_per_node} "
                             f"GPUs per node (TP groups are consecutive ranks of one node)")

    def block_collectives(self, fwd: bool) -> tuple[tuple[str, bool], ...]:
        """One transformer block's TP collectives in one direction, in order, as
        (NCCL op, overlapped): overlapped ones run beside the column-parallel GEMMs'
        weight-gradient work (backward only); the others block the compute stream."""
        if not self.on:
            return ()
        if not self.sequence:
            return (("all_reduce", False),) * 2 if fwd else (("all_reduce", True),) * 2
        if fwd:
            return (("all_gather", False), ("reduce_scatter", False)) * 2
        return ((("all_gather", False),) * 2
                + (("all_gather", True), ("reduce_scatter", True)) * 2)

    def label(self, blocks: int, dtype: str = "bf16") -> str:
        """What the outputs say (empty when off); under --dtype fp8 with sequence
        parallelism, that the blocks' all-gathers moved FP8 (workload.fp8_comm)."""
        if not self.on:
            return ""
        f, b = self.block_collectives(True), self.block_collectives(False)

        def count(ops):
            names = {}
            for op, _ in ops:
                names[op] = names.get(op, 0) + 1
            return " + ".join(f"{n} {op.replace('_', '-')}{'s' if n > 1 else ''}"
                              for op, n in names.items())
        hidden = sum(1 for _, o in b if o)
        fp8 = f", {TP_NOTE}" if self.sequence and tp_gathers_fp8(dtype) else ""
        return (f"tensor parallel {self}: {count(f)} forward and {count(b)} backward per block "
                f"({hidden} overlapped with weight-gradient GEMMs) over {blocks} blocks, "
                f"vocab-parallel embedding/output/cross-entropy{fp8}")
