"""FBGEMM's table-batched embedding (TBE) backward as TorchRec runs it, "exact": the
embedding gradient and the optimizer update fused in one backward, no per-lookup sparse
gradient ever written (model framework `torchrec`, optimizer sparse_dedup `tbe`).

Read at pytorch/FBGEMM v0.3.2 (b2be7025, the fbgemm-gpu==0.3.2 MLCommons'
recommendation_v2/torchrec_dlrm pins; TorchRec's examples of early 2022 install that
period's nightly, the same template), with git show:
- The autograd node (codegen/embedding_backward_split_host_template.cpp:224-307): one C++
  backward calls split_embedding_backward_codegen_{optimizer}_unweighted_exact_cuda with
  max_segment_length_per_warp = 32 (:272). One framework op for the whole backward; every
  kernel below is a CUDA launch of its own.
- transpose_embedding_input (src/split_embeddings_utils.cu:139-274) over the n lookups:
  linearize_index_kernel (:63-94, launched :166-177) reads each int64 index (and each bag's
  offsets, not counted: the optimizer step sees lookups, not bags) and writes an int32 info
  (the lookup's bag and table) and the int64 linear index hash_size_cumsum[t] + idx;
  cub::DeviceRadixSort::SortPairs of (linear index, info) over bits [0,
  total_hash_size_bits) (:193-224); at::zeros_like of the n int32 run lengths and a zeroed
  int num_runs (:226-230); cub::DeviceRunLengthEncode::Encode (:232-259: an init and a
  reduce-by-key kernel) reads the sorted keys, writes the u distinct linear indices and
  their run lengths; asynchronous_complete_cumsum (:21-56, called :263) zeroes t_out[0] and
  runs cub::DeviceScan::InclusiveSum (init and scan) over all n run lengths.
  total_hash_size_bits = int(log2(float(rows of every table in the TBE)) + 1)
  (fbgemm_gpu/split_table_batched_embeddings_ops.py:318-322).
- The exact backward (codegen/embedding_backward_split_template.cu:779-1256): without a
  cache lxu_cache_locations is empty (split_table_batched_embeddings_ops.py:619-623), so no
  second sort (:906-936); two one-int zero fills (num_long_run_ids :1044,
  num_really_long_run_ids :1056); find_long_segments (:35-73, launched :1061-1076) reads
  each run's length and lists the runs of >= 32 lookups; temp_grad_accum = at::zeros of
  (n / 1024) x max_D FP32 (:1057-1059, :1080-1082), where CTAs that share a run of over
  1,024 lookups add their partial sums with atomics. kernel_cta_per_row_1 (:115-523,
  launched :1109-1168) takes the long runs, kernel_warp_per_row_1 (:526-777, launched
  :1193-1247) the others: both read every lookup's grad_output row, its bag's (:270-271,
  :669-670), sum them in FP32 registers, then load the distinct row's weights once, apply
  the optimizer and store them once (:490-497, :741-748).
- The update ({{ split_weight_update }}, codegen/embedding_backward_code_generator.py):
  EXACT_SGD (:877-893) weight -= lr x grad, no state; EXACT_ADAGRAD (:340-372)
  momentum1[idx * D + d] += grad^2, one FP32 value per weight read and written;
  EXACT_ROWWISE_ADAGRAD (:397-447) one FP32 momentum1[idx] per row (:431-432); ADAM
  (:1067-1115) momentum1 and momentum2 per weight.
- DenseTableBatchedEmbeddingBagsCodegen (TorchRec's data-parallel tables; the same template
  with dense=True, embedding_backward_dense_host.cpp:151-235): zeros_like(dev_weights)
  (:839), the same transposition, and the row kernels write each distinct row's summed
  gradient once instead of updating it (:513-521, :766-773).
Nothing waits for the host: the distinct count stays on the GPU (num_runs, read by the
kernels) and every grid is sized by n.

At v0.8.0 (8846c279) the same steps, moved: transpose_embedding_input in
src/split_embeddings_utils/transpose_embedding_input.cu (linearize :248-284, SortPairs over
total_hash_size_bits :308-339, zero fills :340-352, Encode :354-381, cumsum :25-60 and
:385-386) gains variable batch sizes (VBE) and index_select; the backward
(codegen/training/backward/embedding_backward_split_template.cu) keeps the zero fills
(:886, :901, :929-931) and find_long_segments (:910-925), sizes the grids by
total_unique_indices (= indices.numel() by default, :583), adds one zero fill of T ints
(table_unique_indices_offsets, :772) and moves the row kernels into
embedding_backward_split_kernel_{cta,warp}_template.cu and the update into
training/optimizer/embedding_optimizer_split_device_kernel_template.cuh (:128-136: load,
update, store) with the math in codegen/genscript/optimizers.py (adagrad :49-56,
rowwise_adagrad's momentum1[idx] :192-193). Bytes per lookup and per distinct row are
unchanged; total_hash_size_bits is still int(log2(rows) + 1) (up to v1.8.0).

What embsim charges: the row kernels' bytes as one launch (cta_per_row's rows counted in
warp_per_row's bytes: the split depends on how many lookups each row gets, which the step
does not know); the atomics over temp_grad_accum are not (at most its zero fill's bytes);
no loss scaler or clipping (the update runs inside the backward). TorchRec puts all of a
rank's table-wise tables into ONE TBE (pytorch/torchrec at 488c02b0,
torchrec/distributed/batched_embedding_kernel.py:637-650: one
SplitTableBatchedEmbeddingBagsCodegen over a sharding group's tables): one op and one set
of launches for all of them, one sort of all their lookups over the bits of their summed
rows. embsim charges a TBE per table (the strategies time each table's update alone): it
over-counts a rank's fixed costs (one op and about 20 launches and kernel gaps, ~50 us of
host time) once for each of its tables but one, and sorts a small table's lookups over its
own few bits rather than the group's (fewer passes: under-counted).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import InputError
from .kernel_time import SECTOR
from .kernels import FP32, Kernel, stream
from .model import INDEX_BYTES
from .radix_sort import radix_sort_kernels

INFO_BYTES = 4                    # linearize_index_kernel's info: int32 bag x table (b_t)
RUN_BYTES = 4                     # int32 run lengths, num_runs, cumulative run lengths
MAX_SEGMENT_LENGTH_PER_CTA = 1024  # runs longer than this share temp_grad_accum rows
# embsim's optimizer -> FBGEMM's OptimType as TorchRec maps torch.optim (pytorch/torchrec
# v0.3.2 torchrec/distributed/utils.py:247-250)
OPTIM_TYPES = {"sgd": "EXACT_SGD", "adagrad": "EXACT_ADAGRAD", "adam": "ADAM"}


def total_hash_size_bits(table_rows: int) -> int:
    """The bits FBGEMM's radix sort sorts linear indices over: int(log2(rows) + 1), 0 for
    no rows (split_table_batched_embeddings_ops.py:318-322)."""
    return int(math.log2(float(table_rows)) + 1) if table_rows > 0 else 0


def optim_type(optimizer: str) -> str:
    """FBGEMM's fused optimizer for one of embsim's; others are not modelled."""
    if optimizer not in OPTIM_TYPES:
        raise InputError(f"framework torchrec: optimizer {optimizer!r} has no fused FBGEMM update "
                         f"modelled (only {', '.join(f'{k} ({v})' for k, v in OPTIM_TYPES.items())})")
    return OPTIM_TYPES[optimizer]


def state_values(optim: str, dim: int) -> int:
    """FP32 optimizer-state values the update reads and writes per distinct row."""
    return {"EXACT_SGD": 0, "EXACT_ADAGRAD": dim, "EXACT_ROWWISE_ADAGRAD": 1, "ADAM": 2 * dim}[optim]


def _sectors(rows: float, row_bytes: int) -> float:
    """Bytes of `rows` random rows, each whole 32-byte DRAM sectors (kernel_time)."""
    return rows * math.ceil(row_bytes / SECTOR) * SECTOR if row_bytes else 0.0


@dataclass(frozen=True)
class RowTraffic:
    """What the row kernels move, in whole sectors: every lookup's gradient row; each
    distinct row's weights (read and written; dense mode: its gradient written once) and
    optimizer state (read and written); the sorted infos and the runs' keys and offsets."""

    grad_rows: float
    weights: float
    state: float
    indices: float

    @property
    def total(self) -> float:
        return self.grad_rows + self.weights + self.state + self.indices


