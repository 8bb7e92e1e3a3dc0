"""Typed identities of the compute operations of one training iteration.

A compute op is a role (forward, backward, optimizer update, or an extra kernel a
strategy adds) applied to one layer. Policies compare roles and layers, never strings;
the text form ("fwd:decoder", "update:word_embedding#deferred",
"extra:embrace-ids:word_embedding") exists only at the edges: timelines, Chrome traces,
messages.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from functools import cached_property


class Role(enum.Enum):
    FWD = "fwd"
    BWD = "bwd"
    # the input-gradient half of a layer's backward, when a scheduler computes it ahead
    # of the weight gradient (EmbRace's reordering); BWD is then the weight-gradient half
    BWD_INPUT = "bwd-input"
    UPDATE = "update"       # the optimizer step of a layer
    EXTRA = "extra"         # a kernel a strategy adds (id staging, sketch encode, ...)


# Text suffix of a deferred update, and of the sync tensors that feed one.
DEFERRED = "#deferred"


@dataclass(frozen=True)
class OpId:
    """One compute op of an iteration, unique within it."""

    role: Role
    layer: str
    # an update only: the part that may wait until after the next forward of the layer
    # (EmbRace's horizontal scheduling: rows the next batch does not read)
    deferred: bool = False
    tag: str = ""           # an extra op only: what it does, e.g. "embrace-ids"

    def __post_init__(self):
        if self.deferred and self.role is not Role.UPDATE:
            raise ValueError(f"only an update may be deferred, not {self.role.value}:{self.layer}")
        if (self.role is Role.EXTRA) != bool(self.tag):
            raise ValueError(f"an extra op needs a tag, and only an extra op has one ({self.role.value}:{self.layer})")

    @cached_property
    def text(self) -> str:
        if self.role is Role.EXTRA:
            return f"extra:{self.tag}:{self.layer}"
        return f"{self.role.value}:{self.layer}{DEFERRED if self.deferred else ''}"

    def __str__(self) -> str:
        return self.text

    @property
    def kind(self) -> str:
        return self.role.value

    @classmethod
    def parse(cls, text: str) -> "OpId":
        """The inverse of str(): for inputs that name ops as text."""
        role, sep, rest = text.partition(":")
        try:
            r = Role(role)
        except ValueError:
            raise ValueError(f"op {text!r}: expected fwd:, bwd:, update: or extra: first") from None
        if not sep or not rest:
            raise ValueError(f"op {text!r}: no layer")
        if r is Role.EXTRA:
            tag, sep, layer = rest.partition(":")
            if not sep or not tag or not layer:
                raise ValueError(f"op {text!r}: expected extra:TAG:LAYER")
            return cls(r, layer, tag=tag)
        if r is Role.UPDATE and rest.endswith(DEFERRED):
            return cls(r, rest.removesuffix(DEFERRED), deferred=True)
        return cls(r, rest)


def fwd_name(layer: str) -> OpId:
    return OpId(Role.FWD, layer)


def bwd_name(layer: str) -> OpId:
    return OpId(Role.BWD, layer)


def bwd_input_name(layer: str) -> OpId:
    return OpId(Role.BWD_INPUT, layer)


def update_name(layer: str, deferred: bool = False) -> OpId:
    return OpId(Role.UPDATE, layer, deferred=deferred)


def extra_name(tag: str, layer: str) -> OpId:
    return OpId(Role.EXTRA, layer, tag=tag)


def stream_order(layers: list[str], per_layer: bool) -> list[OpId]:
    """One iteration's stream ops in order, for every op that may exist (the builder
    keeps those that do). Schedulers that key priorities on when the next iteration
    needs something read positions from here.

    DDP-style (per_layer False): fwd layers, bwd layers reversed, then the optimizer
    updates. Per-layer (P3 / ByteScheduler): the update of layer i (with the previous
    iteration's gradient) immediately before the forward of layer i; deferred parts
    after the whole forward."""
    if per_layer:
        names = [n for layer in layers for n in (update_name(layer), fwd_name(layer))]
        # deferred parts touch rows the next batch does not read: they may wait until the
        # whole next forward has run (EmbRace's horizontal scheduling)
        names += [update_name(layer, deferred=True) for layer in layers]
        return names + [bwd_name(layer) for layer in reversed(layers)]
    names = [fwd_name(layer) for layer in layers] + [bwd_name(layer) for layer in reversed(layers)]
    return names + [update_name(layer, d) for layer in layers for d in (False, True)]
