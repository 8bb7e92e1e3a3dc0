"""Embedding tables follow the mixed-precision style: FP32 under autocast (nn.Embedding is
on no autocast list), 16-bit under o2; every byte that depends on it moves with it."""

import pytest

from embsim.engine.run import SimulationConfig, simulate
from embsim.errors import InputError
from embsim.workload import load_model
from embsim.workload.compute import optimizer_kernels
from embsim.workload.precision import table_bytes


def test_table_bytes_per_style():
    assert table_bytes(2, "autocast") == 4 and table_bytes(2, "o2") == 2
    assert table_bytes(4, "autocast") == table_bytes(4, "o2") == 4
    with pytest.raises(InputError, match="--amp"):
        table_bytes(2, "o1")


def _kernels(model, layer, bwd=False):
    kl = model.layer(layer).kernels
    return {k.name: k for k in (kl.bwd if bwd else kl.fwd)}


@pytest.mark.parametrize("amp, rows", [("autocast", 4), ("o2", 2)])
def test_ncf_rows_and_their_consumers(amp, rows):
    m = load_model("ncf-ml20m", batch=4096, seq=1, dtype="fp16", amp=amp)
    assert m.table_bytes == rows and m.dtype_bytes == 2
    gather = _kernels(m, "mf_user_lookup")["embedding.gather"]
    assert gather.row_bytes == 64 * rows
    assert _kernels(m, "mf_user_lookup", bwd=True)["embedding.zero_grad"].nbytes == 138493 * 64 * rows
    # the GMF product works on the rows: its bytes scale with their width
    assert _kernels(m, "gmf")["combine.mul"].nbytes == 3 * 4096 * 64 * rows
    # a GEMM fed FP32 rows casts its input down (and the gradient up); o2 has no cast
    casts = [n for n in _kernels(m, "mlp0") if n.startswith("linear.input")]
    assert bool(casts) == (rows == 4)
    assert not [n for n in _kernels(m, "mlp1") if n.startswith("linear.input")]
    # the layer cost rules agree with the kernels
    assert m.layer("gmf").fwd_bytes == 3 * 4096 * 64 * rows


def test_dlrm_casts_the_rows_after_the_lookup():
    auto = load_model("dlrm-criteo-f15", batch=1024, seq=1, dtype="fp16")
    rows = 1024 * 26 * 128
    fwd = _kernels(auto, "embedding")
    assert fwd["embedding.gather"].row_bytes == 128 * 4
    # DLE's joint_fused gather writes the half rows itself (zoo fused_cast); a separate
    # cast pass without it
    assert fwd["embedding.write_cast"].nbytes == rows * 2 and "embedding.rows.cast" not in fwd
    unfused = load_model("dlrm-criteo-f15", batch=1024, seq=1, dtype="fp16",
                         overrides={"layers": {"embedding": {"fused_cast": False}}})
    assert _kernels(unfused, "embedding")["embedding.rows.cast"].nbytes == rows * (4 + 2)
    # after the cast everything is 16-bit: the concat runs at the model's dtype
    assert _kernels(auto, "stack")["combine.cat"].nbytes == 2 * 27 * 1024 * 128 * 2
    tf32 = load_model("dlrm-criteo-f15", batch=1024, seq=1, dtype="tf32")
    assert not [n for n in _kernels(tf32, "embedding") if "cast" in n]


def test_optimizer_on_an_fp32_table_has_no_master_copy():
    auto = load_model("ncf-ml20m", batch=4096, seq=1, dtype="fp16")
    o2 = load_model("ncf-ml20m", batch=4096, seq=1, dtype="fp16", amp="o2")
    n = 1000
    a = optimizer_kernels(n, auto, table=True)[0].nbytes
    b = optimizer_kernels(n, o2, table=True)[0].nbytes
    # fused Adam: FP32 table = 3x4 param/grad + 2x8 state + 4 unscale = 32 B;
    # 16-bit table = 3x2 + 16 + 2x4 master + 2 unscale = 32 B as well, but in other tensors
    assert a == 32 * n and b == 32 * n
    # dense parameters follow the same rule (FP32 under autocast, 16-bit + master under o2)
    assert optimizer_kernels(n, auto)[0].nbytes == a and optimizer_kernels(n, o2)[0].nbytes == b


def _sim(amp, **kw):
    return simulate(SimulationConfig(model="ncf-ml20m", batch=65536, seq=1, dtype="fp16", amp=amp,
                                     iterations=2, efficiency_baseline=False, **kw))


def test_table_gradient_all_reduce_is_fp32_under_autocast():
    comm = lambda r: {c.name: c.nbytes for c in r.run.comm if c.iteration == 1}
    auto, o2 = comm(_sim("autocast", topology="dgx-a100:1x8")), comm(_sim("o2", topology="dgx-a100:1x8"))
    params = load_model("ncf-ml20m").params
    # DDP buckets: every gradient (tables and dense layers) grows from 2 to 4 bytes per element
    assert sum(auto.values()) - sum(o2.values()) == pytest.approx(2 * params)


def test_embrace_sends_fp32_rows_under_autocast():
    def a2a(amp):
        r = simulate(SimulationConfig(topology="dgx-a100:1x8", model="lstm-lm1b", strategy="embrace",
                                      dtype="fp16", amp=amp, iterations=2, efficiency_baseline=False))
        return {c.name: c.nbytes for c in r.run.comm if c.iteration == 1 and c.op == "alltoall"}
    auto, o2 = a2a("autocast"), a2a("o2")
    assert auto and auto.keys() == o2.keys()
    for k in auto:
        assert auto[k] == pytest.approx(2 * o2[k], rel=1e-3)    # looked-up rows and their gradients
