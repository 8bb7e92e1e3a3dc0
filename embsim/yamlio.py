"""YAML loading that remembers where every key came from, and small schema checks.

Every YAML dialect in embsim (topologies, traces, model zoo, sweeps) is read through
here so that a bad file is rejected the same way everywhere: one line naming the
file, the key path and the line number.
"""

from __future__ import annotations

import math
import re
import stat
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

    def sub(self, key) -> "YamlDoc":
        """The document under top-level `key`, as a document of its own (same lines; errors
        read "file: key: inner.path (line N)")."""
        n = 1
        lines = {path[n:]: line for path, line in self.lines.items() if path[:n] == (key,)}
        return YamlDoc(data=self.data[key], source=f"{self.source}: {key}", lines=lines)


# Limits that keep a hostile or broken file from exhausting memory or time: a file
# larger than any real topology/trace/sweep, nesting deeper than any embsim dialect
# uses, or aliases that expand into more nodes than the file could hold written out.
MAX_FILE_BYTES = 16 * 1024 * 1024
MAX_DEPTH = 64
MAX_NODES = 500_000
# No embsim number (bytes, GB/s, microseconds, counts) comes near this; a value beyond
# it is a typo or an attack, and it would overflow or exhaust memory further down.
MAX_NUMBER = 1e15
# A positive size, rate or count below this (1e-300 GB/s, ...) is a typo too, and
# dividing by it overflows.
MIN_POSITIVE = 1e-6

_SCALARS = yaml.constructor.SafeConstructor()


class _Converter:
    """yaml node graph -> plain data, refusing what embsim's dialects never use."""

    def __init__(self, source: str):
        self.source = source
        self.lines: dict[tuple, int] = {}
        self.nodes = 0
        self.active: set[int] = set()       # ids of the collections being converted (cycles)

    def fail(self, node: yaml.Node, message: str) -> InputError:
        return InputError(f"{self.source} (line {node.start_mark.line + 1}): {message}")

    def convert(self, node: yaml.Node, path: tuple) -> Any:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise self.fail(node, f"more than {MAX_NODES:,} values (an alias bomb?)")
        if len(path) > MAX_DEPTH:
            raise self.fail(node, f"nested more than {MAX_DEPTH} levels deep")
        self.lines.setdefault(path, node.start_mark.line + 1)
        if isinstance(node, yaml.ScalarNode):
            return self.scalar(node)
        if id(node) in self.active:
            raise self.fail(node, "recursive alias (a value that contains itself)")
        self.active.add(id(node))
        try:
            if isinstance(node, yaml.MappingNode):
                return self.mapping(node, path)
            return [self.convert(item, path + (i,)) for i, item in enumerate(node.value)]
        finally:
            self.active.discard(id(node))

    def scalar(self, node: yaml.ScalarNode) -> Any:
        try:
            return _SCALARS.construct_object(node, deep=True)
        except (yaml.YAMLError, ValueError, OverflowError) as exc:
            raise self.fail(node, f"bad value {node.value!r}: {str(exc).splitlines()[0]}") from None

    def mapping(self, node: yaml.MappingNode, path: tuple) -> dict:
        out: dict = {}
        first_line: dict = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise self.fail(key_node, "merge keys (<<) are not supported; write the keys out")
            if not isinstance(key_node, yaml.ScalarNode):
                raise self.fail(key_node, "a key must be a plain value, not a list or mapping")
            key = self.scalar(key_node)
            line = key_node.start_mark.line + 1
            if key in first_line:
                where = ".".join(str(p) for p in path + (key,))
                raise InputError(f"{self.source}: {where}: key given twice "
                                 f"(lines {first_line[key]} and {line})")
            first_line[key] = line
            self.lines[path + (key,)] = line
            out[key] = self.convert(value_node, path + (key,))
        return out


def parse_yaml(text: str, source: str) -> YamlDoc:
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(f"{source}{where}: not valid YAML: {problem}") from None
    except RecursionError:
        raise InputError(f"{source}: not valid YAML: nested too deeply") from None
    converter = _Converter(source)
    data = converter.convert(node, ()) if node is not None else None
    if data is None:
        raise InputError(f"{source}: empty document (no keys)")
    return YamlDoc(data=data, source=source, lines=converter.lines)


