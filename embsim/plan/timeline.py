"""What a simulated run produced: when each compute op ran on each class of GPUs and when
each collective ran. The engine writes it; metrics and reports (Chrome traces) read it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class RankClass:
    """GPUs that behave identically: the engine simulates one compute stream for them."""

    name: str
    ranks: tuple[int, ...]
    slowdown: float = 1.0      # compute time multiplier (a straggler has > 1)
    # multiplier of the parameter-sized ops (optimizer updates, DDP bucket passes) where it
    # differs from `slowdown`: a batch's length (padding, token budget) moves its forward and
    # backward, not them; None: `slowdown`
    param_slowdown: float | None = None


@dataclass(frozen=True)
class ComputeRecord:
    cls: str
    iteration: int
    name: str                  # the op's text form (OpId.text)
    kind: str                  # its role: fwd | bwd | update | extra
    start: float
    end: float
    # s of work at full speed; end - start is longer by what collectives of its GPUs in
    # flight slowed it (interference)
    work: float


@dataclass(frozen=True)
class CommRecord:
    iteration: int
    name: str
    op: str
    nbytes: float
    channel: str
    category: str
    algo: str
    proto: str
    ready: float
    start: float
    end: float
    ranks: int = 0          # the ranks taking part; 0: every rank of the run
    around: float = 0.0     # s of copies, host work and tail its stream ran around the transfer


@dataclass(frozen=True)
class WaitRecord:
    """A compute stream idle until a collective it depends on finished: exposed
    communication, attributed to that collective."""

    cls: str
    iteration: int             # the stream's iteration that waited
    comm: str                  # the collective's name (CommRecord.name)
    start: float
    end: float
    comm_iteration: int | None = None   # the collective's iteration (None: `iteration`)


@dataclass
class EngineRun:
    """Raw timeline of a run; engine.metrics turns it into figures."""

    iterations: int
    classes: tuple[RankClass, ...]
    compute: list[ComputeRecord] = field(default_factory=list)
    comm: list[CommRecord] = field(default_factory=list)
    waits: list[WaitRecord] = field(default_factory=list)
    iteration_end: dict[tuple[str, int], float] = field(default_factory=dict)
    link_bytes_at: dict[int, Any] = field(default_factory=dict)  # iteration -> bytes carried per link
    link_data_at: dict[int, Any] = field(default_factory=dict)   # iteration -> data sent per link
    sim_events: int = 0
