"""Real torch modules at the zoo's shapes, one builder per zoo layer kind.

The same code runs on CPU and CUDA (modules and inputs are moved to `device`).
`example_inputs` makes the input a layer sees in training at (batch, seq), so each
layer can be timed alone; `LanguageModel` chains the token-wise layers for whole steps.
"""

from __future__ import annotations

import inspect

import torch
import torch.nn.functional as F
from torch import nn

from embsim.errors import InputError

from .spec import LayerShape, ModelShape
from .tokens import name_seed, zipf_ids

ACTIVATIONS = {"none": nn.Identity, "relu": nn.ReLU, "gelu": nn.GELU, "tanh": nn.Tanh}


class PositionalAdd(nn.Module):
    def __init__(self, rows: int, dim: int):
        super().__init__()
        self.table = nn.Embedding(rows, dim)

    def forward(self, x):
        pos = torch.arange(x.shape[1], device=x.device) % self.table.num_embeddings
        return x + self.table(pos)


class LinearAct(nn.Module):
    def __init__(self, p: dict):
        super().__init__()
        self.linear = nn.Linear(p["in"], p["out"], bias=p.get("bias", True))
        self.act = ACTIVATIONS[p.get("activation", "none")]()

    def forward(self, x):
        return self.act(self.linear(x))


class Lstm(nn.Module):
    def __init__(self, p: dict):
        super().__init__()
        self.lstm = nn.LSTM(p["in"], p["hidden"], batch_first=True, proj_size=p.get("proj", 0),
                            bidirectional=p.get("bidirectional", False))

    def forward(self, x):
        return self.lstm(x)[0]


class AdditiveAttention(nn.Module):
    """Bahdanau attention: score = v . tanh(Wq q + Wk k), context = softmax(score) . k."""

    def __init__(self, p: dict):
        super().__init__()
        self.wq = nn.Linear(p["query"], p["units"], bias=False)
        self.wk = nn.Linear(p["key"], p["units"], bias=False)
        self.v = nn.Linear(p["units"], 1, bias=False)

    def forward(self, query, keys):
        scores = self.v(torch.tanh(self.wq(query)[:, :, None] + self.wk(keys)[:, None])).squeeze(-1)
        return torch.softmax(scores, dim=-1) @ keys


def block_class(p: dict) -> type[nn.Module]:
    return nn.TransformerDecoderLayer if p.get("cross_attention") else nn.TransformerEncoderLayer


def unbuilt_block_options(p: dict) -> list[str]:
    """The zoo block options PyTorch's layer classes do not have: built without them, the
    block has other matrices (a 2-matrix FFN, full K/V) and its times are another model's."""
    missing = []
    if p.get("ffn_kind") == "swiglu":
        missing.append("swiglu FFN")
    if p.get("kv_heads", p["heads"]) != p["heads"]:
        missing.append(f"grouped-query attention (kv_heads {p['kv_heads']})")
    if p.get("norm", "layernorm") != "layernorm":
        missing.append(p["norm"])
    if p.get("bias") is False and "bias" not in inspect.signature(block_class(p)).parameters:
        missing.append("bias: false (this torch is too old)")
    return missing


class TransformerBlock(nn.Module):
    """Encoder block; causal self-attention for a decoder, plus cross-attention if asked.
    build_layer refuses the options it lacks (unbuilt_block_options)."""

    def __init__(self, p: dict, causal: bool):
        super().__init__()
        act = "relu" if p.get("ffn_kind") == "relu" else "gelu"
        self.causal, self.cross = causal, bool(p.get("cross_attention", False))
        # bias: false drops the norms' shift too (torch's flag covers both): dim per norm
        extra = {"bias": False} if p.get("bias") is False else {}
        self.block = block_class(p)(p["dim"], p["heads"], p["ffn"], dropout=0.0, activation=act,
                                    batch_first=True, **extra)

    def forward(self, x, memory=None):
        mask = (nn.Transformer.generate_square_subsequent_mask(x.shape[1], device=x.device)
                if self.causal else None)
        if self.cross:
            return self.block(x, x if memory is None else memory, tgt_mask=mask, tgt_is_causal=self.causal)
        return self.block(x, src_mask=mask, is_causal=self.causal)


