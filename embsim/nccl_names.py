"""NCCL's algorithm and protocol names, and its NCCL_ALGO / NCCL_PROTO filter syntax.

One place for both, at the bottom floor: a topology file's net-plugin setting
(nics.nccl_proto) and the command line's --algo/--proto are read by the same rules as
NCCL reads its environment ("Ring", "Tree,Ring", "^NVLS" to exclude).
"""

from __future__ import annotations

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