def row_traffic(lookups: float, unique: float, dim: int, grad_bytes: int, weight_bytes: int,
                state: int, dense: bool = False) -> RowTraffic:
    return RowTraffic(grad_rows=_sectors(lookups, dim * grad_bytes),
                      weights=(1 if dense else 2) * _sectors(unique, dim * weight_bytes),
                      state=2 * _sectors(unique, state * FP32),
                      indices=lookups * INFO_BYTES + unique * (INDEX_BYTES + RUN_BYTES))


def tbe_merge_kernels(name: str, lookups: float, unique: float, table_rows: int) -> list[Kernel]:
    """transpose_embedding_input over `lookups` lookups holding `unique` distinct rows of a
    `table_rows`-row TBE: linearize, sort, run-length encode, cumsum (no host sync). The
    linearize carries the TBE backward's one framework op."""
    n, u = float(lookups), float(min(unique, lookups))
    if n <= 0:
        return []
    k, bits = INDEX_BYTES, total_hash_size_bits(table_rows)
    return ([stream(f"{name}.tbe.linearize", n * (k + INFO_BYTES + k))]
            + radix_sort_kernels(f"{name}.tbe.sort", n, k, INFO_BYTES, key_bits=bits)
            + [stream(f"{name}.tbe.run_lengths_zero", n * RUN_BYTES, ops=0, pointwise=True),
               stream(f"{name}.tbe.num_runs_zero", RUN_BYTES, ops=0, pointwise=True),
               stream(f"{name}.tbe.encode_init", 0.0, ops=0),
               stream(f"{name}.tbe.encode", n * k + u * (k + RUN_BYTES) + RUN_BYTES, ops=0),
               stream(f"{name}.tbe.cumsum_zero", RUN_BYTES, ops=0, pointwise=True),
               stream(f"{name}.tbe.cumsum_init", 0.0, ops=0),
               stream(f"{name}.tbe.cumsum", 2 * n * RUN_BYTES + RUN_BYTES, ops=0)])


