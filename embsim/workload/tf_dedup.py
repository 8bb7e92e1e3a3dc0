"""TensorFlow optimizers' merge of repeated rows in a sparse (IndexedSlices) gradient, as
the kernels it runs on a GPU (model optimizer option `sparse_dedup: tf-unique`).

Keras OptimizerV2._resource_apply_sparse_duplicate_indices, used by every Keras optimizer
but SGD without momentum (tensorflow/python/keras/optimizer_v2/optimizer_v2.py and
gradient_descent.py; TF1's tf.train.Optimizer._apply_sparse_duplicate_indices likewise),
calls _deduplicate_indexed_slices before the sparse apply:
    unique_indices, new_index_positions = array_ops.unique(indices)
    summed_values = math_ops.unsorted_segment_sum(values, new_index_positions,
                                                  array_ops.shape(unique_indices)[0])
`Unique` on a GPU (tensorflow/core/kernels/unique_op_gpu.cu.h, UniqueOpGPU, an
AsyncOpKernel) runs over the n gradient indices (int64 ids, int32 out_idx):
  1. RangeInit of the argsort indices, then GpuRadixSort of (id, position) over all 64
     bits of the id (gpu_prim_helpers.h: num_bits = 8 x sizeof(key));
  2. an inclusive prefix sum (cub DeviceScan: init and scan kernels) of the segment
     boundaries;
  3. a 4-byte device-to-host copy of the unique count, then `ThenExecute`: the rest is
     launched by a host callback once the GPU has reached the copy, so nothing after it
     is launched while the GPU runs what came before (the two parts add, they do not
     overlap);
  4. ExtractFirstOccurrenceIndices, a second RangeInit and radix sort of the u
     first-occurrence positions over Log2Ceiling(n) bits, GatherOutputsAndInvertPermutation
     and LookupAndScatterUniqueIds.
`UnsortedSegmentSum` (segment_reduction_ops_gpu.cu.cc): a zero fill of the u output rows,
then one atomic add per gradient row. The Shape/StridedSlice that size it are host ops
with no kernel (not charged). The sparse apply that follows is the optimizer's own row
update (embsim.workload.compute).
"""

from __future__ import annotations

import math

from .kernels import Kernel, stream
from .radix_sort import radix_sort_kernels

ID_BYTES = 8          # int64 ids (Keras Embedding and Merlin DE feed int64)
POSITION_BYTES = 4    # Unique's out_idx default int32


def tf_dedup_kernels(name: str, gradient_rows: float, unique_rows: float, dim: int,
                     value_bytes: int) -> tuple[list[Kernel], list[Kernel]]:
    """(kernels before the host sync, kernels after it) of _deduplicate_indexed_slices over
    `gradient_rows` IndexedSlices rows of `dim` values (`value_bytes` each) holding
    `unique_rows` distinct ids."""
    n, u = float(gradient_rows), float(min(unique_rows, gradient_rows))
    if n <= 0:
        return [], []
    before, after = tf_unique_kernels(name, n, u)
    return before, after + unsorted_segment_sum_kernels(name, n, u, dim * value_bytes,
                                                        zero_name=f"{name}.segment_sum.zero")


def tf_unique_kernels(name: str, ids: float, unique: float) -> tuple[list[Kernel], list[Kernel]]:
    """(kernels before the host sync, kernels after it) of TensorFlow's GPU Unique over
    `ids` int64 ids holding `unique` distinct values (steps 1-4 above)."""
    n, u = float(ids), float(min(unique, ids))
    if n <= 0:
        return [], []
    k, p = ID_BYTES, POSITION_BYTES
    before = ([stream(f"{name}.unique.range_init", n * p)]          # the Unique op's dispatch
              + radix_sort_kernels(f"{name}.unique.sort", n, k, p)
              + [stream(f"{name}.unique.scan_init", 0.0, ops=0),
                 stream(f"{name}.unique.scan", n * (k + p), ops=0),
                 stream(f"{name}.unique.count_to_host", p, ops=0)])
    bits = max(1, math.ceil(math.log2(n))) if n > 1 else 0
    after = ([stream(f"{name}.unique.first_occurrence", n * 2 * p + u * p, ops=0),
              stream(f"{name}.unique.range_init_2", u * p, ops=0)]
             + radix_sort_kernels(f"{name}.unique.sort_positions", u, p, p, key_bits=bits)
             + [stream(f"{name}.unique.gather_invert", u * (2 * p + 2 * k + p), ops=0),
                stream(f"{name}.unique.scatter_ids", n * 4 * p, ops=0)])
    return before, after


def unsorted_segment_sum_kernels(name: str, rows: float, out_rows: float, row_bytes: int,
                                 zero_name: str) -> list[Kernel]:
    """TensorFlow's UnsortedSegmentSum on a GPU (segment_reduction_ops_gpu.cu.cc): a zero
    fill of the `out_rows` output rows (the op's dispatch) and one atomic add per input row."""
    return [stream(zero_name, out_rows * row_bytes, pointwise=True),
            Kernel("scatter", rows=rows, row_bytes=row_bytes, ops=0, name=f"{name}.segment_sum.atomic_add")]
