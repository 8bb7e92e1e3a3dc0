"""The model-zoo YAML dialect: parse and validate one file into a ModelSpec.

One dialect for every model. Unknown keys, wrong types, bad enum values and dangling
table references are rejected with the file, key path and line (via embsim.yamlio).

    name: bert-base
    description: ...
    source: where the architecture and the published figures come from
    published: {params: 110e6}            # optional; what the paper states, for tests
    defaults: {batch: 32, seq: 128, dtype: fp32, optimizer: adam}
    # optional, how the model's reference trainer runs it (a run's flags win):
    #   amp: o2, optimizer_options: {implementation: per-tensor, clip_grad_norm: true},
    #   jitter: maxtokens, lengths: "lognormal:29.05:16.2",
    #   padding: "longest:8" or per --seq {512: "bins:64:8", other: "longest:8"}
    #   options: {bucket_bytes: 1.0e+12}   # strategy/scheduler --option values it sets
    tables:
      - {name: word, vocab: 30522, dim: 768, input: tokens}
    layers:
      - {name: word_embedding, kind: embedding, table: word}
      - {name: encoder, kind: transformer_encoder, repeat: 12, dim: 768, heads: 12, ffn: 3072}

An output_projection names its weight with exactly one of: `tied: TABLE` (the input
lookup's table, shared: BERT's decoder, lstm-lm1b's softmax), `vocab: N` (its own dense
N x dim matrix) or `table: TABLE` (its own table, read by no embedding layer: a sampled
softmax's separate weight, Parallax LM-1B's softmax_w). `table:` needs `samples:`
(tf.nn.sampled_softmax_loss gathers the rows of the step's candidates and true classes, so
the gradient is sparse over those rows; a full softmax's weight is dense: give vocab:), the
table's dim must be the layer's, and the table is listed under `tables:` like any other
(its `input:` a label, e.g. "sampled candidates + true classes"):

    tables:
      - {name: word, vocab: 793471, dim: 512, input: tokens}
      - {name: softmax_w, vocab: 793471, dim: 512, input: sampled candidates + true classes}
    layers:
      - {name: word_embedding, kind: embedding, table: word}
      - ...
      - {name: softmax, kind: output_projection, dim: 512, table: softmax_w, samples: 8192}

`--untie-outputs` builds a tied sampled softmax this way (its table named `<layer>_w`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..yamlio import YamlDoc, check_mapping, check_name, check_type, get, load_yaml
from ..errors import InputError
from .model import (DTYPE_BYTES, FRAMEWORK_SPARSE_DEDUP, FRAMEWORKS, OPTIMIZER_IMPLEMENTATIONS,
                    OPTIMIZER_STATE_TENSORS, SPARSE_DEDUPS)
from .attention_rate import IMPLEMENTATIONS as ATTENTION_IMPLEMENTATIONS
from .fp8_quant import RECIPES
from .padding import parse_padding
from .precision import AMP_STYLES
from .width_chain import chain_problem

# Bounds that keep a model file within memory and time: token statistics hold one float
# per row up to 4M rows and per run of rows beyond (embsim.workload.row_groups: ~7,000 runs
# per decade of rows), so a table may hold up to 1e12 rows (4 TB at dim 1 in fp32, far past
# any real one); a batch samples batch x seq tokens per GPU, and `repeat` unrolls into that
# many layers. The largest zoo model is far inside each.
# `batch` is the tokens cap: recommenders run per-sample batches of 2^20 (NVIDIA DLE NCF).
LIMITS = {"vocab": 1_000_000_000_000, "dim": 1_000_000, "layer_int": 1_000_000_000, "repeat": 1000,
          "batch": 1 << 24, "seq": 1_000_000, "tokens": 1 << 24}

COMMON_LAYER_KEYS = ("name", "kind", "repeat", "note")
# rope: rotary position embeddings on q and k (charged as eager kernels where the block is
# not fused_elementwise); fused_norm: an eager block's RMSNorm is one library kernel
# (embsim.workload.kernels_layers.transformer_block)
BLOCK_KEYS = ("kv_heads", "ffn_kind", "bias", "norm", "flash_attention", "dropout", "attn_dropout",
              "fused_elementwise", "fp8_recipe", "rope", "fused_norm")

# kind -> {key: (type, required)}; "seq" is accepted where an int may be per sequence.
INT, BOOL, STR, SEQ_OR_INT, FRACTION = int, bool, str, (int, str), (int, float)
HEAD_KEYS = {"token_fraction": (FRACTION, False)}   # a head on a fraction of the tokens
LAYER_SCHEMA: dict[str, dict[str, tuple[Any, bool]]] = {
    # cast_output: the looked-up rows are cast to the model's dtype right after the lookup
    # (as DLE DLRM's --amp does); without it they stay in the table's precision
    # fused_cast: the lookup kernel itself writes the cast rows (no separate cast pass)
    # pooling: sum (or mean) the sample's looked-up rows into one vector, as a bag lookup
    # does (nn.EmbeddingBag, FBGEMM TBE, TF embedding_lookup_sparse's combiner); absent: one
    # vector per lookup
    "embedding": {"table": (STR, True), "lookups": (SEQ_OR_INT, False), "cast_output": (BOOL, False),
                  "fused_cast": (BOOL, False), "pooling": (STR, False)},
    "positional_embedding": {"rows": (INT, True), "dim": (INT, True), "learned": (BOOL, False)},
    "linear": {"in": (INT, True), "out": (INT, True), "bias": (BOOL, False),
               "activation": (STR, False), "dropout": (BOOL, False), "per": (STR, False),
               # the activation's backward also reduces the bias gradient (apex fused MLP)
               "fused_bias_grad": (BOOL, False),
               **HEAD_KEYS},
    "layernorm": {"dim": (INT, True), "norm": (STR, False), "per": (STR, False), **HEAD_KEYS},
    "lstm": {"in": (INT, True), "hidden": (INT, True), "proj": (INT, False),
             "bidirectional": (BOOL, False), "bias": (STR, False)},
    "additive_attention": {"query": (INT, True), "key": (INT, True), "units": (INT, True),
                           "normalize": (BOOL, False)},
    "transformer_encoder": {"dim": (INT, True), "heads": (INT, True), "ffn": (INT, True),
                            **{k: ((INT if k == "kv_heads" else STR if k in ("ffn_kind", "norm",
                                                                     "fp8_recipe")
                                    else (BOOL, STR) if k == "flash_attention"
                                    else BOOL), False) for k in BLOCK_KEYS}},
    # the weight: tied (the input lookup's table, shared), vocab (its own dense vocab x dim
    # matrix) or table (its own table, read by no lookup: a sampled softmax's weight, whose
    # gradient holds only the rows of the step's candidates and true classes)
    "output_projection": {"dim": (INT, True), "tied": (STR, False), "vocab": (INT, False),
                          "table": (STR, False), "bias": (BOOL, False), "samples": (INT, False),
                          **HEAD_KEYS},
    "softmax_loss": {"classes": (SEQ_OR_INT, True), "samples": (INT, False), "per": (STR, False),
                     "upcast_in_kernel": (BOOL, False), "fused": (BOOL, False),
                     "label_smoothing": (STR, False), **HEAD_KEYS},
    "fm_interaction": {"fields": (INT, True), "dim": (INT, True)},
    # per-sample elementwise product, sum (reduce_sum, average pool) or concatenation of
    # `inputs` vectors of width `dim`
    "combine": {"op": (STR, True), "inputs": (INT, True), "dim": (INT, True)},
    # DLRM's pairwise dot products of `vectors` per-sample vectors of width `dim`, the
    # lower triangle plus the first vector written as `out` features (padded)
    "dot_interaction": {"vectors": (INT, True), "dim": (INT, True), "out": (INT, True)},
}
# Transformer-XL (embsim.workload.transformer_xl, adaptive_softmax): a decoder layer whose
# queries attend over `mem` cached positions + the segment; the relative-position inputs;
# the adaptive embedding and log-softmax over a vocabulary cut at `cutoffs`
LIST = list
ADAPTIVE_KEYS = {"vocab": (INT, True), "dim": (INT, True), "proj": (INT, True),
                 "cutoffs": (LIST, True), "div_val": (INT, False), "dropout": (BOOL, False)}
LAYER_SCHEMA["rel_transformer_block"] = {"dim": (INT, True), "heads": (INT, True),
                                         "head_dim": (INT, True), "ffn": (INT, True),
                                         "mem": (INT, True), "dropout": (BOOL, False),
                                         "attn_dropout": (BOOL, False)}
LAYER_SCHEMA["rel_position"] = {"dim": (INT, True), "heads": (INT, True), "head_dim": (INT, True),
                                "mem": (INT, True), "dropout": (BOOL, False)}
LAYER_SCHEMA["adaptive_embedding"] = dict(ADAPTIVE_KEYS)
LAYER_SCHEMA["adaptive_softmax"] = {**ADAPTIVE_KEYS, "tied_weights": (BOOL, False), "tie_projs": (LIST, False)}
LAYER_SCHEMA["transformer_decoder"] = {**LAYER_SCHEMA["transformer_encoder"],
                                       "cross_attention": (BOOL, False)}

ENUMS = {"activation": ("none", "relu", "gelu", "tanh"), "per": ("token", "sample"),
         "norm": ("layernorm", "rmsnorm"), "ffn_kind": ("gelu", "relu", "swiglu"),
         "bias": ("double", "single", "none"), "op": ("product", "concat", "sum"),   # "bias" enum applies to lstm only
         "label_smoothing": ("none", "mean", "sum"), "pooling": ("sum", "mean"),
         "fp8_recipe": RECIPES}


@dataclass(frozen=True)
class TableSpec:
    name: str
    vocab: int
    dim: int
    input: str


@dataclass(frozen=True)
class LayerSpec:
    name: str
    kind: str
    repeat: int
    params: dict          # kind-specific keys, validated


@dataclass(frozen=True)
class ModelSpec:
    name: str
    description: str
    source: str
    published: dict
    batch: int
    seq: int
    dtype: str
    optimizer: str
    tables: tuple[TableSpec, ...]
    layers: tuple[LayerSpec, ...]
    path: str
    # how the run's code steps the optimizer (embsim.workload.model.Optimizer); a run
    # override (embsim.workload.overrides "optimizer") sets them
    optimizer_implementation: str = "fused"
    clip_grad_norm: bool = False
    fp32_gradients: bool = False
    sparse_dedup: str = "coalesce"
    framework: str = "pytorch"            # whose kernels (embsim.workload.model.FRAMEWORKS)
    # how the model's reference trainer runs it, used where a run does not say (defaults:
    # amp, jitter, lengths, padding, global_batch, accumulate_sync; checked by the engine,
    # which owns their forms)
    amp: str | None = None
    jitter: str | None = None
    lengths: str | None = None
    global_batch: int | None = None       # sentences per optimizer step over all GPUs
    accumulate_sync: str | None = None
    throughput: str | None = None         # how the trainer averages its throughput (engine.iteration_rate)
    # how batches are padded (embsim.workload.padding), per sequence length: (seq, policy)
    # pairs, seq None for every other length
    padding: tuple[tuple[int | None, str], ...] = ()
    # strategy/scheduler parameters the trainer sets (as --option KEY=VALUE, e.g. its DDP
    # bucket sizes): (key, value) pairs, routed by the engine to the run's components
    options: tuple[tuple[str, Any], ...] = ()

    def padding_for(self, seq: int) -> str | None:
        """The trainer's padding policy at `seq` (its own entry, else `other`), or None."""
        table = dict(self.padding)
        return table.get(seq, table.get(None))


