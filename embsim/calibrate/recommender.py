"""Whole training steps of a per-sample model (a recommender: DLRM, NCF, Merlin's and
TorchRec's models), built from the zoo's layer list.

The zoo lists a recommender's layers in order without wiring them; `stack_plan` reads the
list as a stack of per-sample vectors, which is how those files are written:

* an embedding layer pushes one vector per lookup (one, pooled, for a bag);
* a linear pops the top vector when it is as wide as the layer's `in`, and otherwise
  reads a new input of dense (numeric) features that wide (DLRM's bottom MLP);
* a combine pops its `inputs` vectors (a concat's missing ones are the numeric features,
  as wide as what reads the concat needs: Merlin's 10 numerics beside 58 lookups);
  a product or sum needs them all `dim` wide;
* a dot interaction pops the concat of its vectors, an FM interaction its `fields`;
* the loss pops the last vector, and nothing may be left over.

A file this reading does not fit (a width that does not match, an output nothing reads)
is refused with the layer named: its whole steps would not be that model's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from embsim.errors import InputError
from embsim.trace import TokenStatsRecord
from embsim.workload.spec import PER_SAMPLE_KINDS
from embsim.workload.tokens import DEFAULT_ZIPF_S

from .modules import build_layer, lookups_of
from .spec import LayerShape, ModelShape
from .tokens import name_seed, zipf_ids

STEP_KINDS = PER_SAMPLE_KINDS       # the simulator's per-sample kinds, each built here


def per_sample(model: ModelShape) -> bool:
    """A model whose samples are rows of features, not token sequences: every layer is of
    a kind such a model is built from (no positions, sequence layers or output projection)."""
    return all(l.kind in STEP_KINDS for l in model.layers)


@dataclass(frozen=True)
class PlanStep:
    layer: LayerShape
    pops: int = 0                 # vectors taken from the stack
    dense: int = 0                # width of a new numeric-feature input it also reads


def _out_width(layer: LayerShape, popped: list[int], dense: int) -> int:
    p = layer.params
    if layer.kind == "linear":
        return p["out"]
    if layer.kind == "combine":
        return sum(popped) + dense if p["op"] == "concat" else p["dim"]
    if layer.kind == "dot_interaction":
        return p["out"]
    if layer.kind == "fm_interaction":
        return 1
    return p["dim"]                                     # layernorm


def _reader_width(layers: tuple[LayerShape, ...], i: int) -> int | None:
    """The width the layer after layers[i] reads, where it says."""
    if i + 1 >= len(layers):
        return None
    p, kind = layers[i + 1].params, layers[i + 1].kind
    if kind == "linear":
        return p["in"]
    if kind == "dot_interaction":
        return p["vectors"] * p["dim"]
    if kind == "layernorm":
        return p["dim"]
    return None


def stack_plan(model: ModelShape) -> tuple[PlanStep, ...]:
    """The layers as stack operations (module docstring); InputError naming the layer
    where the file does not read that way."""
    def refuse(layer: LayerShape | None, why: str):
        where = ""
        if layer is not None:
            kind = f"{layer.kind} {layer.params['op']}" if layer.kind == "combine" else layer.kind
            where = f"layer {layer.name!r} ({kind}) "
        raise InputError(f"{model.flag}: calibrate cannot run whole training steps of it: {where}{why}")

    stack: list[tuple[int, str]] = []           # (width, writer)
    plan = []
    for i, layer in enumerate(model.layers):
        p, kind = layer.params, layer.kind
        if kind not in STEP_KINDS:
            refuse(layer, "is not a kind a per-sample model's step is built from "
                          f"({', '.join(STEP_KINDS)})")
        if kind == "embedding":
            width = model.tables[p["table"]].dim
            stack += [(width, layer.name)] * (1 if p.get("pooling") else lookups_of(layer, 1))
            plan.append(PlanStep(layer))
        elif kind in ("linear", "layernorm"):
            plan.append(_row_step(layer, stack, refuse))
        elif kind == "softmax_loss":
            plan.append(_loss_step(layer, stack, refuse))
        else:
            plan.append(_join_step(layer, _reader_width(model.layers, i), stack, refuse))
    if not plan or plan[-1].layer.kind != "softmax_loss":
        refuse(None, "its layers do not end in a loss")
    return tuple(plan)


def _row_step(layer: LayerShape, stack: list, refuse) -> PlanStep:
    """A linear or layernorm: the top vector if it is as wide as the layer reads, else (a
    linear) a new input of numeric features that wide."""
    need = layer.params["in"] if layer.kind == "linear" else layer.params["dim"]
    if stack and stack[-1][0] == need:
        stack.pop()
        step = PlanStep(layer, pops=1)
    elif layer.kind == "linear":
        step = PlanStep(layer, dense=need)
    else:
        refuse(layer, f"normalises {need} features, but the vector before it is "
                      f"{stack[-1][0] if stack else 'missing'}")
    stack.append((_out_width(layer, [], 0), layer.name))
    return step


def _loss_step(layer: LayerShape, stack: list, refuse) -> PlanStep:
    """The loss: the last vector, as wide as its classes, and nothing left beside it."""
    if not stack:
        refuse(layer, "has no logits to read")
    width, writer = stack.pop()
    classes = layer.params.get("classes")
    if not isinstance(classes, int) or width != classes:
        refuse(layer, f"scores {classes} classes, but {writer!r} writes {width} features")
    if stack:
        refuse(layer, f"ends the step, but the outputs of {sorted({w for _, w in stack})} "
                      "reach no loss")
    return PlanStep(layer, pops=1)


def _join_step(layer: LayerShape, reads: int | None, stack: list, refuse) -> PlanStep:
    """A combine, dot or FM interaction: its input vectors off the stack (a concat's missing
    ones, and any width the next layer reads beyond them, numeric features); `reads`: what
    the layer after it reads, where it says."""
    p, kind = layer.params, layer.kind
    need = {"combine": p.get("inputs"), "dot_interaction": 1, "fm_interaction": p.get("fields")}[kind]
    take = min(need, len(stack))
    popped = stack[len(stack) - take:]
    del stack[len(stack) - take:]
    widths = [w for w, _ in popped]
    dense = 0
    if kind == "combine" and p["op"] == "concat":
        # what reads the concat may be wider than the vectors before it: the rest is
        # numeric features (W&D's 13 beside its 16 lookups, Merlin's beside 58)
        dense = 0 if reads is None else reads - sum(widths)
        if dense < 0 or (take < need and dense < need - take):
            refuse(layer, f"joins {take} vectors of {sum(widths)} features"
                          + (f" where it names {need}" if take < need else "")
                          + f", but the layer after it reads {reads}")
    elif take < need:
        refuse(layer, f"reads {need} vectors, but only {take} are before it")
    elif kind == "combine" and any(w != p["dim"] for w in widths):
        refuse(layer, f"reads vectors {p['dim']} wide, but is given widths {sorted(set(widths))}")
    elif kind == "dot_interaction" and widths[0] != p["vectors"] * p["dim"]:
        refuse(layer, f"reads {p['vectors']} x {p['dim']} features, but {popped[0][1]!r} "
                      f"writes {widths[0]}")
    elif kind == "fm_interaction" and any(w != p["dim"] for w in widths):
        refuse(layer, f"reads {p['fields']} fields {p['dim']} wide, but is given widths "
                      f"{sorted(set(widths))}")
    stack.append((_out_width(layer, widths, dense), layer.name))
    return PlanStep(layer, pops=take, dense=dense)


class Lookups(nn.Module):
    """One module per table, each replaceable (column shards); forward gives every
    embedding layer's looked-up rows, pooled for a bag."""

    def __init__(self, model: ModelShape, sparse: bool = False):
        super().__init__()
        # a list, not a ModuleDict: a file's names ('items', 'user.id') are not attributes
        self.names = [name for name in model.tables
                      if any(l.kind == "embedding" and l.params["table"] == name for l in model.layers)]
        self.index = {name: i for i, name in enumerate(self.names)}
        self.tables = nn.ModuleList(nn.Embedding(model.tables[n].vocab, model.tables[n].dim,
                                                 sparse=sparse) for n in self.names)
        self.reads = [(l.name, l.params["table"], l.params.get("pooling"))
                      for l in model.layers if l.kind == "embedding"]

    def forward(self, ids: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        out = {}
        for layer, table, pooling in self.reads:
            module = self.tables[self.index[table]]
            if pooling and isinstance(module, nn.Embedding):
                out[layer] = F.embedding_bag(ids[layer], module.weight, mode=pooling,
                                             sparse=module.sparse)
            elif pooling:
                rows = module(ids[layer])
                out[layer] = rows.sum(1) if pooling == "sum" else rows.mean(1)
            else:
                out[layer] = module(ids[layer])
        return out


class StackBody(nn.Module):
    """Every non-embedding layer, run as `stack_plan` reads the file."""

    def __init__(self, model: ModelShape, plan: tuple[PlanStep, ...]):
        super().__init__()
        self.plan = plan
        # one module per plan step, by position: the file's names are neither attributes
        # nor unique once made into them (a repeated `mlp`'s `mlp.1` against an `mlp_1`)
        self.layers = nn.ModuleList(build_layer(s.layer, model) if s.layer.kind != "embedding"
                                    else nn.Identity() for s in plan)

    def forward(self, looked_up: dict[str, torch.Tensor], dense: list[torch.Tensor], labels):
        stack: list[torch.Tensor] = []
        numeric = iter(dense)
        for step, module in zip(self.plan, self.layers):
            layer = step.layer
            if layer.kind == "embedding":
                rows = looked_up[layer.name]
                stack.extend([rows] if rows.dim() == 2 else rows.unbind(1))
                continue
            args = stack[len(stack) - step.pops:] if step.pops else []
            del stack[len(stack) - step.pops:]
            if step.dense:
                args.append(next(numeric))
            if layer.kind == "softmax_loss":
                return module(args[0], labels)
            if layer.kind == "fm_interaction":
                stack.append(module(torch.stack(args, dim=1)))
            else:
                stack.append(module(*args))
        raise AssertionError("stack_plan ends every plan with the loss")


class Recommender(nn.Module):
    """Lookups (replaceable per table: dense, sparse or sharded) -> the stack body -> loss."""

    def __init__(self, model: ModelShape, sparse: bool = False):
        super().__init__()
        plan = stack_plan(model)
        self.embedding = Lookups(model, sparse)
        self.body = StackBody(model, plan)
        self.skipped: list[str] = []

    def table_modules(self) -> dict[str, nn.Module]:
        return dict(zip(self.embedding.names, self.embedding.tables))

    def replace_table(self, name: str, module: nn.Module) -> None:
        self.embedding.tables[self.embedding.index[name]] = module

    def forward(self, ids, dense, labels):
        return self.body(self.embedding(ids), dense, labels)


class RecommenderBatches:
    """One rank's step inputs: Zipf row ids per embedding layer, Gaussian numeric features
    for each reader of them, labels (0/1 for one logit, else class indices); the same
    (seed, rank, step) gives the same batch."""

    def __init__(self, model: ModelShape, seed: int = 0):
        self.model, self.seed = model, seed
        self.plan = stack_plan(model)

    def ids(self, rank: int, step: int, batch: int) -> dict[str, torch.Tensor]:
        return {l.name: torch.from_numpy(zipf_ids(
                    self.model.tables[l.params["table"]].vocab, (batch, lookups_of(l, 1)),
                    (self.seed, rank, step, name_seed(l.name))))
                for l in self.model.layers if l.kind == "embedding"}

    def inputs(self, rank: int, step: int, batch: int) -> tuple:
        rng = np.random.default_rng([self.seed, rank, step])
        dense = [torch.from_numpy(rng.standard_normal((batch, s.dense)).astype(np.float32))
                 for s in self.plan if s.dense]
        classes = self.plan[-1].layer.params["classes"]
        # one logit: a 0/1 click label (BCE); more: a class index (cross-entropy)
        labels = (torch.from_numpy((rng.random(batch) < 0.5).astype(np.float32)) if classes == 1
                  else torch.from_numpy(rng.integers(0, classes, batch)))
        return self.ids(rank, step, batch), dense, labels


def table_token_stats(batches: RecommenderBatches, batch: int, ranks: int,
                      step: int = 0) -> list[TokenStatsRecord]:
    """Per table: distinct rows each rank's batch reads (every layer on that table), and
    their union over the ranks; `seq` is the table's lookups per sample."""
    model = batches.model
    per_rank = [batches.ids(r, step, batch) for r in range(ranks)]
    out = []
    for name, table in model.tables.items():
        layers = [l for l in model.layers if l.kind == "embedding" and l.params["table"] == name]
        if not layers:
            continue
        rows = [np.unique(np.concatenate([ids[l.name].numpy().ravel() for l in layers]))
                for ids in per_rank]
        out.append(TokenStatsRecord(
            table=name, vocab=table.vocab, batch=batch, seq=sum(lookups_of(l, 1) for l in layers),
            ranks=ranks, source=f"zipf(s={DEFAULT_ZIPF_S}, seed={batches.seed}) per table",
            unique_per_rank=tuple(int(r.size) for r in rows),
            union=int(np.unique(np.concatenate(rows)).size)))
    return out
