"""Scaling curves (sweep/scale.py) and their table: a point that does not fit is flagged."""

from embsim.report.scaling_table import scaling_table
from embsim.sweep.scale import scale_points, scaling_curve


def _rows(points, fits):
    return {p.hash: {"status": "ok", "result": {
        "step_time_ms": 100.0, "samples_per_s": 10.0 * (i + 1), "compute_source": "compute: x",
        "memory_per_gpu_bytes": 200e9 if not f else 10e9, "fits_in_memory": f,
        "compute_ms": 60.0, "exposed_comm_ms": 40.0,
        "exposed_by_op_ms": {"all_reduce": 10.0, "alltoall": 30.0 * i}}}
        for i, (p, f) in enumerate(zip(points, fits))}


def test_a_point_that_does_not_fit_says_so_in_the_table_and_the_curve():
    points = scale_points("dgx-h100", [8, 16], {"model": "gpt2", "strategy": "allreduce", "iterations": 2})
    curve = scaling_curve(points, _rows(points, [False, True]))
    assert [(c.fits_in_memory, c.memory_per_gpu_bytes) for c in curve] == [(False, 200e9), (True, 10e9)]
    table = scaling_table(curve, "t").splitlines()
    row8, row16 = (next(line for line in table if line.lstrip().startswith(n)) for n in ("8 ", "16 "))
    assert row8.endswith("does not fit: 200.0 GB per GPU") and "does not fit" not in row16
    # why the curve bends: compute, exposed communication and what the step waited on most
    assert "60.000      40.000  all_reduce 10.000 ms" in row8
    assert row16.endswith("60.000      40.000  alltoall 30.000 ms")


def test_scale_json_uses_simulates_keys_and_units():
    """scale --json once printed step_time_s (seconds) beside simulate's step_time_ms: a
    quantity the two share now has simulate's key, unit and value."""
    from embsim.report.result_json import scale_json
    points = scale_points("dgx-h100", [8, 16], {"model": "gpt2", "strategy": "allreduce", "iterations": 2})
    rows = _rows(points, [True, True])
    out = scale_json("gpt2", "allreduce", "fifo", scaling_curve(points, rows))
    for p, point in zip(points, out["points"]):
        simulated = rows[p.hash]["result"]
        shared = set(point) & set(simulated)
        assert shared == {"step_time_ms", "samples_per_s", "compute_source", "memory_per_gpu_bytes",
                          "fits_in_memory", "compute_ms", "exposed_comm_ms", "exposed_by_op_ms"}
        assert all(point[k] == simulated[k] for k in shared)
        assert not any(k.endswith("_s") and not k.endswith("_per_s") for k in point)


def test_the_table_names_the_limit_and_keeps_small_rates():
    """A ps point whose servers outgrow a node's host memory says so (simulate's host_memory,
    read back from the sweep row); a throughput below 1 keeps its digits."""
    from embsim.workload.host_memory import GiB, HostMemoryNeed
    points = scale_points("dgx-h100", [8, 16], {"model": "gpt2", "strategy": "ps", "iterations": 2})
    rows = _rows(points, [True, False])
    host = HostMemoryNeed("servers", 3_340_400_000_000, 2048 * GiB).as_dict()
    for p, samples in zip(points, (0.834, 1.2)):
        rows[p.hash]["result"].update(samples_per_s=samples, hbm_bytes=85.9e9,
                                      memory_per_gpu_bytes=10e9, host_memory=host)
    curve = scaling_curve(points, rows)
    assert curve[1].host_memory.fits is False
    table = scaling_table(curve, "t").splitlines()
    row8, row16 = (next(line for line in table if line.lstrip().startswith(n)) for n in ("8 ", "16 "))
    assert "        0.83 " in row8 and "         1.2 " in row16
    assert row16.endswith("does not fit: servers need 3,340.4 GB of host memory per node, node has 2,199.0 GB")