def _enum(doc: YamlDoc, path: tuple, value: str, allowed: tuple, fold: bool = False) -> str:
    # fold: a name published tables write in capitals (FP32, TF32, O2) read as embsim's
    if fold and str(value).strip().lower() in allowed:
        return str(value).strip().lower()
    if value not in allowed:
        raise doc.error(path, f"must be one of {', '.join(allowed)}, got {value!r}")
    return value


def _name(doc: YamlDoc, path: tuple, raw) -> str:
    """A model, table or layer name: outputs and other keys refer to it, so not blank."""
    return check_name(doc, path + ("name",), get(doc, path, raw, "name", str))


def _positive(doc: YamlDoc, path: tuple, value: Any) -> None:
    if isinstance(value, int) and not isinstance(value, bool) and value <= 0:
        raise doc.error(path, f"must be positive, got {value}")


def _parse_table(doc: YamlDoc, path: tuple, raw: Any) -> TableSpec:
    check_mapping(doc, path, raw, ["name", "dim", "input"],
                  ["vocab", "fields", "hash_buckets", "note"])
    name = _name(doc, path, raw)
    dim = get(doc, path, raw, "dim", int, positive=True, hi=LIMITS["dim"])
    if ("vocab" in raw) == ("fields" in raw):
        raise doc.error(path, "give exactly one of 'vocab' or 'fields' (per-field cardinalities)")
    if "vocab" in raw:
        vocab = get(doc, path, raw, "vocab", int, positive=True, hi=LIMITS["vocab"])
    else:
        # one table holding every categorical field, each hashed to at most hash_buckets rows
        fields = check_type(doc, path + ("fields",), raw["fields"], list)
        cap = get(doc, path, raw, "hash_buckets", int, default=None, positive=True)
        vocab = 0
        for i, c in enumerate(fields):
            check_type(doc, path + ("fields", i), c, int)
            _positive(doc, path + ("fields", i), c)
            vocab += min(c, cap) if cap else c
        if vocab > LIMITS["vocab"]:
            raise doc.error(path + ("fields",), f"{vocab:,} rows in all, more than the "
                            f"{LIMITS['vocab']:,} embsim can sample token statistics for")
    # `input` names the data stream or feature column that feeds the table ("tokens",
    # "source+target tokens", "fields", Criteo's "C1", Outbrain's "ad_id", ...): a label that
    # `model show` prints and nothing else reads (how many rows a sample looks up is the
    # embedding layer's `lookups`), so any one-line text is accepted, but not a blank one
    return TableSpec(name, vocab, dim, check_name(doc, path + ("input",), get(doc, path, raw, "input", str)))