class FmInteraction(nn.Module):
    def forward(self, v):                     # (batch, fields, dim) -> (batch, 1)
        return 0.5 * (v.sum(1) ** 2 - (v ** 2).sum(1)).sum(1, keepdim=True)


class Combine(nn.Module):
    """Per-sample join of `inputs` vectors: concatenated, or their elementwise product or sum."""

    def __init__(self, op: str):
        super().__init__()
        self.op = op

    def forward(self, *vectors):
        if self.op == "concat":
            return torch.cat(vectors, dim=-1)
        if self.op == "sum":
            return torch.stack(vectors).sum(0)
        out = vectors[0]
        for v in vectors[1:]:
            out = out * v
        return out


class DotInteraction(nn.Module):
    """DLRM's dot interaction: the pairwise dot products of a sample's `vectors` vectors
    (the strict lower triangle of X X^T), after the first vector (the bottom MLP's
    output), zero-padded to `out` features (NVIDIA DLE dlrm/nn/interactions.py)."""

    def __init__(self, vectors: int, dim: int, out: int, where: str = "dot_interaction"):
        super().__init__()
        rows, cols = torch.tril_indices(vectors, vectors, offset=-1)
        written = dim + rows.numel()
        if out < written:
            raise InputError(f"{where}: out {out} is fewer than the {written} features a dot "
                             f"interaction of {vectors} vectors x dim {dim} writes ({dim} + "
                             f"{rows.numel()} pairs)")
        self.vectors, self.dim, self.out = vectors, dim, out
        self.register_buffer("rows", rows, persistent=False)
        self.register_buffer("cols", cols, persistent=False)

    def forward(self, x):                    # (..., vectors x dim) -> (..., out)
        lead = x.shape[:-1]
        x = x.reshape(-1, self.vectors, self.dim)
        pairs = torch.bmm(x, x.transpose(1, 2))[:, self.rows, self.cols]
        y = torch.cat([x[:, 0], pairs], dim=1)
        return F.pad(y, (0, self.out - y.shape[1])).reshape(*lead, self.out)


class SoftmaxLoss(nn.Module):
    """Cross-entropy over the classes; one class is a logit under binary cross-entropy
    (a recommender's click label)."""

    def forward(self, logits, targets):
        if logits.shape[-1] == 1:
            return F.binary_cross_entropy_with_logits(logits.reshape(-1), targets.reshape(-1).float())
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def classes_of(layer: LayerShape, model: ModelShape) -> int:
    p = layer.params
    if p.get("samples"):
        return int(p["samples"])          # sampled softmax: logits over the sampled classes
    c = p.get("classes", p.get("vocab", p.get("tied")))
    if isinstance(c, str):
        if c == "seq":
            raise InputError(f"layer {layer.name}: classes 'seq' needs a sequence length")
        return model.tables[c].vocab
    return int(c)


