"""s2reducer: S2 Reducer (arXiv 2110.02140) as its authors' code runs it.

Per step and sparse table, every GPU hashes its embedding gradient into a one-row count
sketch of c = V * D * sparsity * rank scalar buckets and marks its rows in an fp32-per-row
bitmap; two AllReduces (sketch, then bitmap) sum them across GPUs (a sketch is linear);
every GPU decodes the union's rows (bitmap nonzero) from the summed sketch and applies
them. Dense tensors are AllReduced separately, uncompressed. Sizes: s2sketch.py;
defaults are the authors' GNMT values (sparsity 0.02, rank 0.25: c = 0.5 % of V x D).
The sketch is lossy: the notes give the fraction of elements that decode exactly.

`--option sizing=union` keeps embsim's earlier, much larger sizing (depth rows of
D-vector buckets, width = width_factor x the expected union, a V/8-byte bit bitmap):
a sketch sized to decode most rows exactly, for comparison.

Compute, as the authors' code runs it (sizing=published; s2_kernels.py): the table is
nn.Embedding's, so its gradient is the dense vocab x dim tensor (the lookup's dense
backward); the encode to_sparse()s it (a nonzero scan of every element), hashes every
nonzero element through precomputed bucket and sign tables (12 bytes per table element,
held on the GPU) and bincounts them into the sketch; the decode rebuilds the union's
elements and writes them to_dense() into a zeroed vocab x dim tensor; and the optimizer
steps the whole dense table. Each part ends where the host waits (nonzero, unique_consecutive,
bincount's max, count_nonzero). sizing=union keeps embsim's own lighter variant on the same
dense gradient: its touched rows hashed straight in, the union's rows decoded and updated.

When sketch + bitmap would exceed the dense gradient, the dense gradient is AllReduced
instead and the notes say so.

When it all runs (`--option sync`): `after_backward` (default) is the authors' trainer
(GNMT/seq2seq/train/fp_optimizers.py: loss.backward() returns, then reducer.reduce;
gradient_reducers.py Sketch_Embed_Reducer.reduce): after the whole backward every table is
encoded, all tables' sketches go in one AllReduce and all bitmaps in a second (one p and
one q buffer), and only then is everything else AllReduced, packed, beside the decode;
the optimizer steps when both are done. `overlapped` is embsim's earlier variant: each
table's sketch and bitmap AllReduced as its backward ends, the dense gradients in DDP's
buckets during the backward, the decode with each table's update.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ..plan.names import bwd_name, extra_name, update_name
from ..plan.ops import ComputeOp, SyncTensor
from ..errors import InputError
from ..options import positive_number
from ..plan.traits import Payload
from ..workload.memory import memory_per_gpu
from ..workload.kernels import stream
from .base import STRATEGIES, Strategy, StrategyPlan
from .common import dense_table_notes, replicated_sync, replicated_update_time, sparse_tables
from .s2_kernels import decode_parts, encode_parts, hash_table_bytes
from .s2sketch import (GNMT_RANK, GNMT_SPARSITY, SKETCH_BYTES, collision_free_fraction,
                       colliders_per_element, median_exact_fraction, published_buckets,
                       published_bytes)

SIZINGS = ("published", "union")
SYNCS = ("after_backward", "overlapped")


@dataclass(frozen=True)
class _Coded:
    """One sketched table: what it sends and what its encode and decode take."""
    table: object           # plan.context.TableTraffic
    sketch: float           # bytes
    bitmap: float           # bytes
    encode_s: float
    decode_s: float


@dataclass(frozen=True)
class S2ReducerOptions:
    sparsity: float = GNMT_SPARSITY   # the authors' GNMT embedding_sparsity
    rank: float = GNMT_RANK           # the authors' GNMT optimizer_reducer_rank
    sizing: str = "published"         # or "union": embsim's former sketch sized to decode
    depth: int = 3                    # sizing=union: sketch rows (hash functions)
    width_factor: float = 2.0         # sizing=union: sketch width over the expected union rows
    sync: str = "after_backward"      # the authors' trainer; "overlapped": DDP-style overlap

    def __post_init__(self):
        if self.sizing not in SIZINGS:
            raise InputError(f"--option sizing={self.sizing!r}: expected one of {', '.join(SIZINGS)}")
        if self.sync not in SYNCS:
            raise InputError(f"--option sync={self.sync!r}: expected one of {', '.join(SYNCS)}")
        # sparsity is the authors' embedding_sparsity: the fraction of the gradient's
        # elements expected nonzero (a density, so at most 1), which c = V x D x sparsity x rank
        # scales; above 1 it would size the sketch for more elements than the table has
        sparsity = self.sparsity
        if (isinstance(sparsity, bool) or not isinstance(sparsity, (int, float))
                or not 0 < sparsity <= 1):
            raise InputError(f"--option sparsity={sparsity!r}: must be a fraction in (0, 1], the share "
                             f"of the embedding gradient's elements expected nonzero (the authors' "
                             f"embedding_sparsity; GNMT {GNMT_SPARSITY:g})")
        for key in ("sparsity", "rank", "width_factor"):
            object.__setattr__(self, key, positive_number(getattr(self, key), key))
        # the sketch's row count sums over binomial terms; 64 rows is far beyond any use
        if isinstance(self.depth, bool) or not isinstance(self.depth, int) or not 1 <= self.depth <= 64:
            raise InputError(f"--option depth={self.depth!r}: must be an integer 1..64")
        if self.width_factor > 1000:
            raise InputError(f"--option width_factor={self.width_factor!r}: must be in (0, 1000]")


@STRATEGIES.register("s2reducer")
class S2ReducerStrategy(Strategy):
    description = "one-row count sketch + fp32-per-row bitmap, two AllReduces (S2 Reducer)"
    embedding_payload = Payload.NONE   # a sketch has no rows to defer
    # the authors' table is nn.Embedding's (sparse=False): the reducer receives the dense
    # vocab x dim gradient (sizing=union, embsim's variant, then hashes its touched rows)
    dense_table_gradient = True
    Options = S2ReducerOptions

    @property
    def depth(self) -> int:
        """Sketch rows: one as the authors sized it, `depth` with sizing=union."""
        return self.options.depth if self.options.sizing == "union" else 1

    def sizes(self, t) -> tuple[float, float, int, str]:
        """(sketch bytes, bitmap bytes, buckets per element slot, note) for one table."""
        if self.options.sizing == "published":
            sketch, bitmap = published_bytes(t.vocab, t.dim, self.options.sparsity, self.options.rank)
            c = published_buckets(t.vocab, t.dim, self.options.sparsity, self.options.rank)
            elements = t.unique_union * t.dim
            note = (f"one-row sketch of {c:,} buckets (V x D x {self.options.sparsity:g} x {self.options.rank:g}); "
                    f"{elements:,.0f} nonzero elements of the summed gradient: "
                    f"{collision_free_fraction(elements, c) * 100:.1f} % decode exactly, each "
                    f"estimate carries {colliders_per_element(elements, c):.1f} other elements on average")
            return float(sketch), float(bitmap), c, note
        width = max(1, math.ceil(self.options.width_factor * t.unique_union))
        sketch = self.depth * width * t.dim * SKETCH_BYTES
        note = (f"sketch {self.depth} x {width} rows of D-vectors (sizing=union); "
                f"{median_exact_fraction(self.options.width_factor, self.depth) * 100:.0f} % of rows decode "
                f"collision-free")
        return float(sketch), float(math.ceil(t.vocab / 8)), width * t.dim, note

    def plan(self, ctx):
        model = ctx.model
        sync = replicated_sync(ctx)
        update = replicated_update_time(ctx)
        extra, buffers, notes = [], {}, dense_table_notes(ctx, "s2reducer")
        coded: list[_Coded] = []
        for t in sparse_tables(ctx):
            sketch, bitmap, buckets, note = self.sizes(t)
            grad_bytes = model.grad_elem_bytes(model.layer(t.layer))
            dense = t.vocab * t.dim * grad_bytes
            if sketch + bitmap >= dense:
                # Densified: the sketch would outweigh the dense gradient; send that instead.
                sync.append(SyncTensor(name=f"grad:{t.layer}", layer=t.layer, op="all_reduce",
                                       nbytes=float(dense), category="embedding",
                                       ready_after=bwd_name(t.layer)))
                update[t.layer] = ctx.layer_update[t.layer]
                notes.append(f"s2reducer {t.table}: sketch {sketch / 1e6:.1f} MB + bitmap would exceed the "
                             f"dense gradient ({dense / 1e6:.1f} MB; union {t.unique_union / t.vocab * 100:.0f} % "
                             f"of rows): the dense gradient is AllReduced instead")
                continue
            if self.options.sizing == "published":
                # the authors' code: the dense gradient to_sparse()'d and hashed per
                # element, the union decoded to_dense(), and the optimizer then steps the
                # whole dense table (s2_kernels; each part ends in a host sync)
                enc_s = ctx.synced_seconds(encode_parts(t.vocab, t.dim, t.unique_per_gpu, buckets, grad_bytes))
                dec_s = ctx.synced_seconds(decode_parts(t.vocab, t.dim, t.unique_union, grad_bytes))
                update[t.layer] = ctx.layer_update[t.layer]
                buffers[f"s2 hash tables ({t.table})"] = hash_table_bytes(t.vocab, t.dim)
            else:
                # encode: zero sketch and bitmap, add each looked-up gradient element into
                # `depth` buckets (read-modify-write of a scattered fp32); two memory-bound
                # kernels (a few flops per byte), timed by the kernel model like every layer
                grad_row = t.dim * model.table_bytes
                touches = model.row_touches(t.table)
                enc_bytes = sketch + bitmap + touches * (grad_row + 2 * self.depth * t.dim * SKETCH_BYTES)
                enc_s = ctx.kernel_seconds([stream("s2-encode", enc_bytes / 2, count=2)])
                # decode: scan the bitmap, read `depth` buckets per element of the union's rows
                # (a median over them when depth > 1)
                dec_bytes = bitmap + t.unique_union * t.dim * SKETCH_BYTES * (self.depth + 1)
                dec_s = ctx.kernel_seconds([stream("s2-decode", dec_bytes / 2, count=2)])
                update[t.layer] = ctx.sparse_update(t.layer, t.unique_union)
            coded.append(_Coded(t, sketch, bitmap, enc_s, dec_s))
            buffers[f"s2 sketch + bitmap ({t.table})"] = sketch + bitmap
            notes.append(f"s2reducer {t.table}: {note}; AllReduce sketch {sketch / 1e6:.2f} MB + bitmap "
                         f"{bitmap / 1e6:.2f} MB (dense gradient {dense / 1e6:.0f} MB); "
                         f"encode {enc_s * 1e6:.0f} us, decode {dec_s * 1e6:.0f} us")
        if self.options.sync == "overlapped":
            for c in coded:
                layer = c.table.layer
                # on the compute stream just ahead of the table's backward (its last op) the
                # encode delays the sketch's AllReduce exactly as much as right after it
                extra.append((bwd_name(layer), ComputeOp(extra_name("s2-encode", layer), c.encode_s)))
                for name, nbytes in ((f"s2-sketch:{layer}", c.sketch), (f"s2-bitmap:{layer}", c.bitmap)):
                    sync.append(SyncTensor(name=name, layer=layer, op="all_reduce", nbytes=nbytes,
                                           category="embedding", ready_after=bwd_name(layer)))
                update[layer] += c.decode_s           # the decode runs with the table's update
        elif coded:
            sync, extra = self._after_backward(ctx, sync, update, coded)
            notes.append(f"s2reducer: the authors' reduce, after the backward: {len(coded)} "
                         f"table(s) encoded, one AllReduce of every sketch and one of every bitmap, "
                         f"then the other gradients beside the decode (--option sync=overlapped: "
                         f"overlapped with the backward instead)")
        return StrategyPlan(sync=tuple(sync), update_time=update,
                            memory=memory_per_gpu(model, sparse_embedding_grads=False, buffers=buffers),
                            extra=tuple(extra), notes=tuple(notes))

    @staticmethod
    def _after_backward(ctx, sync, update, coded: list[_Coded]):
        """The authors' reduce() after loss.backward(): encodes, then one AllReduce of all
        sketches (p_memory) and one of all bitmaps (q_memory), then the rest packed and
        AllReduced while the sketches decode (one op of its own); the optimizer waits for
        both. (sync, extra ops)."""
        layers = [l.name for l in ctx.model.layers]
        owners = {t.layer for t in sync} | set(update)
        # the optimizer's first op, which follows the whole backward (DDP-style streams)
        anchor = update_name(next(n for n in layers if n in owners))
        first = coded[0].table.layer
        extra = [(anchor, ComputeOp(extra_name("s2-encode", c.table.layer), c.encode_s)) for c in coded]
        encoded = extra[-1][1].id
        decode = ComputeOp(extra_name("s2-decode", first), sum(c.decode_s for c in coded))
        extra.append((anchor, decode))
        packed = [SyncTensor(name=f"s2-{kind}", layer=first, op="all_reduce",
                             nbytes=float(sum(getattr(c, kind) for c in coded)), category="embedding",
                             ready_after=encoded, needed_by=decode.id)
                  for kind in ("sketch", "bitmap")]
        # everything else once the sketches are on their way: issued after them on the stream
        rest = [replace(t, ready_after=encoded) for t in sync]
        return packed + rest, extra