def _parse_layer(doc: YamlDoc, path: tuple, raw: Any) -> LayerSpec:
    if not isinstance(raw, dict):
        raise doc.error(path, "must be a mapping")
    kind = get(doc, path, raw, "kind", str)
    if kind not in LAYER_SCHEMA:
        raise doc.error(path + ("kind",), f"unknown layer kind {kind!r} "
                        f"(known: {', '.join(sorted(LAYER_SCHEMA))})")
    schema = LAYER_SCHEMA[kind]
    check_mapping(doc, path, raw, ["name", "kind"] + [k for k, (_, req) in schema.items() if req],
                  [k for k, (_, req) in schema.items() if not req] + ["repeat", "note"])
    params = {}
    for key, (kind_type, _) in schema.items():
        if key not in raw:
            continue
        value = check_type(doc, path + (key,), raw[key], kind_type)
        problem = layer_value_problem(kind, key, value)
        if problem:
            raise doc.error(path + (key,), problem)
        params[key] = value
    shape = layer_shape_problem(kind, params)
    if shape:
        raise doc.error(path + (shape[0],), shape[1])
    repeat = get(doc, path, raw, "repeat", int, default=1, positive=True, hi=LIMITS["repeat"])
    return LayerSpec(_name(doc, path, raw), kind, repeat, params)


