"""Evaluate a ModelSpec at a (batch, seq): expand repeats, cost every layer, sum params."""

from __future__ import annotations

from dataclasses import asdict, replace

from . import adaptive_softmax, costs, costs_blocks, kernels_layers, transformer_xl
from .costs import LayerCost, Shape
from .kernels import stream
from ..errors import InputError
from .fbgemm_tbe import optim_type
from .model import (DTYPE_BYTES, FUSED_ONLY, OPTIMIZER_STATE_TENSORS, EmbeddingTable, Layer,
                    Model, Optimizer)
from .recompute import BLOCK_KINDS, Recompute
from .tensor_parallel import TensorParallel
from .context_parallel import ContextParallel
from .precision import op_bytes, param_bytes, precision, table_bytes, weight_cast_bytes
from .spec import ModelSpec, TableSpec

FP32 = 4


def optimizer_for(name: str, dtype: str, implementation: str = "fused",
                  clip_grad_norm: bool = False, fp32_gradients: bool = False,
                  sparse_dedup: str = "coalesce") -> Optimizer:
    if name not in OPTIMIZER_STATE_TENSORS:
        raise InputError(f"optimizer {name!r}: unknown (known: {', '.join(OPTIMIZER_STATE_TENSORS)})")
    if name in FUSED_ONLY and implementation != "fused":
        raise InputError(f"optimizer {name}: implementation {implementation!r} not modelled, only "
                         f"fused (apex FusedLAMB / NVIDIA FusedLAMBAMP multi-tensor kernels)")
    if sparse_dedup == "tbe":
        optim_type(name)         # FBGEMM fuses only some optimizers into its backward
    master = FP32 if DTYPE_BYTES[dtype] < FP32 else 0
    return Optimizer(name, OPTIMIZER_STATE_TENSORS[name] * FP32, master,
                     implementation, clip_grad_norm, fp32_gradients, sparse_dedup)


def _lookups(p: dict, seq: int) -> int:
    value = p.get("lookups", "seq")
    return seq if value == "seq" else value


def _output_vocab(p: dict, tables: dict) -> int:
    """An output projection's vocabulary: its tied or own table's, else its own."""
    table = p.get("tied") or p.get("table")
    return tables[table].vocab if table else p["vocab"]


def _loss_classes(p: dict, tables: dict) -> int:
    """Classes a softmax loss scores: a table's vocabulary or a count, and with sampling
    only the candidates + the true class."""
    classes = p["classes"]
    classes = tables[classes].vocab if isinstance(classes, str) else classes
    return min(classes, p["samples"] + 1) if "samples" in p else classes


def _cost(kind: str, p: dict, sh: Shape, tables: dict, owns: bool) -> LayerCost:
    if kind == "embedding":
        t = tables[p["table"]]
        return costs.embedding_cost({**p, "lookups": _lookups(p, sh.seq)}, sh, t.vocab, t.dim, owns)
    if kind == "linear":
        return costs.linear_cost(p, sh)
    if kind == "layernorm":
        return costs.norm_cost(p, sh)
    if kind == "positional_embedding":
        return costs.positional_cost(p, sh)
    if kind == "output_projection":
        return costs.output_projection_cost(p, sh, _output_vocab(p, tables), "tied" in p)
    if kind == "softmax_loss":
        return costs.softmax_loss_cost(p, sh, _loss_classes(p, tables))
    if kind == "fm_interaction":
        return costs.fm_interaction_cost(p, sh)
    if kind == "combine":
        return costs.combine_cost(p, sh)
    if kind == "dot_interaction":
        return costs.dot_interaction_cost(p, sh)
    if kind == "lstm":
        return costs_blocks.lstm_cost(p, sh)
    if kind == "additive_attention":
        return costs_blocks.additive_attention_cost(p, sh)
    if kind == "transformer_encoder":
        return costs_blocks.transformer_block_cost(p, sh, cross_attention=False)
    if kind == "transformer_decoder":
        return costs_blocks.transformer_block_cost(p, sh, p.get("cross_attention", False))
    raise AssertionError(f"layer kind {kind!r} passed validation but has no cost rule")


