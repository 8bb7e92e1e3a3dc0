"""How a trainer pads its batches, and what that makes a step compute on average.

`--padding` forms, over the samples' length distribution (--lengths or --corpus):
    max               every sample padded to --seq (fixed-shape batches: the old default)
    longest[:ALIGN]   each micro-batch padded to its own longest sample, rounded up to a
                      multiple of ALIGN (default 1): a dynamic-padding collate, e.g.
                      NVIDIA LDDL's unbinned BERT loader (lddl/torch/bert.py
                      _to_encoded_inputs: batch_seq_len = the batch's longest, aligned to
                      sequence_length_alignment = 8)
    bins:W[:ALIGN]    LDDL's binned loader (preprocess --bin-size W): a sample of L tokens
                      is in bin (L - 1) // W (lddl/dask/bert/binning.py), --seq // W bins;
                      every micro-batch comes from one bin, the bins in proportion to their
                      samples (lddl/torch/dataloader.py Binned: weights = samples left),
                      and is padded to its longest, rounded up to ALIGN
    packed            several samples packed into each --seq row until none is left over
                      (ideal packing, as Graphcore's packed BERT nearly reaches): a sample
                      costs its share, mean length / seq, of a full row

The result is a length mix: padded lengths L with weights w, so that a micro-batch's
expected compute is sum(w x compute at L). Attention is quadratic in L, so the caller
times every layer at every L and takes the weighted sum, never the time at the mean
length. It is the expectation over micro-batches, not the slowest GPU's: with LDDL bins all
ranks draw the same bin each iteration (one world-seeded generator), and accumulated
micro-batches average out; per-GPU length variation is --jitter's (bucket, shuffle).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InputError

FORMS = ("max", "longest", "bins", "packed")
MAX_ALIGN = 4096
# Padded lengths that fewer than this fraction of micro-batches reach are left out (the rest
# renormalised): no visible effect on a step time, and each kept length is one more model
# build and timing.
NEGLIGIBLE = 1e-12
# Every padded length is one model build and timing (~10 ms for BERT-large): more lengths
# than this (longest without ALIGN at a long --seq) would run for minutes.
MAX_LENGTHS = 1024


@dataclass(frozen=True)
class PaddingPolicy:
    kind: str
    width: int = 0        # bins: tokens per bin
    align: int = 1        # padded length rounded up to a multiple of this

    @property
    def text(self) -> str:
        tail = f":{self.align}" if self.align != 1 else ""
        return {"max": "max", "packed": "packed", "longest": f"longest{tail}",
                "bins": f"bins:{self.width}{tail}"}[self.kind]


@dataclass(frozen=True)
class LengthMix:
    """Padded lengths and their weights: E[micro-batch compute] = sum(w x compute(L))."""
    lengths: tuple[int, ...]
    weights: tuple[float, ...]

    @property
    def mean_length(self) -> float:
        """The mean padded length (packed: tokens computed per sample)."""
        return float(sum(L * w for L, w in zip(self.lengths, self.weights)))

    @property
    def trivial(self) -> bool:
        return len(self.lengths) == 1 and self.weights[0] == 1.0


def _int(text: str, what: str, flag: str, lo: int, hi: int) -> int:
    try:
        v = int(text)
    except ValueError:
        raise InputError(f"{flag} {what!r}: expected an integer, got {text!r}") from None
    if not lo <= v <= hi:
        raise InputError(f"{flag} {what!r}: {text} is outside {lo}..{hi}")
    return v


def parse_padding(text: str | None, flag: str = "--padding") -> PaddingPolicy | None:
    """None without a policy; an empty one is refused (it would silently mean max)."""
    if text is None:
        return None
    kind, *values = str(text).split(":")
    usage = "max, longest[:ALIGN], bins:WIDTH[:ALIGN] or packed"
    if kind not in FORMS:
        raise InputError(f"{flag} {text!r}: expected {usage}")
    if kind in ("max", "packed"):
        if values:
            raise InputError(f"{flag} {text!r}: {kind!r} takes no value")
        return PaddingPolicy(kind)
    if kind == "longest":
        if len(values) > 1:
            raise InputError(f"{flag} {text!r}: expected longest or longest:ALIGN")
        return PaddingPolicy(kind, align=_int(values[0], text, flag, 1, MAX_ALIGN) if values else 1)
    if len(values) not in (1, 2):
        raise InputError(f"{flag} {text!r}: expected bins:WIDTH or bins:WIDTH:ALIGN")
    width = _int(values[0], text, flag, 1, 1 << 20)
    align = _int(values[1], text, flag, 1, MAX_ALIGN) if len(values) == 2 else 1
    return PaddingPolicy(kind, width=width, align=align)


def check_at_seq(policy: PaddingPolicy | None, seq: int, flag: str = "--padding") -> None:
    """What a policy needs of the run's --seq: bins that tile it (as LDDL's
    preprocess_bert_pretrain requires), and an ALIGN no longer than it (a longer one pads
    every batch past --seq: a typo, not a trainer's setting). `flag`: where the policy came
    from, for the error."""
    if policy is None:
        return
    if policy.kind == "bins" and (policy.width > seq or seq % policy.width):
        raise InputError(f"{flag} {policy.text}: --seq {seq} must be a multiple of the bin "
                         f"width {policy.width} (as LDDL's preprocess_bert_pretrain requires)")
    if policy.align > seq:
        raise InputError(f"{flag} {policy.text}: ALIGN {policy.align} is more than --seq {seq}")


def _aligned(lengths: np.ndarray, align: int) -> np.ndarray:
    return -(-lengths // align) * align


def _longest_of(probs: np.ndarray, first: int, batch: int) -> np.ndarray:
    """P(the longest of `batch` samples = first + i) for samples drawn from `probs`
    (lengths first, first + 1, ...): CDF^batch, differenced."""
    cdf = np.minimum(np.cumsum(probs) / probs.sum(), 1.0)
    return np.diff(np.concatenate([[0.0], cdf ** batch]))


def length_mix(probs: np.ndarray, seq: int, policy: PaddingPolicy, batch: int) -> LengthMix:
    """The padded-length mix of `batch`-sample micro-batches at --seq `seq`, for samples whose
    length is i + 1 with probability probs[i] (i < seq; longer samples already cut to seq)."""
    probs = np.asarray(probs, dtype=np.float64)
    check_at_seq(policy, seq)
    if policy.kind == "max":
        return LengthMix((seq,), (1.0,))
    lengths = np.arange(1, probs.size + 1)
    if policy.kind == "packed":
        return LengthMix((seq,), (float((probs * lengths).sum() / probs.sum()) / seq,))
    if policy.kind == "longest":
        groups = [(1.0, 0, probs.size)]
    else:
        w = policy.width
        bins = seq // w
        edges = [k * w for k in range(bins)] + [probs.size]      # the last bin takes the rest
        groups = [(probs[lo:hi].sum() / probs.sum(), lo, hi)
                  for lo, hi in zip(edges[:-1], edges[1:]) if hi > lo and probs[lo:hi].sum() > 0]
    out: dict[int, float] = {}
    for share, lo, hi in groups:
        p = _longest_of(probs[lo:hi], lo + 1, batch)
        for L, q in zip(_aligned(lengths[lo:hi], policy.align), p):
            if share * q >= NEGLIGIBLE:
                out[int(L)] = out.get(int(L), 0.0) + share * float(q)
    keys = sorted(out)
    if len(keys) > MAX_LENGTHS:
        least = -(-seq // MAX_LENGTHS)                   # ceil: at most MAX_LENGTHS multiples up to seq
        align = -(-least // 8) * 8                       # as a multiple of 8, as trainers align
        raise InputError(f"padding {policy.text} at --seq {seq}: {len(keys):,} padded lengths to time, "
                         f"more than {MAX_LENGTHS:,}; give an ALIGN of at least {align}")
    total = sum(out.values())
    return LengthMix(tuple(keys), tuple(out[k] / total for k in keys))
