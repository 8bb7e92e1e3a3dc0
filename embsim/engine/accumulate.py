"""Gradient accumulation: K micro-batches per optimizer step, one synchronisation.

The first K-1 micro-batches run forward and backward with no communication (DDP
no_sync); only the last one's backward overlaps the gradient synchronisation. So the
step is the single-micro-batch plan with (K-1) whole micro-batches of compute put in
front of the first layer's forward.
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import InputError


def check_accumulate(k) -> int:
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise InputError(f"--accumulate {k!r}: must be an integer >= 1")
    return k


def accumulate(ctx, k: int):
    """The StepContext of an optimizer step over k micro-batches."""
    if check_accumulate(k) == 1:
        return ctx
    earlier = (k - 1) * (sum(ctx.layer_fwd.values()) + sum(ctx.layer_bwd.values()))
    first = ctx.model.layers[0].name
    fwd = dict(ctx.layer_fwd)
    fwd[first] = fwd[first] + earlier
    return replace(ctx, layer_fwd=fwd)
