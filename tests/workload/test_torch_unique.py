"""torch.unique(return_inverse=True) as ATen runs it on a GPU, and the framework switch
that picks it or TensorFlow's Unique (compute.unique_ids_kernels)."""

from dataclasses import replace

from embsim.workload import load_model
from embsim.workload.compute import unique_ids_kernels
from embsim.workload.torch_unique import torch_unique_kernels


def names(kernels):
    return [k.name.split(".unique.", 1)[1] for k in kernels]


def test_a_64_bit_radix_sort_then_the_inverse_and_the_counts_then_a_host_copy():
    kernels = torch_unique_kernels("t", 1_000_000, 200_000)
    steps = names(kernels)
    assert steps[0] == "arange" and steps[-1] == "count_to_host"
    # every bit of the int64 key: 8 onesweep passes of 8 bits, whatever the vocabulary
    assert sum(1 for s in steps if s.startswith("sort.onesweep.")) == 8
    for step in ("adjacent_difference", "inclusive_scan", "scatter_inverse", "run_length_encode"):
        assert step in steps
    # only the arange is a framework op; the rest are library launches
    assert [k.ops for k in kernels].count(0) == len(kernels) - 1


def test_a_small_input_sorts_in_one_tile_and_nothing_is_no_kernel():
    assert any(s == "sort.single_tile" for s in names(torch_unique_kernels("t", 1000, 900)))
    assert torch_unique_kernels("t", 0, 0) == []


def test_the_model_framework_picks_the_kernels():
    model = load_model("dlrm-criteo-f15")
    torch_parts = unique_ids_kernels("d", 65536, 30000, replace(model, framework="pytorch"))
    tf_parts = unique_ids_kernels("d", 65536, 30000, replace(model, framework="tensorflow"))
    assert len(torch_parts) == 1                  # one host sync, at the end
    assert len(tf_parts) == 2                     # TF's Unique syncs in the middle (ThenExecute)
    assert names(torch_parts[0])[0] == "arange" and names(tf_parts[0])[0] == "range_init"