def check_regular_file(path: str | Path, what: str = "file", error: type = InputError,
                       max_bytes: int = MAX_FILE_BYTES) -> Path:
    """`path` if it is a regular file of at most max_bytes, else one line naming it.
    Opening a named pipe or a device would block or never end."""
    path = Path(path)
    try:
        info = path.stat()
    except FileNotFoundError:
        raise error(f"{path}: no such {what}") from None
    except OSError as exc:
        raise error(f"{path}: cannot read {what}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(info.st_mode):
        kind = "a directory" if stat.S_ISDIR(info.st_mode) else "not a regular file"
        raise error(f"{path}: cannot read {what}: {kind}")
    if info.st_size > max_bytes:
        raise error(f"{path}: {what} too large ({info.st_size:,} bytes; at most {max_bytes:,})")
    return path


GZIPPED = "gzip-compressed; decompress it first (gunzip)"


def is_gzipped(path: Path) -> bool:
    """The file starts with gzip's magic bytes (a log or profile saved compressed)."""
    with open(path, "rb") as f:
        return f.read(2) == b"\x1f\x8b"


def read_text(path: str | Path, what: str = "file", error: type = InputError,
              max_bytes: int = MAX_FILE_BYTES) -> str:
    """A user's UTF-8 text file (regular files only), or one line naming it
    (`what`: "file", "trace file", ...)."""
    path = check_regular_file(path, what, error, max_bytes)
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise error(f"{path}: no such {what}") from None
    except UnicodeDecodeError as exc:
        why = GZIPPED if is_gzipped(path) else f"not UTF-8 text (byte {exc.start})"
        raise error(f"{path}: cannot read {what}: {why}") from None
    except OSError as exc:
        raise error(f"{path}: cannot read {what}: {exc.strerror or exc}") from None


def load_yaml(path: str | Path) -> YamlDoc:
    return parse_yaml(read_text(path), str(path))


# PyYAML reads YAML 1.1, where a float needs a dot: `1e9` and `4e-6` stay text. YAML 1.2
# and the other readers a file's author uses take them as numbers, so where a number is
# wanted embsim does too.
_EXPONENT_NUMBER = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)[eE][-+]?[0-9]+")


def _as_yaml12_number(value: Any, kinds: tuple) -> Any:
    """`1e9` (text to PyYAML) as the number YAML 1.2 reads, where a number is wanted."""
    if not isinstance(value, str) or not _EXPONENT_NUMBER.fullmatch(value.strip()):
        return value
    if float not in kinds and int not in kinds:
        return value
    number = float(value)
    if float not in kinds and math.isfinite(number) and number.is_integer():
        return int(number)
    return number


_TYPE_NAMES = {int: "an integer", float: "a number", str: "a string", bool: "true/false",
               list: "a list", dict: "a mapping"}


def beside(path_text: str, source: str | Path) -> str:
    """A relative file path written in the YAML file `source`: as given when it names a file
    from where embsim runs (the packaged files' paths are relative to the checkout), else the
    file next to `source` when there is one there (a user's curve or training file naming its
    own topology or model beside it). Anything else is returned unchanged, for the loader's
    own error."""
    given = Path(path_text)
    try:
        if given.is_absolute() or given.exists():
            return path_text
        near = Path(source).parent / given
        return str(near) if near.is_file() else path_text
    except OSError:            # a name too long to look up
        return path_text


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


def check_name(doc: YamlDoc, path: tuple, value: str) -> str:
    """A name (a model, layer, table, topology, GPU or run): other keys and every message
    print it, so not blank, and one line of printable text (a newline in a name split the
    one-line error that quotes it)."""
    if not value.strip():
        raise doc.error(path, "must not be empty")
    bad = next((c for c in value if not c.isprintable()), None)
    if bad is not None:
        raise doc.error(path, f"must be one line of printable text, got {value!r}")
    return value


def check_number(value: float, lo: float | None = None, hi: float | None = None,
                 lo_open: bool = False) -> str | None:
    """Why a number is unusable (not finite, beyond MAX_NUMBER or outside [lo, hi]), or None."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"must be a finite number, got {value}"
    if abs(value) > MAX_NUMBER:
        return f"must be at most {MAX_NUMBER:g} in size, got {value:g}"
    if lo is not None and (value <= lo if lo_open else value < lo):
        return f"must be {'>' if lo_open else '>='} {lo:g}, got {value:g}"
    if hi is not None and value > hi:
        return f"must be <= {hi:g}, got {value:g}"
    return None


def check_type(doc: YamlDoc, path: tuple, value: Any, kind: type | tuple) -> Any:
    """Type check with YAML's usual leniency: an int is a valid float; bool is not an int.
    Numbers must also be finite and of a sane size (check_number)."""
    kinds = kind if isinstance(kind, tuple) else (kind,)
    value = _as_yaml12_number(value, kinds)
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
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        problem = check_number(value)
        if problem:
            raise doc.error(path, problem)
    return float(value) if kinds == (float,) else value


def get(doc: YamlDoc, path: tuple, mapping: Mapping, key: str, kind: type | tuple,
        default: Any = ..., positive: bool = False, lo: float | None = None,
        hi: float | None = None) -> Any:
    """Fetch mapping[key] with a type check; `...` as default means required.
    positive: > 0; lo/hi: an inclusive physical range."""
    if key not in mapping:
        if default is ...:
            raise doc.error(path, f"missing required key '{key}'")
        return default
    value = check_type(doc, path + (key,), mapping[key], kind)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if positive and value <= 0:
            raise doc.error(path + (key,), f"must be positive, got {value}")
        if positive and value < MIN_POSITIVE:
            raise doc.error(path + (key,), f"must be positive and at least {MIN_POSITIVE:g}, "
                                           f"got {value:g}")
        problem = check_number(value, lo, hi)
        if problem:
            raise doc.error(path + (key,), problem)
    return value


def file_sha256(path: str | Path) -> str:
    """sha256 of a file's bytes, read in 1 MiB blocks (a model file a trace was calibrated
    from, a file a sweep point reads)."""
    import hashlib
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