def layer_value_problem(kind: str, key: str, value: Any) -> str | None:
    """Why `value` (already of the schema's type) cannot be `key` of a `kind` layer, or
    None: shared by model files and run overrides (embsim.workload.overrides)."""
    if isinstance(value, str) and LAYER_SCHEMA[kind][key][0] == SEQ_OR_INT and key == "lookups" \
            and value != "seq":
        return f"must be an integer or 'seq', got {value!r}"
    if isinstance(value, int) and not isinstance(value, bool):
        if value <= 0:
            return f"must be positive, got {value}"
        if value > LIMITS["layer_int"]:
            return f"must be <= {LIMITS['layer_int']:,}, got {value:,}"
    # cutoffs [] is one cluster: train.py without --adaptive (a full softmax, n_clusters 0)
    if key == "cutoffs" and (any(not isinstance(c, int) or isinstance(c, bool) or c <= 0
                                 for c in value) or list(value) != sorted(set(value))):
        return f"must be a list of increasing positive integers, got {value!r}"
    if key == "tie_projs" and any(not isinstance(t, bool) for t in value):
        return f"must be a list of true/false, got {value!r}"
    if key == "token_fraction" and not 0 < value <= 1:
        return f"must be in (0, 1], got {value!r}"
    # flash_attention: true (the GPU's default library kernel) or a named one
    allowed = (ATTENTION_IMPLEMENTATIONS if key == "flash_attention" and isinstance(value, str)
               else ENUMS.get(key) if not (key == "bias" and kind != "lstm") else None)
    if allowed is not None and value not in allowed:
        return f"must be one of {', '.join(allowed)}, got {value!r}"
    return None


