"""Pure pieces of calibrate: token statistics, the host link fit, module builders."""

import numpy as np
import pytest
import torch

from embsim.calibrate.host_topology import fit_links, ring_steps
from embsim.collectives.busbw import busbw_factor as bus_factor
from embsim.calibrate.modules import build_layer, chain_layers, example_inputs
from embsim.calibrate.spec import LayerShape, ModelShape, TableShape, model_spec
from embsim.calibrate.tokens import CorpusTokens, ZipfTokens, token_stats
from embsim.errors import InputError
from embsim.trace import CollectiveCurve


def test_zipf_is_deterministic_and_skewed():
    z = ZipfTokens(vocab=1000, seq=16, seed=1)
    a, b = z.batch(0, 0, 8), z.batch(0, 0, 8)
    assert np.array_equal(a, b) and not np.array_equal(a, z.batch(1, 0, 8))
    ids = np.concatenate([z.batch(r, 0, 64).ravel() for r in range(4)])
    assert (ids < 10).mean() > 0.25                # the head of the distribution dominates
    stats = token_stats(z, "word", 8, ranks=4)
    assert max(stats.unique_per_rank) < stats.union < sum(stats.unique_per_rank)


def test_corpus_tokens(tmp_path):
    f = tmp_path / "c.txt"
    f.write_text("the cat sat on the mat the end " * 20)
    c = CorpusTokens(f, vocab=4, seq=5, world=2)
    assert c.ids.max() == 3 and c.ids[0] == 0         # "the" is the most frequent word
    assert not np.array_equal(c.batch(0, 0, 2), c.batch(1, 0, 2))
    with pytest.raises(InputError, match="need at least"):
        CorpusTokens(f, vocab=4, seq=10_000)


def test_fit_links_recovers_alpha_beta():
    alpha, bw, n = 20e-6, 2e9, 2
    curves = []
    for op in ("all_reduce", "all_gather", "broadcast"):
        sizes = tuple(1024 * 4 ** k for k in range(9))
        times = tuple(ring_steps(op, n) * alpha + bus_factor(op, n) * s / bw for s in sizes)
        curves.append(CollectiveCurve(op, n, "all", sizes, times, (0.0,) * len(sizes)))
    got_bw, got_alpha = fit_links(curves)
    assert got_bw == pytest.approx(bw, rel=1e-6)
    assert got_alpha == pytest.approx(alpha, rel=1e-6)


def test_every_zoo_kind_builds_and_runs():
    table = TableShape("word", 50, 16)
    layers = (
        LayerShape("e", "embedding", {"table": "word"}),
        LayerShape("p", "positional_embedding", {"rows": 4, "dim": 16}),
        LayerShape("n", "layernorm", {"dim": 16}),
        LayerShape("l", "linear", {"in": 16, "out": 16, "activation": "gelu"}),
        LayerShape("pool", "linear", {"in": 16, "out": 2, "per": "sample"}),
        LayerShape("r", "lstm", {"in": 16, "hidden": 32, "proj": 16}),
        LayerShape("a", "additive_attention", {"query": 16, "key": 16, "units": 8}),
        LayerShape("enc", "transformer_encoder", {"dim": 16, "heads": 2, "ffn": 32}),
        LayerShape("dec", "transformer_decoder", {"dim": 16, "heads": 2, "ffn": 32, "cross_attention": True}),
        LayerShape("fm", "fm_interaction", {"fields": 3, "dim": 16}),
        LayerShape("o", "output_projection", {"dim": 16, "tied": "word"}),
        LayerShape("loss", "softmax_loss", {"classes": "word"}))
    model = ModelShape("all-kinds", {"word": table}, layers, "test")
    gen = torch.Generator().manual_seed(0)
    for layer in layers:
        out = build_layer(layer, model)(*example_inputs(layer, model, 2, 3, torch.zeros(2, 3, dtype=torch.long), gen))
        out.sum().backward()
    chain, skipped = chain_layers(model)
    assert [l.name for l in chain] == ["p", "n", "l", "r", "enc", "dec", "o"]
    assert skipped == ["pool", "a", "fm"]
    with pytest.raises(InputError, match="cannot build"):
        build_layer(LayerShape("x", "conv2d", {}), model)


def test_zoo_names_match_the_simulators():
    from embsim.workload import load_model
    shape = model_spec("bert-base")
    built = load_model("bert-base", batch=2, seq=16)
    assert [l.name for l in shape.layers] == [l.name for l in built.layers]


def test_link_fit_refuses_a_slope_that_is_not_a_bandwidth():
    """Times that do not grow with size (noise) must not become a made-up bandwidth."""
    sizes = tuple(1 << k for k in range(10, 24, 2))
    flat = CollectiveCurve("all_reduce", 2, "all", sizes, tuple(1e-3 - 1e-12 * s for s in sizes),
                           tuple(0.0 for _ in sizes))
    with pytest.raises(InputError, match="link fit is unusable"):
        fit_links([flat])