# Kinds whose cost is summed from their own kernel lists (embsim.workload.kernel_costs), the
# Transformer-XL ones: (cost rule (params, shape, kernels), kernel rule (params, shape)); build
# makes the kernels once per layer spec and derives every repeat's cost from them
KERNEL_DEFINED = {
    "rel_transformer_block": (transformer_xl.rel_block_cost, transformer_xl.rel_block_kernels),
    "rel_position": (transformer_xl.rel_position_cost, transformer_xl.rel_position_kernels),
    "adaptive_embedding": (adaptive_softmax.adaptive_embedding_cost,
                           adaptive_softmax.adaptive_embedding_kernels),
    "adaptive_softmax": (adaptive_softmax.adaptive_softmax_cost,
                         adaptive_softmax.adaptive_softmax_kernels),
}


def _kernels(kind: str, p: dict, sh: Shape, tables: dict) -> kernels_layers.LayerKernels:
    """The layer's kernel lists, with the table sizes its kind needs resolved."""
    kw = {}
    if kind == "embedding":
        t = tables[p["table"]]
        p = {**p, "lookups": _lookups(p, sh.seq)}
        kw = {"vocab": t.vocab, "dim": t.dim}
    elif kind == "output_projection":
        vocab = _output_vocab(p, tables)
        samples = p.get("samples")
        kw = {"cols": min(vocab, samples + sh.tokens) if samples else vocab}
        if "table" in p:
            # its own table's rows are gathered and cast as a tied table's are (the table's
            # precision), but the weight is this layer's tensor, not a lookup's
            kl = kernels_layers.layer_kernels(kind, {**p, "tied": p["table"]}, sh, **kw)
            return replace(kl, param_tensors=kl.param_tensors + 1)
    elif kind == "softmax_loss":
        kw = {"classes": _loss_classes(p, tables)}
    return kernels_layers.layer_kernels(kind, p, sh, **kw)


# layers whose weights autocast leaves FP32: lookups (embedding is on neither autocast
# list, nor is a learned positional table's add), LayerNorm (on the float32 list), a tied
# projection or one on its own table (its weight is the table: the cast of the rows it
# gathers is the layer's own logits.weight kernel)
NO_WEIGHT_CAST = ("embedding", "positional_embedding", "layernorm", "rmsnorm", "fm_interaction",
                  "adaptive_embedding", "rel_position")


def with_weight_casts(kl: kernels_layers.LayerKernels, kind: str, p: dict, params: int,
                      cast: int) -> kernels_layers.LayerKernels:
    """Under autocast with a 16-bit dtype (cast = precision.weight_cast_bytes > 0) every
    forward casts each FP32 weight tensor of the layer to 16-bit once (the weight cast
    cache keeps it for the rest of the forward) and the cast's backward casts the 16-bit
    weight gradient up into the FP32 .grad: one memory-bound copy per tensor each way."""
    tensors = kl.param_tensors
    if (not cast or params <= 0 or tensors < 1 or kind in NO_WEIGHT_CAST or p.get("tied")
            or (kind == "output_projection" and p.get("table"))):
        return kl
    per = params * cast / tensors
    return replace(kl, fwd=(stream("amp.weight_cast", per, count=tensors, copy=True), *kl.fwd),
                   bwd=(*kl.bwd, stream("amp.weight_grad_cast", per, count=tensors, copy=True)))


def untied(p: dict, tables: dict, layer: str) -> tuple[dict, TableSpec | None]:
    """A tied output projection's shape keys as an untied one, the table no longer shared,
    and the new table its weight is, or None. A full softmax gets its own vocab x dim weight
    (a dense gradient: it scores every row). A sampled softmax (`samples`) gets its own
    vocab x dim table, `{layer}_w` (Parallax's LM-1B softmax_w): tf.nn.sampled_softmax_loss
    gathers the weight rows of the step's candidates and true classes with embedding_lookup
    (_compute_sampled_logits), so the gradient is an IndexedSlices over those rows, sparse
    as a lookup's."""
    q = {k: v for k, v in p.items() if k != "tied"}
    shared = tables[p["tied"]]
    if not p.get("samples"):
        q["vocab"] = shared.vocab
        return q, None
    name = f"{layer}_w"
    while name in tables:
        name += "_"
    q["table"] = name
    return q, TableSpec(name, shared.vocab, shared.dim, "sampled candidates + true classes")


