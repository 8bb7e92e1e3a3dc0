"""Static GPU-to-GPU speed variation: a synchronous data-parallel step waits for its
slowest GPU, and N GPUs of one SKU are not equally fast.

Under one power limit, manufacturing variation makes each GPU of a SKU settle at its own
clock and so its own speed. Sinha et al., "Not All GPUs Are Created Equal: Characterizing
Variability in Large-Scale, Accelerator-Rich Systems" (SC22; arXiv 2208.11035v3) ran SGEMM,
ResNet-50, BERT, LAMMPS and PageRank on over 90 % of the GPUs of five clusters (V100:
Summit, Vortex, Longhorn; Quadro RTX 5000: Frontera; MI60: Corona) and found an average
performance variation of 8 % (max 22 %) between GPUs of the same SKU. Their artifact
(github.com/hal-uw/gpu_variability_sc22_artifact, plot_script/plot_aggregated.py at
bc84e72) computes the variation as the box plot's whisker span over the median,
(Q3 + 1.5 IQR - (Q1 - 1.5 IQR)) / Q2 = 4 IQR / median. For a normal spread IQR is
2 x 0.6745 sigma, so 8 % is sigma = 1.48 % of the median time (VARIATION_PER_SIGMA).

GPU i of N gets the expected i-th order statistic of Normal(1, sigma) as its compute-time
factor (Blom's quantiles, as jitter normal:CV), in a rank order drawn from the seed: one
GPU runs at the median (factor 1, so one-GPU baselines are unchanged), N GPUs wait for the
expected slowest of N (8 GPUs: 1 + 1.42 sigma, 256: 1 + 2.8 sigma).

Applied to GPU devices only: the study measured GPUs, and the CPU (gloo) traces time their
own ranks.
"""

from __future__ import annotations

from statistics import NormalDist

import numpy as np

from ..errors import InputError
from .jitter import quantiles

# Sinha et al. SC22's average performance variation across GPUs of one SKU (see above)
PUBLISHED_VARIATION = 0.08
# the artifact's variation (4 IQR / median) in standard deviations of a normal spread
VARIATION_PER_SIGMA = 4 * 2 * NormalDist().inv_cdf(0.75)
SOURCE = "Sinha et al. SC22"
# Distinct speeds kept per run: every distinct factor is one rank class (one simulated
# stream), so N distinct factors made a 1024-GPU step ~100x slower to simulate. The slowest
# GPU (what a synchronous step waits for) keeps its exact factor; the others are averaged
# in groups of neighbouring order statistics. Runs of up to this many GPUs are exact.
MAX_SPEED_CLASSES = 8


def check_variation(value: float | None) -> None:
    if value is not None and not (0 <= value < 1):
        raise InputError(f"--gpu-variation {value}: must be >= 0 and < 1 (a fraction of the median speed)")


def resolved_variation(given: float | None, is_gpu: bool) -> float:
    """The run's variation: the flag's if given, else the published figure on a GPU and
    none on a CPU device."""
    check_variation(given)
    if given is not None:
        return float(given)
    return PUBLISHED_VARIATION if is_gpu else 0.0


def speed_factors(n_gpus: int, seed: int, variation: float) -> np.ndarray:
    """Per-rank compute-time factors of `variation` (4 IQR / median) over `n_gpus` GPUs:
    the expected order statistics of Normal(1, variation / VARIATION_PER_SIGMA), in a
    rank order drawn from `seed` (its own stream: the jitter draws are unchanged)."""
    if n_gpus <= 1:
        return np.ones(max(n_gpus, 0))  # Blom's single quantile is the median exactly
    sigma = variation / VARIATION_PER_SIGMA
    f = 1.0 + sigma * np.array([NormalDist().inv_cdf(p) for p in quantiles(n_gpus)])
    if n_gpus > MAX_SPEED_CLASSES:
        # the slowest exact, the rest as group means (f is ascending)
        groups = np.array_split(np.arange(n_gpus - 1), MAX_SPEED_CLASSES - 1)
        for g in groups:
            f[g] = f[g].mean()
    perm = np.random.default_rng([seed, 0x5bee]).permutation(n_gpus)
    return f[perm]


def label(variation: float) -> str:
    """What the outputs say about it (the same for every GPU count, so a table of runs
    lists one compute source per model and GPU, not one per count)."""
    if variation <= 0:
        return ""
    return f"GPU speed variation {variation:.0%} ({SOURCE}): each step waits for the slowest GPU"
