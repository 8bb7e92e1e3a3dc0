"""Which preset holds measured compute figures for a GPU a topology file leaves without.

A file written for a system embsim does not ship names its GPU (gpu.model) but may leave
out the measured large-GEMM and streaming fractions a preset of the same GPU carries; the
kernel model then uses its defaults and says "no data". Saying where the data is lets the
user copy it, rather than reading the gap as a fact about the GPU. Not copied silently: a
file's gpu block is the user's statement of the device.
"""

from __future__ import annotations

from functools import lru_cache

from .clusterspec import find_preset, list_presets, load_node
from ..errors import InputError
from .spec import TopologyError

MEASURED_FIELDS = ("gemm_fraction", "gemm_fractions", "hbm_fraction")


def _has(gpu, field: str) -> bool:
    return bool(getattr(gpu, field, None))


@lru_cache(maxsize=32)
def _presets_measuring(model: str) -> tuple[tuple[str, frozenset[str]], ...]:
    """(preset name, the measured fields it gives) for every preset whose GPU is `model`."""
    found = []
    for name in list_presets():
        path = find_preset(name)
        try:
            gpu = load_node(path).gpu
        except (TopologyError, InputError, OSError, AttributeError):
            continue
        if gpu.model == model and not getattr(gpu, "fractions_from", None):   # its own measurements only
            found.append((name, frozenset(f for f in MEASURED_FIELDS if _has(gpu, f))))
    return tuple(found)


def preset_with_measurements(gpu, own_preset: str | None = None) -> str | None:
    """A preset (other than `own_preset`) whose GPU is `gpu.model` and which gives a
    measured figure `gpu` lacks, else None."""
    missing = {f for f in MEASURED_FIELDS if not _has(gpu, f)}
    if not missing or not getattr(gpu, "model", None):
        return None
    for name, fields in _presets_measuring(gpu.model):
        if name != own_preset and fields & missing:
            return name
    return None
