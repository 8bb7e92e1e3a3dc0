"""The kernels of an embedding lookup and of its gradient, as ATen runs nn.Embedding and
nn.EmbeddingBag on a GPU (the layers' kernel lists in embsim.workload.kernels_layers).

Forward (embedding -> index_select): one kernel reads the indices and each looked-up row
and writes it once to the output.

Dense gradient (sparse=False), embedding_dense_backward_cuda (aten/src/ATen/native/cuda/
Embedding.cu) and embedding_backward_cuda_kernel (EmbeddingBackwardKernel.cu):
- at most 3,072 indices (and no scale_grad_by_freq): a zero-filled vocab x dim gradient
  and one embedding_backward_feature_kernel that adds each lookup's gradient row into its
  table row (read, then read-modify-write);
- otherwise: at::arange of the positions, then cuda::cub::radix_sort_pairs of (index,
  position) over every bit of the int64 index: the call's `nbits` argument, the bits the
  vocabulary needs, is commented out (`false/*, 0, nbits*/`), so CUB runs all 8 passes
  of 8 bits (embsim.workload.radix_sort). embedding_backward_cuda_kernel zero-fills the
  gradient, finds the segments of equal indices (cub::unique_by_key: an init and a select
  kernel), counts each segment's partial segments of at most NROWS_PER_THREAD = 10 rows
  (krn_partials_per_segment), prefix-sums them (cub::exclusive_sum: init and scan),
  totals them (compute_num_of_partial_segments, one thread) and places them
  (krn_partial_segment_offset); compute_grad_weight reads each lookup's gradient row once
  and writes one FP32 partial sum per partial segment, and sum_and_scatter reads the
  partials and writes one row per distinct index: no read-modify-write per lookup.
  With CUB >= 1.16 (CUB_SUPPORTS_UNIQUE_BY_KEY) none of it waits on the host; older
  builds took thrust::unique_by_key_copy and its host sync (not modelled).
The whole backward is one ATen op: its first kernel carries the framework dispatch, every
other kernel is a CUDA launch. Distinct rows are bounded by min(vocab, lookups) here (the
layer's kernels do not see the token statistics).

Sparse gradient (sparse=True): the output gradient is kept as the values and the indices
are copied; merging repeated rows is left to the optimizer (embsim.workload.
torch_coalesce).

TensorFlow (framework tensorflow): the gradient of a gather is an IndexedSlices (one row
per lookup), made dense where a dense tensor is needed (Horovod's sparse_as_dense, an
all-reduce of the table): ops/indexed_slices.py _indexed_slices_to_tensor calls
unsorted_segment_sum(values, indices, vocab), whose GPU functor
(segment_reduction_ops_gpu.cu.cc) zero-fills the vocab x dim output and adds each row
into it with atomics, one kernel (no sort). A pooled lookup's gradient is first expanded
to one row per lookup (the segment sum's gradient is a gather), as the sparse gradient is.

TorchRec (framework torchrec): FBGEMM's table-batched embedding backward reads each
lookup's pooled gradient row itself and updates the rows in the same backward
(embsim.workload.fbgemm_tbe): the sparse backward launches nothing of its own (no expand,
no index copy; the fused kernels are the optimizer step's), the dense one is the TBE's dense
mode (DenseTableBatchedEmbeddingBagsCodegen, TorchRec's data-parallel tables).
"""

from __future__ import annotations

from .fbgemm_tbe import tbe_dense_backward_kernels
from .kernels import FP32, Kernel, stream
from .model import INDEX_BYTES
from .radix_sort import radix_sort_kernels
from .tf_dedup import unsorted_segment_sum_kernels

# embedding_dense_backward_cuda's unsorted path: `num_indices <= 3072 && !scale_grad_by_freq`
FEATURE_KERNEL_MAX_INDICES = 3072
# embedding_backward_cuda_kernel sums at most this many equal sorted indices per partial
# (NROWS_PER_THREAD in aten/src/ATen/native/cuda/EmbeddingBackwardKernel.cu)
SEGMENT_ROWS = 10


