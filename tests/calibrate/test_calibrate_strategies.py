"""The three real strategies give single-process training's parameters after a step."""

import os

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from embsim.calibrate.launch import leave_spawned_rank
from embsim.calibrate.spec import LayerShape, ModelShape, TableShape
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


def batches(world):
    g = torch.Generator().manual_seed(3)
    ids = torch.randint(0, VOCAB, (world, BATCH, SEQ + 1), generator=g)
    return ids[:, :, :-1], ids[:, :, 1:]


def _worker(rank, world, store, out_dir):
    torch.set_num_threads(1)
    # a file rendezvous: no free-port race between choosing a port and binding it
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world)
    tokens, targets = batches(world)
    result = {}
    for name in STRATEGIES:
        s = Strategy(name, tiny_spec(), SEED, torch.device("cpu"))
        s.step(tokens[rank], targets[rank])
        result[name] = s.full_parameters()
    if rank == 0:
        torch.save(result, os.path.join(out_dir, "params.pt"))
    leave_spawned_rank()      # as calibrate's ranks leave: no gloo teardown to abort in


@pytest.mark.parametrize("world", [2, 3])
def test_strategies_match_single_process(tmp_path, world):
    mp.spawn(_worker, args=(world, str(tmp_path / "rendezvous"), str(tmp_path)), nprocs=world)
    got = torch.load(tmp_path / "params.pt")
    tokens, targets = batches(world)
    torch.set_num_threads(1)      # the reference as deterministic as the ranks
    ref = reference_step(tiny_spec(), SEED, tokens.reshape(-1, SEQ), targets.reshape(-1, SEQ))
    init = reference_step.__globals__["seeded_model"](tiny_spec(), SEED)
    moved = (ref["embedding.weight"] - init.embedding.weight.detach()).abs().max()
    assert moved > 1e-4                       # the step changed the table: the check can fail
    for name in STRATEGIES:
        assert got[name].keys() == ref.keys()
        for key, value in ref.items():
            torch.testing.assert_close(got[name][key], value, atol=1e-5, rtol=1e-5,
                                       msg=f"{name}: {key} differs")


def test_column_split_covers_dim():
    assert column_split(10, 3) == [4, 3, 3]
    assert sum(column_split(768, 5)) == 768
