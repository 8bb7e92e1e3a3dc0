"""The three real strategies give single-process training's parameters after a step, on a
language model and on a recommender (several tables, bags, numeric features)."""

import os

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from embsim.calibrate.launch import leave_spawned_rank
from embsim.calibrate.spec import LayerShape, ModelShape, TableShape
from embsim.calibrate.recommender import RecommenderBatches
from embsim.calibrate.step_model import concat_batches, seeded_step_model
from embsim.calibrate.strategies import STRATEGIES, Strategy, column_split, reference_step

VOCAB, DIM, BATCH, SEQ, SEED = 60, 10, 3, 5, 7


def tiny_spec() -> ModelShape:
    return ModelShape("test-lm", {"word": TableShape("word", VOCAB, DIM)}, (
        LayerShape("embed", "embedding", {"table": "word"}),
        LayerShape("pos", "positional_embedding", {"rows": 8, "dim": DIM}),
        LayerShape("enc", "transformer_encoder", {"dim": DIM, "heads": 2, "ffn": 16}),
        LayerShape("lstm", "lstm", {"in": DIM, "hidden": 12, "proj": DIM}),
        LayerShape("norm", "layernorm", {"dim": DIM}),
        LayerShape("out", "output_projection", {"dim": DIM, "tied": "word", "bias": True}),
        LayerShape("loss", "softmax_loss", {"classes": "word"})), "test")


def tiny_recommender() -> ModelShape:
    """A DLRM (bottom MLP, one table read 3 times, a bag, a dot interaction) with an NCF
    branch (a product of two single lookups)."""
    return ModelShape("test-rec", {"cat": TableShape("cat", 40, 6), "bag": TableShape("bag", 30, 6),
                                   "user": TableShape("user", 20, 4), "item": TableShape("item", 25, 4)}, (
        LayerShape("bottom", "linear", {"in": 5, "out": 6, "activation": "relu"}),
        LayerShape("cats", "embedding", {"table": "cat", "lookups": 3}),
        LayerShape("bagged", "embedding", {"table": "bag", "lookups": 4, "pooling": "sum"}),
        LayerShape("stack", "combine", {"op": "concat", "inputs": 5, "dim": 6}),
        LayerShape("interaction", "dot_interaction", {"vectors": 5, "dim": 6, "out": 16}),
        LayerShape("top", "linear", {"in": 16, "out": 4, "activation": "relu"}),
        LayerShape("u", "embedding", {"table": "user", "lookups": 1}),
        LayerShape("i", "embedding", {"table": "item", "lookups": 1}),
        LayerShape("gmf", "combine", {"op": "product", "inputs": 2, "dim": 4}),
        LayerShape("join", "combine", {"op": "concat", "inputs": 2, "dim": 4}),
        LayerShape("out", "linear", {"in": 8, "out": 1}),
        LayerShape("loss", "softmax_loss", {"classes": 1})), "test")


def tiny_fm() -> ModelShape:
    """A factorization machine: lookups and their interaction, no dense layer to DDP."""
    return ModelShape("test-fm", {"f": TableShape("f", 50, 4)}, (
        LayerShape("fields", "embedding", {"table": "f", "lookups": 3}),
        LayerShape("fm", "fm_interaction", {"fields": 3, "dim": 4}),
        LayerShape("loss", "softmax_loss", {"classes": 1})), "test")


MODELS = {"lm": tiny_spec, "recommender": tiny_recommender, "fm": tiny_fm}


def batches(kind: str, world: int) -> list[tuple]:
    """Every rank's step inputs."""
    if kind in ("recommender", "fm"):
        return [RecommenderBatches(MODELS[kind](), seed=3).inputs(r, 0, BATCH) for r in range(world)]
    g = torch.Generator().manual_seed(3)
    ids = torch.randint(0, VOCAB, (world, BATCH, SEQ + 1), generator=g)
    return [(ids[r, :, :-1], ids[r, :, 1:]) for r in range(world)]


def _worker(rank, world, kind, store, out_dir):
    torch.set_num_threads(1)
    # a file rendezvous: no free-port race between choosing a port and binding it
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world)
    inputs = batches(kind, world)[rank]
    result = {}
    for name in STRATEGIES:
        s = Strategy(name, MODELS[kind](), SEED, torch.device("cpu"))
        s.step(*inputs)
        result[name] = s.full_parameters()
    if rank == 0:
        torch.save(result, os.path.join(out_dir, "params.pt"))
    leave_spawned_rank()      # as calibrate's ranks leave: no gloo teardown to abort in


@pytest.mark.parametrize("kind, world", [("lm", 2), ("lm", 3), ("recommender", 2), ("recommender", 3),
                                         ("fm", 2)])
def test_strategies_match_single_process(tmp_path, kind, world):
    mp.spawn(_worker, args=(world, kind, str(tmp_path / "rendezvous"), str(tmp_path)), nprocs=world)
    got = torch.load(tmp_path / "params.pt")
    torch.set_num_threads(1)      # the reference as deterministic as the ranks
    spec = MODELS[kind]()
    ref = reference_step(spec, SEED, *concat_batches(batches(kind, world)))
    init = dict(seeded_step_model(spec, SEED).named_parameters())
    tables = [k for k in ref if k.startswith("embedding")]
    assert len(tables) == len(spec.tables)
    for key in tables:                        # the step changed every table: the check can fail
        assert (ref[key] - init[key].detach()).abs().max() > 1e-4, key
    for name in STRATEGIES:
        assert got[name].keys() == ref.keys()
        for key, value in ref.items():
            torch.testing.assert_close(got[name][key], value, atol=1e-5, rtol=1e-5,
                                       msg=f"{name}: {key} differs")


def test_column_split_covers_dim():
    assert column_split(10, 3) == [4, 3, 3]
    assert sum(column_split(768, 5)) == 768
