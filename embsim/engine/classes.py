"""Classes of identical GPUs: the engine simulates one compute stream per class.

Without stragglers every GPU is alike (one class); `--straggler gpu:R:F` makes GPU R
F times slower, `--straggler node:N:F` every GPU of node N.
"""

from __future__ import annotations

import math

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


def rank_classes(n_gpus: int, gpus_per_node: int, straggler: str | None) -> tuple[RankClass, ...]:
    spec = parse_straggler(straggler, n_gpus, gpus_per_node)
    everyone = tuple(range(n_gpus))
    if spec is None or spec[2] == 1.0:
        return (RankClass("all", everyone),)
    kind, index, factor = spec
    slow = (index,) if kind == "gpu" else tuple(range(index * gpus_per_node, (index + 1) * gpus_per_node))
    rest = tuple(r for r in everyone if r not in set(slow))
    classes = [RankClass(f"straggler-{kind}{index}", slow, factor)]
    if rest:
        classes.insert(0, RankClass("others", rest))
    return tuple(classes)
