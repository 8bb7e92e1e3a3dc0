"""Per-layer forward/backward times of real modules, and optimizer steps.

Layers with identical shapes (BERT's 12 encoders) are measured once and the result is
recorded under each layer's name: they run the same kernels.
"""

from __future__ import annotations

from typing import Callable

import torch

from embsim.trace import LayerPoint, LayerTiming, OptimizerTiming

from .modules import build_layer, example_inputs, layer_ids
from .spec import LayerShape, ModelShape
from .step_model import lookup_total, step_model, to_device, touched_elements
from .timing import Stat, time_phases

TokenSource = Callable[..., torch.Tensor]   # (batch, step=0) -> (batch, seq) int64 token ids


def _inputs_and_grad(layer: LayerShape, model: ModelShape, module, batch: int, seq: int,
                     tokens: TokenSource, device: torch.device):
    gen = torch.Generator().manual_seed(0)
    inputs = [t.to(device).detach().requires_grad_(t.requires_grad)
              for t in example_inputs(layer, model, batch, seq, tokens(batch), gen)]
    with torch.no_grad():
        shape = module(*inputs).shape
    grad = torch.randn(shape, generator=gen).to(device) if len(shape) else None
    return inputs, grad


def layer_step(layer: LayerShape, model: ModelShape, batch: int, seq: int, tokens: TokenSource,
               device: torch.device) -> Callable[[], None]:
    """One forward+backward of a freshly built layer, as measure_layers times it."""
    torch.manual_seed(0)
    module = build_layer(layer, model).to(device)
    inputs, grad = _inputs_and_grad(layer, model, module, batch, seq, tokens, device)

    def step():
        module.zero_grad(set_to_none=True)
        for t in inputs:
            t.grad = None
        module(*inputs).backward(grad)
    return step


def _fresh_ids(layer: LayerShape, model: ModelShape, batch: int, seq: int, tokens: TokenSource,
               device: torch.device, draws: int) -> list[torch.Tensor]:
    """One batch of row ids per repetition (the run's tokens of that step, or that draw of
    the table's own ids), as a training step reads a new batch each time: the same ids every
    repetition would time rows already in cache."""
    return [layer_ids(layer, model, batch, seq, tokens(batch, draw), seed=(draw,)).to(device)
            for draw in range(draws)]


def _fwd_bwd(layer: LayerShape, model: ModelShape, module, batch: int, seq: int,
             tokens: TokenSource, device: torch.device, warmup: int, reps: int) -> tuple[Stat, Stat]:
    inputs, grad = _inputs_and_grad(layer, model, module, batch, seq, tokens, device)
    ids = (_fresh_ids(layer, model, batch, seq, tokens, device, warmup + reps)
           if layer.kind == "embedding" else None)
    drawn = iter(range(warmup + reps))

    def step(w):
        module.zero_grad(set_to_none=True)
        for t in inputs:
            t.grad = None
        if ids is not None:
            inputs[0] = ids[next(drawn)]
        m0 = w.mark()
        out = module(*inputs)
        m1 = w.mark()
        out.backward(grad)
        return [m0, m1, w.mark()]
    fwd, bwd = time_phases(step, device, warmup, reps)
    return fwd, bwd


def _shape_key(layer: LayerShape, variant: str) -> tuple:
    return (layer.kind, tuple(sorted(layer.params.items())), variant)


def measure_layers(model: ModelShape, batches: list[int], seq: int, tokens: TokenSource,
                   device: torch.device, warmup: int, reps: int,
                   progress: Callable[[str], None] = lambda s: None) -> list[LayerTiming]:
    measured: dict[tuple, dict[int, tuple[Stat, Stat]]] = {}
    out = []
    for layer in model.layers:
        variants = ("dense-grad", "sparse-grad") if layer.kind == "embedding" else ("",)
        for variant in variants:
            key = _shape_key(layer, variant)
            if key not in measured:
                progress(f"layer {layer.name} {variant}".rstrip())
                torch.manual_seed(0)
                module = build_layer(layer, model, sparse=(variant == "sparse-grad")).to(device)
                measured[key] = {b: _fwd_bwd(layer, model, module, b, seq, tokens, device, warmup, reps)
                                 for b in batches}
                del module
            points = tuple(LayerPoint(batch=b, fwd_s=f.median_s, bwd_s=g.median_s,
                                      fwd_spread_s=f.spread_s, bwd_spread_s=g.spread_s, reps=f.reps)
                           for b, (f, g) in sorted(measured[key].items()))
            name = layer.name if variant in ("", "dense-grad") else f"{layer.name}:sparse"
            out.append(LayerTiming(name=name, kind=layer.kind, variant=variant, points=points))
    return out


def measure_optimizer(model: ModelShape, batch: int, first_input: Callable[[int], object],
                      device: torch.device, warmup: int, reps: int,
                      lr: float = 0.1) -> OptimizerTiming:
    """SGD over the sparse rows one real batch touches (`first_input(batch)`: what the
    step's tables read). The dense rate is the whole steps' SGD (instep.py)."""
    torch.manual_seed(0)
    lm = step_model(model, sparse=True).to(device)
    ids = to_device(first_input(batch), device)
    # a real sparse gradient: the rows this batch touched
    lookup_total(lm.embedding(ids)).backward()
    sparse_opt = torch.optim.SGD(lm.embedding.parameters(), lr=lr)

    def sparse_step(w):
        m0 = w.mark()
        sparse_opt.step()
        return [m0, w.mark()]
    sparse = time_phases(sparse_step, device, warmup, reps)[0]
    return OptimizerTiming("sparse-rows", "sgd", batch, touched_elements(lm, ids),
                           sparse.median_s, sparse.spread_s, sparse.reps)