def build_layer(layer: LayerShape, model: ModelShape, sparse: bool = False) -> nn.Module:
    p, kind = layer.params, layer.kind
    if kind == "embedding":
        t = model.tables[p["table"]]
        if p.get("pooling"):      # a bag: each sample's ids (one row of the input) summed
            return nn.EmbeddingBag(t.vocab, t.dim, mode=p["pooling"], sparse=sparse)
        return nn.Embedding(t.vocab, t.dim, sparse=sparse)
    if kind == "positional_embedding":
        return PositionalAdd(p["rows"], p["dim"])
    if kind == "layernorm":
        norm = nn.RMSNorm if p.get("norm") == "rmsnorm" and hasattr(nn, "RMSNorm") else nn.LayerNorm
        return norm(p["dim"])
    if kind == "linear":
        return LinearAct(p)
    if kind == "lstm":
        return Lstm(p)
    if kind == "additive_attention":
        return AdditiveAttention(p)
    if kind in ("transformer_encoder", "transformer_decoder"):
        missing = unbuilt_block_options(p)
        if missing:
            listed = ", ".join(missing[:-1]) + (" and " if len(missing) > 1 else "") + missing[-1]
            raise InputError(f"{model.flag}: calibrate builds PyTorch's "
                             f"{block_class(p).__name__} for layer {layer.name!r}; its {listed} "
                             f"{'are' if len(missing) > 1 else 'is'} not built, so its times "
                             "would not be this model's")
        return TransformerBlock(p, causal=(kind == "transformer_decoder"))
    if kind == "output_projection":
        return nn.Linear(p["dim"], classes_of(layer, model), bias=p.get("bias", False))
    if kind == "softmax_loss":
        return SoftmaxLoss()
    if kind == "fm_interaction":
        return FmInteraction()
    if kind == "combine":
        return Combine(p["op"])
    if kind == "dot_interaction":
        return DotInteraction(p["vectors"], p["dim"], p["out"], f"{model.flag}: layer {layer.name!r}")
    raise InputError(f"{model.flag}: layer {layer.name!r} has kind {kind!r}, "
                     "which calibrate cannot build")


def require_buildable(model: ModelShape) -> None:
    """Refuse, before any rank starts, a model with a layer calibrate cannot build as the zoo
    describes it (build_layer's refusals); on the meta device, which allocates nothing."""
    with torch.device("meta"):
        for layer in model.layers:
            build_layer(layer, model)


def lookups_of(layer: LayerShape, seq: int) -> int:
    """Rows an embedding layer reads per sample: `lookups`, or one per token (the zoo's)."""
    n = layer.params.get("lookups", "seq")
    return seq if n == "seq" else int(n)


def layer_ids(layer: LayerShape, model: ModelShape, batch: int, seq: int, tokens: torch.Tensor,
              seed: tuple[int, ...] = (0,)) -> torch.Tensor:
    """The (batch, lookups) row ids an embedding layer reads: the run's own tokens where
    they are this layer's (the model's first table, one lookup per token), else Zipf draws
    over the layer's own table (a decoder's target vocabulary, a recommender's features)."""
    table = model.tables[layer.params["table"]]
    lookups = lookups_of(layer, seq)
    if table.name == model.table.name and tuple(tokens.shape) == (batch, lookups):
        return tokens
    return torch.from_numpy(zipf_ids(table.vocab, (batch, lookups), (*seed, name_seed(layer.name))))


def example_inputs(layer: LayerShape, model: ModelShape, batch: int, seq: int,
                   tokens: torch.Tensor, gen: torch.Generator) -> list[torch.Tensor]:
    """What the layer receives in training: token ids, or activations requiring grad."""
    p, kind = layer.params, layer.kind
    lead = (batch,) if p.get("per") == "sample" else (batch, seq)
    if p.get("token_fraction") is not None and p.get("per", "token") == "token":
        lead = (masked_rows(batch * seq, p["token_fraction"]),)    # the gathered positions

    def act(*shape):
        return torch.randn(*shape, generator=gen).requires_grad_()
    if kind == "embedding":
        return [layer_ids(layer, model, batch, seq, tokens)]
    if kind in ("positional_embedding", "layernorm"):
        return [act(*lead, p["dim"])]
    if kind in ("linear", "lstm"):
        return [act(*lead, p["in"])]
    if kind == "additive_attention":
        return [act(batch, seq, p["query"]), act(batch, seq, p["key"])]
    if kind in ("transformer_encoder", "transformer_decoder"):
        return [act(batch, seq, p["dim"])]
    if kind == "output_projection":
        return [act(*lead, p["dim"])]
    if kind == "softmax_loss":
        n = classes_of(layer, model)
        return [act(*lead, n), torch.randint(0, n, lead, generator=gen)]
    if kind == "fm_interaction":
        return [act(batch, p["fields"], p["dim"])]
    if kind == "combine":
        return [act(*lead, p["dim"]) for _ in range(p["inputs"])]
    if kind == "dot_interaction":
        return [act(*lead, p["vectors"] * p["dim"])]
    raise InputError(f"layer {layer.name!r}: no example input for kind {kind!r}")


