"""S2 Reducer's encode and decode as the kernels its authors' code runs on a GPU
(GeKeShi/Sparse_Sketch_Reducer, GNMT/seq2seq/train/gradient_reducers.py
Sketch_Embed_Reducer.reduce and cs_embedding/csvec.py CSVec; PyTorch 1.9), one list per
part its host syncs separate. Every PyTorch op is one dispatch; sizes for one table of
`rows` x `dim` elements whose gradient touches `nnz_rows` rows on this GPU (encode) or
`union_rows` rows over all GPUs (the bitmap's nonzeros, decode).

The gradient reaching the reducer is nn.Embedding's dense vocab x dim tensor. Encode:
  `matrix.to_sparse()`: nonzero() over every element (a count, then the host learns it),
  then the values gathered at the 2-D indices (one COO entry per nonzero element; the
  tensor comes out marked coalesced, so `.coalesce()` is free);
  accumulateVec: the flat element index (idx0 x dim + idx1), the bitmap zeroed and set at
  `indices()[0].unique_consecutive()` (a host sync for its size), the precomputed bucket and
  sign tables (one int64 and one fp32 per table element, built once) gathered at every
  entry and cloned, the signed values, and torch.bincount (its max over the buckets first,
  read on the host, then an atomic histogram into the c buckets), added into the sketch;
  then the sketch and bitmap copied into the AllReduce buffers.
Decode (`decompress(p, q).to_dense()`): nonzero() of the summed bitmap and its
count_nonzero() (host syncs), the union's row and column indices materialised (expand +
reshape) and flattened, the bucket and sign tables gathered at every union element, the
sketch read there, the estimate formed (x sign, mean over the one row), the indices
stacked, and to_dense(): a zeroed vocab x dim tensor with the union's elements added in.
"""

from __future__ import annotations

from ..workload.kernels import FP32, Kernel, stream
from ..workload.model import INDEX_BYTES

INDEX = INDEX_BYTES   # int64 indices and bucket table entries
VALUE = FP32          # fp32 values, signs, sketch and bitmap entries


def _op(name: str, nbytes: float) -> Kernel:
    return stream(f"s2.{name}", nbytes)


def encode_parts(rows: int, dim: int, nnz_rows: float, buckets: int, grad_bytes: int) -> list[list[Kernel]]:
    """The encode's kernel lists, split where the host waits for the GPU."""
    n_el = float(rows) * dim                 # dense gradient elements
    e = float(nnz_rows) * dim                # its nonzero elements (touched rows)
    to_sparse = [_op("to_sparse.nonzero_count", n_el * grad_bytes)]
    indices = [_op("to_sparse.nonzero_write", n_el * grad_bytes + e * 2 * INDEX),
               _op("to_sparse.values", e * (2 * INDEX + 2 * grad_bytes)),
               _op("flat_index.mul", e * 2 * INDEX),
               _op("flat_index.add", e * 3 * INDEX),
               _op("bitmap.zero", rows * VALUE),
               _op("rows.unique_consecutive", e * INDEX + nnz_rows * INDEX)]
    hashing = [_op("bitmap.index_put", nnz_rows * (INDEX + VALUE)),
               _op("buckets.gather", e * 3 * INDEX),
               _op("signs.gather", e * (2 * INDEX + VALUE)),
               _op("buckets.clone", e * 2 * INDEX),
               _op("signs.clone", e * 2 * VALUE),
               _op("signed_values", e * 3 * VALUE),
               _op("bincount.max", e * INDEX)]
    histogram = [_op("bincount.zero", buckets * VALUE),
                 Kernel("scatter", rows=e, row_bytes=VALUE, ops=0, name="s2.bincount.atomic_add"),
                 _op("sketch.add_", buckets * 3 * VALUE),
                 _op("sketch.copy_out", buckets * 2 * VALUE),
                 _op("bitmap.copy_out", rows * 2 * VALUE)]
    return [to_sparse, indices, hashing, histogram]


def decode_parts(rows: int, dim: int, union_rows: float, grad_bytes: int) -> list[list[Kernel]]:
    """The decode's kernel lists, split where the host waits for the GPU."""
    n_el = float(rows) * dim
    e = float(union_rows) * dim
    find = [_op("bitmap.nonzero", rows * VALUE + union_rows * INDEX)]
    count = [_op("bitmap.count_nonzero", rows * VALUE)]
    values = [_op("rows.expand_reshape", e * INDEX + union_rows * INDEX),
              _op("cols.arange", dim * INDEX),
              _op("cols.expand_reshape", e * INDEX),
              _op("flat_index.mul", e * 2 * INDEX),
              _op("flat_index.add", e * 3 * INDEX),
              _op("estimate.zeros", e * VALUE),
              _op("buckets.gather", e * 3 * INDEX),
              _op("signs.gather", e * (2 * INDEX + VALUE)),
              _op("sketch.gather", e * (INDEX + 2 * VALUE)),
              _op("estimate.mul_signs", e * 3 * VALUE),
              _op("estimate.mean", e * 2 * VALUE),
              _op("indices.stack", e * 4 * INDEX),
              _op("to_dense.zeros", n_el * grad_bytes),
              Kernel("scatter", rows=e, row_bytes=grad_bytes, ops=0, name="s2.to_dense.add")]
    return [find, count, values]


def hash_table_bytes(rows: int, dim: int, depth: int = 1) -> float:
    """CSVec's precomputed bucket (int64) and sign (fp32) tables, one per table element
    and sketch row, kept on the GPU for the run."""
    return float(rows) * dim * depth * (INDEX + VALUE)
