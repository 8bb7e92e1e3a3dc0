"""p2p warps per work (enqueue.cc finishWorkP2p <= 2.21, sendrecv.h >= 2.22) and the fitted
per-warp copy rate."""

import pytest

from embsim.collectives import p2p
from embsim.collectives.constants import constants_for
from embsim.collectives.fit_p2p import SOURCE, _sources
from embsim.collectives.model import CollectiveModel
from embsim.collectives.validation import DATA_DIR, single_point_errors
from embsim.topology import load_topology


@pytest.mark.parametrize("version,works,read,warps", [
    ("2.18", 1, True, 8), ("2.18", 1, False, 9),      # 2 groups: recv 8, send 8+1 of 10 each
    ("2.19", 4, True, 2), ("2.19", 4, False, 3),      # 8 groups of 2.5 warps
    ("2.21", 8, False, 1),                            # 16 groups: one warp each
    ("2.22", 1, True, 9), ("2.22", 1, False, 10),     # 20 warps: recv 9, send 10
    ("2.30", 4, False, 3), ("2.30", 8, True, 1), ("2.30", 8, False, 1),
])
def test_fabric_warps(version, works, read, warps):
    assert p2p.fabric_warps(works, constants_for(version), read) == warps


def test_alltoall_on_8_gpus_is_warp_bound_sendrecv_is_not():
    model = CollectiveModel(load_topology("dgx-h100:1x8"))
    link = model.shape(tuple(range(8)))[0].intra_bw
    a2a = model.plan("alltoall", 8 << 30, range(8))
    bus = (8 << 30) / a2a.model_time / 1e9 * 7 / 8
    assert bus < 0.92 * link           # one send warp per peer on each of 32 channels
    sr = model.plan("sendrecv", 1 << 30, range(8))
    assert (1 << 30) / sr.model_time / 1e9 > 0.95 * link


def test_fitted_point_is_reproduced():
    (c,) = [c for c in single_point_errors(DATA_DIR / "single-points.yaml") if SOURCE in _sources()[c.name]]
    assert abs(c.points[0].error) < 0.005


def test_p2p_step_drops_the_ring_read_round_trip():
    from embsim.collectives import pipeline
    model = CollectiveModel(load_topology("dgx-a100:1x8"))
    shape = model.shape(tuple(range(8)))[0]
    assert pipeline.p2p_read(shape)
    ring = pipeline.step_us("Simple", shape, model.consts)
    assert p2p.step_us("Simple", shape, model.consts) == pytest.approx(ring - pipeline.SYNC_US["Simple"])
    assert p2p.step_us("LL", shape, model.consts) == pipeline.step_us("LL", shape, model.consts)
