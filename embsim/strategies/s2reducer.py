"""s2reducer: S2 Reducer (arXiv 2110.02140). Each GPU compresses its sparse embedding
gradient into a count sketch (depth x width buckets of D-vectors) plus a bitmap of the
rows it touched; both have a fixed size, so they are AllReduced (a sketch is linear: the
sum of sketches is the sketch of the sum). Every GPU then decodes the union's rows
(bitmap) from the summed sketch: the median of the depth bucket estimates.

Defaults and why:
- depth 3: the smallest depth whose median rejects one colliding row out of three.
- width = 2 x the expected union rows: a load of 1/2 per sketch row, so a row's bucket
  is collision-free with probability e^-0.5 ~ 0.61 in each row and its median is exact
  (at least 2 of 3 clean) for ~2/3 of rows; a smaller sketch moves less and decodes worse.
  The fraction is computed and reported, since the method is lossy.
The bitmap is V/8 bytes (one bit per row), as in the paper's description; NCCL has no
bitwise-OR reduction, so a real implementation pays this on a byte-wise max or similar.
When sketch + bitmap would exceed the dense gradient (the union has densified), the
dense gradient is AllReduced instead, and the notes say so.
Encode is counted before the embedding's backward (the sketch is linear, so the
per-lookup gradients can be hashed straight in); decode with the update.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..plan.names import bwd_name, extra_name
from ..plan.ops import ComputeOp, SyncTensor
from ..errors import InputError
from ..workload.roofline import roofline_time
from ..workload.memory import memory_per_gpu
from ..plan.traits import Payload
from .base import STRATEGIES, Strategy, StrategyPlan
from .common import dense_table_notes, replicated_sync, replicated_update_time, sparse_tables

SKETCH_BYTES = 4  # fp32 buckets: sums of gradients keep full precision


def exact_fraction(width_factor: float, depth: int) -> float:
    """Probability a row's median estimate is collision-free: more than half of its
    `depth` buckets hold no other row (Poisson load 1/width_factor per bucket)."""
    clean = math.exp(-1.0 / width_factor)
    need = depth // 2 + 1
    return sum(math.comb(depth, k) * clean ** k * (1 - clean) ** (depth - k) for k in range(need, depth + 1))


@dataclass(frozen=True)
class S2ReducerOptions:
    depth: int = 3               # sketch rows (hash functions)
    width_factor: float = 2.0    # sketch width over the expected union rows

    def __post_init__(self):
        # the sketch's row count sums over binomial terms; 64 rows is far beyond any use
        if isinstance(self.depth, bool) or not isinstance(self.depth, int) or not 1 <= self.depth <= 64:
            raise InputError(f"--option depth={self.depth!r}: must be an integer 1..64")
        if isinstance(self.width_factor, bool) or not isinstance(self.width_factor, (int, float)) \
                or not 0 < self.width_factor <= 1000:
            raise InputError(f"--option width_factor={self.width_factor!r}: must be in (0, 1000]")
        object.__setattr__(self, "width_factor", float(self.width_factor))


@STRATEGIES.register("s2reducer")
class S2ReducerStrategy(Strategy):
    description = "count sketch + bitmap of sparse gradients, AllReduced at fixed size (S2 Reducer)"
    embedding_payload = Payload.NONE   # a sketch has no rows to defer

    Options = S2ReducerOptions

    def plan(self, ctx):
        model = ctx.model
        sync = replicated_sync(ctx)
        update = replicated_update_time(ctx)
        extra, buffers, notes = [], {}, dense_table_notes(ctx, "s2reducer")
        flops_s, bytes_s = ctx.gpu.flops_per_s(4), ctx.gpu.hbm_gbps * 1e9
        for t in sparse_tables(ctx):
            width = max(1, math.ceil(self.options.width_factor * t.unique_union))
            sketch = self.options.depth * width * t.dim * SKETCH_BYTES
            bitmap = math.ceil(t.vocab / 8)
            dense = t.vocab * t.dim * model.dtype_bytes
            if sketch + bitmap >= dense:
                # Densified: the union covers so much of the table that the sketch would
                # outweigh the dense gradient; an implementation sends the dense one.
                sync.append(SyncTensor(name=f"grad:{t.layer}", layer=t.layer, op="all_reduce",
                                       nbytes=float(dense), category="embedding",
                                       ready_after=bwd_name(t.layer)))
                update[t.layer] = ctx.layer_update[t.layer]
                notes.append(f"s2reducer {t.table}: sketch {sketch / 1e6:.1f} MB + bitmap would exceed the "
                             f"dense gradient ({dense / 1e6:.1f} MB; union {t.unique_union / t.vocab * 100:.0f} % "
                             f"of rows): the dense gradient is AllReduced instead")
                continue
            touches = model.row_touches(t.table)
            for name, nbytes in ((f"s2-sketch:{t.layer}", sketch), (f"s2-bitmap:{t.layer}", bitmap)):
                sync.append(SyncTensor(name=name, layer=t.layer, op="all_reduce", nbytes=float(nbytes),
                                       category="embedding", ready_after=bwd_name(t.layer)))
            # encode: zero the sketch and bitmap, add each lookup's gradient into depth buckets
            grad_row = t.dim * model.dtype_bytes
            enc_s, _ = roofline_time(flops=touches * self.options.depth * t.dim * 2,
                                     nbytes=sketch + bitmap + touches * (grad_row + 2 * self.options.depth * t.dim * SKETCH_BYTES),
                                     flops_per_s=flops_s, bytes_per_s=bytes_s, kernels=2)
            extra.append((bwd_name(t.layer), ComputeOp(extra_name("s2-encode", t.layer), enc_s)))
            # decode: scan the bitmap, read depth buckets per union row, median per element
            compares = self.options.depth * (self.options.depth - 1) / 2
            dec_s, _ = roofline_time(flops=t.unique_union * t.dim * compares,
                                     nbytes=bitmap + t.unique_union * t.dim * SKETCH_BYTES * (self.options.depth + 1),
                                     flops_per_s=flops_s, bytes_per_s=bytes_s, kernels=2)
            update[t.layer] = dec_s + ctx.sparse_update(t.layer, t.unique_union)
            buffers[f"s2 sketch + bitmap ({t.table})"] = sketch + bitmap
            notes.append(f"s2reducer {t.table}: sketch {self.options.depth} x {width} rows "
                         f"({sketch / 1e6:.1f} MB) + bitmap {bitmap / 1e6:.2f} MB; "
                         f"{exact_fraction(self.options.width_factor, self.options.depth) * 100:.0f} % of rows decode "
                         f"collision-free; encode {enc_s * 1e6:.0f} us, decode {dec_s * 1e6:.0f} us")
        return StrategyPlan(sync=tuple(sync), update_time=update,
                            memory=memory_per_gpu(model, sparse_embedding_grads=True, buffers=buffers),
                            extra=tuple(extra), notes=tuple(notes))