def layer_shape_problem(kind: str, params: dict) -> tuple[str, str] | None:
    """(key, why) when a layer's keys do not fit one another, or None: attention splits
    `dim` into `heads` equal heads, and grouped-query attention shares each of `kv_heads`
    among a whole number of query heads (PyTorch and every trainer refuse anything else).
    An output layer's own `table` is a sampled softmax's weight: without `samples` the
    softmax scores every row, a dense gradient (its own `vocab` says that)."""
    if kind == "output_projection" and "table" in params and not params.get("samples"):
        return "table", (f"table {params['table']!r} as the weight needs samples: (a sampled "
                         f"softmax gathers the rows it scores, a sparse gradient); a full softmax "
                         f"touches every row, so give its own weight as vocab: instead")
    if kind in ("adaptive_embedding", "adaptive_softmax"):
        if params["cutoffs"] and params["cutoffs"][-1] >= params["vocab"]:
            return "cutoffs", f"cutoffs must lie below the vocab {params['vocab']}"
        ties = params.get("tie_projs")
        if ties is not None and len(ties) != len(params["cutoffs"]) + 1:
            return "tie_projs", "give one entry per cluster (len(cutoffs) + 1)"
        return None
    if not kind.startswith("transformer_"):
        return None
    dim, heads = params["dim"], params["heads"]
    if dim % heads:
        return "heads", f"{heads} heads do not split dim {dim} evenly"
    kv = params.get("kv_heads")
    if kv is not None and (kv > heads or heads % kv):
        return "kv_heads", f"{kv} key/value heads must divide the {heads} query heads"
    return None


