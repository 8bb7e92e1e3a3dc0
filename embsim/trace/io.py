"""Reading and writing trace files: the one place that knows the YAML layout.

The YAML stores times in microseconds (`*_us`, what people read) and sizes in bytes;
the dataclasses hold seconds. A file is accepted only whole: the writer ends it with
`end_of_trace: true`, so a truncated file is told apart from a merely malformed one.
"""

from __future__ import annotations

import re

from pathlib import Path
from typing import Any

import yaml

from ..atomic import atomic_write_text
from ..errors import InputError
from ..yamlio import YamlDoc, check_mapping, check_type, get, parse_yaml, read_text
from .compute import compute_to_dict, parse_compute
from .schema import (SCHEMA_VERSION, TRACE_KIND, CollectiveCurve, InterferenceMeasurement,
                     LayerPoint, LayerTiming, OptimizerTiming, RankSkew, Provenance, StepSamples, TokenStatsRecord, Trace)


class TraceError(InputError):
    """A trace file that cannot be used (missing, corrupt, truncated, wrong version)."""


US_PER_S = 1e6
COLLECTIVE_OPS = ("all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast")
SCOPES = ("all", "intra-node", "inter-node")
TOP_KEYS = ("kind", "schema_version", "device", "model", "seq", "topology", "provenance",
            "layers", "optimizer", "collectives", "steps", "token_stats", "end_of_trace")
OPTIONAL_TOP_KEYS = ("interference", "rank_skew", "compute", "host_topology", "model_sha256",
                     "table_rows_cap")


def load_trace(path: str | Path) -> Trace:
    return parse_trace(read_text(path, "trace file", TraceError), str(path))


def parse_trace(text: str, source: str) -> Trace:
    try:
        doc = parse_yaml(text, source)
    except InputError as exc:
        raise TraceError(f"corrupt trace: {exc}") from None
    except yaml.YAMLError as exc:
        # yamlio re-parses each scalar; a file cut inside one can fail there
        raise TraceError(f"corrupt trace: {source}: not valid YAML: "
                         f"{getattr(exc, 'problem', None) or str(exc).splitlines()[0]}") from None
    try:
        return _build(doc)
    except TraceError:
        raise
    except InputError as exc:
        raise TraceError(str(exc)) from None


def _build(doc: YamlDoc) -> Trace:
    data = doc.data
    if not isinstance(data, dict) or data.get("kind") != TRACE_KIND:
        raise TraceError(f"{doc.source}: not an embsim trace (expected 'kind: {TRACE_KIND}')")
    version = data.get("schema_version")
    if type(version) is not int or version != SCHEMA_VERSION:   # `true` == 1 in Python
        raise TraceError(f"{doc.where(('schema_version',))}: unknown trace schema version "
                         f"{version!r} (this embsim reads version {SCHEMA_VERSION}); "
                         f"re-run `embsim calibrate` or upgrade embsim")
    if data.get("end_of_trace") is not True:
        raise TraceError(f"{doc.source}: truncated trace (no 'end_of_trace: true' at the end)")
    check_mapping(doc, (), data, TOP_KEYS, OPTIONAL_TOP_KEYS)
    trace = Trace(
        schema_version=version,
        device=get(doc, (), data, "device", str),
        model=get(doc, (), data, "model", str),
        seq=get(doc, (), data, "seq", int, positive=True),
        topology=get(doc, (), data, "topology", str),
        provenance=_provenance(doc, ("provenance",), data["provenance"]),
        layers=_layers(doc, ("layers",), data["layers"]),
        optimizer=tuple(_optimizer(doc, ("optimizer", i), v)
                        for i, v in enumerate(_list(doc, ("optimizer",), data["optimizer"]))),
        collectives=tuple(_collective(doc, ("collectives", i), v)
                          for i, v in enumerate(_list(doc, ("collectives",), data["collectives"]))),
        steps=_steps(doc, ("steps",), data["steps"]),
        token_stats=tuple(_tokens(doc, ("token_stats", i), v)
                          for i, v in enumerate(_list(doc, ("token_stats",), data["token_stats"]))),
        interference=(_interference(doc, ("interference",), data["interference"])
                      if data.get("interference") is not None else None),
        rank_skew=(_rank_skew(doc, ("rank_skew",), data["rank_skew"])
                   if data.get("rank_skew") is not None else None),
        compute=(parse_compute(doc, ("compute",), data["compute"])
                 if data.get("compute") is not None else None),
        host_topology=_host_topology(doc),
        model_sha256=_sha256(doc),
        table_rows_cap=get(doc, (), data, "table_rows_cap", int, default=None, positive=True),
        source=doc.source,
    )
    return trace


