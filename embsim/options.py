"""Typed options of registered components (strategies, schedulers).

Each component declares `Options`: a frozen dataclass whose fields are its `--option`
keys, with defaults, and whose __post_init__ checks values (raising InputError). A key
the dataclass lacks is refused with the component's valid keys listed. `route` hands
each key of one `--option` bag to the components that declare it.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping

from .errors import InputError


@dataclasses.dataclass(frozen=True)
class NoOptions:
    """A component without options."""


def option_keys(options_type: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(options_type))


def build_options(options_type: type, given: Mapping[str, Any], owner: str):
    """options_type(**given), refusing keys it does not declare."""
    keys = option_keys(options_type)
    unknown = [k for k in given if k not in keys]
    if unknown:
        raise InputError(f"--option {unknown[0]}: {owner} takes "
                         f"{', '.join(keys) if keys else 'no options'}")
    return options_type(**given)


def route(given: Mapping[str, Any], components: Mapping[str, type]) -> dict[str, dict]:
    """Split one option bag among components ({owner: options_type} -> {owner: options}):
    every key goes to each component that declares it; a key none declares is refused."""
    out: dict[str, dict] = {owner: {} for owner in components}
    for key, value in given.items():
        takers = [owner for owner, t in components.items() if key in option_keys(t)]
        if not takers:
            offered = "; ".join(f"{owner}: {', '.join(option_keys(t)) or 'no options'}"
                                for owner, t in components.items())
            raise InputError(f"--option {key}: none of these takes it ({offered})")
        for owner in takers:
            out[owner][key] = value
    return out


# No option counts or sizes anything near this; beyond it a value is a typo (or inf).
MAX_OPTION_VALUE = 1e15


def positive_number(value: Any, key: str, minimum: float = 0.0) -> float:
    """A finite number > 0 (and >= minimum), at most MAX_OPTION_VALUE."""
    if isinstance(value, str):        # as typed, not a number at all: say that, not the range
        raise InputError(f"--option {key}={value!r}: not a number")
    if (isinstance(value, bool) or not isinstance(value, (int, float))
            or not 0 < value <= MAX_OPTION_VALUE or value < minimum):
        low = f"{minimum:g}" if minimum > 0 else "a positive number"
        raise InputError(f"--option {key}={value!r}: must be {low}"
                         f"{'..' if minimum > 0 else ' up to '}{MAX_OPTION_VALUE:g}")
    return float(value)


_SWITCH = {True: True, False: False, 1: True, 0: False, "on": True, "off": False, "true": True,
           "false": False, "yes": True, "no": False, "1": True, "0": False}


def switch(value: Any, key: str) -> bool:
    """An on/off option as typed (on/off, true/false, yes/no, 1/0) or as YAML gives it."""
    v = value.lower() if isinstance(value, str) else value
    if isinstance(v, float) or v not in _SWITCH:
        raise InputError(f"--option {key}={value!r}: expected on or off (true or false)")
    return _SWITCH[v]


class Configurable:
    """A registry component (strategy, scheduler) whose --option keys are the fields of
    its `Options` dataclass. Subclasses never take constructor keywords: those swallowed
    typos and reached every component."""

    Options: type = NoOptions
    component_kind = "component"     # the word used in messages: "strategy", "scheduler"

    def __init__(self, options=None):
        self.options = options if options is not None else self.Options()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "__init__" in cls.__dict__:
            raise TypeError(f"{cls.__name__}: declare {cls.component_kind} options as an "
                            f"Options dataclass, not as __init__ keywords")

    @classmethod
    def from_options(cls, given: Mapping[str, Any]):
        """The component with `given` --option values, unknown keys refused."""
        return cls(build_options(cls.Options, given, f"{cls.component_kind} {cls.name}"))

