"""Measured sequence-length histograms of training data sets, shipped as package data
(embsim/workload/datasets/NAME.yaml), named by `--lengths NAME`.

Each file holds `counts`, the number of samples of every length 1..max_length (lists of
numbers, in order), the `max_length` its samples were built for, and `source` (repository,
path, commit, license) of where the counts were published. The histogram is data: nothing
is fitted to it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..yamlio import check_mapping, check_type, get, load_yaml

DATASETS_DIR = Path(__file__).resolve().parent / "datasets"
SOURCE_KEYS = ("repo", "path", "commit", "license")


@dataclass(frozen=True)
class LengthHistogram:
    name: str
    description: str
    max_length: int
    counts: tuple[int, ...]         # counts[i]: samples of i + 1 tokens
    source: str                     # "repo path@commit"

    def probabilities(self, seq: int) -> np.ndarray:
        """P(length = i + 1) for i < seq, the data run at `seq`: samples longer than seq are
        truncated to it (a tokenizer's max_length cut), so their mass moves to seq."""
        c = np.asarray(self.counts, dtype=np.float64)
        if seq < c.size:
            c = np.concatenate([c[:seq - 1], [c[seq - 1:].sum()]])
        return c / c.sum()

    @property
    def mean(self) -> float:
        c = np.asarray(self.counts, dtype=np.float64)
        return float((c * np.arange(1, c.size + 1)).sum() / c.sum())


def list_datasets() -> list[str]:
    return sorted(p.stem for p in DATASETS_DIR.glob("*.yaml"))


@lru_cache(maxsize=16)      # package data: read once
def load_histogram(name: str) -> LengthHistogram:
    path = DATASETS_DIR / f"{name}.yaml"
    if name not in list_datasets():
        raise InputError(f"unknown length data set {name!r} (known: {', '.join(list_datasets())})")
    doc = load_yaml(path)
    top = check_mapping(doc, (), doc.data, ["name", "max_length", "source", "counts"], ["description"])
    if top["name"] != name:
        raise doc.error(("name",), f"is {top['name']!r} but the file is {path.name}")
    top_len = get(doc, (), top, "max_length", int, positive=True)
    src = check_mapping(doc, ("source",), top["source"], list(SOURCE_KEYS), ["also_at", "paper"])
    rows = check_type(doc, ("counts",), top["counts"], list)
    counts = []
    for i, row in enumerate(rows):
        for j, v in enumerate(check_type(doc, ("counts", i), row, list)):
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise doc.error(("counts", i, j), f"must be a count (integer >= 0), got {v!r}")
            counts.append(v)
    if len(counts) != top_len or sum(counts) == 0:
        raise doc.error(("counts",), f"needs {top_len} counts (lengths 1..max_length), not all "
                        f"zero; got {len(counts)}")
    return LengthHistogram(name=name, description=str(top.get("description", "")), max_length=top_len,
                           counts=tuple(counts), source=f"{src['repo']} {src['path']}@{str(src['commit'])[:7]}")
