"""A fingerprint of embsim itself, recorded in every sweep row: resume keeps a result only
where it matches. The version string alone missed an edited preset, zoo model or line of
code (it stays 0.1.0 between releases), and a point's own hash leaves the packaged files
out (spec.named_files).

It is the sha256 of the bytes of every code and data file of the `embsim` package and of
the packaged topology presets, by path relative to their folder (the same files in another
checkout or machine give the same fingerprint). Computed once per process: ~500 files.
"""

from __future__ import annotations

import hashlib
import os
import sys
from functools import lru_cache
from pathlib import Path

import embsim

# what embsim reads from its package: code and data; caches, editor files and the like
# are left out (they change nothing a simulation computes)
PACKAGE_SUFFIXES = (".py", ".yaml", ".yml", ".md", ".csv", ".json", ".txt")


def packaged_preset_dirs() -> list[Path]:
    """The preset folders embsim ships, as topology.clusterspec.preset_dirs finds them
    after $EMBSIM_TOPOLOGY_PATH's (the user's presets: a point's hash covers those)."""
    return [Path(embsim.__file__).resolve().parent.parent / "topologies",
            Path(sys.prefix) / "share" / "embsim" / "topologies"]


def _package_files(root: Path) -> list[Path]:
    found = []
    for folder, dirs, files in os.walk(root):        # symlinked folders not followed
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
        found += [Path(folder) / f for f in sorted(files)
                  if f.endswith(PACKAGE_SUFFIXES) and not f.startswith(".")]
    return found


def _preset_files(folder: Path) -> list[Path]:
    # as find_preset reads them: NAME.yaml directly in the folder
    try:
        return sorted(p for p in folder.glob("*.yaml") if p.is_file())
    except OSError:
        return []


@lru_cache(maxsize=1)
def embsim_fingerprint() -> str:
    digest = hashlib.sha256()
    roots = [("embsim", Path(embsim.__file__).resolve().parent, _package_files)]
    roots += [(f"presets{i}", d, _preset_files) for i, d in enumerate(packaged_preset_dirs())]
    for label, root, files in roots:
        for path in files(root):
            try:
                data = path.read_bytes()
            except OSError:            # unreadable: embsim cannot read it either
                data = b"\0unreadable"
            name = f"{label}/{path.relative_to(root).as_posix()}"
            digest.update(f"{name}\0{len(data)}\0".encode())
            digest.update(data)
    return digest.hexdigest()[:16]
