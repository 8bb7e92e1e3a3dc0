"""--padding for one run: the samples' lengths (--lengths, --corpus) under the padding policy
give the micro-batch's padded-length mix (embsim.workload.padding), and every layer's
time is its expectation over that mix, each length timed on its own (attention grows as
L^2, so the time at the mean length would be too short).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..errors import InputError
from ..workload.length_data import load_histogram
from ..workload.padding import LengthMix, check_at_seq, length_mix, parse_padding
from .jitter import CORPUS_FORMS, parse_jitter, sentence_lengths
from .lengths import parse_lengths

# --jitter forms that pad batches themselves (their factors carry the padding)
PADDING_JITTER = CORPUS_FORMS + ("seq",)


def check_padding(padding: str | None, lengths: str | None, corpus: str | None,
                  jitter: str | None, origin: str = "--padding", seq: int | None = None) -> None:
    """A policy other than max needs sample lengths, fits the run's `seq` (check_at_seq),
    and only one of --padding and a padding --jitter form may pad the batches. `origin`:
    where the policy came from, for the error."""
    policy = parse_padding(padding)
    if policy is None or policy.kind == "max":
        return
    if seq is not None:
        check_at_seq(policy, seq, origin)
    if not lengths and not corpus:
        raise InputError(f"{origin} {padding}: needs sample lengths: --lengths (a data set or "
                         f"lognormal:MEAN:SD) or --corpus")
    j = parse_jitter(jitter)
    if j is not None and j[0] in PADDING_JITTER:
        raise InputError(f"{origin} {padding} and --jitter {jitter} both pad the batches: "
                         f"give --padding max to keep the jitter's, or --jitter none")


def length_probabilities(lengths: str | None, corpus: str | None, seed: int, seq: int) -> tuple[np.ndarray, str]:
    """P(sample length = i + 1), i < seq (longer samples cut to seq), and where it came from.
    A shipped histogram is used exactly; a corpus or a log-normal as --jitter draws it."""
    parsed = None if corpus else parse_lengths(lengths)
    if parsed is not None and parsed[0] == "dataset":
        hist = load_histogram(parsed[1])
        return hist.probabilities(seq), f"{hist.name} lengths ({hist.source})"
    drawn = sentence_lengths(corpus, lengths, seed)
    label = f"--corpus {corpus}" if corpus else f"{lengths} lengths (seed {seed})"
    counts = np.bincount(np.minimum(drawn, seq), minlength=seq + 1)[1:].astype(np.float64)
    return counts / counts.sum(), label


def run_length_mix(cfg, model) -> tuple[LengthMix, str] | None:
    """The run's padded-length mix and its one-line description; None when every sample
    is padded to --seq (no --padding, or max)."""
    policy = parse_padding(cfg.padding)
    if policy is None or policy.kind == "max":
        return None
    probs, label = length_probabilities(cfg.lengths, cfg.corpus, cfg.seed, model.seq)
    mix = length_mix(probs, model.seq, policy, model.batch)
    what = "tokens computed per sample" if policy.kind == "packed" else "mean padded length"
    return mix, f"padding {policy.text} of {label}: {what} {mix.mean_length:.1f} of {model.seq}"


def expected_layer_times(mix: LengthMix, times_at: Callable[[int], tuple[dict, dict]]) -> tuple[dict, dict]:
    """Per-layer forward and backward seconds, each the mix's weighted sum of the layer's
    time at every padded length."""
    fwd: dict[str, float] = {}
    bwd: dict[str, float] = {}
    for L, w in zip(mix.lengths, mix.weights):
        f, b = times_at(L)
        for name, t in f.items():
            fwd[name] = fwd.get(name, 0.0) + w * t
        for name, t in b.items():
            bwd[name] = bwd.get(name, 0.0) + w * t
    return fwd, bwd
