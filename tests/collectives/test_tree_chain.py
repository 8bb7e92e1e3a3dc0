"""Tree/Simple store-and-forward rounds along a node's chain (collectives.tree_chain)."""

import pytest

from embsim.collectives.tree_chain import _positions, chain_fill, chain_rounds_us

MIB = 1 << 20


def test_positions_are_rotations_with_one_leaf_and_one_head_each():
    pos = _positions(8, 4)
    assert pos.shape == (8, 4)
    for r in range(4):
        assert sorted(pos[:, r]) == list(range(8))
    # the head (GPU 0) hands down to its previous neighbour (search.cc: prevGpu first for trees)
    assert _positions(8, 1)[:, 0].tolist() == [7, 0, 1, 2, 3, 4, 5, 6]


def test_one_chunk_pays_every_hop_up_and_down_at_the_shared_link():
    # one chunk, 8 GPUs, 4 channels on one chain, 400 GB/s links, no per-channel limit:
    # 7 hops up then 7 down, each a round in which the sending GPU carries 4 channels' chunk
    t = chain_rounds_us(MIB, 1, 8, 4, 1, 400.0, float("inf"))
    assert t == pytest.approx(14 * 4 * MIB / 400e3)


def test_steady_rounds_carry_up_and_down_on_every_channel():
    # many chunks: the rounds tend to two chunks per channel per round (up and down)
    k = 4000
    t = chain_rounds_us(MIB, k, 8, 4, 1, 400.0, float("inf"))
    steady = 2 * 4 * MIB / 400e3
    assert t / (k * steady) == pytest.approx(1.0, rel=0.01)
    fill = chain_fill(MIB, k, 8, 4, 1, 400.0, float("inf"))
    assert fill == pytest.approx(t - k * steady)
    # the fill does not grow with the chunk count once the chain is full
    assert chain_fill(MIB, 2 * k, 8, 4, 1, 400.0, float("inf")) == pytest.approx(fill)


def test_one_channel_is_held_to_its_own_rate():
    fast_link = chain_rounds_us(MIB, 1, 4, 1, 1, 1e6, 40.0)
    assert fast_link == pytest.approx(6 * MIB / 40e3)


def test_rotated_chains_share_the_first_hops_less():
    lockstep = chain_fill(2 * MIB, 16, 64, 32, 1, 720.0, 42.8)
    rotated = chain_fill(2 * MIB, 16, 64, 32, 16, 720.0, 42.8)
    assert 0 < rotated < lockstep


def test_no_chain_no_fill():
    assert chain_fill(MIB, 10, 1, 8, 1, 400.0, 40.0) == 0.0
    assert chain_rounds_us(MIB, 0, 8, 8, 1, 400.0, 40.0) == 0.0


def test_rotations_start_at_consecutive_nic_gpus():
    # channel c starts at GPU c (NCCL's NIC list is ordered by GPU): heads 0, 1, 2, 3
    pos = _positions(8, 4)
    assert [int(pos[:, r].argmax()) for r in range(4)] == [0, 1, 2, 3]


def test_replayed_search_keeps_one_chain_while_its_budget_covers_the_channels():
    from embsim.collectives.tree_chain import chain_starts
    # 8 GPUs: 11 recursion steps a channel, 256 // 11 = 23 channels replayed -> one order
    assert chain_starts(8, 8, 8) == 1
    assert chain_starts(8, 16, 8) == 1
    # 64 GPUs (an MNNVL rack): 67 steps a channel, 3 replayed < 16 -> one chain per NIC GPU
    assert chain_starts(64, 16, 64) == 16
    assert chain_starts(64, 16, 4) == 4
    assert chain_starts(1, 16, 1) == 1


def test_grace_pairs_turn_every_other_chain_downwards():
    # NICs shared by 2 GPUs: a head with its pair above climbs upwards, the pair's upper
    # GPU downwards (its second GPU must reach the head's NIC); one-GPU NICs: one way
    pos = _positions(8, 4, 2)
    assert pos[:, 0].tolist() == [7, 6, 5, 4, 3, 2, 1, 0]       # head 0, then 1, 2, ...
    assert pos[:, 1].tolist() == [6, 7, 0, 1, 2, 3, 4, 5]       # head 1, then 0, 7, ...
    assert (_positions(8, 4, 1) == _positions(8, 4)).all()
    # opposite directions cross instead of climbing together: less fill on a 64-GPU rack
    same = chain_fill(2 * MIB, 16, 64, 32, 16, 720.0, 70.0, 1)
    mixed = chain_fill(2 * MIB, 16, 64, 32, 16, 720.0, 70.0, 2)
    assert 0 < mixed < same
