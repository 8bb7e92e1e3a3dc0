"""PyTorch's coalesce of a sparse (COO) embedding gradient, as the kernels it runs on a GPU:
the merge of repeated rows every stateful torch.optim optimizer does before a sparse
update (Adagrad, Adam's SparseAdam: `grad = grad.coalesce()`), and what a gathered or
received sparse gradient goes through before it is applied (model optimizer option
`sparse_dedup: coalesce`, the default).

_coalesce_sparse_cuda (aten/src/ATen/native/sparse/cuda/SparseCUDATensor.cu; the same
steps from PyTorch 1.x's THCThrustAllocator to 2.x's at::cuda::ThrustAllocator), over the
n gradient rows (int64 indices, one per lookup until coalesced):
  1. flatten_indices(force_clone=true): the 1-D index tensor cloned (a copy kernel);
     two thrust::copy of counting iterators fill origIndices and uniqueOffsets;
  2. thrust::sort_by_key(indices, origIndices, LTOp<int64_t>()): LTOp is not
     thrust::less, so Thrust takes its merge sort, which ends in a cudaStreamSynchronize
     (embsim.workload.merge_sort);
  3. thrust::unique_by_key(indices, uniqueOffsets) ("this forces device-host
     synchronization!"): a tile-state init kernel and the selection kernel, then
     synchronize and a device-to-host copy of the unique count u;
  4. coalesceValuesKernel: per distinct index, sums its rows (read through origIndices,
     so in sorted, not memory, order) in the accumulate type and writes one row.
The host waits twice (2 and 3), so the three parts add: nothing after a sync is
launched while the GPU runs what came before it.
"""

from __future__ import annotations

from .kernels import Kernel, stream
from .merge_sort import merge_sort_kernels
from .model import INDEX_BYTES

COUNT_BYTES = 4       # thrust::unique_by_key's size_type (int) count, copied to the host


def coalesce_kernels(name: str, gradient_rows: float, unique_rows: float, dim: int,
                     value_bytes: int) -> list[list[Kernel]]:
    """The kernels of coalesce() over `gradient_rows` rows of `dim` values (`value_bytes`
    each) holding `unique_rows` distinct indices, as the parts the host syncs separate
    (each part's launches overlap its own GPU work, not the next part's)."""
    n, u = float(gradient_rows), float(min(unique_rows, gradient_rows))
    if n <= 0:
        return []
    k = INDEX_BYTES
    sort = ([stream(f"{name}.coalesce.flatten_indices", 2 * n * k, copy=True),  # the op's dispatch
             stream(f"{name}.coalesce.orig_positions", n * k, ops=0),
             stream(f"{name}.coalesce.unique_offsets", n * k, ops=0)]
            + merge_sort_kernels(f"{name}.coalesce.sort", n, k, k))
    unique = [stream(f"{name}.coalesce.unique_init", 0.0, ops=0),
              stream(f"{name}.coalesce.unique_by_key", 2 * n * k + 2 * u * k, ops=0),
              stream(f"{name}.coalesce.count_to_host", COUNT_BYTES, ops=0)]
    # reads every gradient row once in sorted order and writes each distinct row once
    values = [Kernel("gather", rows=n + u, row_bytes=dim * value_bytes, passes=1, ops=0,
                     name=f"{name}.coalesce.values")]
    return [sort, unique, values]