def _sha256(doc: YamlDoc) -> str:
    value = get(doc, (), doc.data, "model_sha256", str, default="")
    if value and not re.fullmatch(r"[0-9a-f]{64}", value):
        raise doc.error(("model_sha256",), "must be 64 lowercase hex digits (a sha256)")
    return value


def _host_topology(doc: YamlDoc) -> dict | None:
    """The embedded machine, checked as a topology file would be."""
    if doc.data.get("host_topology") is None:
        return None
    from ..topology.parse import node_type_from_doc
    node_type_from_doc(doc.sub("host_topology"))
    return doc.data["host_topology"]


def _list(doc: YamlDoc, path: tuple, value: Any) -> list:
    return check_type(doc, path, value, list)


def _time(doc: YamlDoc, path: tuple, m: dict, key: str, positive: bool = False) -> float:
    """`positive`: a time something is divided by (a step's, a collective's) is never 0."""
    value = get(doc, path, m, key, float)
    _check_time(doc, path + (key,), value, positive)
    return value / US_PER_S


def _times(doc: YamlDoc, path: tuple, m: dict, key: str, positive: bool = False) -> tuple[float, ...]:
    values = _list(doc, path + (key,), m.get(key))
    out = []
    for i, v in enumerate(values):
        v = check_type(doc, path + (key, i), v, float)
        _check_time(doc, path + (key, i), v, positive)
        out.append(v / US_PER_S)
    return tuple(out)


def _check_time(doc: YamlDoc, path: tuple, value: float, positive: bool) -> None:
    if value < 0:
        raise doc.error(path, f"a time cannot be negative, got {value}")
    if positive and value == 0:
        raise doc.error(path, "a measured time of 0 is no measurement (must be positive)")


def _ints(doc: YamlDoc, path: tuple, values: Any) -> tuple[int, ...]:
    return tuple(check_type(doc, path + (i,), v, int) for i, v in enumerate(_list(doc, path, values)))


def _provenance(doc: YamlDoc, path: tuple, m: Any) -> Provenance:
    check_mapping(doc, path, m, ("host", "date", "command", "world", "backend", "backend_version",
                                 "torch", "python", "devices"),
                  ("driver", "cuda", "label", "loadavg", "threads_per_rank", "nodes"))
    devices = _list(doc, path + ("devices",), m["devices"])
    return Provenance(
        host=get(doc, path, m, "host", str), date=get(doc, path, m, "date", str),
        command=get(doc, path, m, "command", str),
        world=get(doc, path, m, "world", int, positive=True),
        backend=get(doc, path, m, "backend", str),
        backend_version=str(m["backend_version"]), torch=str(m["torch"]), python=str(m["python"]),
        devices=tuple(check_type(doc, path + ("devices", i), d, str) for i, d in enumerate(devices)),
        driver=m.get("driver"), cuda=m.get("cuda"),
        label=get(doc, path, m, "label", str, default=""),
        loadavg=tuple(check_type(doc, path + ("loadavg", i), v, float)
                      for i, v in enumerate(_list(doc, path + ("loadavg",), m.get("loadavg", [])))),
        threads_per_rank=get(doc, path, m, "threads_per_rank", int, default=1, positive=True),
        nodes=get(doc, path, m, "nodes", int, default=1, positive=True),
    )


