"""torch.unique(ids, sorted=True, return_inverse=True) on a GPU, as the kernels it runs: what
a GPU pays to send each distinct id once (EmbRace's `dedup`, model framework pytorch).

ATen's CUDA unique for inputs under 2^31 elements (aten/src/ATen/native/cuda/Unique.cu,
unique_cuda_fast_32bit_sized, PyTorch 1.7-1.13; 2.x's UniqueCub.cu compute_unique keeps
the same steps), over n int64 ids:
  1. at::arange of the n positions (the op's dispatch);
  2. cub::DeviceRadixSort::SortPairs of (id, position) over every bit of the key
     (begin_bit 0, end_bit 8 x sizeof(scalar_t)), embsim.workload.radix_sort;
  3. the inverse: thrust::adjacent_difference of the sorted ids (not_equal_to), the
     `inv_loc[0] = 0` fill, thrust::inclusive_scan (CUB DeviceScan: init and scan
     kernels), thrust::scatter through the sorted positions;
  4. cub::DeviceRunLengthEncode::Encode (counts always returned: an init and the
     reduce-by-key kernel), then `num_out_tensor.item()`: a 4-byte copy to the host and
     a synchronisation, so nothing after it is launched while these kernels run.
"""

from __future__ import annotations

from .kernels import Kernel, stream
from .model import INDEX_BYTES
from .radix_sort import radix_sort_kernels

COUNT_BYTES = 4       # the int num_out that .item() copies to the host


def torch_unique_kernels(name: str, ids: float, unique: float) -> list[Kernel]:
    """The kernels of torch.unique(return_inverse=True) over `ids` int64 ids holding
    `unique` distinct values; they end in a host synchronisation."""
    n, u = float(ids), float(min(unique, ids))
    if n <= 0:
        return []
    k = INDEX_BYTES
    return ([stream(f"{name}.unique.arange", n * k)]                     # the op's dispatch
            + radix_sort_kernels(f"{name}.unique.sort", n, k, k)
            + [stream(f"{name}.unique.adjacent_difference", 3 * n * k, ops=0),
               stream(f"{name}.unique.first_zero", k, ops=0),
               stream(f"{name}.unique.scan_init", 0.0, ops=0),
               stream(f"{name}.unique.inclusive_scan", 2 * n * k, ops=0),
               stream(f"{name}.unique.scatter_inverse", 3 * n * k, ops=0),
               stream(f"{name}.unique.encode_init", 0.0, ops=0),
               stream(f"{name}.unique.run_length_encode", n * k + 2 * u * k, ops=0),
               stream(f"{name}.unique.count_to_host", COUNT_BYTES, ops=0)])
