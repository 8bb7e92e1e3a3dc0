"""Network: flow groups sharing link bandwidth max-min fairly, in SimPy time.

Rates are piecewise constant: they change only when a transfer starts or ends. At each
such instant the network advances every transfer by ``rate * dt``, recomputes all rates
in one vectorised progressive-filling pass (embsim.network.maxmin) and arms a single
timeout for the next completion. A generation counter invalidates the timeout whenever
the set of transfers changes, so there is no polling and no time step. Changes that
happen at the same instant (several transfers starting together, a completion followed
by a new start) are coalesced into one recomputation by a zero-delay settle event.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np
import simpy

from embsim.identity import ByIdentity
from embsim.network.demand import Demand
from embsim.network.maxmin import weighted_max_min_rates

# A transfer whose remaining fraction is below this is done (rounding residue).
REMAINING_ATOL = 1e-12
# A transfer predicted to finish within this relative distance of now is done.
FINISH_RTOL = 1e-12


@dataclass(frozen=True)
class TransferRecord:
    """What the event returned by :meth:`Network.transfer` succeeds with."""

    tag: Any
    start: float
    end: float
    link_bytes: float  # total bytes over all links of the demand


class _DemandBook:
    """One checked demand (its sorted links and bytes) and what its transfers carried while
    each ran alone, booked as scalars and added to the per-link arrays only when they are
    read: a collective usually runs alone, and the same cached demand comes back every
    iteration, so the O(links) updates happen once per read, not once per event."""

    __slots__ = ("links", "bytes", "total", "carried", "busy", "data", "rates")

    def __init__(self, links: np.ndarray, nbytes: np.ndarray):
        self.links, self.bytes = links, nbytes
        self.total = float(nbytes.sum())
        self.carried = 0.0    # fractions of the demand carried (x bytes per link)
        self.busy = 0.0       # seconds its links were busy
        self.data = 0.0       # data factors booked as its transfers started (x bytes)
        self.rates: dict[float, float] = {}   # capacity scale -> its rate running alone


@dataclass(eq=False)
class _Transfer:
    book: _DemandBook  # its demand: unique link ids and bytes per link (all > 0)
    event: simpy.Event
    tag: Any
    start: float
    remaining: float = 1.0  # fraction of the demand still to carry
    rate: float = 0.0  # fraction per second
    finish_at: float = field(default=float("inf"))

    @property
    def links(self) -> np.ndarray:
        return self.book.links

    @property
    def bytes(self) -> np.ndarray:
        return self.book.bytes


class Network:
    """Links of given capacity (bytes/s, indexed by link id) shared by transfers."""

    def __init__(self, env: simpy.Environment, capacity: np.ndarray):
        cap = np.array(capacity, dtype=np.float64, copy=True).reshape(-1)
        if not np.all(np.isfinite(cap)) or (cap.size and cap.min() < 0):
            raise ValueError("Network: capacities must be finite and >= 0 bytes/s")
        cap.setflags(write=False)
        self.env = env
        self.capacity = cap
        self.n_links = cap.size
        self.recomputations = 0  # rate recomputations (one per start/end instant)
        self.filling_rounds = 0  # progressive-filling rounds over all recomputations
        self.transfers_started = 0
        self.transfers_completed = 0
        self._bytes_carried = np.zeros(self.n_links)
        self._data_sent = np.zeros(self.n_links)
        self._busy_time = np.zeros(self.n_links)
        self._active: list[_Transfer] = []  # insertion order: deterministic
        self._last_update = env.now
        self._generation = 0
        self._settle_pending = False
        # Per-link view of the current rates, over the links in use only.
        self._used_links = np.empty(0, dtype=np.int64)
        self._used_load = np.empty(0, dtype=np.float64)  # bytes/s on each used link
        self._scale = 1.0  # every link's share of its capacity available to transfers
        self._checked_demands = ByIdentity()    # demand -> its _DemandBook
        self._alone: Optional[_Transfer] = None  # the only active transfer, rates from its book
        self._unbooked: dict[int, _DemandBook] = {}   # books with scalars not yet in the arrays

    # ------------------------------------------------------------------ public
    def transfer(self, demand: Demand, tag: Any = None, data_factor: float = 1.0) -> simpy.Event:
        """Start carrying ``demand``; the event fires when every link has carried its bytes.

        The event's value is a :class:`TransferRecord`. A demand with no bytes
        completes at once (same simulated instant). ``data_factor``: the data each demand
        byte stands for (a collective's demand is scaled to its modelled time), booked in
        :attr:`data_sent` when the transfer starts.
        """
        book = self._checked(demand)
        now = self.env.now
        event = self.env.event()
        self.transfers_started += 1
        if book.links.size == 0:
            self.transfers_completed += 1
            event.succeed(TransferRecord(tag, now, now, 0.0))
            return event
        self._unbook(book).data += data_factor
        self._advance()
        self._active.append(_Transfer(book, event, tag, now))
        self._request_settle()
        return event

    def set_capacity_scale(self, scale: float) -> None:
        """Let transfers use only `scale` of every link's capacity from now on (e.g. while
        compute competes with the communication threads for the same cores)."""
        if not 0.0 < scale <= 1.0:
            raise ValueError(f"Network: capacity scale must be in (0, 1], got {scale}")
        if scale == self._scale:
            return
        self._advance()
        self._scale = scale
        if self._active:
            self._request_settle()

    @property
    def active(self) -> int:
        """Number of transfers in flight."""
        return len(self._active)

    @property
    def data_sent(self) -> np.ndarray:
        """Bytes of data each link was given to carry (booked as transfers start): what
        crossed it, where bytes_carried is its occupancy at capacity."""
        self._book_all()
        return self._data_sent.copy()

    @property
    def bytes_carried(self) -> np.ndarray:
        """Bytes carried so far per link id (read-only copy, up to now)."""
        self._advance()
        self._book_all()
        return self._bytes_carried.copy()

    @property
    def busy_time(self) -> np.ndarray:
        """Seconds so far during which each link carried traffic (>0 rate)."""
        self._advance()
        self._book_all()
        return self._busy_time.copy()

    def link_load(self) -> np.ndarray:
        """Current bytes/s on every link id (dense)."""
        load = np.zeros(self.n_links)
        if self._alone is not None:
            load[self._alone.links] = self._alone.bytes * self._alone.rate
        else:
            load[self._used_links] = self._used_load
        return load

    def utilisation(self, link_ids: np.ndarray, elapsed: float) -> float:
        """Bytes carried over ``link_ids`` / what they could carry in ``elapsed`` seconds."""
        ids = np.asarray(link_ids, dtype=np.int64)
        possible = float(self.capacity[ids].sum()) * float(elapsed)
        if possible <= 0:
            return 0.0
        return float(self.bytes_carried[ids].sum()) / possible

    def busy_fraction(self, link_ids: np.ndarray, elapsed: float) -> float:
        """Mean over ``link_ids`` of the fraction of ``elapsed`` each link was busy."""
        ids = np.asarray(link_ids, dtype=np.int64)
        if ids.size == 0 or elapsed <= 0:
            return 0.0
        return float(self.busy_time[ids].mean()) / float(elapsed)

    # ---------------------------------------------------------------- internals
    def _checked(self, demand: Demand) -> _DemandBook:
        # a cached plan's demand comes back every iteration: checked once (demands are immutable)
        return self._checked_demands.get((demand,), lambda: _DemandBook(*self._check(demand)))

    def _unbook(self, book: _DemandBook) -> _DemandBook:
        """The book, listed among those whose scalars the arrays do not hold yet."""
        self._unbooked[id(book)] = book      # the dict holds it: its id is not reused
        return book

    def _book_all(self) -> None:
        """Add every book's pending scalars into the per-link arrays (in the order the books
        were first unbooked: deterministic)."""
        for book in self._unbooked.values():
            if book.carried:
                self._bytes_carried[book.links] += book.bytes * book.carried
            if book.busy:
                self._busy_time[book.links] += book.busy
            if book.data:
                self._data_sent[book.links] += book.bytes * book.data
            book.carried = book.busy = book.data = 0.0
        self._unbooked.clear()

    def _check(self, demand: Demand) -> tuple[np.ndarray, np.ndarray]:
        d = demand.normalised()
        if d.links.size and d.links.max() >= self.n_links:
            raise ValueError(
                f"Network: link id {int(d.links.max())} outside 0..{self.n_links - 1}"
            )
        if d.links.size and np.any(self.capacity[d.links] <= 0):
            bad = int(d.links[np.argmax(self.capacity[d.links] <= 0)])
            raise ValueError(f"Network: link {bad} has bytes to carry but no capacity")
        return d.links, d.bytes

    def _advance(self) -> None:
        """Carry every active transfer forward from the last update to now."""
        now = self.env.now
        dt = now - self._last_update
        self._last_update = now
        if dt <= 0 or not self._active:
            return
        # Rates are only stale while a settle is pending, and that runs at the same instant.
        assert not self._settle_pending, "network advanced with stale rates"
        for t in self._active:
            t.remaining = max(t.remaining - t.rate * dt, 0.0)
        alone = self._alone
        if alone is not None:
            book = self._unbook(alone.book)
            book.carried += alone.rate * dt
            book.busy += dt
            return
        self._bytes_carried[self._used_links] += self._used_load * dt
        self._busy_time[self._used_links] += dt

    def _request_settle(self) -> None:
        self._generation += 1  # the armed completion timeout is now stale
        if not self._settle_pending:
            self._settle_pending = True
            self.env.timeout(0).callbacks.append(self._settle)

    def _settle(self, _event: simpy.Event) -> None:
        self._settle_pending = False
        self._advance()
        self._complete_finished(force=None)
        self._recompute()

    def _on_timeout(self, generation: int, expected: _Transfer) -> None:
        if generation != self._generation:
            return
        self._advance()
        self._complete_finished(force=expected)
        self._request_settle()

    def _complete_finished(self, force: Optional[_Transfer]) -> None:
        now = self.env.now
        horizon = now + FINISH_RTOL * max(abs(now), 1e-9)
        still: list[_Transfer] = []
        for t in self._active:
            if t is force or t.remaining <= REMAINING_ATOL or t.finish_at <= horizon:
                # Book the rounding residue so totals equal the demand.
                if t.remaining:
                    self._unbook(t.book).carried += t.remaining
                t.remaining = 0.0
                self.transfers_completed += 1
                t.event.succeed(TransferRecord(t.tag, t.start, now, t.book.total))
            else:
                still.append(t)
        self._active = still

    def _recompute(self) -> None:
        """New max-min rates for the active set; arm the next completion."""
        active = self._active
        self._alone = None
        if not active:
            self._used_links = np.empty(0, dtype=np.int64)
            self._used_load = np.empty(0, dtype=np.float64)
            return
        self.recomputations += 1
        if len(active) == 1:
            self._recompute_alone(active[0])
            return
        links = np.concatenate([t.links for t in active])
        weight = np.concatenate([t.bytes for t in active])
        owner = np.repeat(
            np.arange(len(active)), np.fromiter((t.links.size for t in active), np.int64)
        )
        # Compact link index without sorting: mark used links, then renumber them.
        used_mask = np.zeros(self.n_links, dtype=bool)
        used_mask[links] = True
        used = np.flatnonzero(used_mask)
        renumber = np.empty(self.n_links, dtype=np.int64)
        renumber[used] = np.arange(used.size)
        compact = renumber[links]
        # Fairness is in bytes/s, not in fraction of demand: each transfer's weights are
        # normalised by its heaviest link, so transfers bottlenecked on a link they both
        # load most split it equally, and a small collective beside a large one finishes
        # first (as two NCCL kernels sharing a link do), instead of being stretched.
        peak = np.fromiter((t.bytes.max() for t in active), np.float64, len(active))
        rates, rounds = weighted_max_min_rates(
            owner, compact, weight / peak[owner], self.capacity[used] * self._scale, len(active)
        )
        rates = rates / peak
        self.filling_rounds += rounds
        now = self.env.now
        for t, r in zip(active, rates.tolist()):
            t.rate = r
            t.finish_at = now + t.remaining / r
        self._used_links = used
        self._used_load = np.bincount(compact, weights=weight * rates[owner], minlength=used.size)
        self._arm(min(active, key=lambda t: t.finish_at))  # ties: earliest started

    def _recompute_alone(self, t: _Transfer) -> None:
        """_recompute's answer for one transfer, without the general machinery: its links
        are sorted and distinct (Demand.normalised), so the max-min rate is one filling
        round -- the same arithmetic, bit for bit."""
        rate = t.book.rates.get(self._scale)
        if rate is None:        # the same demand at the same scale: the same rate
            peak = t.bytes.max()
            fill = np.maximum(self.capacity[t.links] * self._scale, 0.0) / (t.bytes / peak)
            rate = t.book.rates[self._scale] = float(float(fill.min()) / peak)
        self.filling_rounds += 1
        t.rate = rate
        t.finish_at = self.env.now + t.remaining / rate
        self._alone = t         # its links' load is booked on its book (_advance)
        self._arm(t)

    def _arm(self, first: _Transfer) -> None:
        """Arm the completion of the transfer that finishes first."""
        now = self.env.now
        self._generation += 1
        generation = self._generation
        timeout = self.env.timeout(max(first.finish_at - now, 0.0))
        timeout.callbacks.append(lambda _e, g=generation, f=first: self._on_timeout(g, f))
