import pytest

from embsim.topology.clusterspec import load_topology
from embsim.workload import load_model
from embsim.workload.breakdown import breakdown, kernel_class, main, mixed
from embsim.workload.compute import model_times
from embsim.workload.gpu_compute import for_gpu
from embsim.workload.kernels import gemm, stream


@pytest.fixture(scope="module")
def a100():
    return for_gpu(load_topology("dgx-a100").node.gpu)


def gpu_total(parts):
    return sum(v for k, v in parts.items() if k != "host")


def test_classes_of_kernels():
    assert kernel_class(gemm("x", 64, 64, 64)) == "gemm"
    assert kernel_class(gemm("x", 64, 64, 64, batch=8)) == "batched gemm"
    assert kernel_class(stream("x", 1e6, copy=True)) == "copy"
    assert kernel_class(stream("x", 1e6, mechanism="rng")) == "memory-bound rng"


def test_gpu_total_is_the_layer_times_when_gpu_bound(a100):
    # BERT-large at 128 x 128 in TF32: the encoder blocks' GPU time exceeds their dispatch
    # time; model_times charges the longer of the two per layer, so only the small
    # host-bound heads (pooler, NSP) add to the per-class GPU sum
    m = load_model("bert-large", batch=128, seq=128, dtype="tf32")
    parts = breakdown(m, a100)
    layers = sum(t.fwd_s + t.bwd_s for t in model_times(m, a100).values())
    assert gpu_total(parts) <= layers <= gpu_total(parts) + parts["host"]
    assert gpu_total(parts) == pytest.approx(layers, rel=1e-3)
    assert {"gemm", "batched gemm", "memory-bound layer"} <= set(parts)
    assert parts["gemm"] > parts["memory-bound layer"] > parts["batched gemm"]
    assert 0 < parts["host"] < gpu_total(parts)


def test_flash_attention_has_no_batched_products(a100):
    parts = breakdown(load_model("gpt2", batch=8, seq=1024, dtype="bf16"), a100)
    assert parts["flash attention"] > 0
    assert "batched gemm" not in parts


def test_mixed_is_the_weighted_sum(a100):
    def build(length):
        return load_model("bert-large", batch=16, seq=length, dtype="fp16", amp="o2"), a100
    a, b = breakdown(*build(128)), breakdown(*build(256))
    both = mixed(build, (128, 256), (0.25, 0.75))
    for key in a:
        assert both[key] == pytest.approx(0.25 * a[key] + 0.75 * b[key])


def test_main_prints_the_table(capsys):
    main(["--model", "bert-large", "--topology", "dgx-a100", "--dtype", "tf32",
          "--batch", "16", "--seq", "512"])
    out = capsys.readouterr().out
    assert "padding bins:64:8 of wikipedia" in out
    assert "GPU total" in out and "memory-bound layer" in out


@pytest.mark.parametrize("argv, words", [
    (["--model", "tiny-lm", "--model", "bert-base", "--topology", "dgx-a100"], "--model given twice"),
    (["--model", "tiny-lm", "--topology", "dgx-a100", "--batch", "0"], "--batch: '0': must be at least 1"),
    (["--model", "tiny-lm", "--topology", "dgx-a100", "--seq=0"], "--seq: '0': must be at least 1"),
])
def test_main_refuses_bad_arguments_in_one_line(argv, words, capsys):
    """--batch 0 / --seq 0 once fell back to the model's default silently."""
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2 and len(err.strip().splitlines()) == 1 and words in err, err
