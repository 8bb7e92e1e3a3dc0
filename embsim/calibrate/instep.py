"""Per-layer times measured inside whole training steps of the model the steps run.

A layer timed alone (layers.py) keeps its buffers and caches warm between repetitions;
inside a step it runs between other layers' kernels and allocations, and the softmax
loss's backward also zero-fills a fresh (tokens x vocab) gradient. The simulator builds a
step from per-layer times, so they are taken where the step spends them: the untied
LanguageModel (dense embedding, no communication) runs forward, backward and SGD on
every rank at once, with marks at every layer boundary:

  forward of layer i:  its forward pre-hook .. its forward hook
  loss forward:        the last layer's forward hook .. the model's return
  loss backward:       backward() called .. the gradient of the logits is ready
  backward of layer i: the gradient of its output is ready .. that of its input is
                       (the first layer: .. backward() returns)
  optimizer:           SGD over every parameter (elements = all of them)
"""

from __future__ import annotations

import torch

from embsim.trace import LayerPoint, LayerTiming, OptimizerTiming

from .modules import LanguageModel, chain_layers
from .recommender import Recommender
from .spec import ModelShape
from .step_model import to_device
from .timing import Stat, Stopwatch, together


def step_loss_layer(model: ModelShape) -> str:
    """The zoo's name for the loss the step computes: the last token-wise softmax loss."""
    for layer in reversed(model.layers):
        if layer.kind == "softmax_loss" and layer.params.get("per", "token") == "token":
            return layer.name
    raise ValueError(f"model {model.name} has no token-wise softmax loss")


class _Marks:
    """Forward hooks on each layer record marks; its output's gradient hook marks backward."""

    def __init__(self, names: list[str], modules: list[torch.nn.Module], watch: Stopwatch):
        self.watch, self.names = watch, names
        self.fwd0: dict[str, object] = {}
        self.fwd1: dict[str, object] = {}
        self.grad_ready: dict[str, object] = {}
        for name, module in zip(names, modules):
            module.register_forward_pre_hook(self._pre(name))
            module.register_forward_hook(self._post(name))

    def _pre(self, name):
        def hook(module, inputs):
            self.fwd0[name] = self.watch.mark()
        return hook

    def _post(self, name):
        def on_grad(grad):
            self.grad_ready[name] = self.watch.mark()

        def hook(module, inputs, output):
            self.fwd1[name] = self.watch.mark()
            if output.requires_grad:
                output.register_hook(on_grad)
        return hook


def _one_step(lm: LanguageModel, marks: _Marks, opt, inputs: tuple, loss_name: str) -> dict:
    """Seconds per (phase, layer) of one step."""
    w, names = marks.watch, marks.names
    together()
    opt.zero_grad(set_to_none=True)
    loss = lm(*inputs)
    fwd_end = w.mark()
    bwd_start = w.mark()
    loss.backward()
    bwd_end = w.mark()
    opt.step()
    opt_end = w.mark()
    # one ordered list of marks, so CUDA events are read once, in order
    order = ([marks.fwd0[n] for n in names] + [marks.fwd1[n] for n in names] +
             [fwd_end, bwd_start] + [marks.grad_ready[n] for n in names] + [bwd_end, opt_end])
    k = len(names)
    times = _elapsed(w, order)
    f0, f1 = times[:k], times[k:2 * k]
    fwd_end_t, bwd_start_t = times[2 * k], times[2 * k + 1]
    ready = times[2 * k + 2:3 * k + 2]
    bwd_end_t, opt_end_t = times[3 * k + 2], times[3 * k + 3]
    out = {("fwd", n): f1[i] - f0[i] for i, n in enumerate(names)}
    out[("fwd", loss_name)] = fwd_end_t - f1[-1]
    out[("bwd", loss_name)] = ready[-1] - bwd_start_t
    for i, n in enumerate(names):
        out[("bwd", n)] = (ready[i - 1] if i > 0 else bwd_end_t) - ready[i]
    out[("opt", "dense")] = opt_end_t - bwd_end_t
    return out


