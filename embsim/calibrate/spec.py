"""The shapes calibrate builds real torch modules from: the model zoo's own layers.

`model_spec(name)` reads embsim.workload's zoo file (load_spec), expands `repeat` the way
the zoo's build does (`encoder.0`, `encoder.1`, ...) so trace layer names match the
simulator's, and keeps every layer's kind-specific shape keys. `tiny-lm` has a built-in
fallback in the same dialect for when the zoo lacks it (a laptop-sized LM; our numbers).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from embsim.errors import InputError


@dataclass(frozen=True)
class TableShape:
    name: str
    vocab: int
    dim: int


@dataclass(frozen=True)
class LayerShape:
    name: str
    kind: str                  # the zoo's kind (embedding, transformer_encoder, lstm, ...)
    params: dict = field(default_factory=dict, hash=False)   # the zoo's shape keys


@dataclass(frozen=True)
class ModelShape:
    name: str
    tables: dict[str, TableShape]
    layers: tuple[LayerShape, ...]
    source: str                # "zoo:<file>" or "builtin"
    given: str = ""            # what --model said (a zoo name or a file's path)

    @property
    def flag(self) -> str:
        """`--model X` as the user wrote it, for errors: a file's path, not its `name:`."""
        return f"--model {self.given or self.name}"

    @property
    def embedding(self) -> LayerShape:
        for layer in self.layers:
            if layer.kind == "embedding":
                return layer
        raise InputError(f"model {self.name!r} has no embedding layer to calibrate")

    @property
    def table(self) -> TableShape:
        return self.tables[self.embedding.params["table"]]


def _builtin_tiny_lm() -> ModelShape:
    vocab, dim = 8192, 128
    enc = {"dim": dim, "heads": 4, "ffn": 4 * dim}
    layers = (LayerShape("embedding", "embedding", {"table": "word"}),
              LayerShape("encoder.0", "transformer_encoder", enc),
              LayerShape("encoder.1", "transformer_encoder", enc),
              LayerShape("output", "output_projection", {"dim": dim, "vocab": vocab}),
              LayerShape("loss", "softmax_loss", {"classes": "word"}))
    return ModelShape("tiny-lm", {"word": TableShape("word", vocab, dim)}, layers, "builtin")


def from_zoo_spec(spec, given: str = "") -> ModelShape:
    tables = {t.name: TableShape(t.name, int(t.vocab), int(t.dim)) for t in spec.tables}
    layers = []
    for ls in spec.layers:
        for i in range(ls.repeat):
            name = f"{ls.name}.{i}" if ls.repeat > 1 else ls.name
            layers.append(LayerShape(name, ls.kind, dict(ls.params)))
    return ModelShape(spec.name, tables, tuple(layers), f"zoo:{spec.path}", given)


def model_spec(name: str) -> ModelShape:
    try:
        from embsim.workload import load_spec
    except ImportError:            # zoo not installed / being rebuilt
        load_spec = None
    if load_spec is not None:
        try:
            return from_zoo_spec(load_spec(name), name)
        except InputError:
            if name != "tiny-lm":
                raise
    if name == "tiny-lm":
        return _builtin_tiny_lm()
    raise InputError(f"--model {name!r}: the model zoo (embsim.workload) is not available "
                     "and only tiny-lm is built in")


def capped(model: ModelShape, max_rows: int | None) -> ModelShape:
    """The model with every table larger than `max_rows` built with `max_rows` rows
    (calibrate --max-rows): a DLRM's 1e7-1e8-row tables, held 11 times over by a
    calibration, fit no desk; lookups then read the first `max_rows` rows, the Zipf head
    the run's ids fall on most."""
    if max_rows is None:
        return model
    return replace(model, tables={k: replace(t, vocab=min(t.vocab, max_rows))
                                  for k, t in model.tables.items()})


def calibration_spec(model: str, max_rows: int | None = None) -> ModelShape:
    """What a calibration builds: the model's shapes, its tables capped at `max_rows`."""
    return capped(model_spec(model), max_rows)
