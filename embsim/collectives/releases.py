"""Which modelled NCCL release stands in for a logged one, and what the output must say.

The model has tables and kernels for every release from 2.18 to 2.30 (constants.VERSIONS).
A measurement from outside that range is still compared, on the nearest table, but the
comparison says so: older releases differ in more than the constants (their selection,
enqueue and kernel code changed too), so their errors are not the model's errors at
that release. One change is large and certain enough to apply: LL128 does not exist
before NCCL 2.5 (git show v2.4.8-1:src has no LL128 at all; v2.5.6-1, 2019-11-19, adds
prims_ll128.h and the LL128 tuning rows), so a log from an older release cannot have run it.
Nor did such a release pick with a cost model: tuning.cc arrives in the same 2.5.6, and
before it a size threshold chose LL or Simple (legacy.py), which a 2.4 log is given.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from .constants import DEFAULT_VERSION, VERSIONS, nearest_table, release_text, version_key
from .legacy import THRESHOLD_CHOICE_BEFORE, THRESHOLD_CHOICE_SINCE
from .release_dates import newest_release_by, parse_date

LL128_SINCE = (2, 5)        # first release with the LL128 protocol (v2.5.6)


_RANGE = (min(version_key(v) for v in VERSIONS), max(version_key(v) for v in VERSIONS))


@dataclass(frozen=True)
class ReleaseView:
    logged: str             # the version the measurement states ("unknown" when none)
    table: str | None       # the modelled release used (None: the default, 2.30)
    exclude_protos: tuple[str, ...]   # protocols the logged release did not have
    note: str               # what the output says ("" when the release is modelled as is)
    threshold_choice: bool = False   # the release chose by 2.4's size threshold (legacy.py)
    published: str = ""     # ISO date when the release was taken from it (an upper bound)

    @property
    def label(self) -> str:
        """The release column: the stated release, or `<=` the one a date bounds."""
        return f"<={self.version}" if self.published else self.logged

    @property
    def version(self) -> str | None:
        """What the model's constants are built for: the logged release with its patch
        level where the table is its own minor's (constants.PATCH_TABLES), else `table`."""
        key = version_key(self.logged) if self.logged not in ("", "unknown") else None
        m = re.match(r"\d+\.\d+(?:\.\d+)?", release_text(self.logged))
        if key is None or m is None or self.table is None or version_key(self.table) != key:
            return self.table
        return m.group(0)


def release_view(logged: str | None, published=None) -> ReleaseView:
    """The stand-in for a logged NCCL version, with a note whenever it is not that release.

    With no version but a publication date (a YAML date or 'YYYY-MM-DD'), the newest
    release tagged by that date stands in (release_dates.py): a bound, not the release."""
    text = "" if logged is None else str(logged).strip()
    key = version_key(text) if text and text != "unknown" else None
    if key is None and published is not None:
        day = parse_date(published)
        newest = newest_release_by(day) if day else None
        if newest is not None:
            view = release_view(newest)
            bound = (f"NCCL version not given; published {day.isoformat()}: {newest}, "
                     f"the newest release by then, modelled")
            return replace(view, note="; ".join(n for n in (bound, view.note) if n),
                           published=day.isoformat())
    table = nearest_table(text) if key else None
    if key is None:
        return ReleaseView(text or "unknown", None, (),
                           f"NCCL version not given: {DEFAULT_VERSION} modelled")
    if key < _RANGE[0]:
        excluded = ("LL128",) if key < LL128_SINCE else ()
        note = (f"NCCL {text} predates the modelled {VERSIONS[table].version}-{DEFAULT_VERSION}: "
                f"{table}'s tables and kernels stand in")
        if excluded:
            note += " (LL128 excluded: NCCL added it in 2.5)"
        threshold = THRESHOLD_CHOICE_SINCE <= key < THRESHOLD_CHOICE_BEFORE
        if threshold:
            note += "; the protocol by 2.4's size threshold (its cost model came in 2.5)"
        return ReleaseView(text, table, excluded, note, threshold)
    if key > _RANGE[1]:
        return ReleaseView(text, table, (), f"NCCL {text} is newer than the modelled "
                                             f"{DEFAULT_VERSION}: {table} stands in")
    return ReleaseView(text, table, (), "")


def proto_filter(view: ReleaseView, requested: str | None) -> str | None:
    """NCCL_PROTO for the simulation: the measurement's own setting wins; otherwise the
    protocols its release lacked are excluded."""
    if requested or not view.exclude_protos:
        return requested
    return "^" + ",".join(view.exclude_protos)