# Layers that map (batch, seq, width) to (batch, seq, width'): the chain a step runs.
TOKENWISE = ("positional_embedding", "layernorm", "linear", "lstm", "transformer_encoder",
             "transformer_decoder")


def chain_layers(model: ModelShape) -> tuple[list[LayerShape], list[str]]:
    """The token-wise path embedding -> ... -> output projection; side branches
    (per-sample heads, attention over another input) are left out and named."""
    width = model.table.dim
    chain, skipped = [], []
    for layer in model.layers:
        p = layer.params
        if layer.kind == "embedding" or layer.kind == "softmax_loss":
            continue
        d_in = p.get("in", p.get("dim"))
        if layer.kind in TOKENWISE and p.get("per", "token") == "token" and d_in == width:
            chain.append(layer)
            if layer.kind == "linear":
                width = p["out"]
            elif layer.kind == "lstm":
                width = (p.get("proj") or p["hidden"]) * (2 if p.get("bidirectional") else 1)
        elif layer.kind == "output_projection" and p["dim"] == width:
            chain.append(layer)
        else:
            skipped.append(layer.name)
    if not chain or chain[-1].kind != "output_projection":
        raise InputError(f"{model.flag}: no output projection ends the token-wise chain; "
                         "calibrate cannot run whole training steps for it")
    return chain, skipped


class LanguageModel(nn.Module):
    """Embedding (replaceable: dense, sparse or sharded) -> token-wise chain -> loss.
    A tied output projection is untied here: its own weight, same shape."""

    def __init__(self, model: ModelShape, sparse: bool = False):
        super().__init__()
        self.embedding = build_layer(model.embedding, model, sparse)
        self.table = model.table.name
        chain, self.skipped = chain_layers(model)
        self.body = Body([build_layer(l, model) for l in chain],
                         [l.params.get("token_fraction") for l in chain])

    def table_modules(self) -> dict[str, nn.Module]:
        return {self.table: self.embedding}

    def replace_table(self, name: str, module: nn.Module) -> None:
        self.embedding = module

    def forward(self, tokens, targets):
        return self.body(self.embedding(tokens), targets)


def masked_rows(tokens: int, fraction: float) -> int:
    """Rows a head on `fraction` of the tokens works on (embsim.workload.costs.tokens_for)."""
    return max(1, int(round(tokens * fraction)))


class Body(nn.Module):
    """`fractions`: per layer, the token_fraction of a head on some positions only (BERT's
    MLM head): before the first such layer the rows are gathered (index_select, as
    DeepLearningExamples' dense_sequence_output does), evenly spaced over the batch."""

    def __init__(self, layers: list[nn.Module], fractions: list[float | None] | None = None):
        super().__init__()
        self.layers = nn.ModuleList(layers)
        self.fractions = fractions or [None] * len(layers)

    def forward(self, x, targets):
        targets = targets.reshape(-1)
        gathered = False
        for layer, frac in zip(self.layers, self.fractions):
            if frac is not None and not gathered:
                x = x.reshape(-1, x.shape[-1])
                k = masked_rows(x.shape[0], frac)
                idx = torch.arange(k, device=x.device) * (x.shape[0] // k)
                x, targets, gathered = x.index_select(0, idx), targets.index_select(0, idx), True
            x = layer(x)
        # A sampled softmax scores `samples` classes; fold targets into that range.
        targets = targets % x.shape[-1]
        return F.cross_entropy(x.reshape(-1, x.shape[-1]), targets)

