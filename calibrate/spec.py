"""The shapes calibrate builds real torch modules from.

They come from the model zoo (embsim.workload.load_model) when it knows the model; the
adapter below reads a zoo Model into LayerSpecs. `tiny-lm` also has a built-in spec so
calibration works before/without the zoo (a laptop-sized LM; the numbers are ours).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from embsim.errors import InputError

EMBEDDING, ENCODER, DECODER, LSTM, OUTPUT, MLP = "embedding", "encoder", "decoder", "lstm", "output", "mlp"
# Zoo kind names we accept, mapped to the module family calibrate builds.
KIND_ALIASES = {
    "embedding": EMBEDDING, "embed": EMBEDDING,
    "encoder": ENCODER, "transformer_encoder": ENCODER, "transformer-encoder": ENCODER,
    "attention": ENCODER, "transformer": ENCODER,
    "decoder": DECODER, "transformer_decoder": DECODER, "transformer-decoder": DECODER,
    "lstm": LSTM, "rnn": LSTM,
    "output": OUTPUT, "projection": OUTPUT, "lm_head": OUTPUT, "softmax": OUTPUT, "head": OUTPUT,
    "mlp": MLP, "dense": MLP, "linear": MLP, "ffn": MLP,
}


@dataclass(frozen=True)
class LayerSpec:
    name: str
    kind: str                  # one of the families above
    zoo_kind: str              # the zoo's own kind name, recorded in the trace
    d_in: int                  # width of the activation entering the layer
    d_out: int                 # width leaving it (vocab for the output layer)
    heads: int = 0
    ffn: int = 0
    hidden: int = 0            # LSTM units
    vocab: int = 0             # embedding rows
    table: str = ""            # embedding table name


@dataclass(frozen=True)
class ModelSpec:
    name: str
    layers: tuple[LayerSpec, ...]
    source: str                # "zoo" or "builtin"
    tables: dict = field(default_factory=dict)   # table name -> vocab

    @property
    def embedding(self) -> LayerSpec:
        for layer in self.layers:
            if layer.kind == EMBEDDING:
                return layer
        raise InputError(f"model {self.name!r} has no embedding layer to calibrate")


def _builtin_tiny_lm() -> ModelSpec:
    vocab, dim = 8192, 128
    layers = (LayerSpec("embed", EMBEDDING, "embedding", dim, dim, vocab=vocab, table="embed"),
              LayerSpec("encoder0", ENCODER, "encoder", dim, dim, heads=4, ffn=4 * dim),
              LayerSpec("encoder1", ENCODER, "encoder", dim, dim, heads=4, ffn=4 * dim),
              LayerSpec("output", OUTPUT, "output", dim, vocab))
    return ModelSpec("tiny-lm", layers, "builtin", {"embed": vocab})


def _attr(obj, *names, default=0):
    """First present attribute/key among `names` (the zoo's field names may vary)."""
    for source in (obj, getattr(obj, "shapes", None) or {}, getattr(obj, "dims", None) or {}):
        for n in names:
            value = source.get(n) if isinstance(source, dict) else getattr(source, n, None)
            if value is not None:
                return value
    return default


def from_zoo_model(model) -> ModelSpec:
    """Read a zoo Model (layers + tables) into the shapes torch modules need."""
    tables = {t.name: int(t.vocab) for t in model.tables}
    dims = {t.name: int(t.dim) for t in model.tables}
    out, width = [], 0
    for layer in model.layers:
        zoo_kind = str(layer.kind)
        kind = KIND_ALIASES.get(zoo_kind.lower())
        if kind is None:
            raise InputError(f"model {model.name!r}: layer {layer.name!r} has kind {zoo_kind!r}, "
                             f"which calibrate cannot build (known: {', '.join(sorted(KIND_ALIASES))})")
        if kind == EMBEDDING:
            table = _attr(layer, "table", default=layer.name)
            if table not in tables:
                table = next(iter(tables))
            width = dims[table]
            out.append(LayerSpec(layer.name, kind, zoo_kind, width, width, vocab=tables[table], table=table))
            continue
        d_in = int(_attr(layer, "d_in", "input_dim", "d_model", "hidden", "dim", default=width))
        d_out = int(_attr(layer, "d_out", "output_dim", "d_model", "proj", "dim", default=d_in))
        if kind == OUTPUT:
            d_out = int(_attr(layer, "vocab", "d_out", "output_dim", default=next(iter(tables.values()))))
        out.append(LayerSpec(
            layer.name, kind, zoo_kind, d_in, d_out,
            heads=int(_attr(layer, "heads", "n_heads", "num_heads", default=max(1, d_in // 64))),
            ffn=int(_attr(layer, "ffn", "d_ff", "ffn_dim", "intermediate", default=4 * d_in)),
            hidden=int(_attr(layer, "hidden", "units", "hidden_size", default=d_in))))
        width = d_out
    return ModelSpec(model.name, tuple(out), "zoo", tables)


def model_spec(name: str, batch: int, seq: int) -> ModelSpec:
    try:
        from embsim.workload import load_model
    except ImportError:
        load_model = None
    if load_model is not None:
        try:
            return from_zoo_model(load_model(name, batch=batch, seq=seq))
        except InputError:
            if name != "tiny-lm":
                raise
    if name == "tiny-lm":
        return _builtin_tiny_lm()
    raise InputError(f"--model {name!r}: the model zoo (embsim.workload) is not available "
                     "and only tiny-lm is built in")
