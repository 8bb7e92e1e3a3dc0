"""The runtime's communicators: which ranks belong, where each rank stands in the
communicator's stream of collectives, and the instances still waiting for ranks.

A step issues each of its collectives on a communicator of its own (the engine keys them
by name), mostly over the same rank tuple, and a class of identical GPUs arrives on behalf
of all its ranks at once. At 16,384 GPUs and 10^5 collectives a step (ByteScheduler
partitions of Merlin's jumbo model), anything per (communicator, rank) is 10^9 entries.
So the rank positions live once per rank tuple (RankIndex), and while the groups that
arrive together partition the ranks -- each rank always arrives with the same others --
a communicator counts its stream per group, not per rank.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Hashable, Iterable

import numpy as np

from ..identity import ByIdentity


@dataclass(frozen=True, eq=False)
class Group:
    """Ranks arriving together: their positions in the rank tuple, and the part of the
    index's partition they are (None where they are not one)."""
    positions: np.ndarray
    part: int | None


class RankIndex:
    """Where each rank of one rank tuple sits, shared by every communicator over it, and
    the checked groups of participants that arrive together."""

    def __init__(self, ranks: tuple[int, ...]):
        self.ranks = ranks
        self.position = {r: i for i, r in enumerate(ranks)}
        self.rank_array = np.asarray(ranks, dtype=np.int64)
        self.rank_bound = int(self.rank_array.max()) + 1 if ranks else 0
        # a rank class arrives with the same tuple every time, and hashing a 16,384-rank
        # tuple per arrival is what cost
        self._by_identity = ByIdentity()
        self._by_value: dict[tuple[int, ...], Group] = {}
        # the partition the groups seen so far make: each rank's part (-1: none yet)
        self.part_of = np.full(len(ranks), -1, dtype=np.int64)
        self.parts: list[np.ndarray] = []
        self.partitioned = True

    def group(self, participants: Iterable[int], key: Hashable) -> Group:
        if isinstance(participants, tuple):
            return self._by_identity.get((participants,), lambda: self._by_members(participants, key))
        return self._by_members(tuple(participants), key)

    def _by_members(self, members: tuple[int, ...], key: Hashable) -> Group:
        group = self._by_value.get(members)
        if group is None:
            group = self._by_value[members] = self._new_group(members, key)
        return group

    def _new_group(self, participants: tuple[int, ...], key: Hashable) -> Group:
        try:
            pos = np.fromiter((self.position[r] for r in participants), dtype=np.int64)
        except KeyError as err:
            raise ValueError(
                f"collective: rank {err.args[0]} is not in communicator {key!r}"
            ) from None
        if pos.size == 0:
            raise ValueError(f"collective: no participant ranks for communicator {key!r}")
        if np.unique(pos).size != pos.size:
            raise ValueError(f"collective: a rank arrives twice at once on {key!r}")
        part = None
        if self.partitioned:
            if np.all(self.part_of[pos] < 0):
                part = len(self.parts)
                self.part_of[pos] = part
                self.parts.append(pos)
            else:                 # overlaps a group seen before: count per rank from now on
                self.partitioned = False
        return Group(pos, part)


class Communicator:
    """Ranks of one communicator, each rank's next sequence index, and open instances."""

    def __init__(self, key: Hashable, index: RankIndex):
        self.key = key
        self.index = index
        self.ranks = index.ranks
        self.rank_array = index.rank_array
        self.rank_bound = index.rank_bound
        self.open: dict[int, Any] = {}          # seq -> instance, insertion-ordered
        self._part_seq: dict[int, int] = {}     # while the index is partitioned
        self._rank_seq: np.ndarray | None = None

    def group(self, participants: Iterable[int]) -> Group:
        return self.index.group(participants, self.key)

    def take_seq(self, group: Group) -> int:
        """The position in this communicator's stream that `group`'s ranks are at; they
        move on to the next. Ranks arriving together must be at the same position."""
        if group.part is not None and self.index.partitioned:
            seq = self._part_seq.get(group.part, 0)
            self._part_seq[group.part] = seq + 1
            return seq
        per_rank = self._per_rank()
        seqs = per_rank[group.positions]
        seq = int(seqs[0])
        if np.any(seqs != seq):
            raise ValueError(
                f"collective: ranks arriving together on {self.key!r} are at different "
                f"positions of its stream ({int(seqs.min())}..{int(seqs.max())})"
            )
        per_rank[group.positions] += 1
        return seq

    def _per_rank(self) -> np.ndarray:
        if self._rank_seq is None:
            self._rank_seq = np.zeros(len(self.ranks), dtype=np.int64)
            for part, seq in self._part_seq.items():
                self._rank_seq[self.index.parts[part]] = seq
        return self._rank_seq
