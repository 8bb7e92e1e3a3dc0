"""engine/result.py: a run fits when every limit checked holds, the GPU's HBM and a node's
host memory for the strategy's servers; an unknown host memory is not a failure."""

from types import SimpleNamespace

from embsim.engine.result import SimulationResult
from embsim.workload.host_memory import HostMemoryNeed
from embsim.workload.memory import MemoryBreakdown


def result(total, hbm, host=None):
    memory = MemoryBreakdown(params=total, grads=0, optimizer_state=0, master_weights=0, activations=0,
                             host=host)
    return SimulationResult(config=None, cluster=None, model="m", metrics=SimpleNamespace(extra_by_tag={}),
                            samples_per_s=1.0, tokens_per_s=1.0, memory=memory, hbm_bytes=hbm,
                            compute_source="", events=0, wall_s=0.0, scaling_efficiency=None)


def test_fits_in_memory_checks_hbm_and_a_known_host_memory():
    assert result(10, 20).fits_in_memory
    assert not result(30, 20).fits_in_memory
    assert not result(10, 20, HostMemoryNeed("servers", 5, 4)).fits_in_memory
    assert result(10, 20, HostMemoryNeed("servers", 5, 4)).fits_in_hbm
    assert result(10, 20, HostMemoryNeed("servers", 5, None)).fits_in_memory     # not checked
    assert result(10, 20, HostMemoryNeed("servers", 3, 4)).fits_in_memory
    assert result(10, 20).bucket_passes == ()
