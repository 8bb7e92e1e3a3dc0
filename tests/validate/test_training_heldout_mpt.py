"""Held-out MosaicML MPT throughput (llm-foundry's benchmark tables: A100 80GB, A100 40GB,
H100; 8-512 GPUs), the zoo mpt-* models built from the benchmark yamls and simulated with no
constant fitted on them. The bounds are the level reached when the file was added (13.5 % /
56.5 % over 74 runs, scaling within 0.222, with the zoo's FlashAttention-2 and fused loss;
11.0 % / 53.2 % / 0.225 with main 722b520's GPU speed variation and attention rates), so
a change that makes these runs worse fails here; the shape tests pin what docs/validation.md
says of the errors."""

import pytest

from heldout_bounds import assert_within, one_heldout_file
from embsim.workload import load_model

# 12.3 % / 54.2 % after s2-recsys's per-mechanism stream fractions (was 11.0 / 53.2);
# 8.0 % / 26.7 % with attn_impl triton at FlashAttention-1's speed (zoo flash_attention triton);
# 10.3 % / 35.6 % / 0.225 with strategy fsdp (what Composer ran; the 1/N optimizer step no
# longer hides the collectives' overlap cost, docs/validation.md): 0.104 / 0.358 / 0.226,
# tighter than main's 0.124 / 0.545 / 0.23 (looser than the triton-only 8.0 % / 26.7 %)
# s2-sn round 2: compute 18.9 % slower while collectives run (arXiv 2507.03114 mean) by default on GPUs: 
# 10.29 % / 35.60 % / 0.2249 -> 9.36 % / 27.82 % / 0.2257 -> 0.0941 / 0.2796 / 0.226.
# s2-mn (2026-12-02 morning): the multi-node ring step floor (collectives.multinode) slows the
# FSDP all-gathers / reduce-scatters at 256-512 H100s: 9.36 % / 27.82 % -> 9.10 % / 26.60 %
# (H100 512-GPU rows +21..+28 -> +16..+24 %), scaling max 0.2256 unchanged.
MEAN_BOUND, MAX_BOUND, SCALING_BOUND = 0.0915, 0.2674, 0.226


@pytest.fixture(scope="module")
def mpt():
    return one_heldout_file("llm-foundry-mpt.yaml")


def test_mpt_heldout_within_the_achieved_bounds(mpt):
    assert_within(*mpt, counts={"simulated_runs": 74, "pairs": 31, "skipped": 0},
                  mean=MEAN_BOUND, max_=MAX_BOUND, scaling=SCALING_BOUND)


def _err(runs, rid):
    return next(r.error for r in runs if r.id == rid)


def test_the_sequence_sweep_no_longer_grows_with_length(mpt):
    """With the Triton kernel at FlashAttention-1's speed the 1b sweep (attention 6 % of the
    time at 512, 75 % at 32768) is flat within a few points (it was -3 % .. +48 % at
    FlashAttention-2's): the kernel's rate, not the rest of the model, made it grow."""
    runs, _ = mpt
    for gpu in ("a100-80gb", "h100"):
        sweep = [_err(runs, f"{gpu}-1b-s{s}-mb{mb}x{acc}-8gpu")
                 for s, mb, acc in ((512, 56, 4), (2048, 14, 4 if gpu == "a100-80gb" else 1),
                                    (8192, 3, 4), (32768, 1, 4))]
        assert max(sweep) - min(sweep) < 0.15 and max(abs(e) for e in sweep) < 0.11
    assert all("kernel model" in r.compute_source for r in runs)
    triton = [r for r in runs if "Triton" in r.compute_source]
    assert len(triton) == 74 - 9 and all("FlashAttention-1's speed" in r.compute_source for r in triton)


def test_what_is_left_follows_the_fsdp_collectives_share(mpt):
    """H100 8-GPU rows: 13b (FSDP collectives 0.40 of the compute as embsim times them
    alone) far too fast, 7b (0.13) in between, 1b (0.04) close: embsim overlaps the
    collectives at only the published 18.9 % compute slowdown, the measured steps pay far
    more (docs/validation.md)."""
    runs, _ = mpt
    e13, e7, e1 = (_err(runs, f"h100-{m}-s2048-mb{mb}x1-8gpu") for m, mb in (("13b", 2), ("7b", 6), ("1b", 14)))
    assert e13 > 0.2 and 0.05 < e7 < 0.2 and abs(e1) < 0.06


def test_large_scale_h100_rows_run_flash_attention_2_and_are_fast(mpt):
    """5e85bd6's >= 128-GPU table ran attn_impl flash (flash-attn 2.4.2): still +11..+27 %."""
    runs, _ = mpt
    big = [r for r in runs if r.id.startswith("h100-") and r.gpus >= 128]
    assert len(big) == 9 and all("FlashAttention-2" in r.compute_source for r in big)
    assert min(r.error for r in big) > 0.05


@pytest.mark.parametrize("size,params", [("125m", 125311488), ("1b", 1315950592), ("13b", 12853954560)])
def test_zoo_mpt_reproduces_the_published_parameter_count(size, params):
    assert load_model(f"mpt-{size}").params == params