# layers that work on the looked-up rows (or join them with other vectors)
ROW_CONSUMERS = ("combine", "fm_interaction")


def _row_precision(kind: str, p: dict, rows_bytes: int, prev_wide: bool, d: int) -> dict:
    """The layer's parameters with the bytes of its wider-than-model inputs: a combine or
    FM layer in a model whose looked-up rows stay in the table's precision (FP32 under
    autocast) runs at that precision by type promotion (it sees the rows or what was made
    of them), and a GEMM right after such a layer casts its input (elem_bytes /
    input_bytes; unset when they equal the model's dtype)."""
    if kind in ROW_CONSUMERS and rows_bytes > d:
        return {**p, "elem_bytes": rows_bytes}
    if kind == "linear" and prev_wide:
        return {**p, "input_bytes": rows_bytes}
    return p


def _tensor_parallel_share(kind: str, p: dict, tp: TensorParallel) -> dict:
    """A layer's parameters as one tensor-parallel rank sees them (workload.tensor_parallel):
    a transformer block is told its split; an untied output layer's vocab and a counted
    softmax's classes are 1/K (tables were split already)."""
    if kind in BLOCK_KINDS:
        return {**p, "tp": tp.size, "sp": tp.sequence}
    if kind == "output_projection" and "vocab" in p:
        return {**p, "vocab": -(-p["vocab"] // tp.size)}
    if kind == "softmax_loss" and not isinstance(p.get("classes"), str):
        return {**p, "classes": -(-p["classes"] // tp.size)}
    return p


def build_model(spec: ModelSpec, batch: int, seq: int, untie_outputs: bool = False,
                dtype: str | None = None, amp: str = "autocast",
                recompute: "str | Recompute | None" = None,
                tensor_parallel: TensorParallel | None = None,
                context_parallel: ContextParallel | None = None) -> Model:
    """`context_parallel`: one CP rank's share (workload.context_parallel): the model is
    built at seq / C tokens per sequence, its blocks' attention over the whole sequence's
    keys (Model.seq is then the rank's seq / C). `untie_outputs`: build every tied output projection untied (as calibrate's real
    training steps run it), so its table's gradient is the lookups' sparse one; a tied
    sampled softmax's weight becomes a sparse table of its own (untied).
    `dtype`: the training precision (--dtype), default the zoo file's; `amp`: the
    mixed-precision style (embsim.workload.precision)."""
    dtype = dtype or spec.dtype
    precision(dtype)                      # one-line error for an unknown name
    if (spec.sparse_dedup == "tbe") != (spec.framework == "torchrec"):
        # FBGEMM's merge is part of its fused backward: neither exists without the other
        raise InputError(f"model {spec.name}: sparse_dedup tbe goes with framework torchrec, and only "
                         f"it (got framework {spec.framework}, sparse_dedup {spec.sparse_dedup})")
    d = DTYPE_BYTES[dtype]
    cp = context_parallel or ContextParallel()
    cp.check_model(spec.name, [(ls.kind, ls.params) for ls in spec.layers], seq)
    seq = cp.local_seq(seq)
    sh = Shape(batch, seq, d, op_bytes(d, amp), fp16=dtype == "fp16",
               table_dtype_bytes=table_bytes(d, amp), param_dtype_bytes=param_bytes(d, amp),
               fp8=dtype == "fp8", framework=spec.framework)
    cast = weight_cast_bytes(d, amp)
    tp = tensor_parallel or TensorParallel()
    tp.check_model(spec.name, [(ls.kind, ls.params) for ls in spec.layers])
    # a tensor-parallel rank holds 1/K of every vocab (Megatron's vocab-parallel embedding,
    # output layer and cross-entropy; it pads the vocab to a multiple of K)
    tables = {t.name: (replace(t, vocab=-(-t.vocab // tp.size)) if tp.on else t) for t in spec.tables}
    owned: set[str] = set()
    layers: list[Layer] = []
    lookups = {name: 0 for name in tables}
    tied_to: dict[str, str] = {}
    weight_of: dict[str, str] = {}        # an output layer's own table -> that layer
    kernel_cache: dict = {}       # repeats of one layer share their kernel lists
    own_kernels: dict = {}        # a KERNEL_DEFINED layer's kernels, before the weight casts
    sampled: dict[str, int] = {}
    rows_bytes, prev_wide = d, False      # looked-up rows' bytes as the layers see them
    for ls in spec.layers:
        if ls.kind == "embedding" and not ls.params.get("cast_output"):
            rows_bytes = max(rows_bytes, sh.table_bytes)
        for i in range(ls.repeat):
            name = f"{ls.name}.{i}" if ls.repeat > 1 else ls.name
            p = _row_precision(ls.kind, ls.params, rows_bytes, prev_wide, d)
            if tp.on:
                p = _tensor_parallel_share(ls.kind, p, tp)
            if cp.on and ls.kind in BLOCK_KINDS:
                p = {**p, "cp": cp.size, **({"cp_impl": cp.impl} if cp.torch else {})}
            if untie_outputs and ls.kind == "output_projection" and "tied" in p:
                p, new = untied(p, tables, name)
                if new is not None:
                    tables[new.name] = new
                    lookups[new.name] = 0
            table = p.get("table") or p.get("tied")
            # an output layer's own table (a sampled softmax's) is owned by that layer
            own_weight = ls.kind == "output_projection" and "table" in p
            owns = (ls.kind == "embedding" or own_weight) and table not in owned
            if owns:
                owned.add(table)
            if ls.kind == "embedding":
                lookups[table] += _lookups(p, seq)
            if own_weight:
                # the rows it reads per sample: one true class per scored position
                n = costs.tokens_for(p, sh)
                lookups[table] += n // batch if n % batch == 0 else n / batch
                weight_of[table] = name
            if ls.kind == "output_projection" and "tied" in p:
                tied_to[table] = name
            if ls.kind == "output_projection" and table and p.get("samples"):
                sampled[table] = p["samples"]
            if ls.kind in KERNEL_DEFINED:
                cost_rule, kernel_rule = KERNEL_DEFINED[ls.kind]
                if ls.name not in own_kernels:
                    own_kernels[ls.name] = kernel_rule(p, sh)
                kl = own_kernels[ls.name]
                c = cost_rule(p, sh, kl)
            else:
                c = _cost(ls.kind, p, sh, tables, owns)
                kl = None
            # a Layer is its cost plus where it sits in the model
            if ls.name not in kernel_cache:
                kl = _kernels(ls.kind, p, sh, tables) if kl is None else kl
                kernel_cache[ls.name] = with_weight_casts(kl, ls.kind, p, c.params, cast)
            block_input = batch * seq * int(p["dim"]) * d if ls.kind in BLOCK_KINDS else 0
            layers.append(Layer(name=name, kind=ls.kind, table=table, **asdict(c),
                                kernels=kernel_cache[ls.name], input_bytes=block_input,
                                pooled=ls.kind == "embedding" and "pooling" in p))
        prev_wide = rows_bytes > d and (ls.kind in ROW_CONSUMERS or (
            ls.kind == "embedding" and not ls.params.get("cast_output")))
    emb_tables = tuple(
        EmbeddingTable(name=t.name, vocab=t.vocab, dim=t.dim, lookups_per_sample=lookups[t.name],
                       tied_to=tied_to.get(t.name), input=t.input,
                       sampled=min(sampled.get(t.name, 0), t.vocab - 1),
                       weight_of=weight_of.get(t.name)) for t in tables.values())
    rc = Recompute.parse(recompute)
    if rc.on and not any(layer.kind in BLOCK_KINDS for layer in layers):
        raise InputError(f"--recompute {rc}: model {spec.name} has no transformer blocks to checkpoint")
    params = sum(layer.params for layer in layers)
    embedding = sum(t.params for t in emb_tables)
    return Model(
        name=spec.name, layers=tuple(layers), tables=emb_tables, batch=batch, seq=seq,
        dtype_bytes=d, optimizer=optimizer_for(spec.optimizer, dtype, spec.optimizer_implementation,
                                               spec.clip_grad_norm, spec.fp32_gradients,
                                               spec.sparse_dedup), params=params,
        dense_params=params - embedding, embedding_params=embedding, source=spec.source,
        dtype=dtype, published=dict(spec.published), description=spec.description,
        table_bytes=sh.table_bytes, dense_param_bytes=sh.param_bytes,
        recompute=rc, tensor_parallel=tp, context_parallel=cp, framework=spec.framework)