def tbe_update_kernels(name: str, lookups: float, unique: float, dim: int, grad_bytes: int,
                       weight_bytes: int, state: int, dense: bool = False) -> list[Kernel]:
    """The exact backward after the transposition: its zero fills, find_long_segments and
    the row kernels (one launch here, RowTraffic's bytes as random sectors). `state`: FP32
    state values per distinct row (state_values); `dense`: write each row's gradient."""
    n, u = float(lookups), float(min(unique, lookups))
    if n <= 0:
        return []
    out = [stream(f"{name}.tbe.num_long_runs_zero", RUN_BYTES, ops=0, pointwise=True),
           stream(f"{name}.tbe.num_really_long_runs_zero", RUN_BYTES, ops=0, pointwise=True),
           stream(f"{name}.tbe.find_long_segments", u * RUN_BYTES + RUN_BYTES, ops=0)]
    shared_rows = int(n) // MAX_SEGMENT_LENGTH_PER_CTA
    if shared_rows:          # at::zeros of no element launches nothing
        out.append(stream(f"{name}.tbe.temp_grad_accum_zero", shared_rows * dim * FP32, ops=0,
                          pointwise=True))
    traffic = row_traffic(n, u, dim, grad_bytes, weight_bytes, state, dense)
    # one kernel of rows of several widths: its bytes as 32-byte sectors, timed as a gather
    return out + [stream(f"{name}.tbe.cta_per_row", 0.0, ops=0),
                  Kernel("gather", rows=traffic.total / SECTOR, row_bytes=SECTOR, passes=1, ops=0,
                         name=f"{name}.tbe.warp_per_row")]


def tbe_apply_kernels(name: str, lookups: float, unique: float, dim: int, table_bytes: int,
                      optimizer: str) -> list[Kernel]:
    """The fused update after tbe_merge_kernels, with `optimizer`'s state (the gradient rows
    in the table's dtype, as TorchRec's FP32 pooled output)."""
    state = state_values(optim_type(optimizer), dim)
    return tbe_update_kernels(name, lookups, unique, dim, table_bytes, table_bytes, state)


def tbe_dense_backward_kernels(name: str, lookups: int, dim: int, vocab: int, e: int) -> list[Kernel]:
    """DenseTableBatchedEmbeddingBagsCodegen's backward: a zero-filled vocab x dim gradient,
    the transposition, and each distinct row's gradient written once (distinct rows
    min(vocab, lookups): the layer's kernels do not see the token statistics)."""
    distinct = min(vocab, lookups)
    return ([stream(f"{name}.tbe.grad_zero", vocab * dim * e, ops=0, pointwise=True)]
            + tbe_merge_kernels(name, lookups, distinct, vocab)
            + tbe_update_kernels(name, lookups, distinct, dim, e, e, state=0, dense=True))
