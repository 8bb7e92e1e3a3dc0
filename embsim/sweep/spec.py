"""The SWEEP.yaml dialect: fixed settings plus a grid, expanded into simulation points.

    name: embrace-vs-baselines          # optional
    base:                               # any SimulationConfig field, fixed for every point
      iterations: 3
      hardware: {oversubscription: 1}
    grid:                               # lists; every combination is one point
      topology: [dgx-h100:2x8, dgx-h100:4x8]
      model: [lstm-lm1b]
      strategy: [allreduce, embrace]
      scheduler: [fifo]
      hardware:                         # what-ifs, each a list
        nic_gbit: [100, 400]

Unknown keys are rejected with the file, key and line. The points come out in a fixed
order (grid keys in file order, values in list order) and each has a hash of its whole
configuration, and of the bytes of every file it names, which is what makes a sweep resumable.
A relative file path (a trace, corpus, model or topology file) is read from the sweep file's
folder, as a config file's paths are; a preset or zoo name stays a name.

A point with a `trace` runs as `simulate --trace` does: the trace's model, machine, batch
and seq where the point names none, and another model is refused.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..engine.run import SimulationConfig
from ..errors import InputError
from ..yamlio import YamlDoc, check_mapping, check_type, file_sha256, load_yaml, parse_yaml

MAX_POINTS = 100_000
MAX_SEED = 2 ** 63 - 1         # as the --seed flag (embsim.commands.checks)
HARDWARE_KEYS = ("nic_gbit", "nvlink_gbps", "oversubscription")
CONFIG_FIELDS = tuple(f.name for f in dataclasses.fields(SimulationConfig))
_NUMBER = (int, float)
_FIELD_TYPES = {
    "topology": str, "model": str, "strategy": str, "scheduler": str, "trace": str,
    "straggler": str, "corpus": str, "nccl_algo": str, "nccl_proto": str,
    "batch": int, "seq": int, "iterations": int, "seed": int,
    "interference": float, "comm_interference": float, "zipf_s": float, "efficiency_baseline": bool,
    "strategy_options": dict, "scheduler_options": dict, "hardware": dict,
    "dtype": str, "amp": str, "accumulate": int, "accumulate_sync": str, "jitter": str, "lengths": str,
    "padding": str, "model_overrides": dict,
    "nccl_version": str, "untie_outputs": bool, "gpu_variation": float, "nccl_env": (dict, list),
    "throughput": str, "recompute": str, "grad_compress": str, "tensor_parallel": int,
    "sequence_parallel": bool, "pipeline_parallel": int, "context_parallel": int,
    "virtual_pipeline": int, "p2p_send_wait": str, "p2p_overlap": bool,
    "context_parallel_impl": str,
}
# fields added after sweeps were hashed: left out of the hash at their defaults, so a
# point that does not use them keeps the hash (and the stored result) it had
_LATER_DEFAULTS = {"grad_compress": None, "tensor_parallel": 1, "sequence_parallel": None,
                   "pipeline_parallel": 1, "context_parallel": 1, "virtual_pipeline": 1,
                   "p2p_send_wait": None, "p2p_overlap": None, "context_parallel_impl": None}


@dataclass(frozen=True)
class SweepPoint:
    index: int
    config: dict                   # SimulationConfig fields, JSON-able
    hash: str

    def simulation_config(self) -> SimulationConfig:
        return SimulationConfig(**self.config)


@dataclass(frozen=True)
class SweepSpec:
    name: str
    source: str
    points: tuple[SweepPoint, ...]


def config_hash(config: dict, digests: dict | None = None) -> str:
    """Stable across runs and machines: canonical JSON of every field, defaults included,
    and the digest of every file the config names (a trace or model file edited under the
    same path is another point, not a stored result). `digests`: a path -> digest cache
    for one sweep's points (a trace read once, not once per point)."""
    full = dataclasses.asdict(SimulationConfig(**config))
    for key, default in _LATER_DEFAULTS.items():
        if full.get(key) == default:
            del full[key]
    files = named_files(full)
    if files:       # only then: a point that names no file keeps the hash it had
        cache = {} if digests is None else digests
        for path in files.values():
            if str(path) not in cache:
                cache[str(path)] = file_digest(path)
        full["file_digests"] = {key: cache[str(path)] for key, path in files.items()}
    text = json.dumps(full, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def named_files(config: dict) -> dict[str, Path]:
    """field -> the user's file a config reads: its trace, corpus, model file and topology
    file (or a preset from $EMBSIM_TOPOLOGY_PATH). Zoo models and packaged presets are not
    listed: they change only with embsim itself, which the runner checks (fingerprint.py)."""
    from ..topology import TopologyError, TopologySpec
    from ..workload import is_model_file
    files = {key: Path(config[key]) for key in ("trace", "corpus") if config.get(key)}
    model = config.get("model")
    if isinstance(model, str) and is_model_file(model):
        files["model"] = Path(model)
    try:
        spec = TopologySpec.parse(config.get("topology"))
    except TopologyError:
        return files            # refused by the point checks, with their message
    if spec.is_path:
        files["topology"] = Path(spec.where)
    else:
        for d in os.environ.get("EMBSIM_TOPOLOGY_PATH", "").split(os.pathsep):
            if d and _is_file(Path(d) / f"{spec.where}.yaml"):
                files["topology"] = Path(d) / f"{spec.where}.yaml"
                break
    return files


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:            # a name too long to look up
        return False


MAX_DIGEST_BYTES = 1 << 30     # as the largest corpus read (workload.tokens)


def file_digest(path: Path) -> str | None:
    """sha256 of the file's bytes; None where it is no regular file or cannot be read (the
    point checks then refuse it, naming the file). Past MAX_DIGEST_BYTES, its size and
    modification time: such a file is refused later, not read here for minutes."""
    try:
        if not path.is_file():          # a pipe would block, a folder has no bytes
            return None
        stat = path.stat()
        if stat.st_size > MAX_DIGEST_BYTES:
            return f"size {stat.st_size}, mtime {stat.st_mtime_ns}"
        return file_sha256(path)
    except (OSError, ValueError):       # missing, a folder, a NUL in the name
        return None


# what a point sets that `simulate --trace`'s defaults do not read: points differing only
# here share one trace lookup (a trace is read once per sweep, not once per point)
_NOT_TRACE_INPUTS = ("strategy", "scheduler", "strategy_options", "scheduler_options", "iterations", "seed")


def with_trace_defaults(config: dict, cache: dict | None = None) -> dict:
    """A point with a trace, as `simulate --trace` runs it (engine.trace_defaults): the
    trace's model, machine, batch, seq (and what else simulate takes from it) where the
    point names none; a model the trace did not measure is refused with simulate's
    message. `cache`: the defaults already found for one sweep's points."""
    if not config.get("trace"):
        return config
    from ..engine.trace_defaults import apply_trace_defaults
    explicit = {k for k, v in config.items() if v is not None}
    key = json.dumps({k: v for k, v in config.items() if k not in _NOT_TRACE_INPUTS},
                     sort_keys=True, default=str)
    cache = {} if cache is None else cache
    if key not in cache:
        given = SimulationConfig(**config)
        found = apply_trace_defaults(given, explicit)
        cache[key] = {k: getattr(found, k) for k in CONFIG_FIELDS
                      if k not in explicit and getattr(found, k) != getattr(given, k)}
    return json.loads(json.dumps({**config, **cache[key]}))     # JSON-able, as every point


def safe_name(name: str) -> str:
    """A sweep name as one file name: the default results folder is sweeps/NAME, and a
    name such as ../../x must not put it anywhere else."""
    cleaned = re.sub(r"[^A-Za-z0-9._+-]+", "-", name).strip(".-")[:100]
    return cleaned or "sweep"


def _value(doc: YamlDoc, path: tuple, key: str, value):
    kind = _FIELD_TYPES.get(key)
    if kind is None:
        return value
    if key == "hardware":
        check_mapping(doc, path, value, (), HARDWARE_KEYS)
        return {k: _hardware(doc, path + (k,), v) for k, v in value.items()}
    if key == "nccl_env":
        return _nccl_env(doc, path, value)
    if key == "seed" and type(value) is int:
        # a seed is a label, not a size: the flag's range, past check_type's 1e15
        if not 0 <= value <= MAX_SEED:
            raise doc.error(path, f"seed {value}: need an integer 0..{MAX_SEED}")    # as check.py
        return value
    if value is None and key not in ("topology", "model", "strategy", "scheduler", "iterations"):
        return None
    value = check_type(doc, path, value, kind)
    if kind is str and not value.strip():
        # as on the command line: "" would silently mean the default
        raise doc.error(path, "must not be empty (leave the key out for the default)")
    return beside_sweep(key, value, Path(doc.source).parent) if kind is str else value


def beside_sweep(key: str, value: str, folder: Path) -> str:
    """A relative file path in a sweep file, joined to the sweep file's `folder`: a
    same-named file where embsim runs is not read instead. Only what the loaders take for a
    path is one (a model or topology with a '/' or .yaml suffix, a trace, a corpus); a zoo
    model, preset or NxG stays as written, as on the command line."""
    from ..topology import TopologyError, TopologySpec
    from ..workload import is_model_file
    if folder == Path("."):
        return value              # already where embsim runs (and sweep_from_text's "<sweep>")
    if key in ("trace", "corpus") or (key == "model" and is_model_file(value)):
        return _joined(folder, value)
    if key == "topology":
        try:
            spec = TopologySpec.parse(value)
        except TopologyError:
            return value          # refused by the point checks, with their message
        if spec.is_path:
            return str(dataclasses.replace(spec, where=_joined(folder, spec.where), text=""))
    return value


def _joined(folder: Path, path: str) -> str:
    return path if Path(path).is_absolute() else str(folder / path)


def _nccl_env(doc: YamlDoc, path: tuple, value) -> list:
    """nccl_env: {NCCL_BUFFSIZE: 4194304, ...} or [[NAME, BYTES], ...], checked as
    --nccl-env checks it (names the model uses, byte counts in range)."""
    from ..collectives.nccl_env import parse_env
    check_type(doc, path, value, (dict, list))
    if isinstance(value, list):
        for i, pair in enumerate(value):
            if not (isinstance(pair, list) and len(pair) == 2):
                raise doc.error(path + (i,), f"must be a [NAME, BYTES] pair, got {pair!r}")
    return [list(p) for p in parse_env(value if isinstance(value, dict) else [tuple(p) for p in value],
                                       where=doc.where(path) + ":").values]


def _hardware(doc: YamlDoc, path: tuple, value) -> float:
    value = check_type(doc, path, value, float)
    if value <= 0:
        raise doc.error(path, f"a bandwidth or ratio must be positive, got {value:g}")
    return value


def _grid_axes(doc: YamlDoc, grid) -> list[tuple[tuple, list]]:
    """[(field path, values)], a field path being ("strategy",) or ("hardware", "nic_gbit")."""
    check_mapping(doc, ("grid",), grid, (), CONFIG_FIELDS)
    axes = []
    for key, values in grid.items():
        path = ("grid", key)
        if key == "hardware":
            check_mapping(doc, path, values, (), HARDWARE_KEYS)
            for hw, hw_values in values.items():
                items = check_type(doc, path + (hw,), hw_values, list)
                if not items:
                    raise doc.error(path + (hw,), "needs at least one value")
                axes.append((("hardware", hw),
                             [_hardware(doc, path + (hw, i), v) for i, v in enumerate(items)]))
            continue
        items = check_type(doc, path, values, list)
        if not items:
            raise doc.error(path, "needs at least one value")
        axes.append(((key,), [_value(doc, path + (i,), key, v) for i, v in enumerate(items)]))
    return axes


def parse_sweep(doc: YamlDoc) -> SweepSpec:
    data = doc.data
    check_mapping(doc, (), data, ("grid",), ("name", "base"))
    name = safe_name(check_type(doc, ("name",), data.get("name", Path(doc.source).stem), str))
    base = data.get("base") or {}
    check_mapping(doc, ("base",), base, (), CONFIG_FIELDS)
    fixed = {key: _value(doc, ("base", key), key, v) for key, v in base.items()}
    axes = _grid_axes(doc, data["grid"])
    total = 1
    for _, values in axes:
        total *= len(values)
    if total > MAX_POINTS:
        raise doc.error(("grid",), f"{total:,} points, more than {MAX_POINTS:,}; split the sweep")
    points, seen, resolved, digests = [], {}, {}, {}
    for combo in itertools.product(*(values for _, values in axes)):
        config = json.loads(json.dumps(fixed))           # deep copy, JSON-able
        for (path, _), value in zip(axes, combo):
            if path[0] == "hardware":
                config.setdefault("hardware", {})[path[1]] = value
            else:
                config[path[0]] = value
        try:
            config = with_trace_defaults(config, resolved)
            h = config_hash(config, digests)
        except InputError as exc:
            # the config's own checks (iterations, jitter ...) name the flag, not the file
            raise InputError(f"{doc.source}: point {len(points)}: {exc}") from None
        if h in seen:
            raise doc.error(("grid",), f"two grid points are the same configuration "
                                       f"(points {seen[h]} and {len(points)}); remove the duplicate value")
        seen[h] = len(points)
        points.append(SweepPoint(index=len(points), config=config, hash=h))
    return SweepSpec(name=name, source=doc.source, points=tuple(points))


def load_sweep(path: str | Path) -> SweepSpec:
    return parse_sweep(load_yaml(path))


def sweep_from_text(text: str, source: str = "<sweep>") -> SweepSpec:
    return parse_sweep(parse_yaml(text, source))