def reference_problem(spec_tables: dict, layers) -> tuple[tuple, str] | None:
    """The first (key path, why) at which layers and tables do not fit together (a
    dangling table name, a tied projection of another width, an unread table), or None:
    shared by model files and run overrides."""
    names = set()
    mem_of = None          # Transformer-XL's memory length: one --mem_len for every layer
    for i, layer in enumerate(layers):
        path = ("layers", i)
        if layer.kind in ("rel_position", "rel_transformer_block"):
            if mem_of is None:
                mem_of = (layer.name, layer.params["mem"])
            elif layer.params["mem"] != mem_of[1]:
                return path + ("mem",), (f"{layer.params['mem']} here but {mem_of[1]} in layer "
                                         f"{mem_of[0]!r}: Transformer-XL caches one memory length "
                                         f"(mem_len) for its position inputs and every block; "
                                         f"set the same mem on both")
        if layer.name in names:
            return path + ("name",), f"duplicate layer name {layer.name!r}"
        names.add(layer.name)
        p = layer.params
        for key in ("table", "tied"):
            if key in p and p[key] not in spec_tables:
                return path + (key,), (f"no table named {p[key]!r} "
                                       f"(tables: {', '.join(spec_tables) or 'none'})")
        if layer.kind == "softmax_loss" and isinstance(p["classes"], str) \
                and p["classes"] not in spec_tables:
            return path + ("classes",), f"must be an integer or a table name, got {p['classes']!r}"
        if layer.kind == "output_projection":
            if sum(k in p for k in ("tied", "vocab", "table")) != 1:
                return path, ("give exactly one of 'tied' (the lookup table it shares), 'table' "
                              "(its own sampled-softmax table) or 'vocab' (its own dense weight)")
            for key, what in (("tied", "tied table"), ("table", "table")):
                if key in p and spec_tables[p[key]].dim != p["dim"]:
                    return path + ("dim",), (f"{what} {p[key]!r} has dim "
                                             f"{spec_tables[p[key]].dim}, not {p['dim']}")
    lookups = {layer.params["table"]: layer.name for layer in layers if layer.kind == "embedding"}
    weights: dict[str, str] = {}          # an output layer's own table -> that layer
    for i, layer in enumerate(layers):
        name = layer.params.get("table") if layer.kind == "output_projection" else None
        if name is None:
            continue
        if name in lookups:
            return ("layers", i, "table"), (f"table {name!r} is also read by embedding layer "
                                            f"{lookups[name]!r}: an output layer that shares a "
                                            f"lookup's table says tied: {name}")
        if layer.repeat > 1:
            return ("layers", i, "repeat"), (f"{layer.repeat} output layers cannot all have "
                                             f"table {name!r} as their own weight; give each its own")
        if name in weights:
            return ("layers", i, "table"), (f"table {name!r} is already the weight of output "
                                            f"layer {weights[name]!r}")
        weights[name] = layer.name
    for i, name in enumerate(spec_tables):
        if name not in lookups and name not in weights:
            return ("tables", i), (f"table {name!r} is read by no embedding layer (nor is it "
                                   f"an output layer's table:)")
    return None


TYPE_ROWS = 16

# The layer kinds a recommender is built from: no positions, sequence layers or output
# projection (a model of these alone, at its default seq of 1, is per-sample: per_sample).
PER_SAMPLE_KINDS = ("embedding", "linear", "layernorm", "combine", "dot_interaction",
                    "fm_interaction", "softmax_loss")


def per_sample(spec: ModelSpec) -> bool:
    """Whether the model's samples are rows of features, not token sequences (DLRM, NCF,
    Merlin's synthetic models): a --seq other than 1 has nothing to lengthen."""
    return spec.seq == 1 and all(layer.kind in PER_SAMPLE_KINDS for layer in spec.layers)


def position_limit(spec: ModelSpec) -> tuple[str, int] | None:
    """(layer name, rows) of the learned position table that bounds the sequence length,
    or None. A learned `positional_embedding` is read one row per position, so a sequence
    longer than its rows has positions with no row (BERT's 512, GPT-2's 1024: the trainers
    refuse it). The kind also carries tables read by something else per token (BERT's
    2-row segment table), so only a table that holds the model's own default `seq` counts
    as a position table; with several, the shortest bounds. A default `seq` past every
    table (a file's mistake, refused by parse_model_doc) is bounded by the longest, unless
    that holds no more rows than a token-type table (TYPE_ROWS). Sinusoidal ones (learned:
    false) are computed for any position."""
    learned = [(layer.params["rows"], layer.name) for layer in spec.layers
               if layer.kind == "positional_embedding" and layer.params.get("learned", True)]
    holding = [t for t in learned if t[0] >= spec.seq]
    if holding:
        rows, name = min(holding)
        return name, rows
    longest = max(learned, default=None)
    return (longest[1], longest[0]) if longest and longest[0] > TYPE_ROWS else None


