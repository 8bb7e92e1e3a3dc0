"""Gradient compression's forms, wire bytes, labels and GPU check (workload/grad_compress.py)."""

import pytest

from embsim.errors import InputError
from embsim.topology import load_topology
from embsim.workload import load_model
from embsim.workload.gpu_compute import for_gpu
from embsim.workload.grad_compress import GradCompress, cast_bytes


@pytest.mark.parametrize("text, dtype", [(None, "none"), ("none", "none"), ("off", "none"),
                                         ("fp16", "fp16"), ("FP16", "fp16"), ("float16", "fp16"),
                                         ("bf16", "bf16"), ("bfloat16", "bf16")])
def test_forms(text, dtype):
    assert GradCompress.parse(text).dtype == dtype


@pytest.mark.parametrize("text", ["fp8", "int8", "powersgd", "", "16"])
def test_bad_forms_name_the_flag(text):
    with pytest.raises(InputError, match=r"--grad-compress .*none, fp16 or bf16"):
        GradCompress.parse(text)


def test_only_gradients_wider_than_16_bits_shrink():
    fp16 = GradCompress("fp16")
    assert (fp16.wire_bytes(4), fp16.wire_bytes(2)) == (2, 2)
    assert GradCompress().wire_bytes(4) == 4


def test_a_cast_reads_one_width_and_writes_the_other():
    assert cast_bytes(1000, 4, 2) == 6000 and cast_bytes(1000, 2, 4) == 6000


def test_bf16_is_refused_on_a_gpu_without_bfloat16():
    v100 = for_gpu(load_topology("dgx1-v100:1x1").node.gpu)
    with pytest.raises(InputError, match=r"^--grad-compress bf16: V100.* no bfloat16"):
        GradCompress("bf16").check_gpu(v100)
    GradCompress("fp16").check_gpu(v100)
    GradCompress("bf16").check_gpu(for_gpu(load_topology("dgx-a100:1x1").node.gpu))


def test_labels_say_what_happened():
    fp32 = load_model("bert-base", dtype="tf32")
    half = load_model("bert-large", dtype="fp16")           # zoo amp o2: 16-bit gradients
    fp16 = GradCompress("fp16")
    assert "half the bytes" in fp16.label(fp32, 8)
    assert "no effect, the gradients are already 16-bit" in fp16.label(half, 8)
    assert "no effect on one GPU" in fp16.label(fp32, 1)
    assert GradCompress().label(fp32, 8) == ""
