"""A file that gives the accumulated batch as one batch (no accumulate key, as the shared
training files do) must time like the micro-batches it stands for plus one update."""

from embsim.engine.run import SimulationConfig, simulate

BASE = dict(topology="dgx-a100:1x8", model="bert-large", seq=128, dtype="fp16", iterations=2)


def test_whole_accumulated_batch_times_like_its_micro_batches():
    whole = simulate(SimulationConfig(**BASE, batch=8192))
    micro = simulate(SimulationConfig(**BASE, batch=256, accumulate=32))
    # same work; the micro-batches pay 32x the per-kernel launch/gap costs and run GEMMs
    # 32x smaller: a little slower, never faster
    assert micro.step_time >= whole.step_time
    assert micro.step_time < 1.03 * whole.step_time
    # the whole batch does not fit (its activations): the time is still the compute, the
    # memory figure is what says so
    assert not whole.fits_in_memory and micro.fits_in_memory