def positions_problem(spec: ModelSpec, seq: int) -> str | None:
    """Why `seq` is past the model's learned positions (position_limit), or None: the
    words of load_model's --seq refusal."""
    limit = position_limit(spec)
    if limit is None or seq <= limit[1]:
        return None
    return (f"{seq:,}: {spec.name} has {limit[1]:,} learned positions (its position table "
            f"{limit[0]!r}, rows: {limit[1]}), so at most {limit[1]:,}")


def _check_references(doc: YamlDoc, spec_tables: dict, layers: list[LayerSpec]) -> None:
    problem = reference_problem(spec_tables, layers) or chain_problem(layers, spec_tables)
    if problem:
        raise doc.error(*problem)


def parse_model_doc(doc: YamlDoc) -> ModelSpec:
    top = check_mapping(doc, (), doc.data, ["name", "source", "defaults", "layers"],
                        ["description", "published", "tables"])
    d = check_mapping(doc, ("defaults",), top["defaults"],
                      ["batch", "seq", "dtype", "optimizer"],
                      ["amp", "optimizer_options", "jitter", "lengths", "padding", "global_batch",
                       "accumulate_sync", "throughput", "options", "framework"])
    dtype = _enum(doc, ("defaults", "dtype"), get(doc, ("defaults",), d, "dtype", str),
                  tuple(DTYPE_BYTES), fold=True)
    optimizer = _enum(doc, ("defaults", "optimizer"),
                      get(doc, ("defaults",), d, "optimizer", str), tuple(OPTIMIZER_STATE_TENSORS))
    trainer = _trainer_defaults(doc, d)
    published = {}
    if "published" in top:
        pub = check_mapping(doc, ("published",), top["published"], [],
                            ["params", "dense_params", "embedding_params"])
        published = {k: get(doc, ("published",), pub, k, float, positive=True) for k in pub}
    tables_raw = check_type(doc, ("tables",), top.get("tables", []), list)
    tables = [_parse_table(doc, ("tables", i), t) for i, t in enumerate(tables_raw)]
    by_name = {}
    for i, t in enumerate(tables):
        if t.name in by_name:
            raise doc.error(("tables", i, "name"), f"duplicate table name {t.name!r}")
        by_name[t.name] = t
    layers_raw = check_type(doc, ("layers",), top["layers"], list)
    if not layers_raw:
        raise doc.error(("layers",), "must list at least one layer")
    layers = [_parse_layer(doc, ("layers", i), raw) for i, raw in enumerate(layers_raw)]
    _check_references(doc, by_name, layers)
    spec = ModelSpec(
        name=_name(doc, (), top), description=get(doc, (), top, "description", str, ""),
        source=get(doc, (), top, "source", str), published=published,
        batch=get(doc, ("defaults",), d, "batch", int, positive=True, hi=LIMITS["batch"]),
        seq=get(doc, ("defaults",), d, "seq", int, positive=True, hi=LIMITS["seq"]),
        dtype=dtype, optimizer=optimizer, tables=tuple(tables), layers=tuple(layers),
        path=doc.source, **trainer)
    problem = positions_problem(spec, spec.seq)
    if problem:
        raise doc.error(("defaults", "seq"), problem)
    return spec


ACCUMULATE_SYNCS = ("last", "every")   # embsim.engine.accumulate.SYNCS (the engine imports workload, not back)
THROUGHPUT_AVERAGES = ("time", "iterations")   # embsim.engine.iteration_rate.AVERAGES
OPTIMIZER_OPTIONS = {"implementation": str, "clip_grad_norm": bool, "fp32_gradients": bool,
                     "sparse_dedup": str}


