"""--topology values: `NxG`, `PRESET:NxG`, `PRESET`, `path.yaml`, `path.yaml:NxG`.

Presets are YAML files named PRESET.yaml, looked up first in the directories of
$EMBSIM_TOPOLOGY_PATH (os.pathsep-separated, so users can shadow a preset), then in
the repository's topologies/ directory.
"""

from __future__ import annotations

import os
import sys
import re
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

import embsim

from . import aliases
from ..yamlio import beside
from .parse import load_node_type
from .spec import LIMITS, NodeType, TopologyError
from .topology import Topology

DEFAULT_PRESET = "dgx-h100"
_SHAPE = re.compile(r"^(\d+)x(\d+)$")
_SHAPE_LIKE = re.compile(r"^-?[\d-]*(x-?[\d-]*)+$")


def preset_dirs() -> list[Path]:
    dirs = [Path(p) for p in os.environ.get("EMBSIM_TOPOLOGY_PATH", "").split(os.pathsep) if p]
    for d in dirs:
        # a mistyped folder would silently fall back to the packaged preset of that name
        try:
            missing, a_file = not d.is_dir(), d.is_file()
        except OSError:            # a name too long to look up
            missing, a_file = True, False
        if missing:
            raise TopologyError(f"EMBSIM_TOPOLOGY_PATH: {d}: not a folder"
                                f"{' (a file: give the folder that holds it)' if a_file else ''}")
    # a checkout (or editable install) keeps them beside the package; a wheel installs
    # them as data files under <prefix>/share/embsim/topologies (setup.cfg)
    return dirs + [Path(embsim.__file__).resolve().parent.parent / "topologies",
                   Path(sys.prefix) / "share" / "embsim" / "topologies"]


def list_presets() -> list[str]:
    # regular files only: a folder named x.yaml is no preset (find_preset would not find it)
    names = {p.stem for d in preset_dirs() if d.is_dir() for p in d.glob("*.yaml") if p.is_file()}
    return sorted(names)


def find_preset(name: str) -> Path | None:
    for d in preset_dirs():
        path = d / f"{name}.yaml"
        try:
            if path.is_file():
                return path
        except OSError:        # a name too long to look up is no preset
            continue
    return None


@lru_cache(maxsize=64)
def _load_cached(path: str, mtime_ns: int) -> NodeType:
    return load_node_type(path)


def load_node(path: Path) -> NodeType:
    """Parse a node-type file (cached on path and modification time)."""
    try:
        mtime = path.stat().st_mtime_ns
    except OSError:
        raise TopologyError(f"{path}: no such file") from None
    return _load_cached(str(path), mtime)


def _looks_like_path(text: str) -> bool:
    return text.endswith((".yaml", ".yml")) or "/" in text or os.sep in text


def _shape(spec: str, text: str, origin: str = "--topology") -> tuple[int, int]:
    m = _SHAPE.match(text)
    if not m or len(text) > 16:
        raise TopologyError(f"{origin} {spec!r}: {text!r} is not NxG (nodes x GPUs per node, e.g. 16x8)")
    n, g = int(m.group(1)), int(m.group(2))
    if n < 1 or g < 1:
        raise TopologyError(f"{origin} {spec!r}: nodes and GPUs per node must be >= 1, got {n}x{g}")
    if n > LIMITS["nodes"] or n * g > LIMITS["gpus"]:
        raise TopologyError(f"{origin} {spec!r}: at most {LIMITS['nodes']} nodes and "
                            f"{LIMITS['gpus']} GPUs, got {n}x{g}")
    return n, g


