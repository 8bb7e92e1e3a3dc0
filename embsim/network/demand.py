"""Demand: the bytes a transfer must push over each link it touches.

A collective in flight is one flow group whose cost on the network is a per-link byte
demand (computed once per algorithm, size and group, and cached by the collective model).
Demands are immutable: their arrays are read-only, so a cached plan can be shared safely.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np


def _frozen(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


def _owned(values, dtype) -> np.ndarray:
    """`values` as a 1-D array no one can write to: another Demand's read-only array is
    shared as it is (a scaled demand keeps its unit's link ids: at 16,384 GPUs a plan's
    links are ~10^5 ids), anything else is copied."""
    if (isinstance(values, np.ndarray) and values.dtype == dtype and values.ndim == 1
            and not values.flags.writeable and values.base is None):
        return values
    array = np.array(values, dtype=dtype, copy=True)
    return array if array.ndim == 1 else array.reshape(-1).copy()


def _is_normal(links: np.ndarray, nbytes: np.ndarray) -> bool:
    """Link ids strictly increasing and every entry > 0: what normalised() would return,
    bit for bit (each sum is one entry: 0.0 + b == b)."""
    return bool(np.all(links[1:] > links[:-1]) and np.all(nbytes > 0))


@dataclass(frozen=True, eq=False)
class Demand:
    """Bytes each link must carry: ``bytes[i]`` over link id ``links[i]``.

    Link ids may repeat (the entries then add up); use :meth:`normalised` for the
    canonical form (sorted unique link ids, zero entries dropped).
    """

    links: np.ndarray  # int64 link ids
    bytes: np.ndarray  # float64 bytes per entry

    def __post_init__(self) -> None:
        links, nbytes = _owned(self.links, np.int64), _owned(self.bytes, np.float64)
        if links.shape != nbytes.shape:
            raise ValueError(
                f"Demand: {links.size} link ids but {nbytes.size} byte counts"
            )
        if links.size and links.min() < 0:
            raise ValueError(f"Demand: negative link id {int(links.min())}")
        if not np.all(np.isfinite(nbytes)) or (nbytes.size and nbytes.min() < 0):
            raise ValueError("Demand: byte counts must be finite and >= 0")
        object.__setattr__(self, "links", _frozen(links))
        object.__setattr__(self, "bytes", _frozen(nbytes))

    # ----------------------------------------------------------------- builders
    @classmethod
    def empty(cls) -> "Demand":
        return cls(links=np.empty(0, np.int64), bytes=np.empty(0, np.float64))

    @classmethod
    def along(cls, route: Sequence[int], nbytes: float) -> "Demand":
        """``nbytes`` over every link of one route (e.g. ``topo.route(a, b)``)."""
        route = np.asarray(route, dtype=np.int64)
        return cls(links=route, bytes=np.full(route.size, float(nbytes)))

    @classmethod
    def sum(cls, demands: Iterable["Demand"]) -> "Demand":
        """All demands at once, duplicates merged (normalised form)."""
        demands = list(demands)
        if not demands:
            return cls.empty()
        links = np.concatenate([d.links for d in demands])
        nbytes = np.concatenate([d.bytes for d in demands])
        return cls(links=links, bytes=nbytes).normalised()

    # ------------------------------------------------------------------ algebra
    def normalised(self) -> "Demand":
        """Sorted unique link ids with summed bytes; zero-byte entries dropped."""
        if self.links.size == 0:
            return self
        # immutable, so computed once: a cached plan's demand is carried every iteration
        cached = self.__dict__.get("_normalised")
        if cached is not None:
            return cached
        if _is_normal(self.links, self.bytes):
            # its own normal form, not a second copy of its arrays (a ps node copy at 2,048
            # nodes is built sorted: ~10^4 entries, two per table, a thousand tables)
            result = self
        else:
            unique, inverse = np.unique(self.links, return_inverse=True)
            summed = np.bincount(inverse, weights=self.bytes, minlength=unique.size)
            keep = summed > 0
            result = Demand(links=_frozen(unique[keep]), bytes=_frozen(summed[keep]))
            object.__setattr__(result, "_normalised", result)
        object.__setattr__(self, "_normalised", result)
        return result

    def scaled(self, factor: float) -> "Demand":
        """Every entry multiplied by ``factor`` (>= 0)."""
        if not np.isfinite(factor) or factor < 0:
            raise ValueError(f"Demand.scaled: factor must be finite and >= 0, got {factor}")
        result = Demand(links=self.links, bytes=_frozen(self.bytes * float(factor)))
        if factor > 0 and self.__dict__.get("_normalised") is self:
            object.__setattr__(result, "_normalised", result)     # still sorted, distinct, > 0
        return result

    def merge(self, other: "Demand") -> "Demand":
        """This demand and ``other`` together (normalised)."""
        return Demand.sum((self, other))

    def __add__(self, other: "Demand") -> "Demand":
        if not isinstance(other, Demand):
            return NotImplemented
        return self.merge(other)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Demand):
            return NotImplemented
        a, b = self.normalised(), other.normalised()
        return np.array_equal(a.links, b.links) and np.array_equal(a.bytes, b.bytes)

    __hash__ = None  # arrays: equal-by-value, not hashable

    # -------------------------------------------------------------- measurements
    @property
    def total(self) -> float:
        """Sum of bytes over all links (link-bytes, not payload bytes)."""
        return float(self.bytes.sum())

    @property
    def is_empty(self) -> bool:
        return not np.any(self.bytes > 0)

    def per_link(self, n_links: int) -> np.ndarray:
        """Dense bytes-per-link vector of length ``n_links``."""
        if self.links.size and self.links.max() >= n_links:
            raise ValueError(
                f"Demand: link id {int(self.links.max())} outside 0..{n_links - 1}"
            )
        return np.bincount(self.links, weights=self.bytes, minlength=n_links)

    def bottleneck_time(self, capacity: np.ndarray) -> float:
        """Seconds this demand takes alone on an idle network: max(bytes / capacity).

        Raises ValueError if a link with bytes to carry has zero capacity.
        """
        d = self.normalised()
        if d.links.size == 0:
            return 0.0
        capacity = np.asarray(capacity, dtype=np.float64)
        if d.links.max() >= capacity.size:
            raise ValueError(
                f"Demand: link id {int(d.links.max())} outside 0..{capacity.size - 1}"
            )
        cap = capacity[d.links]
        if np.any(cap <= 0):
            bad = int(d.links[np.argmax(cap <= 0)])
            raise ValueError(f"Demand: link {bad} has bytes to carry but no capacity")
        return float(np.max(d.bytes / cap))

    def __len__(self) -> int:
        return int(self.links.size)

    def __repr__(self) -> str:
        return f"Demand({self.links.size} entries, {self.total:.6g} link-bytes)"
