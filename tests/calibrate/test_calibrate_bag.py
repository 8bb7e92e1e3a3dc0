"""calibrate measures a pooled embedding layer as the bag lookup it is (nn.EmbeddingBag)."""

import torch

from embsim.calibrate.modules import build_layer, example_inputs
from embsim.calibrate.spec import LayerShape, ModelShape, TableShape


def test_a_pooled_layer_is_an_embedding_bag_with_one_vector_per_sample():
    table = TableShape("t0", 1000, 16)
    for pooling in ("sum", "mean"):
        layer = LayerShape("emb", "embedding", {"table": "t0", "lookups": 8, "pooling": pooling})
        m = ModelShape("bag", {"t0": table}, (layer,), "builtin")
        gen = torch.Generator().manual_seed(0)
        tokens = torch.randint(0, 1000, (4, 8), generator=gen)
        module = build_layer(layer, m, sparse=True)
        assert isinstance(module, torch.nn.EmbeddingBag) and module.mode == pooling
        out = module(*example_inputs(layer, m, 4, 8, tokens, gen))
        assert out.shape == (4, 16)
        out.sum().backward()
        assert module.weight.grad.is_sparse
    plain = LayerShape("emb", "embedding", {"table": "t0"})
    assert type(build_layer(plain, ModelShape("lm", {"t0": table}, (plain,), "builtin"))) is torch.nn.Embedding