def _layers(doc: YamlDoc, path: tuple, values: Any) -> dict[str, LayerTiming]:
    out: dict[str, LayerTiming] = {}
    for i, m in enumerate(_list(doc, path, values)):
        p = path + (i,)
        check_mapping(doc, p, m, ("name", "kind", "points"), ("variant", "timed"))
        name = get(doc, p, m, "name", str)
        if name in out:
            raise doc.error(p + ("name",), f"layer {name!r} appears twice")
        points = []
        for j, pt in enumerate(_list(doc, p + ("points",), m["points"])):
            q = p + ("points", j)
            check_mapping(doc, q, pt, ("batch", "fwd_us", "bwd_us", "fwd_spread_us",
                                       "bwd_spread_us", "reps"))
            points.append(LayerPoint(
                batch=get(doc, q, pt, "batch", int, positive=True),
                fwd_s=_time(doc, q, pt, "fwd_us"), bwd_s=_time(doc, q, pt, "bwd_us"),
                fwd_spread_s=_time(doc, q, pt, "fwd_spread_us"),
                bwd_spread_s=_time(doc, q, pt, "bwd_spread_us"),
                reps=get(doc, q, pt, "reps", int, positive=True)))
        if not points:
            raise doc.error(p + ("points",), "a layer needs at least one measured batch size")
        batches = [pt.batch for pt in points]
        if batches != sorted(set(batches)):
            raise doc.error(p + ("points",), "batch sizes must be distinct and increasing")
        if m.get("timed", "isolated") not in ("isolated", "in-step"):
            raise doc.error(p + ("timed",), f"must be isolated or in-step, got {m['timed']!r}")
        out[name] = LayerTiming(name=name, kind=get(doc, p, m, "kind", str),
                                variant=get(doc, p, m, "variant", str, default=""),
                                points=tuple(points),
                                timed=get(doc, p, m, "timed", str, default="isolated"))
    return out


def _optimizer(doc: YamlDoc, p: tuple, m: Any) -> OptimizerTiming:
    check_mapping(doc, p, m, ("name", "optimizer", "batch", "elements", "median_us",
                              "spread_us", "reps"))
    return OptimizerTiming(
        name=get(doc, p, m, "name", str), optimizer=get(doc, p, m, "optimizer", str),
        batch=get(doc, p, m, "batch", int, positive=True),
        elements=get(doc, p, m, "elements", int, positive=True),
        median_s=_time(doc, p, m, "median_us"), spread_s=_time(doc, p, m, "spread_us"),
        reps=get(doc, p, m, "reps", int, positive=True))


def _collective(doc: YamlDoc, p: tuple, m: Any) -> CollectiveCurve:
    check_mapping(doc, p, m, ("op", "ranks", "scope", "sizes", "median_us", "spread_us"))
    op = get(doc, p, m, "op", str)
    if op not in COLLECTIVE_OPS:
        raise doc.error(p + ("op",), f"unknown collective {op!r} (known: {', '.join(COLLECTIVE_OPS)})")
    scope = get(doc, p, m, "scope", str)
    if scope not in SCOPES:
        raise doc.error(p + ("scope",), f"unknown scope {scope!r} (known: {', '.join(SCOPES)})")
    sizes = _ints(doc, p + ("sizes",), m["sizes"])
    med, spread = _times(doc, p, m, "median_us", positive=True), _times(doc, p, m, "spread_us")
    if not sizes or len(med) != len(sizes) or len(spread) != len(sizes):
        raise doc.error(p, "sizes, median_us and spread_us must be non-empty and of equal length")
    if list(sizes) != sorted(set(sizes)) or sizes[0] <= 0:
        raise doc.error(p + ("sizes",), "sizes must be positive, distinct and increasing")
    return CollectiveCurve(op=op, ranks=get(doc, p, m, "ranks", int, positive=True), scope=scope,
                           sizes=sizes, median_s=med, spread_s=spread)


