"""YAML loading that remembers where every key came from, and small schema checks.

Every YAML dialect in embsim (topologies, traces, model zoo, sweeps) is read through
here so that a bad file is rejected the same way everywhere: one line naming the
file, the key path and the line number.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

import yaml

from .errors import InputError


@dataclass
class YamlDoc:
    """Plain Python data (dicts, lists, scalars) plus the line of every key path."""

    data: Any
    source: str
    lines: dict[tuple, int] = field(default_factory=dict)

    def line(self, path: tuple) -> int | None:
        # Fall back to the nearest enclosing key that has a line.
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return self.lines.get(())

    def where(self, path: tuple) -> str:
        key = ".".join(str(p) for p in path) or "<top>"
        line = self.line(path)
        return f"{self.source}: {key}" + (f" (line {line})" if line else "")

    def error(self, path: tuple, message: str) -> InputError:
        return InputError(f"{self.where(path)}: {message}")


def _convert(node: yaml.Node, path: tuple, lines: dict) -> Any:
    lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        out = {}
        for key_node, value_node in node.value:
            key = yaml.safe_load(yaml.serialize(key_node))
            lines[path + (key,)] = key_node.start_mark.line + 1
            out[key] = _convert(value_node, path + (key,), lines)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_convert(item, path + (i,), lines) for i, item in enumerate(node.value)]
    return yaml.safe_load(yaml.serialize(node))


def parse_yaml(text: str, source: str) -> YamlDoc:
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(f"{source}{where}: not valid YAML: {problem}") from None
    lines: dict[tuple, int] = {}
    data = _convert(node, (), lines) if node is not None else None
    return YamlDoc(data=data, source=source, lines=lines)


def read_text(path: str | Path, what: str = "file", error: type = InputError) -> str:
    """A user's text file, or one line naming it (`what`: "file", "trace file", ...)."""
    path = Path(path)
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise error(f"{path}: no such {what}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise error(f"{path}: cannot read {what}: {exc}") from None


def load_yaml(path: str | Path) -> YamlDoc:
    return parse_yaml(read_text(path), str(path))


_TYPE_NAMES = {int: "an integer", float: "a number", str: "a string", bool: "true/false",
               list: "a list", dict: "a mapping"}


def check_mapping(doc: YamlDoc, path: tuple, value: Any, required: Iterable[str],
                  optional: Iterable[str] = ()) -> Mapping:
    """Reject a non-mapping, a missing required key or an unknown key."""
    if not isinstance(value, dict):
        raise doc.error(path, "must be a mapping")
    required = list(required)
    allowed = set(required) | set(optional)
    for key in value:
        if key not in allowed:
            raise doc.error(path + (key,), f"unknown key (allowed: {', '.join(sorted(allowed))})")
    for key in required:
        if key not in value:
            raise doc.error(path, f"missing required key '{key}'")
    return value


def check_type(doc: YamlDoc, path: tuple, value: Any, kind: type | tuple) -> Any:
    """Type check with YAML's usual leniency: an int is a valid float; bool is not an int."""
    kinds = kind if isinstance(kind, tuple) else (kind,)
    ok = False
    for k in kinds:
        if k is float and isinstance(value, (int, float)) and not isinstance(value, bool):
            ok = True
        elif k is int and isinstance(value, int) and not isinstance(value, bool):
            ok = True
        elif k not in (int, float) and isinstance(value, k):
            ok = True
    if not ok:
        want = " or ".join(_TYPE_NAMES.get(k, k.__name__) for k in kinds)
        raise doc.error(path, f"must be {want}, got {type(value).__name__} {value!r}")
    return float(value) if kinds == (float,) else value


def get(doc: YamlDoc, path: tuple, mapping: Mapping, key: str, kind: type | tuple,
        default: Any = ..., positive: bool = False) -> Any:
    """Fetch mapping[key] with a type check; `...` as default means required."""
    if key not in mapping:
        if default is ...:
            raise doc.error(path, f"missing required key '{key}'")
        return default
    value = check_type(doc, path + (key,), mapping[key], kind)
    if positive and isinstance(value, (int, float)) and value <= 0:
        raise doc.error(path + (key,), f"must be positive, got {value}")
    return value