def _elapsed(watch: Stopwatch, marks: list) -> list[float]:
    """Each mark's time after the first (host clock or CUDA events alike)."""
    if watch.cuda:
        marks[-1].synchronize()
        return [marks[0].elapsed_time(m) / 1e3 for m in marks]
    return [m - marks[0] for m in marks]


class InStepSampler:
    """The untied LanguageModel with marks at its layer boundaries; sample() runs one step."""

    def __init__(self, model: ModelShape, device: torch.device):
        torch.manual_seed(0)
        self.model, self.device = model, device
        self.lm = LanguageModel(model).to(device)
        chain, _ = chain_layers(model)           # the layers lm.body runs, in order
        self.names = [model.embedding.name] + [l.name for l in chain]
        self.marks = _Marks(self.names, [self.lm.embedding, *self.lm.body.layers], Stopwatch(device))
        self.opt = torch.optim.SGD(self.lm.parameters(), lr=0.1)
        self.loss_name = step_loss_layer(model)

    def sample(self, inputs: tuple) -> dict:
        """Seconds per (phase, layer) of one step on (tokens, targets)."""
        return _one_step(self.lm, self.marks, self.opt, to_device(inputs, self.device), self.loss_name)

    def timings(self, samples: dict[int, list[dict]]) -> tuple[list[LayerTiming], OptimizerTiming]:
        """LayerTimings (in-step) from {batch: samples}, and the SGD step at the largest batch."""
        kinds = {l.name: l.kind for l in self.model.layers}
        stats = {b: {key: Stat.of([s[key] for s in ss]) for key in ss[0]} for b, ss in samples.items()}
        out = []
        for name in self.names + [self.loss_name]:
            points = tuple(LayerPoint(batch=b, fwd_s=max(0.0, st[("fwd", name)].median_s),
                                      bwd_s=max(0.0, st[("bwd", name)].median_s),
                                      fwd_spread_s=st[("fwd", name)].spread_s,
                                      bwd_spread_s=st[("bwd", name)].spread_s,
                                      reps=st[("fwd", name)].reps)
                           for b, st in sorted(stats.items()))
            variant = "dense-grad" if kinds[name] == "embedding" else ""
            out.append(LayerTiming(name=name, kind=kinds[name], variant=variant, points=points,
                                   timed="in-step"))
        top = max(stats)
        o = stats[top][("opt", "dense")]
        optimizer = OptimizerTiming("dense", "sgd", top, sum(p.numel() for p in self.lm.parameters()),
                                    o.median_s, o.spread_s, o.reps)
        return out, optimizer


class WholeStepSampler:
    """A recommender's communication-free steps, timed whole: its layers branch and join,
    so a layer's backward has no single boundary to mark, and its per-layer times stay the
    isolated ones (layers.measure_layers). Gives the step (for the ranks' skew) and its SGD."""

    def __init__(self, model: ModelShape, device: torch.device):
        torch.manual_seed(0)
        self.device, self.watch = device, Stopwatch(device)
        self.model = Recommender(model).to(device)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def sample(self, inputs: tuple) -> dict:
        inputs = to_device(inputs, self.device)
        w = self.watch
        together()
        self.opt.zero_grad(set_to_none=True)
        start = w.mark()
        self.model(*inputs).backward()
        backward_end = w.mark()
        self.opt.step()
        times = _elapsed(w, [start, backward_end, w.mark()])
        return {("step", "fwd+bwd"): times[1], ("opt", "dense"): times[2] - times[1]}

    def timings(self, samples: dict[int, list[dict]]) -> tuple[list[LayerTiming], OptimizerTiming]:
        """No in-step layer times; the SGD step over every parameter at the largest batch."""
        top = max(samples)
        o = Stat.of([s[("opt", "dense")] for s in samples[top]])
        return [], OptimizerTiming("dense", "sgd", top, sum(p.numel() for p in self.model.parameters()),
                                   o.median_s, o.spread_s, o.reps)
