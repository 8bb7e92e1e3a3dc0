"""Throughput as a trainer that averages per-iteration rates reports it.

Most trainers report tokens (or samples) over elapsed time. DeepLearningExamples' PyTorch
GNMT does not: seq2seq/train/trainer.py (feed_data) updates an AverageMeter with every
iteration's `tot_num_toks / elapsed` and train.py prints that meter's mean, summed over
the GPUs (AverageMeter.reduce('sum')), as "Training: N Tok/s" (the README's throughput
tables; DeepLearningExamples@5d2914e3, the 20.06 release the A100 tables come from).
A mean of rates weighs every iteration alike, where tokens over time weighs it by its
duration, so a cost every iteration pays whatever its length (the optimizer step on the
iterations that update, the gradient all-reduce) lowers the mean of rates more than the
time ratio when iterations differ in length: a short-bucket iteration carries the same
fixed cost over fewer tokens. With gradient accumulation the same holds for the one
iteration in K that updates.

`throughput: iterations` (SimulationConfig, a training file's embsim: key; the zoo default of gnmt)
reports that mean. Iteration j's time is
the simulated iteration (the plain micro-batches' and the updating one's, from the
engine) moved by how much its slowest GPU's compute differs from the simulated slowest
GPU's: T_j = T + C x (m_j - mean(m)), where C is the compute of one micro-batch at --seq
and m_j the slowest GPU's compute factor of drawn step j (the same length draws as the
corpus jitter forms: bucket, shuffle); its tokens are the GPUs' real tokens that step.
Without a corpus form every iteration has the simulated length (m_j = 1) and only the
accumulation's plain/updating mix is averaged.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..errors import InputError
from .jitter import CORPUS_FORMS, LENGTH_STEPS, batch_draws, padded_compute, parse_jitter, sentence_lengths

AVERAGES = ("time", "iterations")
LABEL = ("throughput: mean of per-iteration rates (DeepLearningExamples GNMT trainer.py "
         "AverageMeter of tokens/elapsed)")


def check_average(value) -> str:
    if value not in AVERAGES:
        raise InputError(f"throughput {value!r}: must be one of {', '.join(AVERAGES)}")
    return value


def step_profile(jitter: str | None, n_gpus: int, seed: int, batch: int, seq: int,
                 compute_at_seq: Callable[[int], float], corpus: str | None = None,
                 lengths: str | None = None, speed: np.ndarray | None = None,
                 steps: int = LENGTH_STEPS) -> tuple[np.ndarray, np.ndarray]:
    """Per drawn iteration: the slowest GPU's compute over the compute at --seq (m_j), and
    the GPUs' real tokens over N x batch x the corpus's real mean (r_j). Ones where the
    jitter is not a corpus form (bucket, shuffle): every iteration alike."""
    spec = parse_jitter(jitter)
    if spec is None or spec[0] not in CORPUS_FORMS or spec[0] == "maxtokens":
        return np.ones(1), np.ones(1)
    kind, x = spec
    speed = np.ones(n_gpus) if speed is None else np.asarray(speed, dtype=np.float64)
    real = sentence_lengths(corpus, lengths, seed)
    rng = np.random.default_rng(seed)
    padded, tokens = batch_draws(kind, int(x), real, n_gpus, batch, rng, steps)
    times = padded_compute(padded, real, seq, compute_at_seq) * speed
    m = times.max(axis=1) / compute_at_seq(seq)
    r = tokens.sum(axis=1) / (n_gpus * batch * float(real.mean()))
    return m, r


def mean_rate(plain_s: float, last_s: float, k: int, compute_s: float,
              m: np.ndarray, r: np.ndarray) -> float:
    """Mean over iterations of (real tokens / time), in nominal iterations per second
    (multiply by the nominal tokens of one iteration): k - 1 plain micro-batches of
    `plain_s` and one updating one of `last_s`, each moved by its drawn step's slowest
    GPU (`compute_s`: one micro-batch's compute at --seq on the simulated slowest GPU)."""
    shift = compute_s * (m - m.mean())

    def at(t: float) -> float:
        return float(np.mean(r / np.maximum(t + shift, 1e-12)))

    return ((k - 1) * at(plain_s) + at(last_s)) / k if k > 1 else at(last_s)
