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
