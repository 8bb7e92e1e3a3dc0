"""Measured vs simulated nccl-tests curves: real logs and the project's YAML validation files.

The YAML files (embsim/validation_data) are compared by embsim.collectives.validation,
and real logs are compared the same way here, so both give the same numbers: one
`PointError` per size, error = simulated/measured time - 1 (= measured/simulated busbw - 1),
and per curve the mean and the max of |error| over sizes >= 64 KiB (below that, launch
overheads the model does not claim to reproduce dominate).
"""

from __future__ import annotations

from pathlib import Path

from ..collectives import CollectiveModel
from ..collectives.nccl_env import env_from_text
from ..collectives.nccl_transport import held_settings, noted_settings, refuse_unmodelled
from ..collectives import nccl_tests as nt
from ..collectives.busbw import busbw_factor, canonical_op
from ..collectives.constants import nearest_table
from ..collectives.releases import proto_filter, release_view
from ..collectives.validation import (DATA_DIR, CurveError, PointError, curve_errors, run_filters,
                                      single_point_errors, validate_all)
from ..errors import InputError
from ..imports import NcclTestsRun, NotNcclTestsLog, load_nccl_tests_log, with_rank_count
from ..topology import TopologySpec, load_topology
from ..topology.device_names import device_mismatch, infer_system, presets_for_device
from ..words import counted
from ..yamlio import load_yaml


# No server holds more GPUs (a DGX-2: 16); a preset node beyond it is an NVLink domain of
# several hosts (a GB200 NVL72 rack: 18 trays of 4), whose hosts a log lists, not its nodes.
MAX_GPUS_PER_HOST = 16


def topology_for_run(spec: str, run: NcclTestsRun):
    """The topology named by --topology and the run on it: shaped like the log (its hosts x
    GPUs per host) when the spec has no shape, even where the preset's own shape has as many
    GPUs (a 2x4 log on an 8-GPU board's preset is not 1x8). A shape given is used as given.
    A log without all its rank lines cannot say how many GPUs on how many nodes ran, so the
    topology as named says it (checked against the log's numbers)."""
    parsed = TopologySpec.parse(spec)
    topo = load_topology(parsed)
    if not run.complete:
        return topo, with_rank_count(run, topo.n_gpus, f"--topology {spec}")
    even = run.ranks % run.n_nodes == 0
    hosts_are_nodes = topo.gpus_per_node <= MAX_GPUS_PER_HOST
    if topo.n_gpus == run.ranks and (parsed.shape is not None or not hosts_are_nodes):
        return topo, run
    if parsed.shape is None and even:
        shaped = load_topology(parsed.with_shape(run.n_nodes, run.gpus_per_node))
        if shaped.n_gpus == run.ranks:
            return shaped, run
    if topo.n_gpus == run.ranks:           # hosts of unequal GPU counts: the topology as named
        return topo, run
    shape = f"{run.n_nodes}x{run.gpus_per_node}" if even else "NxG"
    raise InputError(f"{run.where}: {run.ranks} ranks on {run.n_nodes} host(s) but --topology "
                     f"{spec} has {topo.n_gpus} GPUs; pass --topology PRESET:{shape}")


def _node_count_note(run: NcclTestsRun, topo, spec: str) -> str:
    """A note where the topology as given has another node count than the log's ranks."""
    if not run.complete or topo.n_nodes == run.n_nodes or topo.gpus_per_node > MAX_GPUS_PER_HOST:
        return ""
    return (f"the log's ranks are on {counted(run.n_nodes, 'node')}; --topology {spec} simulates "
            f"{topo.n_nodes}")


def model_version(logged: str | None) -> str | None:
    """The cost-model table for a logged NCCL version (its own release from 2.18 to 2.30,
    else the nearest one)."""
    return nearest_table(logged)


def run_errors(run: NcclTestsRun, spec: str, placement: str = "in-place",
               inferred: str = "") -> CurveError:
    """One log run against `spec`; `inferred` is the note of a system taken from the log's
    device names (no --topology), which the output carries."""
    topo, run = topology_for_run(spec, run)
    nodes_note = _node_count_note(run, topo, spec)
    release = release_view(run.nccl_version)
    table = release.table
    nccl = f"{run.nccl_version} (model {table})" if table else "unknown"
    # the run's NCCL_* settings, from its command line or as its NCCL logged them: a
    # transport the model lacks is refused; NCCL_ALGO / NCCL_PROTO / NCCL_NVLS_ENABLE and
    # the buffer/chunk sizes drive the model
    env_text = "\n".join(run.env_lines)
    refuse_unmodelled(env_text, topo, run.where, release.version)
    algo, proto = run_filters(env_text)
    model = CollectiveModel(topo, nccl_version=release.version, algo=algo, proto=proto_filter(release, proto),
                            nccl_env=env_from_text(env_text, f"{run.where}:"),
                            threshold_choice=release.threshold_choice)
    per_process = run.gpus_per_process
    mismatch = device_mismatch(run.devices, topo.node.gpu.model)
    notes = "; ".join(n for n in (inferred, nodes_note, mismatch, *run.notes, release.note, *model.notes,
                                  held_settings(env_text), noted_settings(env_text),
                                  nt.launch_note(per_process)) if n)
    note = f" [{notes}]" if notes else ""
    series = sorted({r.dtype for r in run.rows})
    points = []
    for dtype in series:
        rows = [r for r in run.rows if r.dtype == dtype]
        sim = nt.run(model, run.op, [r.size for r in rows], dtype, gpus_per_process=per_process,
                     source=run.where)
        factor = busbw_factor(run.op, run.ranks)
        for row, s in zip(rows, sim):
            m = row.measurement(placement)
            if m is None:
                continue
            if s.size != row.size:
                raise InputError(f"{run.source} line {row.line}: size {row.size} is not one "
                                 f"nccl-tests makes for {run.op} on {run.ranks} ranks")
            # From the time, not the printed busbw: two decimals are 0.00 at small sizes.
            measured = row.size / m.time_s * factor / 1e9
            points.append(PointError(row.size, measured, s.busbw, s.algo, s.proto))
    if not points:
        raise InputError(f"{run.where}: no rows to compare")
    name = Path(run.source).name + (f"@{run.line}" if run.line > 1 else "")
    device = run.devices[0] if run.devices else "GPU (device not in the log)"
    nodes = run.n_nodes if run.complete else topo.n_nodes
    listed = "" if run.complete else f"; rank lines: {len(run.listed_ranks)} of {run.ranks} in the log"
    return CurveError(name, f"{run.ranks} x {device} on {nodes} node(s){listed}{note}",
                      run.op, nccl, tuple(points))


