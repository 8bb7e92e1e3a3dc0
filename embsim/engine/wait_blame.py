"""Which collectives a compute stream's wait was really for.

The engine records a wait against the collective the stream depends on (WaitRecord). Part
of that wait may pass before the collective starts. On a channel that runs its
collectives one at a time (tensor parallelism's activation collectives, DDP's buckets)
the collectives ahead of it are what hold the stream up: the ones before it on the
channel, and those its last participant waited on before it could issue it (the runtime
calls the awaited one ready only when that participant arrives). That part is charged to
the collectives running on the awaited one's channel meanwhile, by how much of it each
covers. The rest stays with the awaited collective: its own run, and any time before it
starts that no channel-mate covers (a PS pull waiting for the push and the servers'
update, a collective waiting for a slower rank's compute). The sum over collectives is
the wait, unchanged.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict

from ..plan.timeline import CommRecord, WaitRecord


class ChannelIndex:
    """The collectives of each channel, ordered by end, for window overlaps."""

    def __init__(self, records: list[CommRecord]):
        self.by_key = {(r.name, r.iteration): r for r in records}
        chans: dict[str, list[CommRecord]] = defaultdict(list)
        for r in records:
            chans[r.channel].append(r)
        self.ends: dict[str, list[float]] = {}
        self.records: dict[str, list[CommRecord]] = {}
        self.longest: dict[str, float] = {}
        for ch, rs in chans.items():
            rs.sort(key=lambda r: (r.end, r.start, r.name))
            self.records[ch] = rs
            self.ends[ch] = [r.end for r in rs]
            self.longest[ch] = max(r.end - r.start for r in rs)

    def running(self, channel: str, t0: float, t1: float, skip: CommRecord):
        """(record, seconds of [t0, t1] it runs) for the channel's other collectives."""
        rs, ends = self.records[channel], self.ends[channel]
        for r in rs[bisect_right(ends, t0):]:
            if r.end - self.longest[channel] >= t1:
                break            # every later one starts after t1
            overlap = min(r.end, t1) - max(r.start, t0)
            if overlap > 0 and r is not skip:
                yield r, overlap


def blame(wait: WaitRecord, index: ChannelIndex) -> list[tuple[CommRecord | None, float]]:
    """The wait's seconds split over (collective record, seconds); a record of None is
    the awaited collective when the run has no record of it."""
    total = wait.end - wait.start
    it = wait.iteration if wait.comm_iteration is None else wait.comm_iteration
    awaited = index.by_key.get((wait.comm, it))
    if awaited is None or awaited.start <= wait.start:
        return [(awaited, total)]
    before = min(awaited.start, wait.end)
    window = before - wait.start
    held = list(index.running(awaited.channel, wait.start, before, awaited))
    covered = sum(s for _, s in held)
    # concurrent channel-mates may cover more than the window: their shares, scaled to it
    scale = min(1.0, window / covered) if covered > 0 else 0.0
    out = [(r, s * scale) for r, s in held]
    return out + [(awaited, total - covered * scale)]
