"""allreduce: PyTorch DDP. Every gradient, the embedding tables' included, is dense and
AllReduced; every GPU holds the whole model and its optimizer state."""

from __future__ import annotations

from .base import STRATEGIES, Strategy, StrategyPlan
from ..workload.memory import memory_per_gpu
from .common import dense_sync


@STRATEGIES.register("allreduce")
class AllReduceStrategy(Strategy):
    description = "dense AllReduce of every gradient (PyTorch DDP)"
    dense_table_gradient = True

    def plan(self, ctx):
        sync = dense_sync(ctx)
        update = {l.name: ctx.layer_update[l.name] for l in ctx.model.layers if l.params > 0}
        return StrategyPlan(sync=tuple(sync), update_time=update,
                            memory=memory_per_gpu(ctx.model))
