"""The JSON forms of simulation and compare results (`--json`, sweep rows): the one place
that turns typed results into dicts."""

from __future__ import annotations

from .provenance import topology_file_json, workload_record


def link_json(busiest) -> dict | None:
    """The busiest link class: its links' mean utilisation and its hottest link's, each
    link's bytes over capacity x the steady state (step averages, not peaks in time)."""
    if busiest is None:
        return None
    kind, mean, hottest = busiest
    return {"kind": kind, "mean_utilisation": mean, "hottest_link_utilisation": hottest}


def cluster_json(cluster) -> dict:
    """The cluster, and the topology file it was read from (report/provenance.py)."""
    return {"preset": cluster.preset, "nodes": cluster.nodes,
            "gpus_per_node": cluster.gpus_per_node, "gpus": cluster.gpus,
            **topology_file_json(cluster.file)}


def simulation_json(result) -> dict:
    busiest = result.busiest_link
    memory = result.memory.as_dict()
    return {
        "topology": cluster_json(result.cluster),
        "model": result.model,
        "workload": workload_record(result),
        "strategy": result.strategy,
        "scheduler": result.scheduler,
        "step_time_ms": result.step_time * 1e3,
        "samples_per_s": result.samples_per_s,
        "tokens_per_s": result.tokens_per_s,
        "compute_ms": result.compute * 1e3,
        # of compute_ms: what the compute ran slowed while its collectives were in flight
        "compute_slowed_by_comm_ms": result.compute_stretch * 1e3,
        # of compute_ms: DDP's copies into / out of its flat gradient buckets and its divides,
        # by pass (engine.bucket_passes names their sources)
        "compute_bucket_passes_ms": {p.tag: t * 1e3 for p, t in result.bucket_passes},
        "exposed_comm_ms": result.exposed_comm * 1e3,
        "comm_bytes_per_gpu": result.comm_bytes_per_gpu,
        # bytes a node sends into the network a step (null on one node)
        "net_bytes_per_node": result.net_bytes_per_node,
        # each op's collective time per step (the table's "... per GPU X in Y ms")
        "comm_ms": {op: t * 1e3 for op, t in result.comm_time.items()},
        # copies, host work and tail kernels around the transfers, which comm_ms leaves out
        "comm_around_ms": {op: t * 1e3 for op, t in result.comm_around.items()},
        # each op's collectives per step (a collective of some ranks counts for its share)
        "collectives_per_step": dict(result.comm_count),
        # ms per step during which at least one collective runs
        "comm_wall_ms": result.comm_wall * 1e3,
        # the exposed communication by the collective the slowest GPUs' stream waited on
        "exposed_by_op_ms": {op: t * 1e3 for op, t in result.exposed_by_op.items()},
        "memory_per_gpu_bytes": memory["total"],
        "memory_breakdown_bytes": memory,
        "hbm_bytes": result.hbm_bytes,
        # what a node's host memory holds for the strategy (ps servers' shards, CPU tables)
        # against the topology's host_memory_gb (null: nothing; its fits null: not given)
        "host_memory": None if result.memory.host is None else result.memory.host.as_dict(),
        # the GPU's HBM and, where checked, the node's host memory
        "fits_in_memory": result.fits_in_memory,
        "compute_source": result.compute_source,
        "events": result.events,
        # no wall-clock time: the same inputs and seed print the same bytes (result.wall_s has it)
        "scaling_efficiency": result.scaling_efficiency,
        # max_utilisation: the hottest link's, by the name simulate's JSON first gave it
        "busiest_link": None if busiest is None else
            {**link_json(busiest), "max_utilisation": busiest[2]},
        "notes": list(result.notes),
    }


def compare_row_json(row) -> dict:
    out = {"strategy": row.strategy, "scheduler": row.scheduler,
           "step_time_ms": None if row.step_time is None else row.step_time * 1e3,
           "speedup": row.speedup,
           "exposed_comm_ms": None if row.exposed_comm is None else row.exposed_comm * 1e3,
           "compute_ms": None if row.compute is None else row.compute * 1e3,
           "compute_slowed_by_comm_ms": row.compute_stretch * 1e3,
           "net_bytes_per_node": row.net_bytes_per_node,
           # by op, as simulate gives them, and their totals
           "comm_bytes_per_gpu": dict(row.comm_bytes_by_op),
           "comm_bytes_per_gpu_total": row.comm_bytes_per_gpu,
           "collectives_per_step": dict(row.collectives_by_op),
           "collectives_per_step_total": row.collectives,
           "comm_wall_ms": None if row.comm_wall is None else row.comm_wall * 1e3,
           "exposed_by_op_ms": {op: s * 1e3 for op, s in row.exposed_by_op},
           "memory_per_gpu_bytes": None if row.memory_per_gpu is None else int(row.memory_per_gpu),
           "host_memory": None if row.host_memory is None else row.host_memory.as_dict(),
           "fits_in_memory": row.fits_in_memory,
           "notes": list(row.notes)}
    if row.refused is not None:
        out["refused"] = row.refused
    return out


def compare_json(result) -> dict:
    # compare's ranking rule, imported here so that simulation_json stays free of the engine
    from ..compare import TRAINING_MEAN_ERROR, best_fitting, unresolved_with_best, untuned_defaults
    best = best_fitting(result.rows)      # None: no row ran and fits, so nothing is ranked best
    return {"baseline": result.baseline, "compute_source": result.compute_source,
            "rows": [compare_row_json(r) for r in result.rows],
            "resolution": {"training_mean_error": TRAINING_MEAN_ERROR,
                           "best": None if best is None else best.label,
                           "not_resolved_against_best": unresolved_with_best(result.rows),
                           # the best row's scheduler knobs its authors tune per job, at defaults
                           "best_at_untuned_defaults": [] if best is None else untuned_defaults(best)}}


def scale_json(model: str, strategy: str, scheduler: str, curve) -> dict:
    """`embsim scale --json`: one row per GPU count, with simulate's key names and units
    (step_time_ms, samples_per_s, memory_per_gpu_bytes, fits_in_memory, compute_source);
    efficiency is per-GPU throughput against the curve's smallest run, not simulate's
    scaling_efficiency (against N x one GPU), hence its own name; error is why a point failed;
    workload is simulate's (None where the point failed)."""
    return {"model": model, "strategy": strategy, "scheduler": scheduler,
            "points": [{"gpus": c.gpus, "topology": c.topology, "step_time_ms": c.step_time_ms,
                        "samples_per_s": c.samples_per_s, "efficiency": c.efficiency,
                        "error": c.error, "compute_source": c.compute_source,
                        "memory_per_gpu_bytes": c.memory_per_gpu_bytes,
                        "host_memory": None if c.host_memory is None else c.host_memory.as_dict(),
                        "fits_in_memory": c.fits_in_memory, "compute_ms": c.compute_ms,
                        "exposed_comm_ms": c.exposed_comm_ms,
                        "exposed_by_op_ms": c.exposed_by_op_ms,
                        "workload": c.workload} for c in curve]}
