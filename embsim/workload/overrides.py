"""Change a zoo model's table sizes or layer keys without copying its file, as a
published run's configuration differs from the paper's (e.g. a vocabulary padded to a
multiple of 8).

    overrides = {"tables": {"word": {"vocab": 30528}},
                 "layers": {"encoder": {"flash_attention": True}},
                 "optimizer": {"implementation": "per-tensor", "clip_grad_norm": True},
                 "framework": "tensorflow"}
    (optimizer `name` swaps the algorithm: adam, lamb, ...; `framework` also resets the
    optimizer's sparse_dedup to the framework's, unless `optimizer` sets it)
"""

from __future__ import annotations

from dataclasses import replace
from typing import Mapping

from ..errors import InputError
from .model import (FRAMEWORK_SPARSE_DEDUP, FRAMEWORKS, OPTIMIZER_IMPLEMENTATIONS,
                    OPTIMIZER_STATE_TENSORS, SPARSE_DEDUPS)
from .spec import (LAYER_SCHEMA, LIMITS, ModelSpec, layer_shape_problem, layer_value_problem,
                   reference_problem)

TABLE_KEYS = {"vocab": int, "dim": int}
OPTIMIZER_KEYS = {"name": str, "implementation": str, "clip_grad_norm": bool, "fp32_gradients": bool,
                  "sparse_dedup": str}


def _check(value, kind, where: str):
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if not isinstance(value, kind) or isinstance(value, bool) and bool not in kinds:
        raise InputError(f"{where}: must be {kind.__name__ if isinstance(kind, type) else kind}, got {value!r}")
    if isinstance(value, int) and not isinstance(value, bool) and value <= 0:
        raise InputError(f"{where}: must be positive, got {value}")


def _mapping(value, where: str) -> Mapping:
    if not isinstance(value, Mapping):
        raise InputError(f"{where}: must be a mapping, got {value!r}")
    return value


def apply_overrides(spec: ModelSpec, overrides: Mapping | None, where: str = "overrides") -> ModelSpec:
    """`spec` with the overrides applied, held to the model file's own checks (types,
    bounds, enums, tied widths), so that a run cannot reach what a file could not say."""
    if not overrides:
        return spec
    unknown = set(overrides) - {"tables", "layers", "optimizer", "framework"}
    if unknown:
        raise InputError(f"{where}: unknown key {sorted(unknown)[0]!r} "
                         f"(known: tables, layers, optimizer, framework)")
    if "framework" in overrides:
        framework = overrides["framework"]
        if framework not in FRAMEWORKS:
            raise InputError(f"{where}.framework: must be one of {', '.join(FRAMEWORKS)}, got {framework!r}")
        spec = replace(spec, framework=framework, sparse_dedup=FRAMEWORK_SPARSE_DEDUP[framework])
    spec = _optimizer(spec, overrides.get("optimizer"), f"{where}.optimizer")
    tables = {t.name: t for t in spec.tables}
    for name, keys in _mapping(overrides.get("tables") or {}, f"{where}.tables").items():
        if name not in tables:
            raise InputError(f"{where}.tables.{name}: {spec.name} has no such table "
                             f"(tables: {', '.join(tables) or 'none'})")
        for key, value in _mapping(keys, f"{where}.tables.{name}").items():
            if key not in TABLE_KEYS:
                raise InputError(f"{where}.tables.{name}.{key}: only {', '.join(TABLE_KEYS)} can change")
            _check(value, TABLE_KEYS[key], f"{where}.tables.{name}.{key}")
            if value > LIMITS[key]:
                raise InputError(f"{where}.tables.{name}.{key}: must be <= {LIMITS[key]:,}, got {value:,}")
        tables[name] = replace(tables[name], **keys)
    layers = {l.name: l for l in spec.layers}
    for name, keys in _mapping(overrides.get("layers") or {}, f"{where}.layers").items():
        if name not in layers:
            raise InputError(f"{where}.layers.{name}: {spec.name} has no such layer")
        layer = layers[name]
        schema = LAYER_SCHEMA[layer.kind]
        params = dict(layer.params)
        for key, value in _mapping(keys, f"{where}.layers.{name}").items():
            if key == "repeat":
                _check(value, int, f"{where}.layers.{name}.repeat")
                if value > LIMITS["repeat"]:
                    raise InputError(f"{where}.layers.{name}.repeat: must be <= {LIMITS['repeat']:,}, "
                                     f"got {value:,}")
                layer = replace(layer, repeat=value)
                continue
            if key not in schema:
                raise InputError(f"{where}.layers.{name}.{key}: not a key of a {layer.kind} layer")
            _check(value, schema[key][0], f"{where}.layers.{name}.{key}")
            problem = layer_value_problem(layer.kind, key, value)
            if problem:
                raise InputError(f"{where}.layers.{name}.{key}: {problem}")
            params[key] = value
        shape = layer_shape_problem(layer.kind, params)
        if shape:
            raise InputError(f"{where}.layers.{name}.{shape[0]}: {shape[1]}")
        layers[name] = replace(layer, params=params)
    problem = reference_problem(tables, list(layers.values()))
    if problem:
        # e.g. a tied table's dim changed without its output projection's
        path, why = problem
        what = (f"layers.{list(layers)[path[1]]}" if path[0] == "layers"
                else f"tables.{list(tables)[path[1]]}") + "".join(f".{k}" for k in path[2:])
        raise InputError(f"{where}: the model with these changes does not fit together: {what}: {why}")
    return replace(spec, tables=tuple(tables.values()), layers=tuple(layers.values()))


def _optimizer(spec: ModelSpec, keys: Mapping | None, where: str) -> ModelSpec:
    if not keys:
        return spec
    if not isinstance(keys, Mapping):
        raise InputError(f"{where}: must be a mapping, got {keys!r}")
    for key, value in keys.items():
        if key not in OPTIMIZER_KEYS:
            raise InputError(f"{where}.{key}: unknown key (known: {', '.join(OPTIMIZER_KEYS)})")
        _check(value, OPTIMIZER_KEYS[key], f"{where}.{key}")
    name = keys.get("name", spec.optimizer)
    if name not in OPTIMIZER_STATE_TENSORS:
        raise InputError(f"{where}.name: must be one of {', '.join(OPTIMIZER_STATE_TENSORS)}, "
                         f"got {name!r}")
    impl = keys.get("implementation", spec.optimizer_implementation)
    if impl not in OPTIMIZER_IMPLEMENTATIONS:
        raise InputError(f"{where}.implementation: must be one of "
                         f"{', '.join(OPTIMIZER_IMPLEMENTATIONS)}, got {impl!r}")
    dedup = keys.get("sparse_dedup", spec.sparse_dedup)
    if dedup not in SPARSE_DEDUPS:
        raise InputError(f"{where}.sparse_dedup: must be one of {', '.join(SPARSE_DEDUPS)}, got {dedup!r}")
    return replace(spec, optimizer=name, optimizer_implementation=impl,
                   clip_grad_norm=keys.get("clip_grad_norm", spec.clip_grad_norm),
                   fp32_gradients=keys.get("fp32_gradients", spec.fp32_gradients), sparse_dedup=dedup)
