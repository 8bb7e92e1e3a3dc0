"""The model calibrate's whole training steps run, and the batches they read: a language
model (modules.LanguageModel) for token sequences, a recommender (recommender.Recommender)
for per-sample feature rows. Both have `.embedding` (the tables, replaceable per table),
`.body` (everything else) and forward(first input, *rest) -> loss."""

from __future__ import annotations

import numpy as np
import torch

from .modules import LanguageModel
from .recommender import Recommender, RecommenderBatches, per_sample
from .spec import ModelShape

StepModel = LanguageModel | Recommender


def step_model(spec: ModelShape, sparse: bool = False) -> StepModel:
    return Recommender(spec, sparse) if per_sample(spec) else LanguageModel(spec, sparse)


def seeded_step_model(spec: ModelShape, seed: int, sparse: bool = False) -> StepModel:
    """Same seed -> same initial parameters on every rank and in the single-process reference."""
    torch.manual_seed(seed)
    return step_model(spec, sparse)


class TokenBatches:
    """A language model's step inputs: (tokens, next-token targets) from the token source."""

    def __init__(self, source):
        self.source = source

    def inputs(self, rank: int, step: int, batch: int) -> tuple:
        ids = torch.from_numpy(self.source.batch(rank, step, batch).copy())
        return ids[:, :-1], ids[:, 1:]


def step_batches(spec: ModelShape, source, seed: int = 0):
    """What the steps read: TokenBatches from `source`, or a recommender's own batches."""
    return RecommenderBatches(spec, seed) if per_sample(spec) else TokenBatches(source)


def to_device(inputs, device: torch.device):
    """A step's inputs (tensors, lists and dicts of them) on `device`."""
    if isinstance(inputs, torch.Tensor):
        return inputs.to(device)
    if isinstance(inputs, dict):
        return {k: to_device(v, device) for k, v in inputs.items()}
    return type(inputs)(to_device(v, device) for v in inputs)


def lookup_total(looked_up) -> torch.Tensor:
    """The sum of every looked-up row (a scalar whose gradient touches exactly those rows)."""
    if isinstance(looked_up, dict):
        return sum(v.sum() for v in looked_up.values())
    return looked_up.sum()


def touched_elements(model: StepModel, first_input) -> int:
    """Table elements a batch's lookups touch: its distinct rows per table x the table's dim."""
    ids = first_input if isinstance(first_input, dict) else {None: first_input}
    tables = model.table_modules()
    if isinstance(model, Recommender):
        by_table: dict[str, list] = {}
        for layer, table, _ in model.embedding.reads:
            by_table.setdefault(table, []).append(ids[layer].reshape(-1))
    else:
        by_table = {next(iter(tables)): [ids[None].reshape(-1)]}
    return sum(int(np.unique(torch.cat(v).cpu().numpy()).size) * tables[t].weight.shape[1]
               for t, v in by_table.items())


def concat_batches(per_rank: list[tuple]) -> tuple:
    """Every rank's step inputs joined along the batch (the single-process reference)."""
    first = per_rank[0]
    out = []
    for i, part in enumerate(first):
        if isinstance(part, dict):
            out.append({k: torch.cat([r[i][k] for r in per_rank]) for k in part})
        elif isinstance(part, list):
            out.append([torch.cat([r[i][j] for r in per_rank]) for j in range(len(part))])
        else:
            out.append(torch.cat([r[i] for r in per_rank]))
    return tuple(out)