def _trainer_defaults(doc: YamlDoc, d: dict) -> dict:
    """The optional `defaults:` keys that say how the model's reference trainer runs it:
    amp style, optimizer_options (as a run's `optimizer` override), jitter, lengths,
    padding, the global batch its benchmark accumulates to, how accumulated gradients
    synchronise, and options (strategy/scheduler parameters; their values are checked by
    the component that takes them, when a run uses it)."""
    out: dict[str, Any] = {}
    if "framework" in d:
        out["framework"] = _enum(doc, ("defaults", "framework"),
                                 get(doc, ("defaults",), d, "framework", str), FRAMEWORKS)
        out["sparse_dedup"] = FRAMEWORK_SPARSE_DEDUP[out["framework"]]
    if "padding" in d:
        out["padding"] = _padding_default(doc, ("defaults", "padding"), d["padding"])
    if "amp" in d:
        out["amp"] = _enum(doc, ("defaults", "amp"), get(doc, ("defaults",), d, "amp", str), AMP_STYLES,
                           fold=True)
    for key in ("jitter", "lengths", "accumulate_sync"):
        if key in d:
            out[key] = get(doc, ("defaults",), d, key, str)
    if "accumulate_sync" in out:
        out["accumulate_sync"] = _enum(doc, ("defaults", "accumulate_sync"), out["accumulate_sync"],
                                       ACCUMULATE_SYNCS)
    if "throughput" in d:
        out["throughput"] = _enum(doc, ("defaults", "throughput"),
                                  get(doc, ("defaults",), d, "throughput", str), THROUGHPUT_AVERAGES)
    if "global_batch" in d:
        out["global_batch"] = get(doc, ("defaults",), d, "global_batch", int, positive=True)
    if "options" in d:
        path = ("defaults", "options")
        given = check_type(doc, path, d["options"], dict)
        for key, value in given.items():
            if not isinstance(key, str) or not isinstance(value, (int, float, str)):
                raise doc.error(path + (key,), "options are KEY: VALUE pairs (a number or a word)")
        out["options"] = tuple(given.items())
    if "optimizer_options" in d:
        path = ("defaults", "optimizer_options")
        o = check_mapping(doc, path, d["optimizer_options"], [], list(OPTIMIZER_OPTIONS))
        for key, kind in OPTIMIZER_OPTIONS.items():
            if key in o:
                field_name = "optimizer_implementation" if key == "implementation" else key
                out[field_name] = get(doc, path, o, key, kind)
        if "optimizer_implementation" in out:
            out["optimizer_implementation"] = _enum(doc, path + ("implementation",),
                                                    out["optimizer_implementation"],
                                                    OPTIMIZER_IMPLEMENTATIONS)
        if "sparse_dedup" in out:
            out["sparse_dedup"] = _enum(doc, path + ("sparse_dedup",), out["sparse_dedup"], SPARSE_DEDUPS)
    return out


def _padding_default(doc: YamlDoc, path: tuple, value: Any) -> tuple:
    """`padding: POLICY` (every seq) or `{SEQ: POLICY, ..., other: POLICY}`."""
    table = value if isinstance(value, dict) else {"other": check_type(doc, path, value, str)}
    out = []
    for key, policy in table.items():
        if key != "other" and (not isinstance(key, int) or isinstance(key, bool) or key <= 0):
            raise doc.error(path + (key,), "keys are sequence lengths (positive integers) or 'other'")
        text = check_type(doc, path + (key,) if isinstance(value, dict) else path, policy, str)
        try:
            parse_padding(text, flag="padding")
        except InputError as exc:
            raise doc.error(path + (key,) if isinstance(value, dict) else path, str(exc)) from None
        out.append((None if key == "other" else key, text))
    return tuple(out)


def load_model_spec(path: str | Path) -> ModelSpec:
    return parse_model_doc(load_yaml(path))