def _steps(doc: YamlDoc, path: tuple, values: Any) -> dict[str, StepSamples]:
    out: dict[str, StepSamples] = {}
    for i, m in enumerate(_list(doc, path, values)):
        p = path + (i,)
        check_mapping(doc, p, m, ("strategy", "world", "batch", "seq", "samples_us", "median_us"),
                      ("untied_outputs",))
        strategy = get(doc, p, m, "strategy", str)
        if strategy in out:
            raise doc.error(p + ("strategy",), f"strategy {strategy!r} appears twice")
        samples = _times(doc, p, m, "samples_us", positive=True)
        if not samples:
            raise doc.error(p + ("samples_us",), "needs at least one sample")
        out[strategy] = StepSamples(
            strategy=strategy, world=get(doc, p, m, "world", int, positive=True),
            batch=get(doc, p, m, "batch", int, positive=True),
            seq=get(doc, p, m, "seq", int, positive=True),
            samples_s=samples, median_s=_time(doc, p, m, "median_us", positive=True),
            untied_outputs=get(doc, p, m, "untied_outputs", bool, default=False))
    return out


def _rank_skew(doc: YamlDoc, p: tuple, m: Any) -> RankSkew:
    check_mapping(doc, p, m, ("batch", "rank0_us", "slowest_us", "reps"), ("factor",))
    rec = RankSkew(batch=get(doc, p, m, "batch", int, positive=True),
                   rank0_s=_time(doc, p, m, "rank0_us"), slowest_s=_time(doc, p, m, "slowest_us"),
                   reps=get(doc, p, m, "reps", int, positive=True))
    if rec.rank0_s <= 0:
        raise doc.error(p + ("rank0_us",), "must be positive")
    return rec


def _interference(doc: YamlDoc, p: tuple, m: Any) -> InterferenceMeasurement:
    check_mapping(doc, p, m, ("layer", "batch", "collective", "bytes", "alone_us",
                              "comm_us", "both_us", "reps"), ("factor", "comm_overlapped_us"))
    op = get(doc, p, m, "collective", str)
    if op not in COLLECTIVE_OPS:
        raise doc.error(p + ("collective",), f"unknown collective {op!r}")
    rec = InterferenceMeasurement(
        layer=get(doc, p, m, "layer", str), batch=get(doc, p, m, "batch", int, positive=True),
        collective=op, nbytes=get(doc, p, m, "bytes", int, positive=True),
        alone_s=_time(doc, p, m, "alone_us"), comm_s=_time(doc, p, m, "comm_us"),
        both_s=_time(doc, p, m, "both_us"), reps=get(doc, p, m, "reps", int, positive=True),
        comm_overlapped_s=(_time(doc, p, m, "comm_overlapped_us")
                           if m.get("comm_overlapped_us") is not None else None))
    for key, value in (("alone_us", rec.alone_s), ("comm_us", rec.comm_s), ("both_us", rec.both_s)):
        if value <= 0:
            raise doc.error(p + (key,), "must be positive")
    return rec


def _tokens(doc: YamlDoc, p: tuple, m: Any) -> TokenStatsRecord:
    check_mapping(doc, p, m, ("table", "vocab", "batch", "seq", "ranks", "source",
                              "unique_per_rank", "union"))
    rec = TokenStatsRecord(
        table=get(doc, p, m, "table", str), vocab=get(doc, p, m, "vocab", int, positive=True),
        batch=get(doc, p, m, "batch", int, positive=True), seq=get(doc, p, m, "seq", int, positive=True),
        ranks=get(doc, p, m, "ranks", int, positive=True), source=get(doc, p, m, "source", str),
        unique_per_rank=_ints(doc, p + ("unique_per_rank",), m["unique_per_rank"]),
        union=get(doc, p, m, "union", int, positive=True))
    if len(rec.unique_per_rank) != rec.ranks:
        raise doc.error(p + ("unique_per_rank",), f"needs one count per rank ({rec.ranks})")
    if rec.union > rec.vocab or rec.union < max(rec.unique_per_rank):
        raise doc.error(p + ("union",), "union must lie between the largest per-rank count and vocab")
    return rec


# ---------------------------------------------------------------- writing

def _us(seconds: float) -> float:
    return round(float(seconds) * US_PER_S, 4)


