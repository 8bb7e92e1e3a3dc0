"""Width chains of a model file: what each layer writes and the next one reads.

A linear's `in`, an LSTM's `in` and a layernorm's `dim` must be a width some earlier layer
writes; a combine's output follows from its op. Pure functions over the parsed layers
(embsim.workload.spec calls them while it parses, and names the file's line)."""

from __future__ import annotations

# The layers are embsim.workload.spec.LayerSpec (kind, name, params); not imported, as spec
# imports this module.
LayerSpec = object
# Widths a layer states outright. A linear layer's `in`, an LSTM's `in` and a layernorm's
# `dim` are what the layer reads; what a linear, an LSTM (its projection, both directions of
# a bidirectional one) or a layernorm writes follows from its keys. A combine writes one
# vector per sample: `dim` for a product or sum, `inputs` x `dim` for a concat, whose `dim`
# may be its inputs' mean width rounded either way (the zoo writes Merlin's 58 embeddings
# 672 wide plus 10 numerics as 59 x 12), so a concat's width is known to within `inputs`.
# Other kinds join or reshape vectors (embeddings: one vector per lookup, concatenated by
# what reads them; interaction/attention: products, contexts; transformer blocks: residual
# streams), so a chain is checked only from one of these four into one of the first three.
CHAIN_KINDS = ("linear", "lstm", "layernorm")


def _out_width(layer: LayerSpec) -> int:
    p = layer.params
    if layer.kind == "linear":
        return p["out"]
    if layer.kind == "lstm":
        return (p.get("proj") or p["hidden"]) * (2 if p.get("bidirectional") else 1)
    if layer.kind == "combine" and p["op"] == "concat":
        return p["inputs"] * p["dim"]
    return p["dim"]


def _out_words(layer: LayerSpec) -> str:
    p = layer.params
    if layer.kind == "linear":
        return f"out {p['out']}"
    if layer.kind == "lstm":
        width = f"proj {p['proj']}" if p.get("proj") else f"hidden {p['hidden']}"
        return f"{width} x 2 directions" if p.get("bidirectional") else width
    if layer.kind == "combine":
        return (f"concat of {p['inputs']} inputs x dim {p['dim']}" if p["op"] == "concat"
                else f"{p['op']}, dim {p['dim']}")
    return f"dim {p['dim']}"


def _reads_written(before: LayerSpec, width: int) -> bool:
    """Whether `width` is what `before` writes: a concat's to within its rounded mean."""
    if before.kind == "combine" and before.params["op"] == "concat":
        return abs(width - _out_width(before)) < before.params["inputs"]
    return width == _out_width(before)


def _written(layer: LayerSpec) -> set:
    """Widths a layer of any kind states it writes (a branch may read any of them)."""
    p = layer.params
    if layer.kind in CHAIN_KINDS or layer.kind == "combine":
        return {_out_width(layer)} | ({p["dim"]} if layer.kind == "combine" else set())
    return {p[k] for k in ("out", "dim") if isinstance(p.get(k), int)}


def _fed_widths(layers, i: int, tables: dict) -> list[tuple[int, str]] | None:
    """(width, layer name) of the vectors the combine layers[i] is known to join, nearest
    first, or None when the file does not tell: the embedding layers right before it (a
    bag lookup writes one vector of its table's dim, another one per lookup; `lookups:
    seq` depends on the run) and the linear, LSTM or layernorm that ends their run (DLRM's
    bottom MLP; the layers before it feed it). More vectors than it joins: which, unknown."""
    need, found = layers[i].params["inputs"], []
    for layer in reversed(layers[:i]):
        p = layer.params
        if layer.kind == "embedding":
            count = 1 if "pooling" in p else p.get("lookups")
            if not isinstance(count, int) or p["table"] not in tables or len(found) + count > need:
                return None
            found += [(tables[p["table"]].dim, layer.name)] * count
            continue
        if layer.kind in CHAIN_KINDS and len(found) < need:
            found.append((_out_width(layer), layer.name))
        break
    return found


def combine_problem(layers, i: int, tables: dict) -> tuple[tuple, str] | None:
    """(key path, why) when the combine layers[i] states a `dim` the vectors fed to it
    (_fed_widths) cannot have, or None: a product or sum reads vectors `dim` wide; a
    concat's `dim` is their mean width, rounded, and each vector not known is at least 1
    wide, so a mean of the known ones a whole feature off `dim` (above it, or below it
    when every vector is known) is a wrong `dim`."""
    layer, fed = layers[i], _fed_widths(layers, i, tables)
    if not fed:
        return None
    p, path = layer.params, ("layers", i, "dim")
    if p["op"] != "concat":
        width, name = next(((w, n) for w, n in fed if w != p["dim"]), (None, None))
        if width is None:
            return None
        return path, (f"layer {layer.name!r} ({p['op']}) reads vectors of width {p['dim']}, "
                      f"but {name!r} before it writes {width}")
    least = sum(w for w, _ in fed) + p["inputs"] - len(fed)
    mean = least / p["inputs"]
    if mean - p["dim"] < 1 and (len(fed) < p["inputs"] or p["dim"] - mean < 1):
        return None
    names = f"{fed[-1][1]!r} to {fed[0][1]!r}" if len(fed) > 1 else repr(fed[0][1])
    if len(fed) == p["inputs"]:
        given = f"the {len(fed)} vectors of the layers before it ({names}), {least:,} features"
    else:
        given = (f"{len(fed)} vectors of the layers before it ({names}) and {p['inputs'] - len(fed)} "
                 f"more, at least {least:,} features")
    return path, (f"layer {layer.name!r} (concat of {p['inputs']} inputs) joins {given}: "
                  f"a mean width of {mean:,.4g}, not dim {p['dim']}")


def chain_problem(layers, tables: dict | None = None) -> tuple[tuple, str] | None:
    """The first (key path, why) at which a layer reads another width than the layer just
    before it writes, where both say it: a linear, LSTM or layernorm straight after a
    linear, LSTM, layernorm or combine on the same rows (the same `per` and
    `token_fraction`; a repeated layer's own repeats are not checked, as GNMT's decoder
    layers read [h, attention context] each), or a combine whose `dim` the vectors fed to
    it cannot have (combine_problem; `tables` by name, for the embeddings' widths). A
    width some earlier layer writes is taken as a branch that reads it (a second task
    head after the first, a tower listed after another), not a mismatch. None when the
    chain fits or cannot be told."""
    written: set = set(_written(layers[0])) if layers else set()
    for i in range(1, len(layers)):
        before, layer = layers[i - 1], layers[i]
        seen, written = written, written | _written(layer)
        if layer.kind == "combine" and tables is not None:
            problem = combine_problem(layers, i, tables)
            if problem:
                return problem
        if (before.kind not in CHAIN_KINDS and before.kind != "combine") \
                or layer.kind not in CHAIN_KINDS:
            continue
        rows = [(x.params.get("per", "token"), x.params.get("token_fraction", 1)) for x in (before, layer)]
        if rows[0] != rows[1]:
            continue
        key = "dim" if layer.kind == "layernorm" else "in"
        width = layer.params[key]
        if not _reads_written(before, width) and width not in seen:
            return ("layers", i, key), (f"layer {layer.name!r} reads {key} {width}, but the layer "
                                        f"before it, {before.name!r} ({before.kind}, "
                                        f"{_out_words(before)}), writes {_out_width(before):,} "
                                        f"features")
    return None


# Rows of a per-token table read by something other than the position (BERT's 2 segments):
# a handful, so a learned table of more rows is a position table even when the default
# seq outruns it
