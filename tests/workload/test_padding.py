"""Padding policies: the padded-length mix of a micro-batch, exact from the histogram."""

import numpy as np
import pytest

from embsim.errors import InputError
from embsim.workload.length_data import load_histogram
from embsim.workload.padding import MAX_LENGTHS, PaddingPolicy, check_at_seq, length_mix, parse_padding


def wiki(seq=512):
    return load_histogram("wikipedia").probabilities(seq)


@pytest.mark.parametrize("text,policy", [
    ("max", PaddingPolicy("max")), ("packed", PaddingPolicy("packed")),
    ("longest", PaddingPolicy("longest")), ("longest:8", PaddingPolicy("longest", align=8)),
    ("bins:64", PaddingPolicy("bins", width=64)), ("bins:64:8", PaddingPolicy("bins", width=64, align=8)),
])
def test_forms(text, policy):
    assert parse_padding(text) == policy and policy.text == text
    assert parse_padding(None) is None


@pytest.mark.parametrize("text", ["bogus", "max:1", "packed:2", "longest:0", "longest:x", "longest:8:8",
                                  "bins", "bins:0", "bins:64:8:1", "bins:-64"])
def test_bad_forms_are_one_line_errors(text):
    with pytest.raises(InputError, match=r"^--padding "):
        parse_padding(text)


def test_max_and_packed():
    assert length_mix(wiki(), 512, PaddingPolicy("max"), 32).lengths == (512,)
    packed = length_mix(wiki(), 512, PaddingPolicy("packed"), 32)
    # a sample costs its share of a full row: mean / seq = 1 / 2.0013
    assert packed.lengths == (512,) and packed.weights[0] == pytest.approx(1 / 2.0013, abs=1e-4)


def test_longest_of_one_sample_is_the_histogram():
    p = wiki()
    mix = length_mix(p, 512, PaddingPolicy("longest"), 1)
    assert mix.mean_length == pytest.approx(load_histogram("wikipedia").mean)
    aligned = length_mix(p, 512, PaddingPolicy("longest", align=8), 1)
    assert all(L % 8 == 0 for L in aligned.lengths)
    assert aligned.mean_length > mix.mean_length


def test_phase1_batches_pad_to_128():
    """LDDL's unbinned phase 1: a batch of 16 nearly always holds a sample of 121+ tokens."""
    mix = length_mix(wiki(128), 128, PaddingPolicy("longest", align=8), 16)
    assert mix.mean_length == pytest.approx(128, abs=1e-4)


def lddl_monte_carlo(p, seq, width, align, batch, steps, rng):
    """LDDL's binned loader, step by step: a bin drawn in proportion to its samples, a batch
    of that bin's samples, padded to its longest, rounded up to align."""
    lengths = np.arange(1, p.size + 1)
    bins = np.minimum((lengths - 1) // width, seq // width - 1)
    share = np.bincount(bins, weights=p)
    out = []
    for b in rng.choice(share.size, size=steps, p=share / share.sum()):
        q = np.where(bins == b, p, 0.0)
        longest = rng.choice(lengths, size=batch, p=q / q.sum()).max()
        out.append(-(-longest // align) * align)
    return np.asarray(out, dtype=float)


def test_bins_match_lddls_loader_sampled():
    p, rng = wiki(), np.random.default_rng(7)
    for batch in (4, 32):
        mix = length_mix(p, 512, PaddingPolicy("bins", width=64, align=8), batch)
        assert sum(mix.weights) == pytest.approx(1.0)
        drawn = lddl_monte_carlo(p, 512, 64, 8, batch, 20_000, rng)
        se = np.sqrt(drawn.size)             # four standard errors of the sampled means
        assert mix.mean_length == pytest.approx(drawn.mean(), abs=4 * drawn.std() / se)
        sq = sum(w * L * L for L, w in zip(mix.lengths, mix.weights))   # what attention sees
        assert sq == pytest.approx((drawn ** 2).mean(), abs=4 * (drawn ** 2).std() / se)


def test_bins_of_64_at_512_pad_wikipedia_to_about_279():
    """The measured histogram, not a fitted number: 272 at micro-batch 4, 279 at 32, and
    a longer batch only approaches each bin's top (64, 128, ... 512)."""
    means = [length_mix(wiki(), 512, PaddingPolicy("bins", width=64, align=8), b).mean_length
             for b in (4, 32, 4096)]
    assert means[0] == pytest.approx(272.4, abs=0.1) and means[1] == pytest.approx(279.1, abs=0.1)
    assert means[0] < means[1] < means[2] < 280
    top = length_mix(wiki(), 512, PaddingPolicy("bins", width=64), 10 ** 6)
    assert set(top.lengths) <= {64 * k for k in range(1, 9)}


def test_bins_need_a_multiple_of_the_width():
    with pytest.raises(InputError, match="--seq 500 must be a multiple of the bin width 64"):
        length_mix(wiki(500), 500, PaddingPolicy("bins", width=64), 8)
    with pytest.raises(InputError, match="--seq 32"):
        length_mix(wiki(32), 32, PaddingPolicy("bins", width=64), 8)


def test_empty_policy_is_refused_not_max():
    """`--padding ''` used to mean max silently (and hide the model's own padding)."""
    with pytest.raises(InputError, match="^--padding '': expected max, longest"):
        parse_padding("")


def test_align_longer_than_seq_is_refused():
    """longest:64 at --seq 35 padded every micro-batch to 64 tokens, past --seq."""
    with pytest.raises(InputError, match="--padding longest:64: ALIGN 64 is more than --seq 35"):
        length_mix(wiki(35), 35, parse_padding("longest:64"), 8)
    with pytest.raises(InputError, match="ALIGN 512 is more than --seq 256"):
        check_at_seq(parse_padding("bins:64:512"), 256)
    check_at_seq(parse_padding("bins:64:8"), 512)
    check_at_seq(None, 1)
    assert length_mix(wiki(35), 35, parse_padding("longest:35"), 8).lengths == (35,)


def test_too_many_padded_lengths_is_refused_with_an_align_that_fits():
    """Every padded length is a model build and timing: longest without ALIGN at --seq 100000
    ran for minutes; the error names the ALIGN that brings it under MAX_LENGTHS."""
    seq = 100_000
    probs = np.full(seq, 1.0 / seq)
    with pytest.raises(InputError, match=r"^padding longest at --seq 100000: .* more than 1,024; "
                                         r"give an ALIGN of at least 104$"):
        length_mix(probs, seq, parse_padding("longest"), 1)
    assert len(length_mix(probs, seq, parse_padding("longest:104"), 1).lengths) <= MAX_LENGTHS
    with pytest.raises(InputError, match="more than 1,024"):
        length_mix(np.full(4096, 1 / 4096), 4096, parse_padding("bins:1"), 1)