def trace_to_dict(trace: Trace) -> dict:
    pv = trace.provenance
    out = {
        "kind": TRACE_KIND,
        "schema_version": trace.schema_version,
        "device": trace.device, "model": trace.model, "seq": trace.seq, "topology": trace.topology,
        "provenance": {
            "host": pv.host, "date": pv.date, "command": pv.command, "world": pv.world,
            "backend": pv.backend, "backend_version": pv.backend_version, "torch": pv.torch,
            "python": pv.python, "devices": list(pv.devices), "driver": pv.driver, "cuda": pv.cuda,
            "label": pv.label, "loadavg": [round(x, 2) for x in pv.loadavg],
            "threads_per_rank": pv.threads_per_rank, "nodes": pv.nodes},
        "layers": [{"name": lt.name, "kind": lt.kind, "variant": lt.variant, "timed": lt.timed,
                    "points": [
            {"batch": pt.batch, "fwd_us": _us(pt.fwd_s), "bwd_us": _us(pt.bwd_s),
             "fwd_spread_us": _us(pt.fwd_spread_s), "bwd_spread_us": _us(pt.bwd_spread_s),
             "reps": pt.reps} for pt in lt.points]} for lt in trace.layers.values()],
        "optimizer": [{"name": o.name, "optimizer": o.optimizer, "batch": o.batch,
                       "elements": o.elements, "median_us": _us(o.median_s),
                       "spread_us": _us(o.spread_s), "reps": o.reps} for o in trace.optimizer],
        "collectives": [{"op": c.op, "ranks": c.ranks, "scope": c.scope, "sizes": list(c.sizes),
                         "median_us": [_us(t) for t in c.median_s],
                         "spread_us": [_us(t) for t in c.spread_s]} for c in trace.collectives],
        "steps": [{"strategy": s.strategy, "world": s.world, "batch": s.batch, "seq": s.seq,
                   "untied_outputs": s.untied_outputs,
                   "median_us": _us(s.median_s), "samples_us": [_us(t) for t in s.samples_s]}
                  for s in trace.steps.values()],
        "token_stats": [{"table": t.table, "vocab": t.vocab, "batch": t.batch, "seq": t.seq,
                         "ranks": t.ranks, "source": t.source,
                         "unique_per_rank": list(t.unique_per_rank), "union": t.union}
                        for t in trace.token_stats],
    }
    f = trace.interference
    if f is not None:
        # `factor` is derived from the three times (see InterferenceMeasurement), for the reader
        out["interference"] = {"layer": f.layer, "batch": f.batch, "collective": f.collective,
                               "bytes": f.nbytes, "alone_us": _us(f.alone_s),
                               "comm_us": _us(f.comm_s), "both_us": _us(f.both_s),
                               "reps": f.reps, "factor": round(f.factor, 4)}
        if f.comm_overlapped_s is not None:
            out["interference"]["comm_overlapped_us"] = _us(f.comm_overlapped_s)
    if trace.host_topology is not None:
        out["host_topology"] = trace.host_topology
    if trace.model_sha256:
        out["model_sha256"] = trace.model_sha256
    if trace.table_rows_cap is not None:
        out["table_rows_cap"] = trace.table_rows_cap
    k = trace.rank_skew
    if k is not None:
        out["rank_skew"] = {"batch": k.batch, "rank0_us": _us(k.rank0_s),
                            "slowest_us": _us(k.slowest_s), "reps": k.reps,
                            "factor": round(k.factor, 4)}
    if trace.compute is not None:
        out["compute"] = compute_to_dict(trace.compute)
    out["end_of_trace"] = True
    return out


def dump_trace(trace: Trace) -> str:
    header = (f"# embsim calibration trace: {trace.model} on {trace.device} "
              f"({trace.provenance.label or trace.provenance.backend}), "
              f"world {trace.provenance.world}. Times in microseconds, sizes in bytes.\n")
    return header + yaml.safe_dump(trace_to_dict(trace), sort_keys=False, width=100)


def write_trace(path: str | Path, trace: Trace) -> Path:
    """Validate by round-trip, then write atomically: a reader never sees half a trace."""
    text = dump_trace(trace)
    parse_trace(text, str(path))
    return atomic_write_text(path, text)
