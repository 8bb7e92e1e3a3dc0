"""--accumulate and --jitter through the whole simulation."""

import json

import numpy as np

import pytest

from embsim import cli
from embsim.engine.accumulate import accumulate
from embsim.engine.jitter import jitter_factors, parse_jitter, quantiles
from embsim.engine.run import SimulationConfig, simulate
from embsim.errors import InputError

BASE = dict(topology="dgx-a100:1x8", model="bert-base", batch=16, seq=128, dtype="fp16", iterations=3)


def test_accumulation_amortises_the_synchronisation():
    one = simulate(SimulationConfig(**BASE))
    four = simulate(SimulationConfig(**BASE, accumulate=4))
    assert four.step_time > 3 * one.step_time
    assert four.samples_per_s >= one.samples_per_s
    assert four.memory == one.memory               # activations of one micro-batch


def test_accumulate_sync_every_pays_each_micro_batch_synchronisation():
    last = simulate(SimulationConfig(**BASE, accumulate=4))
    every = simulate(SimulationConfig(**BASE, accumulate=4, accumulate_sync="every"))
    one = simulate(SimulationConfig(**BASE))
    # four all-reduces of the gradients instead of one, the optimizer once
    assert every.metrics.comm_bytes_per_gpu["all_reduce"] == pytest.approx(
        4 * last.metrics.comm_bytes_per_gpu["all_reduce"])
    assert last.step_time < every.step_time < 4 * one.step_time
    # one GPU synchronises nothing: both ways are the same
    solo = dict(BASE, topology="dgx-a100:1x1")
    assert simulate(SimulationConfig(**solo, accumulate=4, accumulate_sync="every")).step_time == \
        simulate(SimulationConfig(**solo, accumulate=4)).step_time
    with pytest.raises(InputError, match="--accumulate-sync"):
        SimulationConfig(**BASE, accumulate_sync="sometimes")


def test_jitter_waits_for_the_slowest_gpu():
    plain = simulate(SimulationConfig(**BASE))
    jit = simulate(SimulationConfig(**BASE, jitter="normal:0.1"))
    assert jit.scaling_efficiency < plain.scaling_efficiency - 0.05
    again = simulate(SimulationConfig(**BASE, jitter="normal:0.1"))
    assert again.step_time == jit.step_time


def test_jitter_factors_are_order_statistics():
    f = jitter_factors("uniform:0.2", 8, seed=3)
    assert sorted(f) == pytest.approx(list(1 + 0.2 * (2 * quantiles(8) - 1)))
    assert list(jitter_factors("normal:0.1", 1, seed=0)) == [1.0]      # one GPU: the median
    assert not (jitter_factors("normal:0.1", 8, 0) == jitter_factors("normal:0.1", 8, 1)).all()


def test_seq_jitter_uses_the_compute_model():
    f = jitter_factors("seq:10", 4, 0, seq=24, compute_at_seq=lambda s: float(s))
    assert sorted(f) == pytest.approx([s / 24 for s in (20, 23, 25, 28)], abs=0.05)


@pytest.mark.parametrize("text", ["gauss:1", "normal", "normal:x", "uniform:1.5", "trace:2"])
def test_bad_jitter_is_one_line(text):
    with pytest.raises(InputError, match="--jitter"):
        parse_jitter(text)


