"""NCCL's algorithm and protocol names, and its NCCL_ALGO / NCCL_PROTO filter syntax.

One place for both, at the bottom floor: a topology file's platform settings
(nics.nccl_proto, nics.nccl_algo, nics.nccl_env) and the command line's --algo/--proto/
--nccl-env are read by the same rules as NCCL reads its environment ("Ring", "Tree,Ring",
"^NVLS" to exclude; byte counts as strtoll reads them).
"""

from __future__ import annotations

import re
from typing import Iterable, Mapping

from embsim.errors import InputError

# NCCL's ncclAlgoStr (init.cc): CollNetDirect / CollNetChain run only where the network
# reduces in the switch (topology `network.sharp`, collectives/collnet.py)
ALGOS = ("Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT")
COLLNET_ALGOS = ("CollNetDirect", "CollNetChain")
PROTOS = ("LL", "LL128", "Simple")

_ALGO_NAMES = {a.lower(): a for a in ALGOS} | {"nvls_tree": "NVLSTree"}
_PROTO_NAMES = {p.lower(): p for p in PROTOS}


def parse_filter(text: str | None, kind: str, flag: str | None = None) -> frozenset[str] | None:
    """NCCL_ALGO / NCCL_PROTO syntax: "Ring", "Tree,Ring", "^NVLS" (exclude). None = no filter.
    `kind` is "algo" or "proto"; `flag` names the option in errors (nccl-tests' --algo,
    simulate's --nccl-algo). A filter that names nothing known, or keeps nothing, is refused."""
    flag = flag or f"--{kind}"
    if text is None or str(text).strip() == "":
        return None
    names = _ALGO_NAMES if kind == "algo" else _PROTO_NAMES
    universe = ALGOS if kind == "algo" else PROTOS
    body = str(text).strip()
    exclude = body.startswith("^")
    items = [t.strip().lower() for t in body.lstrip("^").split(",") if t.strip()]
    bad = [t for t in items if t not in names]
    if bad or not items:
        raise InputError(f"{flag} {text!r}: unknown {kind} {bad[0] if bad else '(empty)'!r}; "
                         f"known: {', '.join(universe)} (comma list, '^' to exclude)")
    chosen = {names[t] for t in items}
    kept = frozenset(u for u in universe if (u not in chosen) == exclude)
    if not kept:
        raise InputError(f"{flag} {text!r} excludes every {kind} ({', '.join(universe)}); "
                         f"NCCL would have nothing to run")
    return kept


# The NCCL_* variables the collective model uses (collectives.nccl_env): buffer sizes per
# protocol and point-to-point chunk sizes per path. A run's --nccl-env and a platform's
# profile (topology nics.nccl_env) are read by the same rules.
BUFF_VARS = {"NCCL_BUFFSIZE": "Simple", "NCCL_LL_BUFFSIZE": "LL", "NCCL_LL128_BUFFSIZE": "LL128"}
P2P_VARS = {"NCCL_P2P_NET_CHUNKSIZE": "net", "NCCL_P2P_NVL_CHUNKSIZE": "nvl",
            "NCCL_P2P_PCI_CHUNKSIZE": "pci"}
ENV_NAMES = tuple(BUFF_VARS) + tuple(P2P_VARS)
_STEPS = 8          # NCCL_STEPS (collectives.constants): FIFO steps a buffer is cut into
# A buffer of fewer bytes than a step's smallest unit (a 16 B LL line x NCCL_STEPS) or more
# than a 32-bit stepSize cannot be what a run used.
_MIN_BYTES, _MAX_BYTES = 16 * _STEPS, 1 << 31

# What NCCL's strtoll(value, NULL, 0) reads whole (param.cc ncclLoadParam): decimal, 0x hex,
# or 0-led octal. Python's int(text, 0) would take 1_000_000 (NCCL reads 1) and refuse 0777.
_NUMBER = re.compile(r"0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*")


def _bytes(name: str, text: str, where: str) -> int:
    digits = str(text).strip()
    if not _NUMBER.fullmatch(digits):
        raise InputError(f"{where} {name}={text!r}: not a whole number of bytes")
    base = 16 if digits[:2].lower() == "0x" else 8 if digits.startswith("0") else 10
    try:
        value = int(digits, base)
    except ValueError:     # more decimal digits than Python converts (4300): far past the bound
        raise InputError(f"{where} {name}: {len(digits):,} digits, outside {_MIN_BYTES}..{_MAX_BYTES} "
                         f"bytes") from None
    if not _MIN_BYTES <= value <= _MAX_BYTES:
        raise InputError(f"{where} {name}={value}: outside {_MIN_BYTES}..{_MAX_BYTES} bytes")
    return value


def parse_env_values(pairs: Mapping[str, object] | Iterable[tuple[str, object]],
                     where: str = "--nccl-env") -> tuple[tuple[str, int], ...]:
    """{NAME: VALUE} or (NAME, VALUE) pairs -> sorted (NAME, bytes); unknown names, bad
    values and a name given twice with two values are refused with a one-line error
    naming `where`."""
    items = pairs.items() if isinstance(pairs, Mapping) else pairs
    out: dict[str, int] = {}
    for name, value in items:
        key = str(name).strip().upper()
        if key not in ENV_NAMES:
            raise InputError(f"{where} {str(name)!r}: not a modelled NCCL variable (known: {', '.join(ENV_NAMES)})")
        size = _bytes(key, str(value), where)
        if out.get(key, size) != size:
            raise InputError(f"{where} {key}: given twice, {out[key]} and {size} bytes")
        out[key] = size
    return tuple(sorted(out.items()))
