"""engine/accumulate.py: a step of k micro-batches synchronised every micro-batch adds the
k-1 plain ones' figures to the last one's, the named compute (DDP's bucket passes) too."""

import pytest

from embsim.engine.accumulate import combine_micro_batches
from embsim.engine.metrics import StepMetrics


def metrics(step, compute, copy_in):
    return StepMetrics(step_time=step, compute=compute, exposed_comm=step - compute, comm_bytes_per_gpu={},
                       comm_time={}, link_utilisation={}, iterations_measured=2,
                       extra_by_tag={"ddp-copy-in": copy_in})


def test_extra_ops_add_over_the_micro_batches():
    both = combine_micro_batches(metrics(2.0, 1.5, 0.1), metrics(3.0, 2.5, 0.2), 4)
    assert both.compute == pytest.approx(3 * 1.5 + 2.5)
    assert both.extra_by_tag == {"ddp-copy-in": pytest.approx(3 * 0.1 + 0.2)}


def test_every_per_step_figure_adds_over_the_micro_batches():
    """comm_around, compute_stretch and link_bytes were dropped (left at their defaults)."""
    def full(scale):
        return StepMetrics(step_time=2.0 * scale, compute=1.5 * scale, exposed_comm=0.5 * scale,
                           comm_bytes_per_gpu={"allreduce": 10.0 * scale}, comm_time={"allreduce": 0.4 * scale},
                           link_utilisation={}, iterations_measured=2, comm_around={"allreduce": 0.01 * scale},
                           compute_stretch=0.05 * scale, link_bytes={"nvlink": 100.0 * scale})
    both = combine_micro_batches(full(1.0), full(2.0), 3)
    assert both.comm_around == {"allreduce": pytest.approx(2 * 0.01 + 0.02)}
    assert both.compute_stretch == pytest.approx(2 * 0.05 + 0.1)
    assert both.link_bytes == {"nvlink": pytest.approx(2 * 100.0 + 200.0)}
    assert both.comm_bytes_per_gpu == {"allreduce": pytest.approx(40.0)}