def test_cli_flags_and_exit_status(capsys):
    assert cli.main(["simulate", "--topology", "dgx-a100:1x1", "--model", "tiny-lm", "--dtype", "fp8",
                     "--iterations", "2"]) == 2
    assert "fp8" in capsys.readouterr().err
    assert cli.main(["simulate", "--topology", "dgx-a100:1x1", "--model", "tiny-lm", "--accumulate", "0",
                     "--iterations", "2"]) == 2
    assert cli.main(["simulate", "--topology", "dgx-h100:1x2", "--model", "tiny-lm", "--dtype", "fp8",
                     "--accumulate", "2", "--jitter", "lognormal:0.05", "--iterations", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["compute_source"].startswith("compute: kernel model, H100")


def _corpus(tmp_path, lengths):
    path = tmp_path / "corpus.txt"
    path.write_text("".join(" ".join(f"w{i % 7}" for i in range(n)) + "\n" for n in lengths))
    return str(path)


def test_corpus_batches_pad_to_their_longest_sentence(tmp_path):
    # time linear in length: the factor is the expected padded length over --seq
    lengths = [5] * 50 + [45] * 50
    corpus = _corpus(tmp_path, lengths)
    one = jitter_factors("shuffle", 1, 0, seq=25, compute_at_seq=float, corpus=corpus, batch=1)
    assert one[0] == pytest.approx(1.0, abs=0.15)              # batch of 1: no padding
    big = jitter_factors("shuffle", 1, 0, seq=25, compute_at_seq=float, corpus=corpus, batch=64)
    assert big[0] == pytest.approx(45 / 25)                    # a long sentence in every batch
    # buckets keep short sentences together: padding only within a bucket
    bucketed = jitter_factors("bucket:5", 1, 0, seq=25, compute_at_seq=float, corpus=corpus, batch=64)
    assert bucketed[0] == pytest.approx(1.0, abs=0.15)


def test_corpus_padding_ratio_applies_at_the_runs_length(tmp_path):
    # --seq is the real mean the throughput counts; a corpus with another mean adds its
    # padded/real ratio, not its length
    same = _corpus(tmp_path, [30] * 100)
    assert jitter_factors("bucket:5", 1, 0, seq=24, compute_at_seq=float, corpus=same,
                          batch=64)[0] == pytest.approx(1.0)
    mixed = _corpus(tmp_path, [5] * 50 + [45] * 50)        # real mean 25
    at_50 = jitter_factors("shuffle", 1, 0, seq=50, compute_at_seq=float, corpus=mixed, batch=64)
    assert at_50[0] == pytest.approx(45 / 25)


def test_corpus_jitter_slowest_of_n_and_deterministic(tmp_path):
    corpus = _corpus(tmp_path, list(range(1, 51)))
    kw = dict(seq=25, compute_at_seq=float, corpus=corpus, batch=4)
    f8 = jitter_factors("shuffle", 8, 3, **kw)
    assert f8.max() > jitter_factors("shuffle", 1, 3, **kw)[0]
    assert list(f8) == list(jitter_factors("shuffle", 8, 3, **kw))
    acc = jitter_factors("shuffle", 8, 3, micro_batches=16, **kw)
    assert acc.max() - acc.min() < f8.max() - f8.min()         # accumulation averages lengths out


def test_corpus_jitter_needs_a_corpus():
    with pytest.raises(InputError, match="--corpus"):
        jitter_factors("bucket:5", 4, 0, seq=25, compute_at_seq=float, batch=4)
    with pytest.raises(InputError, match="bucket count"):
        parse_jitter("bucket:0")
    with pytest.raises(InputError, match="takes no value"):
        parse_jitter("shuffle:3")


def test_token_budget_batches_as_fairseq_make_batches():
    from embsim.engine.jitter import token_budget_batches
    sizes, longest, real = token_budget_batches([10] * 20 + [40] * 3 + [100], 200)
    # 20 x 10 fits, cut to a multiple of 8; the next batch takes a 40 (5 x 40 <= 200)
    assert list(sizes) == [16, 5, 2, 1]
    assert list(longest) == [10, 40, 40, 100]
    assert list(real) == [160, 80, 80, 100]
    with pytest.raises(InputError, match="maxtokens"):
        token_budget_batches([300], 200)


def test_maxtokens_jitter_waits_for_the_slowest_token_batch(tmp_path):
    lengths = [5] * 400 + [12] * 300 + [30] * 200 + [80] * 60
    corpus = _corpus(tmp_path, lengths)
    padded = lambda b, s: float(b * s) * (1 + s / 100)      # attention: longer costs more per token
    kw = dict(seq=32, batch=8, corpus=corpus, compute_at=padded)
    one = jitter_factors("maxtokens", 1, 0, **kw)
    eight = jitter_factors("maxtokens", 8, 0, **kw)
    assert eight.max() > one[0] > eight.min()
    assert list(jitter_factors("maxtokens", 8, 0, **kw)) == list(eight)
    with pytest.raises(InputError, match="maxtokens"):
        parse_jitter("maxtokens:3")


def test_lengths_distribution_stands_in_for_a_corpus():
    from embsim.engine.lengths import drawn_lengths, parse_lengths
    drawn = drawn_lengths("lognormal:29.05:16.2", seed=0)
    assert drawn.mean() == pytest.approx(29.05, rel=0.02) and drawn.std() == pytest.approx(16.2, rel=0.05)
    assert drawn_lengths("lognormal:29.05:16.2:50", seed=0).max() == 50
    assert (drawn_lengths("lognormal:29.05:16.2", 3) == drawn_lengths("lognormal:29.05:16.2", 3)).all()
    f = jitter_factors("maxtokens", 8, 0, seq=32, batch=8, lengths="lognormal:29.05:16.2",
                       compute_at=lambda b, s: float(b * s) * (1 + s / 100))
    assert f.max() > f.min()
    for bad in ("normal:1:2", "lognormal:1", "lognormal:a:b", "lognormal:10:-1", "lognormal:10:5:0.5"):
        with pytest.raises(InputError, match="--lengths"):
            parse_lengths(bad)
    with pytest.raises(InputError, match="--corpus.*--lengths"):
        jitter_factors("shuffle", 2, 0, seq=8, batch=2, compute_at_seq=float)


def test_apex_o2_unscales_every_micro_batch_into_the_master_gradients():
    from types import SimpleNamespace
    from embsim.engine.accumulate import master_accumulate_s
    from embsim.workload import load_model
    seen = []
    ctx = lambda m: SimpleNamespace(model=m, kernel_seconds=lambda ks: seen.append(ks) or 1e-3)
    half = load_model("tiny-lm", dtype="fp16")
    assert master_accumulate_s(ctx(half), "o2") == 1e-3
    # read the 16-bit gradient and the FP32 stash, write FP32: 10 B per parameter
    assert seen[-1][0].nbytes == half.params * (2 + 8)
    assert master_accumulate_s(ctx(half), "autocast") == 0.0
    # Megatron's wgrad GEMMs accumulate into the FP32 main_grad themselves: no pass
    assert master_accumulate_s(ctx(half), "megatron") == 0.0
    assert master_accumulate_s(ctx(load_model("tiny-lm", dtype="fp32")), "o2") == 0.0
    # the three earlier micro-batches of an optimizer step each pay it once
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class Ctx:
        model: object
        layer_fwd: dict
        layer_bwd: dict
        kernel_seconds: object

    first = half.layers[0].name
    c = Ctx(half, {l.name: 1.0 for l in half.layers}, {l.name: 2.0 for l in half.layers},
            lambda ks: 0.5)
    n = len(half.layers)
    assert accumulate(c, 4, "o2").layer_fwd[first] == pytest.approx(1.0 + 3 * (3.0 * n + 0.5))
    assert accumulate(c, 4, "autocast").layer_fwd[first] == pytest.approx(1.0 + 3 * 3.0 * n)


def test_pair_budget_batches_as_make_batches_on_the_longer_side():
    from embsim.engine.jitter import pair_budget_batches
    # fairseq's order: by source, ties by target; each pair counts max(src, tgt)
    src = [10] * 10 + [20] * 4
    tgt = [10] * 8 + [40, 40] + [20] * 4
    sizes, s_long, t_long, real = pair_budget_batches(src, tgt, 200)
    # 8 pairs of 10 (a 9th would be a 40: 9 x 40 > 200); then the two 40-target pairs and
    # three 20s (5 x 40 = 200; a 6th is 240); then the last 20
    assert list(sizes) == [8, 5, 1]
    # each side padded to its own longest: the second batch's source is 20, its target 40
    assert list(s_long) == [10, 20, 20] and list(t_long) == [10, 40, 20]
    assert list(real) == [80, 140, 20]
    # equal sides: exactly token_budget_batches
    from embsim.engine.jitter import token_budget_batches
    one = [10] * 20 + [40] * 3 + [100]
    a = pair_budget_batches(one, one, 200)
    b = token_budget_batches(one, 200)
    assert list(a[0]) == list(b[0]) and list(a[1]) == list(b[1]) == list(a[2])


def test_sentence_pairs_from_a_length_ratio():
    from embsim.engine.lengths import drawn_lengths, drawn_pairs, parse_lengths, ratio_sigma
    text = "lognormal:29.05:16.2,ratio:0.151"
    src, tgt = drawn_pairs(text, 0)
    assert (src == drawn_lengths("lognormal:29.05:16.2", 0)).all()     # the same source lengths
    assert np.std(np.log(tgt / src)) == pytest.approx(0.151, rel=0.15)
    assert (drawn_pairs(text, 0)[1] == tgt).all()                       # deterministic
    s, t = drawn_pairs("lognormal:29.05:16.2", 0)
    assert (s == t).all()
    s50, t50 = drawn_pairs("lognormal:29.05:16.2:50,ratio:0.3", 0)
    assert max(s50.max(), t50.max()) <= 50
    assert parse_lengths(text) == ("lognormal", 29.05, 16.2, None) and ratio_sigma(text) == 0.151
    for bad in ("lognormal:29:16,ratio:-1", "lognormal:29:16,spread:0.1", "lognormal:29:16,ratio:x"):
        with pytest.raises(InputError, match="ratio"):
            parse_lengths(bad)


def test_pairs_time_each_side_at_its_own_length():
    # decoder twice the encoder's cost per token; the budget sizes batches on the longer side,
    # so unequal sides compute less on average, and the slowest of 8 stays near a full batch
    sides = lambda b, s, t: float(b * (s + 2 * t))
    kw = dict(seq=32, batch=8, compute_at=lambda b, s: float(b * 3 * s), compute_sides=sides)
    same = jitter_factors("maxtokens", 8, 0, lengths="lognormal:29.05:16.2", **kw)
    pairs = jitter_factors("maxtokens", 8, 0, lengths="lognormal:29.05:16.2,ratio:0.3", **kw)
    one_same = jitter_factors("maxtokens", 1, 0, lengths="lognormal:29.05:16.2", **kw)[0]
    one_pairs = jitter_factors("maxtokens", 1, 0, lengths="lognormal:29.05:16.2,ratio:0.3", **kw)[0]
    assert one_pairs < one_same
    assert one_pairs / pairs.max() < one_same / same.max()      # scaling efficiency falls


def test_budget_fill_reproduces_the_fitted_data_set():
    # ratio 0.151 (transformer-wmt's zoo lengths) is fitted on fairseq's WMT en-de log: wpb 3514
    # target tokens per --max-tokens 4000 batch (embsim.engine.fit_lengths)
    from embsim.engine.fit_lengths import MAX_TOKENS, WPB, target_fill
    from embsim.engine.jitter import budget_fill
    from embsim.workload.spec import load_model_spec
    from embsim.workload import ZOO_DIR
    lengths = load_model_spec(ZOO_DIR / "transformer-wmt.yaml").lengths
    assert lengths.endswith(",ratio:0.151")
    assert budget_fill(None, lengths, 0, MAX_TOKENS) == pytest.approx(WPB / MAX_TOKENS, abs=0.002)
    assert target_fill(0.151) == budget_fill(None, lengths, 0, MAX_TOKENS)
    assert budget_fill(None, "lognormal:29.05:16.2", 0, MAX_TOKENS) > 0.95   # equal sides fill it
    # not fitted: the same log's batch size, bsz 122-126 pairs (equal sides: 132)
    from embsim.engine.fit_lengths import pairs_per_batch
    assert 117 <= pairs_per_batch(0.151) <= 127 < pairs_per_batch(0.0)


def test_source_layers_of_an_encoder_decoder():
    from embsim.engine.run import source_layers
    from embsim.workload import load_model
    m = load_model("transformer-wmt")
    cut = source_layers(m)
    assert m.layers[cut].name == "target_embedding" and m.layers[cut - 1].name.startswith("encoder")
    assert load_model("gnmt").layers[source_layers(load_model("gnmt"))].name == "target_embedding"
    assert source_layers(load_model("bert-large")) == 0 and source_layers(load_model("tiny-lm")) == 0


def test_bucket_count_far_above_the_lengths_runs_the_non_empty_buckets_only():
    """bucket:1000000 scanned a million empty buckets over every sentence (minutes); the
    non-empty buckets are the same pools in the same order, so the draws are unchanged."""
    from embsim.engine.jitter import batch_lengths
    lengths = np.array([1, 2, 2, 9, 9, 9, 30, 31, 64] * 50)

    def old_pools(k):       # the loop it replaced, for the comparison
        width = -(-int(lengths.max()) // k)
        ids = np.minimum(lengths // width, k - 1)
        return [p for p in (lengths[ids == b] for b in range(k)) if len(p)]
    for k in (1, 3, 7, 40):
        new = batch_lengths("bucket", k, lengths, 4, 8, np.random.default_rng(5), 64)
        rng = np.random.default_rng(5)
        pools = old_pools(k)
        weights = np.array([len(p) for p in pools], dtype=float)
        exact = 64 * weights / weights.sum()
        counts = np.floor(exact).astype(int)
        counts[np.argsort(counts - exact, kind="stable")[:64 - counts.sum()]] += 1
        chosen = rng.permutation(np.repeat(np.arange(len(pools)), counts))
        old = np.array([rng.choice(pools[b], size=(4, 8)).max(axis=1) for b in chosen])
        assert (new == old).all(), k
    big = batch_lengths("bucket", 1_000_000, lengths, 4, 8, np.random.default_rng(0), 64)
    assert big.shape[0] == 64 and np.isin(big, lengths).all()


def test_corpus_jitter_says_when_it_reads_seq_as_a_far_off_mean():
    # bucket/shuffle scale the lengths so their mean is --seq (GNMT's convention): a BERT
    # --seq 512 over sentences of mean 60 is an 8.5x scale, and the output says so
    from embsim.engine.run import SimulationConfig, simulate
    base = dict(topology="dgx-h100:1x2", model="bert-base", seq=512, iterations=2, padding="max",
                lengths="lognormal:60:40", efficiency_baseline=False)
    far = simulate(SimulationConfig(jitter="shuffle", **base))
    assert "--jitter shuffle reads --seq 512 as the sentences' real mean length" in far.compute_source
    assert "scaled 8.53x" in far.compute_source
    near = simulate(SimulationConfig(jitter="bucket:4", **dict(base, seq=64)))
    assert "real mean length" not in near.compute_source
