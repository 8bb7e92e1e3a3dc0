"""distopt: Megatron-Core's distributed optimizer (`--use-distributed-optimizer`, NeMo's
`distributed_fused_adam`), the ZeRO-1 scheme Megatron-LM and NeMo train LLMs with.

What each data-parallel GPU holds and does (megatron/core/distributed/
distributed_data_parallel.py and param_and_grad_buffer.py; megatron/core/optimizer/
distrib_optimizer.py):
- the whole model in its parameter dtype and a whole gradient buffer, but only 1/N of the
  FP32 main parameters and of the optimizer state: the optimizer steps 1/N of every
  parameter, then the updated shards are all-gathered back into every GPU's parameters;
- gradients go in buckets: parameters are put into buckets in backward order, a bucket
  closing once it holds `bucket_size` elements (default max(40M, 1M x the DP size): "make
  buckets larger to ensure that chunks used in NCCL ring-reduce implementations are large
  enough"). With overlap_grad_reduce (NeMo's setting) each bucket is reduce-scattered as
  soon as its last gradient of the step's last micro-batch is computed, beside the rest of
  the backward; without it one reduce-scatter of everything follows the backward;
- with overlap_param_gather (NeMo's setting) the parameter all-gathers run in the next
  forward: the first bucket's is issued (and waited for) by the forward pre-hook of the
  first module that uses it, and each bucket's completion issues the next bucket's
  (finish_param_sync: "Dispatches next bucket's param sync"), so bucket b+1 is gathered
  while bucket b's layers compute. Without it every bucket is gathered right after the
  optimizer step and the forward waits.
embsim's buckets close at layer boundaries (a layer is one gradient tensor here), so a
bucket closes at the end of the layer that crosses bucket_size where Megatron closes at that
parameter. Not modelled: the buffer's padding of each bucket to a multiple of the DP size
(under 0.01 % of its bytes), reduce_scatter_with_fp32_accumulation.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InputError
from ..options import switch
from ..plan.names import bwd_name, fwd_name, update_name
from ..plan.ops import SyncTensor
from ..words import counted
from ..workload.memory import memory_per_gpu
from .base import STRATEGIES, Strategy, StrategyPlan
from .common import sharded_update_time

# Megatron-Core's default bucket: max(40M, 1M x DP) elements (DistributedDataParallel.__init__)
BUCKET_FLOOR_ELEMENTS = 40_000_000
BUCKET_ELEMENTS_PER_RANK = 1_000_000


@dataclass(frozen=True)
class DistOptOptions:
    overlap_grad_reduce: bool = True         # DistributedDataParallelConfig; NeMo sets both
    overlap_param_gather: bool = True
    bucket_elements: int = 0                 # 0: Megatron's default, max(40M, 1M x DP)

    def __post_init__(self):
        for key in ("overlap_grad_reduce", "overlap_param_gather"):
            # as typed on the command line (true/false, on/off, 1/0) or as YAML gives it
            object.__setattr__(self, key, switch(getattr(self, key), key))
        b = self.bucket_elements
        if isinstance(b, bool) or not isinstance(b, int) or b < 0:
            raise InputError(f"--option bucket_elements={b!r}: must be a whole number of "
                             f"elements >= 0 (0: Megatron's default)")


def buckets(model, dp: int, size: int | None) -> list[list]:
    """Gradient buckets in backward order (each a list of layers in forward order);
    `size` None: one bucket (overlap_grad_reduce off)."""
    out, current, count = [], [], 0
    for layer in reversed([l for l in model.layers if l.params > 0]):
        current.insert(0, layer)
        count += layer.params
        if size is not None and count >= size:
            out.append(current)
            current, count = [], 0
    if current:
        out.append(current)
    return out


@STRATEGIES.register("distopt")
class DistributedOptimizerStrategy(Strategy):
    description = ("Megatron distributed optimizer (ZeRO-1): bucketed gradient reduce-scatters, "
                   "1/N optimizer step, parameter all-gathers in the next forward")
    dense_table_gradient = True
    gathers_updated_parameters = True
    gathers_every_micro_batch = False
    Options = DistOptOptions

    def plan(self, ctx):
        model, n, o = ctx.model, ctx.n_gpus, self.options
        size = (o.bucket_elements or max(BUCKET_FLOOR_ELEMENTS, BUCKET_ELEMENTS_PER_RANK * n)
                if o.overlap_grad_reduce else None)
        bs = buckets(model, n, size)
        step_end = update_name(next(l.name for l in reversed(model.layers) if l.params > 0))
        grads: list[SyncTensor] = []
        for i, b in enumerate(bs):
            # whole once backward has passed its first layer (the last to get a gradient)
            grads.append(SyncTensor(f"distopt-rs:{i}", b[-1].name, "reduce_scatter",
                                    float(sum(l.params * model.grad_elem_bytes(l) for l in b)),
                                    "dense", ready_after=bwd_name(b[0].name)))
        gathers: list[SyncTensor] = []
        forward = list(reversed(bs))           # buckets in forward order
        layers = [l.name for l in model.layers]
        for j, b in enumerate(forward):
            after = step_end
            if o.overlap_param_gather and j >= 2:
                # issued when the forward reaches bucket j-1 (its wait done): after the layer
                # before that bucket's first
                prev_first = forward[j - 1][0].name
                after = fwd_name(layers[layers.index(prev_first) - 1])
            needed = fwd_name(b[0].name) if o.overlap_param_gather else fwd_name(model.layers[0].name)
            gathers.append(SyncTensor(f"distopt-ag:{j}", b[0].name, "all_gather",
                                      float(sum(l.params * model.param_bytes(l) for l in b)),
                                      "dense", ready_after=after, needed_by=needed))
        update = sharded_update_time(ctx, n)
        memory = memory_per_gpu(model, optimizer_shards=n)
        how = (f"{counted(len(bs), 'bucket')} of >= {size:,} elements" if size is not None
               else "one bucket (overlap_grad_reduce off)")
        notes = (f"distopt: {how}; parameter all-gathers "
                 f"{'in the next forward, one bucket ahead' if o.overlap_param_gather else 'after the optimizer step'}",)
        return StrategyPlan(sync=tuple(grads + gathers), update_time=update, memory=memory, notes=notes)
