"""The data a built model is made of: frozen dataclasses, no behaviour.

A Model is a model-zoo file evaluated at one (batch, seq): every number in it
(parameters, FLOPs, bytes) is computed from the layer shapes by embsim.workload.costs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from .recompute import Recompute
from .tensor_parallel import TensorParallel
from .context_parallel import ContextParallel

# int64 row indices, as PyTorch nn.Embedding takes them (a sparse gradient's index)
INDEX_BYTES = 8

# Bytes per stored element of each training dtype a zoo file or --dtype may name
# (embsim.workload.precision: fp8 keeps tensors in 16-bit between its FP8 GEMMs).
DTYPE_BYTES = {"fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2, "fp8": 2}


@dataclass(frozen=True)
class Optimizer:
    """Optimizer memory/traffic per parameter.

    state_bytes_per_param: fp32 state kept per parameter (Adam: m and v = 8 B;
    SGD with momentum: 4 B; plain SGD: 0; Adagrad: the squared-gradient sum = 4 B).
    master_bytes_per_param: an fp32 master copy kept in mixed precision (4 B when the
    model dtype is 16-bit, as in Micikevicius et al. 2018 "Mixed Precision Training"; else 0).
    implementation: "fused" (one multi-tensor kernel: apex FusedAdam, torch foreach/fused;
    LAMB's passes and launches are embsim.workload.lamb's) or "per-tensor" (torch.optim's PyTorch 1.x for-loop: one elementwise
    kernel per arithmetic op per parameter tensor, each a full pass through HBM).
    clip_grad_norm: torch.nn.utils.clip_grad_norm_ runs before every step (one norm pass
    over the gradients).
    fp32_gradients: the gradients, and so their data-parallel all-reduce, are FP32 in mixed
    precision whatever the parameters' dtype. Redundant under autocast (torch.cuda.amp keeps
    FP32 parameters, so .grad is FP32: Model.param_bytes already says so); under apex O2 it
    sends FP32 where a script all-reduces FP32 copies of 16-bit gradients.
    sparse_dedup: how a sparse embedding gradient's repeated rows are merged before the
    row update: coalesce (PyTorch's sparse coalesce: Thrust's merge sort and unique_by_key
    with two host syncs, then a segment sum; embsim.workload.torch_coalesce) or
    tf-unique (TensorFlow optimizers' _deduplicate_indexed_slices: a GPU Unique with two
    radix sorts and a host sync, then UnsortedSegmentSum; embsim.workload.tf_dedup) or
    tbe (FBGEMM's table-batched embedding backward, framework torchrec: a radix sort over
    the table rows' bits and a run-length encode, then one fused row update that reads every
    lookup's gradient row and each distinct row's weights and state once, no host sync;
    embsim.workload.fbgemm_tbe). Plain SGD merges nothing under the first two (Keras SGD
    without momentum scatter-adds); FBGEMM's EXACT_SGD merges as its other updates do.
    """

    name: str
    state_bytes_per_param: int
    master_bytes_per_param: int
    implementation: str = "fused"
    clip_grad_norm: bool = False
    fp32_gradients: bool = False
    sparse_dedup: str = "coalesce"


# name -> fp32 state tensors per parameter (LAMB: Adam's m and v; its update is written
# into the gradient's storage, no state of its own: embsim.workload.lamb)
OPTIMIZER_STATE_TENSORS = {"adam": 2, "adamw": 2, "sgd": 0, "sgd-momentum": 1, "adagrad": 1,
                           "lamb": 2}
# optimizers that exist only as a fused multi-tensor kernel: none now (LAMB: apex FusedLAMB
# / NVIDIA's FusedLAMBAMP fused, DLE Transformer-XL's JITLamb per tensor, compute.py)
FUSED_ONLY: tuple[str, ...] = ()
OPTIMIZER_IMPLEMENTATIONS = ("fused", "per-tensor")
SPARSE_DEDUPS = ("coalesce", "tf-unique", "tbe")
# whose kernels a model's embedding gradients run (embsim.workload.embedding_kernels) and,
# unless its optimizer options say otherwise, which sparse_dedup its optimizer uses
FRAMEWORKS = ("pytorch", "tensorflow", "torchrec")
FRAMEWORK_SPARSE_DEDUP = {"pytorch": "coalesce", "tensorflow": "tf-unique", "torchrec": "tbe"}
FRAMEWORK_DESCRIPTIONS = {
    "pytorch": "ATen's embedding kernels, torch.optim's sparse updates after a coalesce",
    "tensorflow": "TensorFlow's gather and IndexedSlices, Keras optimizers' tf.unique dedup",
    "torchrec": "FBGEMM table-batched embeddings: the backward and the optimizer fused, exact"}


@dataclass(frozen=True)
class EmbeddingTable:
    """A sparse-gradient lookup table.

    lookups_per_sample: rows read per training sample, summed over every embedding
    layer that reads the table (seq for a token embedding, 2*seq for a table shared by
    encoder and decoder, the number of fields for DeepFM).
    tied_to: the output-projection layer that reuses this table as its weight, or None.
    input: which input stream feeds the table ("tokens", "source+target tokens", "fields").
    sampled: distinct candidates a sampled softmax tied to the table, or whose own table it
    is, draws per step and GPU (shared by the batch); 0 without one.
    weight_of: the output-projection layer whose own weight the table is (a sampled
    softmax's separate softmax_w, read by no lookup: a model file's `table:`, or a tied one
    untied), or None. Its lookups_per_sample are then the softmax's true classes (one per
    scored position), to which the step adds the `sampled` candidates.
    """

    name: str
    vocab: int
    dim: int
    lookups_per_sample: int
    tied_to: str | None
    input: str
    sampled: int = 0
    weight_of: str | None = None

    @property
    def params(self) -> int:
        return self.vocab * self.dim


@dataclass(frozen=True)
class Layer:
    """One layer at the model's (batch, seq); forward-order position is its index.

    params: parameters this layer owns (a table is owned by the first layer that uses it;
    a tied output projection or a second embedding layer on a shared table owns 0).
    fwd_flops / bwd_flops: floating-point operations (a multiply-add is 2).
    fwd_bytes / bwd_bytes: HBM bytes read + written (weights, activations, gradients).
    grad_bytes: the gradient this layer produces for communication. Dense layers: every
    parameter it updates (for a tied projection: the whole table). Sparse layers: the
    uncoalesced (index, row) gradient, one row per lookup: lookups*(dim*dtype + 8).
    sparse: True when that gradient touches only some rows of a table.
    table: the embedding table this layer reads or writes, or None.
    pooled: an embedding layer that sums (or averages) each sample's looked-up rows into
    one vector (`pooling:` in the model file); its gradient is still one row per lookup.
    activation_bytes: bytes saved in forward for use in backward.
    fwd_kernels / bwd_kernels: GPU kernels launched (for launch overhead).
    """

    name: str
    kind: str
    params: int
    fwd_flops: int
    bwd_flops: int
    fwd_bytes: int
    bwd_bytes: int
    grad_bytes: int
    sparse: bool
    table: str | None
    activation_bytes: int
    fwd_kernels: int = 1
    bwd_kernels: int = 2
    # the kernels themselves (embsim.workload.kernels_layers.LayerKernels), for the
    # kernel compute model; shared by a layer's repeats
    kernels: Any = field(default=None, compare=False, repr=False)
    # a transformer block's input (batch x seq x dim activations): what it keeps when
    # checkpointed (embsim.workload.recompute)
    input_bytes: int = 0
    # a transformer block: the part of activation_bytes its attention cores save (the
    # (batch x heads x seq x seq) softmax, dropout mask and output; 0 with flash
    # attention), which selective recomputation does not keep
    core_saved: int = 0
    pooled: bool = False


@dataclass(frozen=True)
class Model:
    """A zoo model evaluated at one per-GPU batch and sequence length."""

    name: str
    layers: tuple[Layer, ...]
    tables: tuple[EmbeddingTable, ...]
    batch: int
    seq: int
    dtype_bytes: int
    optimizer: Optimizer
    params: int
    dense_params: int
    embedding_params: int
    source: str
    dtype: str = "fp32"
    published: Mapping[str, float] = field(default_factory=dict, hash=False)
    description: str = ""
    # element bytes of the embedding tables (their rows and gradients) and of the stored
    # dense parameters (and their gradients), as the build resolved them from dtype and AMP
    # style (embsim.workload.precision: FP32 under autocast)
    table_bytes: int = field(kw_only=True)
    dense_param_bytes: int = field(kw_only=True)
    # activation recomputation (embsim.workload.recompute): which blocks run forward twice
    recompute: Recompute = field(default=Recompute(), kw_only=True)
    # tensor parallelism (embsim.workload.tensor_parallel): the layers are one TP rank's share
    tensor_parallel: TensorParallel = field(default=TensorParallel(), kw_only=True)
    # context parallelism (embsim.workload.context_parallel): seq is one CP rank's s / C
    context_parallel: ContextParallel = field(default=ContextParallel(), kw_only=True)
    # the training framework (FRAMEWORKS): ATen's, TensorFlow's or FBGEMM's (TorchRec's)
    # embedding-gradient kernels
    framework: str = field(default="pytorch", kw_only=True)

    @property
    def sample_seq(self) -> int:
        """The samples' sequence length: seq, or seq x C under context parallelism."""
        return self.seq * self.context_parallel.size

    @property
    def recomputed(self) -> tuple[str, ...]:
        """The checkpointed layers' names (none without --recompute full/every:K)."""
        return self.recompute.blocks(self.layers)

    @property
    def core_recomputed(self) -> tuple[str, ...]:
        """The blocks whose attention core alone runs again in backward (--recompute
        selective)."""
        return self.recompute.core_blocks(self.layers)

    def param_bytes(self, layer: Layer | None = None) -> int:
        """Stored bytes of a layer's parameters: an embedding layer's are its table's."""
        if layer is not None and layer.kind == "embedding":
            return self.table_bytes
        return self.dense_param_bytes

    def grad_elem_bytes(self, layer: Layer | None = None) -> int:
        """Bytes per element of a layer's gradient as it is reduced: FP32 when the
        optimizer's gradients are (fp32_gradients) or the parameters are FP32."""
        return 4 if self.optimizer.fp32_gradients else self.param_bytes(layer)

    def master_bytes(self, layer: Layer | None = None) -> int:
        """FP32 master copy per parameter: none for parameters already stored in FP32."""
        return 0 if self.param_bytes(layer) >= 4 else self.optimizer.master_bytes_per_param

    @property
    def tokens_per_gpu(self) -> int:
        """Samples x sequence positions in one GPU's batch."""
        return self.batch * self.seq

    def table(self, name: str) -> EmbeddingTable:
        for t in self.tables:
            if t.name == name:
                return t
        raise KeyError(name)

    def layer(self, name: str) -> Layer:
        for layer in self.layers:
            if layer.name == name:
                return layer
        raise KeyError(name)

    # ----- facts about tables that every layer above needs, stated once
    def table_owner(self, table: str) -> str:
        """The layer that owns a table's parameters: the first (in forward order) that
        uses it, so its backward is the last to add to the table's gradient."""
        return next(l.name for l in self.layers if l.table == table and l.params > 0)

    def dense_gradient(self, table: str) -> bool:
        """True when some layer (a full softmax tied to the table) touches every row."""
        return any(l.table == table and not l.sparse for l in self.layers)

    def sparse_users(self, table: str) -> tuple[Layer, ...]:
        """Layers that read the table sparsely (lookups, a sampled softmax), forward order."""
        return tuple(l for l in self.layers if l.table == table and l.sparse)

    def row_bytes(self, table: str) -> int:
        """One (index, row) pair of the table's sparse gradient."""
        return self.table(table).dim * self.table_bytes + INDEX_BYTES

    def rows_read(self, layer: Layer) -> float:
        """Rows (with repeats) one GPU's batch reads through a sparse layer: its gradient
        is one (index, row) pair per row read."""
        return layer.grad_bytes / self.row_bytes(layer.table)

    def vectors_out(self, layer: Layer) -> float:
        """Vectors one GPU's batch gets out of a sparse layer, what a model-parallel
        exchange of looked-up vectors carries: one per sample when the layer pools its
        lookups (a bag), else one per row read."""
        return float(self.batch) if layer.pooled else self.rows_read(layer)

    def row_touches(self, table: str) -> float:
        """Rows (with repeats) one GPU's batch touches in a table, over all its sparse users."""
        return sum(self.rows_read(l) for l in self.sparse_users(table))
