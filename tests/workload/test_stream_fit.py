"""The framework's activation-kernel bandwidth fraction is what the fit on spcl/substation's
V100 BERT-layer timings gives; one value explains eager PyTorch and the fused encoders."""

import pytest

from embsim.topology import load_topology
from embsim.workload import stream_fit
from embsim.workload.gpu_compute import for_gpu
from embsim.workload.gpu_props import FRAMEWORK_STREAM_EFFICIENCY
from embsim.workload.kernel_time import kernel_time
from embsim.workload.kernels import LAYER, stream
from embsim.workload.precision import precision


@pytest.fixture(scope="module")
def result():
    return stream_fit.fit()


def test_shipped_constant_is_the_fit(result):
    assert FRAMEWORK_STREAM_EFFICIENCY == result.efficiency


def test_data_set_is_the_published_one():
    rows = stream_fit.load_rows()
    assert [(r.implementation, r.batch, r.seq) for r in rows][:2] == [("pytorch", 8, 512), ("pytorch", 96, 128)]
    assert rows[0].seconds == pytest.approx(9.14e-3)


def test_fit_explains_eager_and_fused_layers(result):
    assert result.rows == 2
    assert max(map(abs, result.errors)) < 0.03
    assert max(map(abs, result.check_errors)) < 0.07
    # at full copy bandwidth the eager layer would come out far too fast
    assert all(e < -0.25 for e in stream_fit.errors(stream_fit.load_rows()[:2], 1.0))


def test_only_activation_kernels_pay_it():
    gpu = for_gpu(load_topology("dgx-a100:1x1").node.gpu)
    p = precision("fp16")
    gap = gpu.kernel_gap_s
    act = kernel_time(stream("x", 1e9, mechanism=LAYER), gpu, p, 2).gpu_s - gap
    opt = kernel_time(stream("x", 1e9, param_pass=True), gpu, p, 2).gpu_s - gap
    rnn = kernel_time(stream("x", 1e9, recurrent=True), gpu, p, 2).gpu_s - gap - gpu.recurrent_step_s / 2
    assert act == pytest.approx(opt / FRAMEWORK_STREAM_EFFICIENCY, rel=1e-3)
    assert rnn == pytest.approx(opt, rel=1e-3)


def test_cpu_devices_keep_their_measured_rates():
    # a CPU's calibrated rates are the framework's own kernels: no fraction on top
    assert for_gpu(load_topology("local-cpu").node.gpu).stream_efficiency == 1.0
    assert for_gpu(load_topology("dgx-h100:1x1").node.gpu).stream_efficiency == FRAMEWORK_STREAM_EFFICIENCY
