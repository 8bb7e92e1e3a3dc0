"""Turn what real tools measured (a Kineto profile, nccl-tests logs) into embsim traces.

The traces carry an honest provenance: the tool and file they came from, not the
machine that ran the import.
"""

from __future__ import annotations

import datetime as _dt
import platform
import statistics
from pathlib import Path

from ..errors import InputError
from ..trace import (SCHEMA_VERSION, CollectiveCurve, LayerPoint, LayerTiming, Provenance, Trace)
from ..trace.io import COLLECTIVE_OPS
from .kineto import ProfileLayers
from .nccl_tests_log import NcclTestsRun


def _iqr(values) -> float:
    if len(values) < 2:
        return 0.0
    q = statistics.quantiles(values, n=4, method="inclusive")
    return q[2] - q[0]


def _file_date(path: str) -> str:
    try:
        mtime = Path(path).stat().st_mtime
    except OSError:
        return ""
    return _dt.datetime.fromtimestamp(mtime, _dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def trace_from_profile(profile: ProfileLayers, model, batch: int, seq: int, topology: str,
                       command: str) -> Trace:
    """`model`: the zoo Model whose layer names the profile's ranges must use."""
    kinds = {layer.name: layer.kind for layer in model.layers}
    unknown = [name for name in profile.layers if name not in kinds]
    if unknown:
        raise InputError(f"{profile.source}: layers {', '.join(unknown)} are not layers of model "
                         f"{model.name} ({', '.join(kinds)}); name the ranges after them or "
                         f"use --rename RANGE=LAYER")

    layers = {}
    for name, s in profile.layers.items():
        point = LayerPoint(batch=batch, fwd_s=s.fwd_median, bwd_s=s.bwd_median,
                           fwd_spread_s=_iqr(s.fwd_s), bwd_spread_s=_iqr(s.bwd_s),
                           reps=len(s.fwd_s))
        layers[name] = LayerTiming(name=name, kind=kinds[name], variant="", points=(point,))
    world = int(profile.distributed.get("world_size", 1) or 1)
    prov = Provenance(
        host=profile.host or "unknown", date=_file_date(profile.source), command=command,
        world=world, backend=str(profile.distributed.get("backend", "none")),
        backend_version="unknown", torch="unknown (Kineto profile)",
        python=platform.python_version(), devices=(profile.device,),
        label=f"Kineto profile, {profile.timing} time")
    return Trace(schema_version=SCHEMA_VERSION, device=profile.device, model=model.name, seq=seq,
                 topology=topology, provenance=prov, layers=layers, optimizer=(), collectives=(),
                 steps={}, token_stats=(), source=profile.source)


def collective_curve(run: NcclTestsRun, placement: str = "in-place") -> CollectiveCurve:
    """One run as a measured curve (one dtype/redop series; sizes must be increasing)."""
    if run.op not in COLLECTIVE_OPS:
        raise InputError(f"{run.where}: {run.op} curves cannot go into a trace "
                         f"(traces hold {', '.join(COLLECTIVE_OPS)})")
    if not run.ranks:
        raise InputError(f"{run.where}: the log shows {run.rank_lines_shown} and {run.op}'s table "
                         f"does not fix the rank count; pass --topology (the measured system)")
    series = sorted({(r.dtype, r.redop) for r in run.rows})
    if len(series) > 1:
        raise InputError(f"{run.where}: several data types/reductions in one run "
                         f"({', '.join('/'.join(s) for s in series)}); run nccl-tests with one -d")
    by_size = {}
    for row in run.rows:
        m = row.measurement(placement)
        if m is not None:
            by_size.setdefault(row.size, []).append(m.time_s)
    sizes = sorted(s for s in by_size if s > 0)
    if not sizes:
        raise InputError(f"{run.where}: no usable rows")
    return CollectiveCurve(op=run.op, ranks=run.ranks, scope="all", sizes=tuple(sizes),
                           median_s=tuple(statistics.median(by_size[s]) for s in sizes),
                           spread_s=tuple(_iqr(by_size[s]) for s in sizes))


def _one_system(runs: list[NcclTestsRun]) -> None:
    """A trace is one machine's: logs that name different GPUs or NCCL releases are not."""
    for what, key in (("GPU", lambda r: ", ".join(sorted(set(r.devices)))),
                      ("NCCL version", lambda r: r.nccl_version or "")):
        named = [r for r in runs if key(r)]
        for other in named[1:]:
            if key(other) != key(named[0]):
                raise InputError(f"{other.where}: {what} {key(other)}, but {named[0].where} ran "
                                 f"{key(named[0])}: a trace is one system's; import them separately")


def trace_from_nccl_tests(runs: list[NcclTestsRun], topology: str, command: str,
                          placement: str = "in-place", nodes: int | None = None) -> Trace:
    """`nodes`: the measured system's node count, for runs whose logs leave out rank lines."""
    if not runs:
        raise InputError("no nccl-tests runs given")
    curves = {}
    for run in runs:
        curve = collective_curve(run, placement)
        key = (curve.op, curve.ranks)
        if key in curves:
            raise InputError(f"{run.where}: a second {curve.op} curve on {curve.ranks} ranks "
                             f"(also in {curves[key][1].where}); import one of them")
        curves[key] = (curve, run)
    _one_system(runs)
    first = runs[0]
    devices = tuple(dict.fromkeys(d for r in runs for d in r.devices)) or ("unknown",)
    versions = sorted({r.nccl_version for r in runs if r.nccl_version})
    prov = Provenance(
        host=",".join(first.hosts) or "unknown", date=_file_date(first.source), command=command,
        world=max(r.ranks for r in runs), backend="nccl",
        backend_version=",".join(versions) or "unknown", torch="none (nccl-tests)",
        python=platform.python_version(), devices=devices, label="nccl-tests logs",
        nodes=max([r.n_nodes for r in runs if r.complete] + [nodes or 1]))
    # A trace of network curves only: no layers, so no model; seq is required to be positive.
    return Trace(schema_version=SCHEMA_VERSION, device=devices[0], model="none", seq=1,
                 topology=topology, provenance=prov, layers={}, optimizer=(),
                 collectives=tuple(c for c, _ in sorted(curves.values(), key=lambda cr: (cr[0].op, cr[0].ranks))),
                 steps={}, token_stats=(), source="")
