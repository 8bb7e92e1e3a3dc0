"""Real torch modules at the zoo's shapes, and the training model made of them.

One function per module family; the same code runs on CPU and CUDA (device switch).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from embsim.errors import InputError

from .spec import DECODER, EMBEDDING, ENCODER, LSTM, MLP, OUTPUT, LayerSpec, ModelSpec


class CausalEncoder(nn.Module):
    """A decoder-only block (GPT style): self-attention with a causal mask."""

    def __init__(self, spec: LayerSpec):
        super().__init__()
        self.block = nn.TransformerEncoderLayer(spec.d_in, spec.heads, spec.ffn, dropout=0.0,
                                                batch_first=True)

    def forward(self, x):
        mask = nn.Transformer.generate_square_subsequent_mask(x.shape[1], device=x.device)
        return self.block(x, src_mask=mask, is_causal=True)


class LstmLayer(nn.Module):
    """An LSTM layer with an optional projection (LSTMP, as in the LM1B models)."""

    def __init__(self, spec: LayerSpec):
        super().__init__()
        proj = spec.d_out if spec.d_out < spec.hidden else 0
        self.lstm = nn.LSTM(spec.d_in, spec.hidden, batch_first=True, proj_size=proj)
        self.out = None if proj or spec.d_out == spec.hidden else nn.Linear(spec.hidden, spec.d_out)

    def forward(self, x):
        y, _ = self.lstm(x)
        return y if self.out is None else self.out(y)


class Mlp(nn.Module):
    def __init__(self, spec: LayerSpec):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(spec.d_in, spec.ffn or spec.d_out), nn.ReLU(),
                                 nn.Linear(spec.ffn or spec.d_out, spec.d_out))

    def forward(self, x):
        return self.net(x)


def build_layer(spec: LayerSpec, sparse: bool = False) -> nn.Module:
    if spec.kind == EMBEDDING:
        return nn.Embedding(spec.vocab, spec.d_out, sparse=sparse)
    if spec.kind == ENCODER:
        return nn.TransformerEncoderLayer(spec.d_in, spec.heads, spec.ffn, dropout=0.0, batch_first=True)
    if spec.kind == DECODER:
        return CausalEncoder(spec)
    if spec.kind == LSTM:
        return LstmLayer(spec)
    if spec.kind == OUTPUT:
        return nn.Linear(spec.d_in, spec.d_out)
    if spec.kind == MLP:
        return Mlp(spec)
    raise InputError(f"layer {spec.name!r}: no torch module for kind {spec.kind!r}")


class Body(nn.Module):
    """Everything after the embedding: the dense layers and the output projection + loss."""

    def __init__(self, spec: ModelSpec):
        super().__init__()
        self.layers = nn.ModuleList(build_layer(l) for l in spec.layers if l.kind != EMBEDDING)

    def forward(self, x, targets):
        for layer in self.layers:
            x = layer(x)
        return F.cross_entropy(x.reshape(-1, x.shape[-1]), targets.reshape(-1))


class LanguageModel(nn.Module):
    """Embedding (replaceable: dense, sparse or sharded) followed by the Body."""

    def __init__(self, spec: ModelSpec, sparse: bool = False, embedding: nn.Module | None = None):
        super().__init__()
        self.embedding = embedding if embedding is not None else build_layer(spec.embedding, sparse)
        self.body = Body(spec)

    def forward(self, tokens, targets):
        return self.body(self.embedding(tokens), targets)


def seeded_model(spec: ModelSpec, seed: int, sparse: bool = False) -> LanguageModel:
    """Same seed -> same initial parameters on every rank and in the single-process reference."""
    torch.manual_seed(seed)
    return LanguageModel(spec, sparse=sparse)
