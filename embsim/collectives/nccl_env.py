"""NCCL environment variables that change what the kernels move, not what NCCL picks.

NCCL reads its buffer and chunk sizes once per communicator (init.cc computeBuffSizes):

* NCCL_BUFFSIZE (default 4 MiB) -- the Simple protocol's buffer per connection. A FIFO
  step is an eighth of it (stepSize = buffSize / NCCL_STEPS), so it sets the Ring's chunk
  (stepSize x chunkSteps) and slice, the Tree's chunk, and how many pipeline steps a
  message takes; cloud recipes (AWS EFA, GCP TCPXO) raise it to 8 MiB.
* NCCL_LL_BUFFSIZE, NCCL_LL128_BUFFSIZE -- the same for LL and LL128 (defaults: 8 lines x
  512 threads x 8 steps x 16 B; 120 x 640 threads x 8 steps x 8 B).
* NCCL_P2P_NET_CHUNKSIZE / _NVL_ / _PCI_ (128 KiB, 512 KiB, 128 KiB) -- the step of a
  point-to-point op over the network / NVLink / PCIe, never more than a Simple step
  ("Make sure P2P chunksize is not larger than coll chunksize").

None of these enter tuning.cc, so NCCL's choice of algorithm and protocol is unchanged;
only the pipeline (pipeline.py, p2p.py) sees them. Other NCCL_* names are refused, so a
typo is not silently ignored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Iterable, Mapping


from embsim.nccl_names import BUFF_VARS as _BUFF_VARS
from embsim.nccl_names import ENV_NAMES as KNOWN
from embsim.nccl_names import P2P_VARS as _P2P_VARS
from embsim.nccl_names import parse_env_values

from .constants import NCCL_STEPS, NcclConstants

@dataclass(frozen=True)
class NcclEnv:
    """NCCL_* settings of a run, as bytes; an empty env is NCCL's defaults."""

    values: tuple[tuple[str, int], ...] = ()

    def get(self, name: str) -> int | None:
        return dict(self.values).get(name)

    def describe(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.values)

    def __bool__(self) -> bool:
        return bool(self.values)


def parse_env(pairs: Mapping[str, object] | Iterable[tuple[str, object]], where: str = "--nccl-env") -> NcclEnv:
    """{NAME: VALUE} or (NAME, VALUE) pairs -> NcclEnv (nccl_names.parse_env_values)."""
    return NcclEnv(parse_env_values(pairs, where))


# `NAME=VALUE` (a command line, mpirun's -x, a recipe) or NCCL's own INFO line; the value
# ends at a space or a quote and sheds the punctuation prose puts after it ("NCCL_PROTO=^LL128).");
# a list keeps its commas (NCCL_PROTO=LL,LL128,Simple)
_SETTING = re.compile(r"\b(NCCL_[A-Z0-9_]+)(?:=| set by environment to )([^\s;'\")]*)")
_NUMBER = re.compile(r"0x[0-9a-fA-F]+|\d+")


def settings(text: str | None) -> dict[str, str]:
    """Every NCCL_* setting a measurement's text records, as written, the first of each name:
    the one reader of a log's command line and INFO lines and a file's `how:` for the
    buffer sizes (env_from_text), NCCL_ALGO / NCCL_PROTO (validation.run_filters) and the
    transports the model lacks (nccl_transport)."""
    found: dict[str, str] = {}
    for m in _SETTING.finditer(text or ""):
        found.setdefault(m.group(1), m.group(2).rstrip(".,:"))
    return found


def env_from_text(text: str | None, where: str = "log") -> NcclEnv:
    """The modelled NCCL_* settings a measurement's text records (`settings`): names this
    model does not use are skipped (a log sets many), and so is a value that is no number
    (a shell expression in a recipe). `where`: the file (and key) the text is from, for the
    error of a value no run can have used."""
    found = {k: v for k, v in settings(text).items() if k in KNOWN and _NUMBER.fullmatch(v)}
    return parse_env(found, where=where) if found else NcclEnv()


def apply_env(consts: NcclConstants, env: NcclEnv | None) -> NcclConstants:
    """The release's constants with the run's buffer and chunk sizes (init.cc
    computeBuffSizes: the p2p chunk is capped at a Simple step)."""
    if not env:
        return consts
    buff = dict(consts.buff_bytes)
    for name, proto in _BUFF_VARS.items():
        if env.get(name) is not None:
            buff[proto] = env.get(name)
    p2p = dict(consts.p2p_chunk)
    for name, path in _P2P_VARS.items():
        if env.get(name) is not None:
            p2p[path] = env.get(name)
    step = buff["Simple"] // NCCL_STEPS
    p2p = {k: min(v, step) for k, v in p2p.items()}
    return replace(consts, buff_bytes=MappingProxyType(buff), p2p_chunk=MappingProxyType(p2p),
                   env=env.describe())