@dataclass(frozen=True)
class TopologySpec:
    """A --topology value, parsed once: where the node type comes from (a preset name or a
    YAML path) and the cluster shape, if given. str() gives the canonical text back."""

    where: str
    shape: tuple[int, int] | None = None     # (nodes, GPUs per node)
    text: str = ""                           # as the user wrote it (for messages)

    @classmethod
    def parse(cls, spec: "str | TopologySpec", origin: str = "--topology") -> "TopologySpec":
        if isinstance(spec, TopologySpec):
            return spec
        if not isinstance(spec, str) or not spec.strip():
            raise TopologyError(f"{origin} {spec!r}: empty (use NxG, PRESET, PRESET:NxG or a .yaml path)")
        spec = spec.strip()
        # a shape-like text (digits and x's, "1x8x2" included) is a shape, refused as one if
        # it is not NxG, not looked up as a preset name
        if _SHAPE.match(spec) or _SHAPE_LIKE.match(spec):
            return cls(DEFAULT_PRESET, _shape(spec, spec, origin), spec)
        if ":" in spec:
            head, tail = spec.rsplit(":", 1)
            if _SHAPE.match(tail) or _SHAPE_LIKE.match(tail):
                return cls(head, _shape(spec, tail, origin), spec)
        return cls(spec, None, spec)

    @property
    def is_path(self) -> bool:
        return _looks_like_path(self.where)

    @property
    def name(self) -> str:
        """The preset, or the file's stem: what a trace's `topology` names."""
        return Path(self.where).stem if self.is_path else self.where

    @property
    def n_gpus(self) -> int | None:
        return None if self.shape is None else self.shape[0] * self.shape[1]

    def with_shape(self, nodes: int, gpus_per_node: int) -> "TopologySpec":
        shaped = replace(self, shape=(nodes, gpus_per_node))
        return replace(shaped, text=str(shaped))

    def __str__(self) -> str:
        return self.where if self.shape is None else f"{self.where}:{self.shape[0]}x{self.shape[1]}"


def spec_beside(text: str, source: "str | Path") -> str:
    """A topology value written in the YAML file `source` (a curve's `preset`, a training run's
    `topology`): its topology file found next to `source` when it is not where embsim runs
    (yamlio.beside), the shape kept; a preset, or a value the loader will refuse, as it is."""
    try:
        spec = TopologySpec.parse(text)
    except TopologyError:
        return text
    if not spec.is_path:
        return text
    return str(replace(spec, where=beside(spec.where, source), text=""))


def load_topology(spec: "str | TopologySpec", origin: str = "--topology") -> Topology:
    """Build the Topology a --topology value names (see module docstring for the forms).
    `origin` is what its errors name as the value's source: the flag, or a file's key
    (`preset`, `embsim.topology`) when the value came from a YAML file."""
    parsed = TopologySpec.parse(spec, origin)
    spec, where, shape = parsed.text or str(parsed), parsed.where, parsed.shape
    if _looks_like_path(where):
        path = Path(where)
        try:
            why = (None if path.is_file() else "a directory, not a topology file" if path.is_dir()
                   else "not a regular file" if path.exists() else "no such file")
        except OSError as exc:     # a name too long to look up
            why = exc.strerror or str(exc)
        if why:
            raise TopologyError(f"{origin} {spec!r}: {where}: {why}")
        node = load_node(path)
        preset, alias_note = node.name, ""
    else:
        path, preset, alias_note = find_preset(where), where, ""
        if path is None:
            presets = list_presets()
            resolved = aliases.resolve(where, presets)
            if resolved is None:
                near = aliases.suggestions(where, presets)
                hint = f"did you mean {' or '.join(near)}? " if near else ""
                raise TopologyError(f"{origin} {spec!r}: unknown preset {where!r} ({hint}"
                                    f"available: {', '.join(presets) or 'none'})")
            preset, alias_note = resolved
            path = find_preset(preset)
        node = load_node(path)
    n_nodes, gpus = shape if shape else (1, node.gpu.count)
    if gpus > node.gpu.count:
        raise TopologyError(f"{origin} {spec!r}: {preset} has {node.gpu.count} GPUs per node, "
                            f"cannot use {gpus}")
    if n_nodes > 1 and node.nics.count == 0:
        raise TopologyError(f"{origin} {spec!r}: {preset} has no NICs (nics.count 0), "
                            f"so it can only be one node, not {n_nodes}")
    return Topology(node, n_nodes, gpus, preset=preset, alias_note=alias_note)
