"""Results remembered by the identity of the objects they were computed from.

For immutable inputs that come back as the same object many times (a cached plan's
demand every iteration, a rank class's tuple at every arrival, tables sharing one set of
token-statistics arrays), where hashing or comparing them by value is the cost to avoid
(a 16,384-rank tuple, a 10^5-entry array). The objects are kept with the result, so their
ids cannot be reused while the cache lives.
"""

from __future__ import annotations

from typing import Any, Callable, Hashable


class ByIdentity:
    def __init__(self):
        self._results: dict[Hashable, tuple[tuple, Any]] = {}

    def get(self, objects: tuple, compute: Callable[[], Any], tag: Hashable = None) -> Any:
        """compute() the first time these objects (and `tag`) are asked for, then its result."""
        key = (tag,) + tuple(map(id, objects))
        hit = self._results.get(key)
        if hit is None:
            hit = self._results[key] = (objects, compute())
        return hit[1]
