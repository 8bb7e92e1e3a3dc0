"""Where a run's inputs came from, for its text and JSON: the topology file (a packaged
preset, one shadowed by $EMBSIM_TOPOLOGY_PATH, or the user's own file) and the token
distribution (--zipf or a --corpus file). Both change the numbers, so both are recorded.

A packaged preset is named relative to the package (`topologies/dgx-h100.yaml`), so the
same run prints the same bytes wherever embsim is installed; any other file by its
absolute path. Each carries its sha256: an edited file is told apart from the original.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..topology.clusterspec import preset_dirs
from ..yamlio import file_sha256

PACKAGED, FROM_ENV, USER_FILE = "packaged preset", "$EMBSIM_TOPOLOGY_PATH", "file"


def _folder(path: Path) -> Path:
    return Path(os.path.realpath(path))


def topology_origin(file: str) -> str:
    """PACKAGED, FROM_ENV or USER_FILE: which folder `file` (the node-type file a run
    loaded) sits in."""
    env = [Path(p) for p in os.environ.get("EMBSIM_TOPOLOGY_PATH", "").split(os.pathsep) if p]
    here = _folder(Path(file).parent)
    if any(_folder(d) == here for d in env):
        return FROM_ENV
    if any(_folder(d) == here for d in preset_dirs() if d not in env):
        return PACKAGED
    return USER_FILE


def topology_file_json(file: str) -> dict:
    """{"file", "file_from", "file_sha256"} of the topology file a run used ({} when none):
    keys of simulate's `topology` block."""
    if not file:
        return {}
    origin = topology_origin(file)
    shown = f"topologies/{Path(file).name}" if origin == PACKAGED else os.path.abspath(file)
    return {"file": shown, "file_from": origin, "file_sha256": _sha256(file)}


def topology_file_text(file: str) -> str:
    """`file` and where it came from, for the line under the text summary."""
    origin = topology_origin(file)
    why = {PACKAGED: "the packaged preset", FROM_ENV: "found in $EMBSIM_TOPOLOGY_PATH, "
           "shadowing any packaged preset of that name", USER_FILE: "a file given by --topology "
           "or --trace"}[origin]
    return f"{file} ({why})"


def token_source(config) -> dict:
    """The token distribution a run drew its embedding lookups from: the Zipf exponent, or
    the corpus file (which replaces it) with its sha256."""
    corpus = getattr(config, "corpus", None)
    if corpus:
        return {"zipf": None, "corpus": str(corpus), "corpus_sha256": _sha256(corpus)}
    return {"zipf": getattr(config, "zipf_s", None), "corpus": None}


def with_token_source(workload, config) -> dict:
    """A run's workload (a dict or its items) as its outputs record it: the engine's, plus
    the token source of `config`."""
    return {**dict(workload), **token_source(config)}


def workload_record(result) -> dict:
    """A simulation result's workload as its outputs record it."""
    return with_token_source(result.workload, result.config)


def _sha256(path) -> str | None:
    try:
        return file_sha256(path)
    except OSError:            # gone since the run read it: recorded as unknown
        return None
