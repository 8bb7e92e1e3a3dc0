"""Fit the target/source length spread of `--lengths ...,ratio:SIGMA` on a published fairseq
log: `python -m embsim.engine.fit_lengths` prints SIGMA.

The data set: fairseq's training log on WMT en-de (facebookresearch/fairseq issue 70,
lstm_luong_wmt_en_de, --max-tokens 4000) reports wpb 3514, i.e. 3514 real target tokens
per 4000-token batch (0.8785). Batched as make_batches.cpp does (pair_budget_batches: by
source then target length, budgeted on the longer side), sentence pairs whose sides are
equal fill 0.96 of the budget with target tokens; the spread between the sides is what
brings it down to 0.8785. SIGMA is the log-sd of target over source length that reproduces
it, with the source lengths of the zoo's WMT'14 en-de distribution (mean 29.05, sd 16.20
BPE tokens). The fill falls as SIGMA grows, so a bisection finds it.

The same log line checks it on what was not fitted: at SIGMA 0.151 the batches hold 119.6
pairs on average and 4.5M pairs make 37,620 batches; the log says bsz 122-126 and 37,483
batches an epoch (equal sides would give 132 and 34,065).
"""

from __future__ import annotations


from .jitter import pair_budget_batches
from .lengths import drawn_pairs

WPB, MAX_TOKENS = 3514.0, 4000          # fairseq issue 70's log line
SOURCE_LENGTHS = "lognormal:29.05:16.2"  # the zoo's WMT'14 en-de BPE statistics
SEED = 0


def target_fill(sigma: float, max_tokens: int = MAX_TOKENS, seed: int = SEED) -> float:
    """Real target tokens per budget token over an epoch of token-budget batches."""
    src, tgt = drawn_pairs(f"{SOURCE_LENGTHS},ratio:{sigma}", seed)
    sizes, _, _, real = pair_budget_batches(src, tgt, max_tokens)
    return float(real.sum() / (sizes.size * max_tokens))


def pairs_per_batch(sigma: float, max_tokens: int = MAX_TOKENS, seed: int = SEED) -> float:
    src, tgt = drawn_pairs(f"{SOURCE_LENGTHS},ratio:{sigma}", seed)
    sizes, _, _, _ = pair_budget_batches(src, tgt, max_tokens)
    return float(sizes.mean())


def fit_sigma(target: float = WPB / MAX_TOKENS, lo: float = 0.0, hi: float = 0.6,
              steps: int = 14) -> float:
    for _ in range(steps):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if target_fill(mid) > target else (lo, mid)
    return round((lo + hi) / 2, 3)


def main() -> None:
    from ..toolargs import no_arguments
    no_arguments("embsim.engine.fit_lengths", __doc__)
    sigma = fit_sigma()
    print(f"ratio SIGMA {sigma} (target fill {target_fill(sigma):.4f}, fairseq wpb "
          f"{WPB:.0f} / {MAX_TOKENS} = {WPB / MAX_TOKENS:.4f}; equal sides: {target_fill(0.0):.4f}; "
          f"pairs per batch {pairs_per_batch(sigma):.1f}, the log's bsz 122-126)")


if __name__ == "__main__":
    main()
