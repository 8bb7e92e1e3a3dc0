"""The choices calibrate's interference measurement makes before it times anything."""

from embsim.calibrate.interference import comparable_bytes, gradient_bytes, representative_layer
from embsim.calibrate.spec import model_spec
from embsim.trace import CollectiveCurve, LayerPoint, LayerTiming


def timing(name, kind, seconds):
    return LayerTiming(name, kind, "", (LayerPoint(4, seconds / 2, seconds / 2, 0, 0, 3),))


def test_representative_layer_is_the_costliest_shape_with_a_gradient():
    bert = model_spec("bert-base")
    timings = [timing(l.name, l.kind, 0.001) for l in bert.layers]
    timings = [timing("mlm_output", "output_projection", 0.005) if t.name == "mlm_output" else
               timing("mlm_loss", "softmax_loss", 0.5) if t.name == "mlm_loss" else t
               for t in timings]
    # twelve encoders at 1 ms outweigh one 5 ms projection; the loss has no gradient
    assert representative_layer(bert, timings, 4).name == "encoder.0"


def test_gradient_bytes_and_comparable_size():
    tiny = model_spec("tiny-lm")
    decoder = next(l for l in tiny.layers if l.name == "decoder")
    assert gradient_bytes(decoder, tiny) == 4 * (10000 * 64 + 10000)
    curve = CollectiveCurve("all_reduce", 2, "all", (1024, 1 << 20), (1e-4, 1e-3), (0, 0))
    n = comparable_bytes(0.01, curve, 1 << 20)          # 1 ms per MiB beyond the last size
    assert curve.time_at(n) >= 0.01 > curve.time_at(n // 2)
    assert comparable_bytes(1e-6, curve, 3000) == 3000  # already long enough
