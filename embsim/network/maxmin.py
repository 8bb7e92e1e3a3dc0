"""Weighted max-min fair rates by progressive filling (pure, vectorised).

Each flow f progresses at one rate r_f, the fraction of its demand carried per second;
flow f loads link l with r_f * w_fl bytes/s, where w_fl is its demand on l. The
allocation is the max-min fair vector r subject to sum_f r_f w_fl <= c_l:
raise every unfrozen rate at the same pace; when a link saturates, freeze every flow
that crosses it at the current level; repeat with the residual capacity. A link's
bandwidth is thus split among its bottlenecked flows in proportion to their demand on
it (Network normalises each flow's weights by its heaviest link, which makes the
split equal in bytes/s between flows whose heaviest link it is) (Bertsekas & Gallager, "Data
Networks", 2nd ed., sec. 6.5.2, progressive filling, with per-link weights).
"""

from __future__ import annotations

import numpy as np

# Links whose fill level is within this relative distance of the minimum saturate in
# the same round; absorbs rounding so that equal bottlenecks freeze together.
SATURATION_RTOL = 1e-12


def weighted_max_min_rates(
    owner: np.ndarray,
    link: np.ndarray,
    weight: np.ndarray,
    capacity: np.ndarray,
    n_flows: int,
) -> tuple[np.ndarray, int]:
    """Max-min fair rates of ``n_flows`` flows over compactly indexed links.

    owner[e], link[e], weight[e]: entry e says flow ``owner[e]`` puts ``weight[e] > 0``
    bytes on link ``link[e]`` (an index into ``capacity``, bytes/s, > 0). Every flow
    must have at least one entry. Returns (rates in fraction/s, filling rounds).
    """
    rates = np.zeros(n_flows, dtype=np.float64)
    residual = np.array(capacity, dtype=np.float64, copy=True)
    n_links = residual.size
    level = 0.0
    rounds = 0
    # Entries of still-unfrozen flows; shrinks every round (each round freezes >= 1).
    e_owner, e_link, e_weight = owner, link, weight
    while e_owner.size:
        rounds += 1
        w = np.bincount(e_link, weights=e_weight, minlength=n_links)
        crossed = w > 0
        fill = np.full(n_links, np.inf)
        fill[crossed] = np.maximum(residual[crossed], 0.0) / w[crossed]
        t = float(fill.min())
        if not np.isfinite(t):
            raise ValueError("max-min: a flow crosses only links of infinite capacity")
        t = max(t, level)  # levels never go down; guards against rounding
        saturated = crossed & (fill <= t * (1.0 + SATURATION_RTOL))
        newly = np.zeros(n_flows, dtype=bool)
        newly[e_owner[saturated[e_link]]] = True
        rates[newly] = t
        frozen_entry = newly[e_owner]
        residual -= t * np.bincount(
            e_link[frozen_entry], weights=e_weight[frozen_entry], minlength=n_links
        )
        keep = ~frozen_entry
        e_owner, e_link, e_weight = e_owner[keep], e_link[keep], e_weight[keep]
        level = t
    return rates, rounds