def dense_backward_kernels(name: str, rows: int, dim: int, vocab: int, e: int,
                           feature_path: bool = True) -> list[Kernel]:
    """The dense gradient of `rows` lookups into a `vocab` x `dim` table of `e`-byte
    elements. `feature_path`: the unsorted kernel serves up to 3,072 indices (embedding's
    backward; EmbeddingBag's always sorts)."""
    zero = stream(f"{name}.zero_grad", vocab * dim * e, pointwise=True)   # the op's dispatch
    if feature_path and rows <= FEATURE_KERNEL_MAX_INDICES:
        return [zero, Kernel("scatter", rows=rows, row_bytes=dim * e, ops=0,
                             name=f"{name}.feature_kernel")]
    k = INDEX_BYTES
    distinct = min(vocab, rows)                  # also max_segments = min(numel, num_weights)
    partials = min(rows, -(-rows // SEGMENT_ROWS) + distinct)
    partial_bytes = partials * dim * FP32        # acc_type: FP32 partials for 16-bit grads too
    return ([zero, stream(f"{name}.positions", rows * k, ops=0)]
            + radix_sort_kernels(f"{name}.sort", rows, k, k)
            + [stream(f"{name}.segments_init", 0.0, ops=0),
               stream(f"{name}.segments", rows * k + distinct * k, ops=0),
               stream(f"{name}.partials_per_segment", 3 * distinct * k, ops=0),
               stream(f"{name}.partials_offset_init", 0.0, ops=0),
               stream(f"{name}.partials_offset", 2 * distinct * k, ops=0),
               stream(f"{name}.partials_total", 3 * k, ops=0),
               stream(f"{name}.partial_segment_offset", 3 * distinct * k + partials * k, ops=0),
               Kernel("gather", rows=rows, row_bytes=dim * e, passes=1, ops=0,
                      name=f"{name}.segment_sum"),
               stream(f"{name}.partials", 2 * partial_bytes, ops=0),        # written, read back
               Kernel("scatter", rows=distinct, row_bytes=dim * e, passes=1, ops=0,
                      name=f"{name}.row_write")])


def tf_dense_backward_kernels(name: str, rows: int, dim: int, vocab: int, e: int) -> list[Kernel]:
    """TensorFlow's dense gradient of `rows` lookups: unsorted_segment_sum of the
    IndexedSlices into a zero-filled vocab x dim tensor."""
    return unsorted_segment_sum_kernels(name, rows, vocab, dim * e, zero_name=f"{name}.zero_grad")


def embedding_kernels(name: str, rows: int, dim: int, vocab: int, e: int,
                      framework: str = "pytorch") -> tuple[list, list, list]:
    """(forward, dense-gradient backward, sparse-gradient backward) of nn.Embedding, or of
    TensorFlow's gather (`framework` tensorflow)."""
    fwd = [Kernel("gather", rows=rows, row_bytes=dim * e, name=f"{name}.gather"),
           stream(f"{name}.indices", rows * INDEX_BYTES, ops=0)]
    if framework == "torchrec":
        return fwd, tbe_dense_backward_kernels(name, rows, dim, vocab, e), []
    if framework == "tensorflow":
        dense = tf_dense_backward_kernels(name, rows, dim, vocab, e)
    else:
        dense = dense_backward_kernels(name, rows, dim, vocab, e)
    return fwd, dense, [sparse_grad(name, rows)]


def sparse_grad(name: str, rows: int) -> Kernel:
    """The sparse gradient's index copy (its values are the output gradient itself)."""
    return stream(f"{name}.sparse_grad", 2 * rows * INDEX_BYTES)


def bag_kernels(name: str, rows: int, bags: int, dim: int, vocab: int,
                e: int, framework: str = "pytorch") -> tuple[list, list, list]:
    """embedding_kernels for a pooled (bag) lookup of `rows` rows into `bags` vectors, as
    ATen runs nn.EmbeddingBag(mode='sum'|'mean') (EmbeddingBag.cu; FBGEMM's TBE and TF's
    embedding_lookup_sparse pool the same way). Forward: one kernel reads each looked-up
    row once and writes one sum per bag (the mean's scale is fused in). The dense gradient
    (embedding_bag_backward_cuda_sum_avg) sorts as embedding's does, always, and runs the
    same segment kernels, each row reading its bag's gradient row (offset2bag). The sparse
    gradient first expands the pooled gradient to one row per lookup (index_select by
    offset2bag: reads the bags' rows, writes every lookup's), then keeps it as the values
    as embedding's sparse backward does (TensorFlow's dense gradient after it too). FBGEMM's
    TBE (framework torchrec) reads each lookup's bag gradient in its fused kernels: no expand."""
    fwd = [Kernel("gather", rows=rows, row_bytes=dim * e, passes=1, name=f"{name}.bag_gather"),
           stream(f"{name}.bag_write", bags * dim * e, ops=0),
           stream(f"{name}.indices", rows * INDEX_BYTES, ops=0)]
    if framework == "torchrec":
        return fwd, tbe_dense_backward_kernels(name, rows, dim, vocab, e), []
    expand = stream(f"{name}.bag_grad_expand", (bags + rows) * dim * e, copy=True)
    if framework == "tensorflow":
        dense = [expand] + tf_dense_backward_kernels(name, rows, dim, vocab, e)
    else:
        dense = dense_backward_kernels(name, rows, dim, vocab, e, feature_path=False)
    sparse = [expand, sparse_grad(name, rows)]
    return fwd, dense, sparse
