"""Traits a strategy declares about its traffic, so that the engine and the schedulers
ask the strategy instead of matching its name."""

from __future__ import annotations

import enum


class Payload(enum.Enum):
    """What a strategy's embedding sync tensors carry, which decides whether and how a
    scheduler may split them into the part the next iteration needs and the rest."""

    NONE = "none"        # no row structure to split: a dense gradient, a count sketch
    ROWS = "rows"        # (index, row) pairs of the rows a batch touched (split by rows)
    TOKENS = "tokens"    # one vector per lookup (split by lookups)
