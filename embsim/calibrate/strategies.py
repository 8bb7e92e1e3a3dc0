"""The three embedding-synchronisation strategies, implemented for real in PyTorch, on a
language model's table or on every table of a recommender (step_model.py).

- allreduce: DDP over the whole model; the embedding gradient is dense and AllReduced.
- allgather: sparse embedding gradient; every rank all-gathers the (index, row) pairs of
  every other rank and applies their mean; dense layers DDP.
- embrace:  each table is sharded by columns (each rank holds all rows, D/N columns);
  forward all-gathers the row ids, looks up its columns for every rank's ids and
  AlltoAlls them back; backward AlltoAlls the gradients the other way; the shard's
  gradient is sparse (the rows touched), so its update is too; dense layers DDP.

All give the same parameters after a step as one process on the concatenated batch
(tests/calibrate/test_strategies.py checks it).
"""

from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

from .spec import ModelShape
from .step_model import StepModel, seeded_step_model

STRATEGIES = ("allreduce", "allgather", "embrace")


def column_split(dim: int, world: int) -> list[int]:
    """Columns of the table each rank owns (uneven when world does not divide dim)."""
    return [dim // world + (1 if r < dim % world else 0) for r in range(world)]


class _AllToAllColumns(torch.autograd.Function):
    """Forward: send rank j my columns of its tokens, get every rank's columns of mine.
    Backward: the same exchange in reverse, carrying the gradients."""

    @staticmethod
    def forward(ctx, looked_up, tokens_per_rank, cols, rank):
        # looked_up: (world, tokens, cols[rank]) -- my columns for every rank's tokens
        world = len(cols)
        send = looked_up.reshape(-1).contiguous()
        recv = looked_up.new_empty(tokens_per_rank * sum(cols))
        out_splits = [tokens_per_rank * c for c in cols]
        in_splits = [tokens_per_rank * cols[rank]] * world
        dist.all_to_all_single(recv, send, out_splits, in_splits)
        ctx.meta = (tokens_per_rank, cols, rank, in_splits, out_splits)
        parts = recv.split(out_splits)
        return torch.cat([p.view(tokens_per_rank, c) for p, c in zip(parts, cols)], dim=1)

    @staticmethod
    def backward(ctx, grad):
        tokens_per_rank, cols, rank, in_splits, out_splits = ctx.meta
        send = torch.cat([g.reshape(-1) for g in grad.split(cols, dim=1)]).contiguous()
        recv = grad.new_empty(sum(in_splits))
        dist.all_to_all_single(recv, send, in_splits, out_splits)
        return recv.view(len(cols), tokens_per_rank, cols[rank]), None, None, None


class ColumnShardedEmbedding(nn.Module):
    def __init__(self, full_weight: torch.Tensor, rank: int, world: int):
        super().__init__()
        self.cols = column_split(full_weight.shape[1], world)
        start = sum(self.cols[:rank])
        self.rank, self.world = rank, world
        self.weight = nn.Parameter(full_weight[:, start:start + self.cols[rank]].clone())

    def forward(self, tokens):
        batch, seq = tokens.shape
        flat = tokens.reshape(-1).contiguous()
        parts = [torch.empty_like(flat) for _ in range(self.world)]
        dist.all_gather(parts, flat)
        everyone = torch.stack(parts)
        # sparse: the shard updates only the rows the step touched, as EmbRace does
        mine = F.embedding(everyone, self.weight, sparse=True)   # (world, B*S, my columns)
        full = _AllToAllColumns.apply(mine, batch * seq, self.cols, self.rank)
        return full.view(batch, seq, -1)


def _padded(t: torch.Tensor, rows: int) -> torch.Tensor:
    out = t.new_zeros((rows, *t.shape[1:]))
    out[:t.shape[0]] = t
    return out


def _allgather_sparse_mean(weights: list[nn.Parameter], world: int) -> None:
    """Replace every table's local sparse gradient by the mean of every rank's (index, row)
    pairs, in three all_gathers for all the tables together, as Horovod fuses a step's
    allgathers by dtype (embsim.strategies.allgather models these calls): each rank's row
    count per table (they differ, and all_gather needs equal sizes), then the indices and
    the rows, each table padded to its largest count."""
    grads = [w.grad.coalesce() for w in weights]
    idx, rows = [g.indices()[0] for g in grads], [g.values() for g in grads]
    count = torch.tensor([i.numel() for i in idx], device=idx[0].device)
    counts = [torch.zeros_like(count) for _ in range(world)]
    dist.all_gather(counts, count)
    most = [int(m) for m in torch.stack(counts).max(0).values]
    send_idx = torch.cat([_padded(i, m) for i, m in zip(idx, most)])
    send_rows = torch.cat([_padded(r, m).reshape(-1) for r, m in zip(rows, most)])
    all_idx = [torch.empty_like(send_idx) for _ in range(world)]
    all_rows = [torch.empty_like(send_rows) for _ in range(world)]
    dist.all_gather(all_idx, send_idx)
    dist.all_gather(all_rows, send_rows)
    at_idx = at_row = 0
    for t, (weight, m) in enumerate(zip(weights, most)):
        dim = weight.shape[1]
        keep = [int(c[t]) for c in counts]
        cat_idx = torch.cat([i[at_idx:at_idx + k] for i, k in zip(all_idx, keep)])
        cat_rows = torch.cat([r[at_row:at_row + m * dim].view(m, dim)[:k]
                              for r, k in zip(all_rows, keep)]) / world
        weight.grad = torch.sparse_coo_tensor(cat_idx.unsqueeze(0), cat_rows, weight.shape,
                                              check_invariants=False).coalesce()
        at_idx, at_row = at_idx + m, at_row + m * dim


class Strategy:
    """One training step of a step model (step_model.py) under one synchronisation strategy."""

    def __init__(self, name: str, spec: ModelShape, seed: int, device: torch.device, lr: float = 0.1):
        if name not in STRATEGIES:
            raise ValueError(f"unknown strategy {name!r}")
        self.name, self.lr = name, lr
        self.rank, self.world = dist.get_rank(), dist.get_world_size()
        ids = [device.index] if device.type == "cuda" else None
        base = seeded_step_model(spec, seed, sparse=(name == "allgather")).to(device)
        if name == "embrace":
            for table, module in base.table_modules().items():
                base.replace_table(table, ColumnShardedEmbedding(module.weight.detach(), self.rank,
                                                                 self.world).to(device))
        self.model: StepModel = base
        if name == "allreduce":
            self.forward = DDP(base, device_ids=ids)
        else:
            # a model of lookups alone (a factorization machine) has no dense layer to DDP
            dense = any(p.requires_grad for p in base.body.parameters())
            self.ddp_body = DDP(base.body, device_ids=ids) if dense else base.body
            self.forward = lambda first, *rest: self.ddp_body(base.embedding(first), *rest)
        self.optimizer = torch.optim.SGD(base.parameters(), lr=lr)

    def step(self, *inputs) -> float:
        self.optimizer.zero_grad(set_to_none=True)
        loss = self.forward(*inputs)
        loss.backward()
        tables = list(self.model.table_modules().values())
        if self.name == "allgather":
            _allgather_sparse_mean([t.weight for t in tables], self.world)
        elif self.name == "embrace":
            # A shard's gradient sums every rank's per-rank-mean loss; the global loss is
            # their mean, as DDP's averaging does for the dense layers.
            for table in tables:
                table.weight.grad.div_(self.world)
        self.optimizer.step()
        return float(loss.detach())

    def full_parameters(self) -> dict[str, torch.Tensor]:
        """Every parameter in full (shards gathered), on CPU, named as in the step model."""
        out = {n: p.detach().cpu().clone() for n, p in self.model.named_parameters()}
        if self.name == "embrace":
            names = {id(p): n for n, p in self.model.named_parameters()}
            for table in self.model.table_modules().values():
                name = names[id(table.weight)]
                shards = [None] * self.world
                dist.all_gather_object(shards, out[name])
                out[name] = torch.cat(shards, dim=1)
        return out


def reference_step(spec: ModelShape, seed: int, *inputs, lr: float = 0.1) -> dict[str, torch.Tensor]:
    """Single-process SGD step on the concatenated batch: what every strategy must match."""
    model = seeded_step_model(spec, seed)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    model(*inputs).backward()
    opt.step()
    return {n: p.detach().clone() for n, p in model.named_parameters()}
