"""Classes of identical GPUs: the engine simulates one compute stream per class.

Without stragglers every GPU is alike (one class); `--straggler gpu:R:F` makes GPU R
F times slower, `--straggler node:N:F` every GPU of node N. Classes are found from the
per-rank behaviour (group_ranks), not by special case: any per-GPU variation (a
straggler, jitter, mixed GPU models) becomes as many classes as there are distinct GPUs.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import InputError
from ..plan.timeline import RankClass


def parse_straggler(text: str | None, n_gpus: int, gpus_per_node: int) -> tuple[str, int, float] | None:
    if not text:
        return None
    parts = text.split(":")
    try:
        if len(parts) != 3 or parts[0] not in ("gpu", "node"):
            raise ValueError
        index, factor = int(parts[1]), float(parts[2])
    except ValueError:
        raise InputError(f"--straggler {text!r}: expected gpu:RANK:FACTOR or node:NODE:FACTOR") from None
    limit = n_gpus if parts[0] == "gpu" else n_gpus // gpus_per_node
    if not 0 <= index < limit:
        raise InputError(f"--straggler {text!r}: {parts[0]} {index} out of range 0..{limit - 1}")
    if not math.isfinite(factor) or not 0 < factor <= 1e6:
        raise InputError(f"--straggler {text!r}: factor must be a finite number in (0, 1e6]")
    return parts[0], index, factor


def rank_slowdowns(n_gpus: int, gpus_per_node: int, straggler: str | None) -> np.ndarray:
    """Each rank's compute time multiplier from --straggler (ones without)."""
    out = np.ones(n_gpus)
    spec = parse_straggler(straggler, n_gpus, gpus_per_node)
    if spec is not None:
        kind, index, factor = spec
        if kind == "gpu":
            out[index] = factor
        else:
            out[index * gpus_per_node:(index + 1) * gpus_per_node] = factor
    return out


def group_ranks(slowdown, names=None, param=None) -> tuple[RankClass, ...]:
    """One class per distinct per-rank behaviour, found automatically: ranks whose rows
    of `slowdown` (n,) or (n, k) are equal share a class (ordered by their first rank), so
    identical GPUs cost one compute stream however many there are, and n distinct GPUs
    cost n. The nominal class (all ones) comes first, the rest in order of first rank. `names(ranks, value)` names a class (default: "all" for one class, else
    "ranks-<first>"). `param` (n,): each rank's parameter-sized-op slowdown
    (RankClass.param_slowdown), grouped with the rest."""
    s = np.asarray(slowdown, dtype=np.float64)
    rows = s.reshape(s.shape[0], -1)
    if param is not None:
        rows = np.column_stack([rows, np.asarray(param, dtype=np.float64)])
    _, first, inverse = np.unique(rows, axis=0, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    # the nominal class (all ones) first, then in order of first rank
    nominal = np.all(rows[first] == 1.0, axis=1)
    order = np.lexsort((first, ~nominal))
    members = np.argsort(inverse, kind="stable")       # ranks of class c, ascending
    ends = np.cumsum(np.bincount(inverse, minlength=first.size))
    out = []
    for c in order:
        ranks = tuple(members[(ends[c - 1] if c else 0):ends[c]].tolist())
        value = float(rows[first[c], 0])
        if names is not None:
            name = names(ranks, value)
        else:
            name = "all" if first.size == 1 else f"ranks-{ranks[0]}"
        out.append(RankClass(name, ranks, value,
                             None if param is None else float(rows[first[c], -1])))
    return tuple(out)


def rank_classes(n_gpus: int, gpus_per_node: int, straggler: str | None) -> tuple[RankClass, ...]:
    spec = parse_straggler(straggler, n_gpus, gpus_per_node)
    slowdown = rank_slowdowns(n_gpus, gpus_per_node, straggler)

    def names(ranks, value):
        if value == 1.0:
            return "others" if len(ranks) < n_gpus else "all"
        return f"straggler-{spec[0]}{spec[1]}"
    return group_ranks(slowdown, names)