def validation_file_errors(path: str | Path, topology: str | None = None) -> list[CurveError]:
    """A project YAML validation file: a curve, or a list of single points (on `topology`
    when given, else on the file's preset)."""
    doc = load_yaml(path)
    try:
        if isinstance(doc.data, dict) and "points" in doc.data:
            return single_point_errors(path, topology)
        return [curve_errors(path, topology)]
    except InputError as exc:
        if str(path) in str(exc):
            raise
        # e.g. the file's NCCL_ALGO on another --topology: say which file and system
        on = f" on --topology {topology}" if topology else ""
        raise InputError(f"{path}{on}: {exc}") from None


def collective_errors(inputs: list[str], topology: str | None, placement: str = "in-place",
                      op: str | None = None, skippable: frozenset[str] = frozenset(),
                      skipped: list[str] | None = None,
                      failed: list[str] | None = None) -> list[CurveError]:
    """Every curve of the given logs / YAML files; the packaged data when none are given.
    A log in `skippable` (found in a folder, not named) that cannot be read or scored (a
    README beside the logs, a header-only paste, an RCCL log, a run on a transport embsim
    does not model) is left out, and so is each such run of it, appended to `skipped` as
    "path: why"; the caller refuses a folder none of whose files gave a curve. With `failed`
    (a list), any other file or run that cannot be scored (a validation file naming a preset
    embsim has not, a log's bad run) is left out too, its error appended there, so that one
    such file among many does not cost the others' curves; without it the error is raised."""
    if op is not None:
        op = canonical_op(op)
        if op not in nt.OPS:
            raise InputError(f"--op {op!r}: known ops are {', '.join(nt.OPS)}")
        if not any(not item.endswith((".yaml", ".yml")) for item in inputs):
            # it would be ignored: each validation file names its own op
            raise InputError("--op is for nccl-tests logs; the YAML validation files name their op")
    if not inputs:
        return validate_all(DATA_DIR, topology)
    if topology and skippable:
        load_topology(topology)        # a bad --topology is the command's error, not each file's
    out: list[CurveError] = []

    def leave_out(exc: InputError, item: str, note: str | None = None) -> None:
        """A log found in a folder: a note; any other input with `failed`: an error, left out."""
        if item in skippable and not item.endswith((".yaml", ".yml")):
            if skipped is not None:
                skipped.append(note or _with_path(str(exc), item))
        elif failed is not None:
            failed.append(_with_path(str(exc), item))
        else:
            raise exc

    for item in inputs:
        if item.endswith((".yaml", ".yml")):
            try:
                out += validation_file_errors(item, topology)
            except InputError as exc:
                leave_out(exc, item)
            continue
        try:
            runs = load_nccl_tests_log(item, op=op)
        except InputError as exc:
            leave_out(exc, item, f"{item}: not nccl-tests output" if isinstance(exc, NotNcclTestsLog) else None)
            continue
        for run in runs:
            try:
                out.append(_run_curve(run, topology, placement))
            except InputError as exc:
                leave_out(exc, item)
    return out


def _with_path(message: str, path: str) -> str:
    return message if path in message else f"{path}: {message}"


def _run_curve(run: NcclTestsRun, topology: str | None, placement: str) -> CurveError:
    """One log run on --topology, else on the system its device names fix."""
    if topology:
        return run_errors(run, topology, placement)
    if not run.complete:
        raise InputError(f"{run.where}: the log shows {run.rank_lines_shown}, so which GPUs on how many "
                         f"nodes ran is not known; pass --topology PRESET:NxG (the "
                         f"measured system)")
    system = infer_system(run.devices, run.n_nodes)
    if system is None:
        raise InputError(_no_inferred_system(run))
    return run_errors(run, system.preset, placement, system.note)


def _no_inferred_system(run: NcclTestsRun) -> str:
    names = sorted(set(run.devices))
    shape = f"{run.n_nodes}x{run.gpus_per_node}"
    if len(names) > 1:
        why = "the ranks name different devices"
    else:
        why = "only the SXM parts of NVIDIA's 8-GPU boards fix a node's layout; a PCIe card's depends on the server"
    same = list(dict.fromkeys(p for d in names for p in presets_for_device(d)))
    hint = (f"e.g. {same[0]}:{shape} (presets with this GPU: {', '.join(same)})" if same
            else f"a topology file of it, e.g. my-system.yaml:{shape}")
    return (f"{run.where}: no preset can be inferred from the device name(s) {', '.join(names)} "
            f"({why}); pass --topology (the measured system), {hint}")
