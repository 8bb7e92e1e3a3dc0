"""A tiny name -> class registry, shared by strategies, schedulers and the like.

Adding a strategy or scheduler is one module with one `@REGISTRY.register("name")`.
"""

from __future__ import annotations

from typing import Callable, Generic, TypeVar

from .errors import InputError

T = TypeVar("T")


class Registry(Generic[T]):
    def __init__(self, what: str, flag: str):
        self.what = what
        self.flag = flag
        self._items: dict[str, type[T]] = {}

    def register(self, name: str) -> Callable[[type[T]], type[T]]:
        def deco(cls: type[T]) -> type[T]:
            if name in self._items:
                raise ValueError(f"{self.what} {name!r} registered twice")
            cls.name = name
            self._items[name] = cls
            return cls
        return deco

    def names(self) -> list[str]:
        return list(self._items)

    def get(self, name: str) -> type[T]:
        try:
            return self._items[name]
        except KeyError:
            raise InputError(f"{self.flag}: unknown {self.what} {name!r} "
                             f"(known: {', '.join(self._items)})") from None
