"""When each NCCL release came out: a measurement that gives a date but not its release
is modelled on the newest release it could have run.

A published nccl-tests table often names no NCCL release, yet its publication date bounds
it: nothing tagged after that date can have produced it. Modelling such a measurement on
the newest release (2.30) instead compares a 2023 run against 2026 kernels -- NCCL 2.20
changed how a SendRecv is split over channels, for one, which moves a 1 GiB 8 x A100
SendRecv by 19 %. The newest release tagged by the date is an upper bound (a run may well
have used an older NCCL, e.g. the one its PyTorch wheel bundled); the output says so.

RELEASE_DATES: the date of each release's tag commit in github.com/NVIDIA/nccl
(`git for-each-ref --sort=creatordate refs/tags`), first tag of each MAJOR.MINOR.PATCH
(2.5.6-2 is 2.5.6), read 2026-12-02.
"""

from __future__ import annotations

import datetime as _dt

RELEASE_DATES: tuple[tuple[str, str], ...] = (
    ("2.3.5", "2018-09-25"), ("2.3.7", "2018-10-24"), ("2.4.2", "2019-01-29"),
    ("2.4.6", "2019-04-05"), ("2.4.7", "2019-05-10"), ("2.4.8", "2019-06-25"),
    ("2.5.6", "2019-11-19"), ("2.5.7", "2020-01-16"), ("2.6.4", "2020-03-20"),
    ("2.7.3", "2020-06-08"), ("2.7.5", "2020-06-26"), ("2.7.6", "2020-06-26"),
    ("2.7.8", "2020-07-27"), ("2.8.3", "2020-11-17"), ("2.8.4", "2021-02-09"),
    ("2.9.6", "2021-04-12"), ("2.9.8", "2021-05-10"), ("2.9.9", "2021-05-12"),
    ("2.10.3", "2021-07-08"), ("2.11.4", "2021-09-08"), ("2.12.7", "2022-03-02"),
    ("2.12.10", "2022-03-30"), ("2.12.12", "2022-05-13"), ("2.13.4", "2022-07-11"),
    ("2.14.3", "2022-08-18"), ("2.15.1", "2022-09-27"), ("2.15.5", "2022-10-25"),
    ("2.16.2", "2022-11-30"), ("2.16.5", "2023-02-02"), ("2.17.1", "2023-03-01"),
    ("2.18.1", "2023-04-18"), ("2.18.3", "2023-06-14"), ("2.18.5", "2023-08-23"),
    ("2.19.1", "2023-09-26"), ("2.19.3", "2023-09-26"), ("2.18.6", "2023-10-10"),
    ("2.19.4", "2023-11-13"), ("2.20.3", "2024-02-13"), ("2.20.5", "2024-02-26"),
    ("2.21.5", "2024-04-02"), ("2.22.3", "2024-06-19"), ("2.23.4", "2024-09-16"),
    ("2.24.3", "2025-01-07"), ("2.25.1", "2025-01-27"), ("2.26.2", "2025-03-12"),
    ("2.26.3", "2025-04-22"), ("2.26.5", "2025-04-22"), ("2.26.6", "2025-05-20"),
    ("2.27.3", "2025-05-29"), ("2.27.5", "2025-06-18"), ("2.27.6", "2025-07-11"),
    ("2.27.7", "2025-07-24"), ("2.28.3", "2025-09-02"), ("2.28.7", "2025-10-17"),
    ("2.28.9", "2025-11-10"), ("2.29.2", "2025-12-24"), ("2.29.3", "2026-02-03"),
    ("2.29.7", "2026-02-27"), ("2.30.3", "2026-04-14"), ("2.30.4", "2026-04-22"),
    ("2.30.7", "2026-06-04"),

)


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def parse_date(value) -> _dt.date | None:
    """A `published:` value as a date: a YAML date, or an ISO 'YYYY-MM-DD' string."""
    if isinstance(value, _dt.datetime):
        return value.date()
    if isinstance(value, _dt.date):
        return value
    try:
        return _dt.date.fromisoformat(str(value).strip())
    except ValueError:
        return None


def newest_release_by(day: _dt.date) -> str | None:
    """The newest release (by version) tagged on or before `day`; None before 2.3.5."""
    out = [v for v, d in RELEASE_DATES if _dt.date.fromisoformat(d) <= day]
    return max(out, key=_key) if out else None
