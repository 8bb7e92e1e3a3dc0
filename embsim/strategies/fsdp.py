"""fsdp: PyTorch FullyShardedDataParallel as Composer wraps a transformer (MosaicML
llm-foundry's MPT: llmfoundry/models/mpt/modeling_mpt.py fsdp_wrap_fn wraps every MPTBlock;
composer/trainer/dist_strategy.py prepare_fsdp_module). Every repeated block (a zoo layer
with `repeat`, named `<layer>.<i>`) is one FSDP unit; every other layer belongs to the root
unit (embeddings, final norm, tied head). Each GPU holds 1/N of every parameter, gradient
and optimizer state.

Per unit, in every micro-batch (Composer syncs an FSDP model on every micro-batch: its
trainer's no_sync context applies to DDP only, so run it with accumulate_sync every; under
accumulate_sync last, torch's no_sync, the earlier micro-batches skip the reduce-scatters
but still gather, engine.run simulating them apart), as
torch 2.1's FSDP (torch/distributed/fsdp/_runtime_utils.py) with limit_all_gathers (the
llm-foundry yamls' setting) issues them:
- an all-gather of the unit's parameters in MixedPrecision's param_dtype (the model's
  parameter bytes: 16-bit under Composer's DEFAULT and PURE) before its forward. The rate
  limiter lets at most two gathered units wait to be freed, and FULL_SHARD frees a block
  after its forward, so block i's gather waits for block i-2's forward; the root's and the
  first two blocks' go after the previous optimizer step (the root waits for the
  computation stream). SHARD_GRAD_OP frees nothing after the forward: every gather goes at
  once.
- FULL_SHARD only: the block is gathered again before its backward (not the root: FSDP
  keeps the root unsharded from forward to backward). The first two blocks of the backward
  are gathered as it begins; after that, with either backward_prefetch, block i's gather is
  issued once block i+2's backward has finished (the rate limiter waits for block i+2's
  free event), behind block i+2's reduce-scatter.
- a reduce-scatter of the unit's gradient in reduce_dtype after its backward (the model's
  gradient bytes: FP32 under Composer's DEFAULT, 16-bit under PURE).
- the optimizer steps the unit's 1/N shard after every reduce-scatter has finished.
A model without blocks (NCF, DLRM: no layer the auto-wrap policy matches) is one unit, the
root, which FSDP always wraps around the parameters no nested unit took: gathered once
before the forward and, being the root, not resharded after it (torch/distributed/fsdp/
_runtime_utils.py _post_forward_reshard: `not state._is_root`), so kept through the backward,
then reduce-scattered once. Embedding tables are synchronised dense under FSDP, whatever the
strategies that keep a gradient's touched rows do: a FlatParameter takes no sparse
gradient (nn.Embedding(sparse=True) under torch 2.13 FSDP fails in the backward: "reshape is
not implemented for sparse tensors"; fully_shard: fsdp::chunk_cat has no sparse kernel), so
the tables are nn.Embedding(sparse=False) and every row's gradient is reduce-scattered each
step; the output says so.
PyTorch's ProcessGroupNCCL runs every collective of the process group on one internal
stream: gathers and reduce-scatters go one at a time, in issue order (scheduler fifo).
torchtitan's Float8 (--dtype fp8) with float8.enable_fsdp_float8_all_gather: option
float8_all_gather=on gathers the blocks' weights as FP8, 1 byte per parameter, forward and
backward (workload.fp8_comm gives the sources; off by default, as in torchtitan). The root's
(embeddings, output layer, final norm: no Float8Linear) stay 16-bit; a block's norm weights
(2 x dim, against ~10^8 linear weights in a Llama block) are counted with its linears'.
Not modelled: the post-backward stream's casts of the unsharded gradient to reduce_dtype
and its divides by the world size (memory passes of ~14 bytes a parameter beside the
backward, ~1 % of these steps).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import InputError
from ..plan.names import bwd_name, fwd_name, update_name
from ..plan.ops import SyncTensor
from ..options import switch
from ..workload.fp8_comm import FP8_BYTES
from ..workload.memory import memory_per_gpu
from ..workload.recompute import BLOCK_KINDS
from .base import STRATEGIES, Strategy, StrategyPlan
from .common import sharded_update_time

SHARDING = ("FULL_SHARD", "SHARD_GRAD_OP")
ROOT = "root"
_BLOCK = re.compile(r".+\.\d+")


@dataclass(frozen=True)
class FsdpOptions:
    sharding: str = "FULL_SHARD"              # FSDP sharding_strategy
    float8_all_gather: bool = False           # torchtitan's enable_fsdp_float8_all_gather

    def __post_init__(self):
        if self.sharding not in SHARDING:
            raise InputError(f"--option sharding={self.sharding!r}: must be one of {', '.join(SHARDING)}")
        object.__setattr__(self, "float8_all_gather", switch(self.float8_all_gather, "float8_all_gather"))


def units(model) -> list[tuple[str, list]]:
    """FSDP units in forward order: (name, layers with parameters). The root first (its
    forward starts the model), then every repeated block."""
    root, blocks = [], []
    for layer in model.layers:
        if layer.params <= 0:
            continue
        # a repeated block ("decoder.3"), or a transformer block a zoo file lists once: the
        # auto-wrap policy wraps a block class however many the model has
        if _BLOCK.fullmatch(layer.name) or layer.kind in BLOCK_KINDS:
            blocks.append((layer.name, [layer]))
        else:
            root.append(layer)
    return ([(ROOT, root)] if root else []) + blocks


@STRATEGIES.register("fsdp")
class FsdpStrategy(Strategy):
    description = "PyTorch FSDP: per-block all-gathers and reduce-scatters, 1/N optimizer (Composer)"
    dense_table_gradient = True
    gathers_updated_parameters = True
    Options = FsdpOptions

    def plan(self, ctx):
        model, n, o = ctx.model, ctx.n_gpus, self.options
        us = units(model)
        layers = [l.name for l in model.layers]
        step_end = update_name(next(l.name for l in reversed(model.layers) if l.params > 0))
        first = {name: ls[0].name for name, ls in us}
        last = {name: ls[-1].name for name, ls in us}
        param_b = {name: float(sum(l.params * model.param_bytes(l) for l in ls)) for name, ls in us}
        if o.float8_all_gather:
            if model.dtype != "fp8":
                raise InputError(f"--option float8_all_gather=on: needs --dtype fp8, not {model.dtype}")
            param_b.update({name: float(sum(l.params for l in ls)) * FP8_BYTES
                            for name, ls in us if name != ROOT})
        grad_b = {name: float(sum(l.params * model.grad_elem_bytes(l) for l in ls)) for name, ls in us}
        blocks = [name for name, _ in us if name != ROOT]
        full = o.sharding == "FULL_SHARD"

        # forward gathers, in issue order
        fwd: list[SyncTensor] = []
        for name, _ in us:
            i = blocks.index(name) if name != ROOT else -1
            after = step_end
            if full and i >= 2:
                after = fwd_name(last[blocks[i - 2]])      # the rate limiter: i-2 freed
            fwd.append(SyncTensor(f"fsdp-ag-fwd:{name}", first[name], "all_gather", param_b[name],
                                  "dense", ready_after=after, needed_by=fwd_name(first[name])))
        # backward: reduce-scatters, and FULL_SHARD's gathers queued behind the one they follow
        bwd: list[SyncTensor] = []
        order = list(reversed(blocks)) + ([ROOT] if ROOT in first else [])
        lag = 2       # block i's backward gather goes behind block i+2's reduce-scatter
        for j, name in enumerate(order):
            bwd.append(SyncTensor(f"fsdp-rs:{name}", last[name], "reduce_scatter", grad_b[name],
                                  "dense", ready_after=bwd_name(first[name])))
            if full:
                # the block `lag` places earlier in forward order is gathered behind this one
                k = j + lag
                if k < len(order) and order[k] != ROOT:
                    t = order[k]
                    bwd.append(SyncTensor(f"fsdp-ag-bwd:{t}", first[t], "all_gather", param_b[t],
                                          "dense", ready_after=bwd_name(first[name]),
                                          needed_by=bwd_name(last[t])))
        if full:
            # the first two blocks of the backward: gathered as it begins
            covered = {t.layer for t in bwd if t.name.startswith("fsdp-ag-bwd:")}
            start = [name for name in order[:lag] if name != ROOT and first[name] not in covered]
            bwd[:0] = [SyncTensor(f"fsdp-ag-bwd:{name}", first[name], "all_gather", param_b[name],
                                  "dense", ready_after=bwd_name(layers[-1]),
                                  needed_by=bwd_name(last[name])) for name in start]
        update = sharded_update_time(ctx, n)
        # gathered parameters held at once: two blocks under the rate limiter (FULL_SHARD),
        # every block through the backward under SHARD_GRAD_OP; the root's throughout
        gathered = param_b.get(ROOT, 0.0) + (2 * max((param_b[b] for b in blocks), default=0.0) if full
                                             else sum(param_b[b] for b in blocks))
        # unsharded gradients alive until their reduce-scatter: the root's through the whole
        # backward (its reduce-scatter is the last), and one block's -- the one being made;
        # the block before's reduce-scatter is freed as it ends, well inside this block's
        # backward (its GEMMs take longer than one block's reduce-scatter); counting both
        # marked MPT-30B on 8 x 80 GB, which llm-foundry publishes, as not fitting
        unsharded = grad_b.get(ROOT, 0.0) + max((grad_b[b] for b in blocks), default=0.0)
        memory = memory_per_gpu(model, embedding_shards=n, dense_shards=n,
                                buffers={"fsdp gathered parameters": gathered,
                                         "fsdp unsharded gradients": unsharded})
        plural = "s" if len(blocks) != 1 else ""
        if blocks:
            notes = [f"fsdp: {o.sharding}, {len(blocks)} block{plural} + root unit, limit_all_gathers"]
            if o.float8_all_gather:
                notes.append("fsdp: float8 all-gather: block weights gathered in FP8, 1 byte per "
                             "parameter (torchtitan enable_fsdp_float8_all_gather); root unit 16-bit")
        else:
            notes = [f"fsdp: {o.sharding}, no blocks for the auto-wrap policy: the whole model is one root "
                     "unit, gathered before the forward and kept through the backward (FSDP does not "
                     "reshard its root), one reduce-scatter after it"]
        # tables whose gradient touches some rows only (a full softmax tied to one is dense already)
        sparse = [t.name for t in model.tables if not model.dense_gradient(t.name)]
        if sparse:
            rows = sum(model.table(t).vocab for t in sparse)
            named = ', '.join(sparse) if len(sparse) <= 4 else f"{sparse[0]} ... {sparse[-1]}"
            count = f"{len(sparse)} tables, " if len(sparse) > 4 else ""
            notes.append(f"fsdp: embedding table{'s' if len(sparse) != 1 else ''} {named} "
                         f"({count}{rows:,} rows) reduce-scattered dense, every row each step: torch FSDP takes "
                         "no sparse gradients (nn.Embedding(sparse=True) fails in its backward)")
        notes = tuple(notes)
        return StrategyPlan(sync=tuple(fwd + bwd), update_time=update, memory=memory, notes=notes)
