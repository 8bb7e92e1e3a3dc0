"""Per-layer forward/backward times of real modules, and optimizer steps.

Layers with identical shapes (BERT's 12 encoders) are measured once and the result is
recorded under each layer's name: they run the same kernels.
"""

from __future__ import annotations

from typing import Callable

import torch
import torch.nn.functional as F

from embsim.trace import LayerPoint, LayerTiming, OptimizerTiming

from .modules import Body, build_layer
from .spec import EMBEDDING, OUTPUT, LayerSpec, ModelSpec
from .timing import Stat, time_phases

TokenSource = Callable[[int], torch.Tensor]   # batch -> (batch, seq) int64 token ids


def _fwd_bwd(layer_spec: LayerSpec, module, batch: int, seq: int, tokens: TokenSource,
             device: torch.device, warmup: int, reps: int) -> tuple[Stat, Stat]:
    gen = torch.Generator().manual_seed(0)
    if layer_spec.kind == EMBEDDING:
        inputs = tokens(batch).to(device)
        grad = torch.randn(batch, seq, layer_spec.d_out, generator=gen).to(device)

        def step(w):
            module.zero_grad(set_to_none=True)
            m0 = w.mark()
            out = module(inputs)
            m1 = w.mark()
            out.backward(grad)
            return [m0, m1, w.mark()]
    else:
        x = torch.randn(batch, seq, layer_spec.d_in, generator=gen).to(device).requires_grad_()
        targets = torch.randint(0, layer_spec.d_out, (batch * seq,), generator=gen).to(device)
        grad = torch.randn(batch, seq, layer_spec.d_out, generator=gen).to(device)

        def step(w):
            module.zero_grad(set_to_none=True)
            x.grad = None
            m0 = w.mark()
            out = module(x)
            if layer_spec.kind == OUTPUT:   # the projection's softmax + loss is its work too
                out = F.cross_entropy(out.reshape(-1, out.shape[-1]), targets)
            m1 = w.mark()
            out.backward() if out.dim() == 0 else out.backward(grad)
            return [m0, m1, w.mark()]
    fwd, bwd = time_phases(step, device, warmup, reps)
    return fwd, bwd


def _shape_key(spec: LayerSpec, variant: str) -> tuple:
    return (spec.kind, spec.d_in, spec.d_out, spec.heads, spec.ffn, spec.hidden, spec.vocab, variant)


def measure_layers(model: ModelSpec, batches: list[int], seq: int, tokens: TokenSource,
                   device: torch.device, warmup: int, reps: int,
                   progress: Callable[[str], None] = lambda s: None) -> list[LayerTiming]:
    measured: dict[tuple, dict[int, tuple[Stat, Stat]]] = {}
    out = []
    for spec in model.layers:
        variants = ("dense-grad", "sparse-grad") if spec.kind == EMBEDDING else ("",)
        for variant in variants:
            key = _shape_key(spec, variant)
            if key not in measured:
                progress(f"layer {spec.name} {variant}".rstrip())
                torch.manual_seed(0)
                module = build_layer(spec, sparse=(variant == "sparse-grad")).to(device)
                measured[key] = {b: _fwd_bwd(spec, module, b, seq, tokens, device, warmup, reps)
                                 for b in batches}
                del module
            points = tuple(LayerPoint(batch=b, fwd_s=f.median_s, bwd_s=g.median_s,
                                      fwd_spread_s=f.spread_s, bwd_spread_s=g.spread_s, reps=f.reps)
                           for b, (f, g) in sorted(measured[key].items()))
            name = spec.name if variant in ("", "dense-grad") else f"{spec.name}:sparse"
            out.append(LayerTiming(name=name, kind=spec.zoo_kind, variant=variant, points=points))
    return out


def measure_optimizer(model: ModelSpec, batch: int, tokens: TokenSource, device: torch.device,
                      warmup: int, reps: int, lr: float = 0.1) -> list[OptimizerTiming]:
    """SGD step over every dense parameter, and over the sparse rows one batch touches."""
    torch.manual_seed(0)
    body = Body(model).to(device)
    params = [p for p in body.parameters()]
    for p in params:
        p.grad = torch.randn_like(p)
    dense_opt = torch.optim.SGD(params, lr=lr)

    def dense_step(w):
        m0 = w.mark()
        dense_opt.step()
        return [m0, w.mark()]
    dense = time_phases(dense_step, device, warmup, reps)[0]

    emb = build_layer(model.embedding, sparse=True).to(device)
    ids = tokens(batch).to(device)
    emb(ids).sum().backward()           # a real sparse gradient: the rows this batch touched
    rows = int(torch.unique(ids).numel())
    sparse_opt = torch.optim.SGD(emb.parameters(), lr=lr)

    def sparse_step(w):
        m0 = w.mark()
        sparse_opt.step()
        return [m0, w.mark()]
    sparse = time_phases(sparse_step, device, warmup, reps)[0]
    n_dense = sum(p.numel() for p in params)
    return [OptimizerTiming("dense", "sgd", batch, n_dense, dense.median_s, dense.spread_s, dense.reps),
            OptimizerTiming("sparse-rows", "sgd", batch, rows * model.embedding.d_out,
                            sparse.median_s, sparse.spread_s, sparse.reps)]
