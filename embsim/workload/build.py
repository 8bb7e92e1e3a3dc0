"""Evaluate a ModelSpec at a (batch, seq): expand repeats, cost every layer, sum params."""

from __future__ import annotations

from dataclasses import asdict

from . import costs, costs_blocks
from .costs import LayerCost, Shape
from .model import (DTYPE_BYTES, OPTIMIZER_STATE_TENSORS, EmbeddingTable, Layer, Model,
                    Optimizer)
from .spec import ModelSpec

FP32 = 4


def optimizer_for(name: str, dtype: str) -> Optimizer:
    master = FP32 if DTYPE_BYTES[dtype] < FP32 else 0
    return Optimizer(name, OPTIMIZER_STATE_TENSORS[name] * FP32, master)


def _lookups(p: dict, seq: int) -> int:
    value = p.get("lookups", "seq")
    return seq if value == "seq" else value


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
        vocab = tables[p["tied"]].vocab if "tied" in p else p["vocab"]
        return costs.output_projection_cost(p, sh, vocab, "tied" in p)
    if kind == "softmax_loss":
        classes = p["classes"]
        classes = tables[classes].vocab if isinstance(classes, str) else classes
        if "samples" in p:
            classes = min(classes, p["samples"] + 1)     # candidates + the true class
        return costs.softmax_loss_cost(p, sh, classes)
    if kind == "fm_interaction":
        return costs.fm_interaction_cost(p, sh)
    if kind == "lstm":
        return costs_blocks.lstm_cost(p, sh)
    if kind == "additive_attention":
        return costs_blocks.additive_attention_cost(p, sh)
    if kind == "transformer_encoder":
        return costs_blocks.transformer_block_cost(p, sh, cross_attention=False)
    if kind == "transformer_decoder":
        return costs_blocks.transformer_block_cost(p, sh, p.get("cross_attention", False))
    raise AssertionError(f"layer kind {kind!r} passed validation but has no cost rule")


def untied(p: dict, tables: dict) -> dict:
    """A tied output projection's shape keys as an untied one: its own vocab x dim weight
    (dense gradient), the table no longer shared."""
    q = {k: v for k, v in p.items() if k != "tied"}
    q["vocab"] = tables[p["tied"]].vocab
    return q


def build_model(spec: ModelSpec, batch: int, seq: int, untie_outputs: bool = False) -> Model:
    """`untie_outputs`: build every tied output projection untied (as calibrate's real
    training steps run it), so its table's gradient is the lookups' sparse one."""
    d = DTYPE_BYTES[spec.dtype]
    sh = Shape(batch, seq, d)
    tables = {t.name: t for t in spec.tables}
    owned: set[str] = set()
    layers: list[Layer] = []
    lookups = {name: 0 for name in tables}
    tied_to: dict[str, str] = {}
    sampled: dict[str, int] = {}
    for ls in spec.layers:
        for i in range(ls.repeat):
            name = f"{ls.name}.{i}" if ls.repeat > 1 else ls.name
            p = ls.params
            if untie_outputs and ls.kind == "output_projection" and "tied" in p:
                p = untied(p, tables)
            table = p.get("table") or p.get("tied")
            owns = ls.kind == "embedding" and table not in owned
            if owns:
                owned.add(table)
            if ls.kind == "embedding":
                lookups[table] += _lookups(p, seq)
            if ls.kind == "output_projection" and "tied" in p:
                tied_to[table] = name
                if p.get("samples"):
                    sampled[table] = p["samples"]
            c = _cost(ls.kind, p, sh, tables, owns)
            # a Layer is its cost plus where it sits in the model
            layers.append(Layer(name=name, kind=ls.kind, table=table, **asdict(c)))
    emb_tables = tuple(
        EmbeddingTable(name=t.name, vocab=t.vocab, dim=t.dim, lookups_per_sample=lookups[t.name],
                       tied_to=tied_to.get(t.name), input=t.input,
                       sampled=min(sampled.get(t.name, 0), t.vocab - 1)) for t in spec.tables)
    params = sum(layer.params for layer in layers)
    embedding = sum(t.params for t in emb_tables)
    return Model(
        name=spec.name, layers=tuple(layers), tables=emb_tables, batch=batch, seq=seq,
        dtype_bytes=d, optimizer=optimizer_for(spec.optimizer, spec.dtype), params=params,
        dense_params=params - embedding, embedding_params=embedding, source=spec.source,
        dtype=spec.dtype, published=dict(spec.published), description=spec.description)
