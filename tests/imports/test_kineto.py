"""Kineto import on a profile these tests record themselves with torch.profiler on CPU."""

import json

import pytest

torch = pytest.importorskip("torch")
from torch.profiler import ProfilerActivity, profile, record_function  # noqa: E402

from embsim.imports import ProfileError, load_profile, trace_from_profile  # noqa: E402
from embsim.trace import load_trace, write_trace  # noqa: E402
from embsim.workload import load_model  # noqa: E402


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(500, 32)
        self.big = torch.nn.Linear(32, 512)     # ~16x the work of `small`
        self.small = torch.nn.Linear(512, 2)

    def forward(self, x, annotate):
        if not annotate:
            return self.small(self.big(self.emb(x)))
        with record_function("fwd:word_embedding"):
            h = self.emb(x)
        with record_function("fwd:decoder"):
            h = self.big(h)
        with record_function("fwd:loss"):
            return self.small(h)


def _record(tmp_path, annotate, steps=3):
    torch.manual_seed(0)
    model, x = Tiny(), torch.randint(0, 500, (16, 8))
    kwargs = {} if annotate else {"with_stack": True, "with_modules": True}
    with profile(activities=[ProfilerActivity.CPU], **kwargs) as prof:
        for _ in range(steps):
            model(x, annotate).sum().backward()
    path = tmp_path / "profile.json"
    prof.export_chrome_trace(str(path))
    return path


def test_record_function_ranges(tmp_path):
    layers = load_profile(_record(tmp_path, annotate=True))
    assert layers.timing == "cpu" and layers.device == "cpu"
    assert set(layers.layers) == {"word_embedding", "decoder", "loss"}
    for s in layers.layers.values():
        assert len(s.fwd_s) == 3 and len(s.bwd_s) == 3     # backward found by sequence number
        assert all(t > 0 for t in s.fwd_s + s.bwd_s)
    trace = trace_from_profile(layers, load_model("tiny-lm", batch=16, seq=8), 16, 8, "", "test")
    back = load_trace(write_trace(tmp_path / "t.yaml", trace))
    assert back.layers["decoder"].kind == "output_projection"
    assert back.layers["decoder"].points[0].batch == 16


def test_module_ranges_and_rename(tmp_path):
    path = _record(tmp_path, annotate=False)
    layers = load_profile(path, rename={"Embedding_0": "word_embedding"})
    assert "word_embedding" in layers.layers and "Linear_0" in layers.layers
    assert layers.layers["word_embedding"].bwd_s


def test_gpu_kernels_are_used_when_present(tmp_path):
    # Kineto's GPU layout: the launch (cuda_runtime) inside the range and the kernel share
    # a correlation id; the layer's time is the kernel's, not the CPU range's.
    events = [
        {"ph": "X", "cat": "user_annotation", "name": "fwd:decoder", "ts": 0, "dur": 100, "tid": 1},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 10, "dur": 5, "tid": 1,
         "args": {"correlation": 7}},
        {"ph": "X", "cat": "kernel", "name": "gemm", "ts": 30, "dur": 42, "tid": 99,
         "args": {"correlation": 7}},
        {"ph": "X", "cat": "user_annotation", "name": "bwd:decoder", "ts": 200, "dur": 100, "tid": 1},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 210, "dur": 5, "tid": 1,
         "args": {"correlation": 8}},
        {"ph": "X", "cat": "kernel", "name": "gemm_bwd", "ts": 230, "dur": 84, "tid": 99,
         "args": {"correlation": 8}},
    ]
    path = tmp_path / "gpu.json"
    path.write_text(json.dumps({"traceEvents": events, "deviceProperties": [{"name": "NVIDIA H100"}]}))
    layers = load_profile(path)
    assert layers.timing == "gpu-kernels" and layers.device == "NVIDIA H100"
    assert layers.layers["decoder"].fwd_median == pytest.approx(42e-6)
    assert layers.layers["decoder"].bwd_median == pytest.approx(84e-6)


def test_bad_profiles(tmp_path):
    (tmp_path / "cut.json").write_text('{"traceEvents": [{"ph": "X"')
    with pytest.raises(ProfileError, match="not valid JSON"):
        load_profile(tmp_path / "cut.json")
    (tmp_path / "none.json").write_text('{"traceEvents": []}')
    with pytest.raises(ProfileError, match="no layer ranges"):
        load_profile(tmp_path / "none.json")


def test_import_profile_refuses_another_gpu_and_missing_layers(tmp_path, capsys):
    """A profile's layer times are its device's, and a trace-driven run needs every layer's:
    both were written without a word and refused only at the first simulate (probe, 2026-12-05)."""
    from embsim.cli import main
    path = _record(tmp_path, annotate=True)          # a CPU profile of 3 of tiny-lm's layers
    out = tmp_path / "t.yaml"
    assert main(["import-profile", str(path), "--model", "tiny-lm", "--topology", "dgx-h100",
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "profiled on 'cpu', but --topology dgx-h100 has 'H100-SXM5-80GB'" in err and not out.exists()
    assert main(["import-profile", str(path), "--model", "tiny-lm", "--topology", "local-cpu",
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "no range for layer(s) lstm.0, lstm.1 of model tiny-lm" in err and not out.exists()
