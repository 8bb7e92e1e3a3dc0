"""The size-aware alternatives to the framework fraction, fitted on the fraction's own data
(spcl/substation's V100 BERT-layer timings): why the shipped model keeps one fraction."""

from dataclasses import replace

import pytest

from embsim.workload import stream_alternatives as alt
from embsim.workload import stream_fit
from embsim.workload.costs import Shape
from embsim.workload.gemm_fit import V100
from embsim.workload.kernel_time import kernel_time
from embsim.workload.kernels import stream
from embsim.workload.kernels_layers import transformer_block
from embsim.workload.precision import precision


@pytest.fixture(scope="module")
def rows():
    return stream_fit.load_rows()


def test_fixed_cost_fit_is_far_above_a_kernel_launch(rows):
    c, a = alt.fixed_cost(rows)
    # the eager layer's excess needs tens of µs per kernel: > 5x a near-empty kernel's whole time
    assert c > 5 * alt.PUBLISHED_SMALL_KERNEL_S
    assert a.errors and a.check_errors


def test_each_eager_row_wants_its_own_fixed_cost(rows):
    eager = [r for r in rows if r.implementation == stream_fit.FITTED]
    per_row = [alt.fixed_cost([r])[0] for r in eager]
    # the bigger layer (b96 s128: 1.5x the bytes, same kernel count) needs a larger constant
    assert max(per_row) / min(per_row) > 1.3


def test_both_terms_together_leave_no_room_for_a_fixed_cost(rows):
    c, f = alt.fixed_and_fraction(rows)
    assert c < 0
    assert 0.3 < f < 0.4


def test_fixed_and_fraction_solution_reproduces_the_rows(rows):
    # an exact solve in the layer model's own terms: inserting it gives both times back
    # (a negative gap is not physical; it only checks the algebra)
    c, f = alt.fixed_and_fraction(rows)
    eager = [r for r in rows if r.implementation == stream_fit.FITTED]
    g = replace(V100, kernel_gap_s=c, stream_efficiency=f)
    for r in eager:
        assert alt._layer(r, g) == pytest.approx(r.seconds, rel=1e-6)


def test_pointwise_split_fits_eager_but_not_fused(rows):
    f, a = alt.pointwise_split(rows)
    assert f < stream_fit.fit(rows).efficiency
    assert max(map(abs, a.errors)) < 0.03
    assert min(a.check_errors) > 0.15


def test_substation_softmax_streams_near_copy_bandwidth():
    fr = dict(alt.softmax_fraction())
    assert set(fr) == {"HBJK", "BHJK"}
    # 16 x 8 x 512 x 512 FP16 in + out = 134 MB in ~191 µs on V100 (776 GB/s copy)
    assert all(0.85 < v < 1.0 for v in fr.values())


def test_pointwise_kernels_are_the_contiguous_maps():
    lk = transformer_block({"dim": 1024, "heads": 16, "ffn": 4096}, Shape(8, 128, 2, 2), cross=False)
    kinds = {k.name: k.pointwise for k in lk.fwd + lk.bwd if k.kind == "stream"}
    for name in ("ffn.act", "ffn.act_bwd", "ffn.residual", "ffn.dropout", "self_attn.attn_dropout"):
        assert kinds[name], name
    for name in ("self_attn.softmax", "ffn.norm", "ffn.norm.bwd", "ffn.up.bias_grad",
                 "self_attn.heads_copy"):
        assert not kinds[name], name


def test_shipped_model_times_pointwise_kernels_at_the_fraction():
    # the flag is a classification for the alternative fit, not a second rate
    p = precision("fp16")
    g = replace(V100, stream_efficiency=0.37)
    assert (kernel_time(stream("x", 1e8, pointwise=True), g, p, 2).gpu_s
            == kernel_time(stream("x", 1e8), g, p, 2).gpu_s)


def test_report_names_every_alternative():
    text = "\n".join(alt.report())
    for part in ("shipped", "fixed per-kernel cost", "fixed cost + fraction", "pointwise maps",
                 "substation's fused softmax"):
        assert part in text
