"""Communicators: stream positions counted per group of ranks that arrive together while
the groups partition the ranks, per rank once they do not -- the same positions either way."""

import pytest

from embsim.collectives.communicator import Communicator, RankIndex


def test_disjoint_groups_count_per_group_and_share_one_index():
    ranks = tuple(range(6))
    index = RankIndex(ranks)
    a, b = Communicator("a", index), Communicator("b", index)
    low, high = (0, 1, 2), (3, 4, 5)
    assert [a.take_seq(a.group(low)) for _ in range(3)] == [0, 1, 2]
    assert a.take_seq(a.group(high)) == 0 and b.take_seq(b.group(high)) == 0
    assert a.group(low) is b.group(low) and index.partitioned
    assert a._rank_seq is None                      # nothing per rank was built


def test_an_overlapping_group_switches_to_per_rank_positions_without_losing_count():
    index = RankIndex(tuple(range(4)))
    comm = Communicator("c", index)
    for _ in range(2):
        comm.take_seq(comm.group((0, 1)))
        comm.take_seq(comm.group((2, 3)))
    comm.take_seq(comm.group((0, 1)))               # ranks 0, 1 at 3; ranks 2, 3 at 2
    assert comm.take_seq(comm.group((2,))) == 2     # overlaps (2, 3): counted per rank now
    assert not index.partitioned
    assert comm.take_seq(comm.group((3,))) == 2
    assert comm.take_seq(comm.group((2, 3))) == 3
    with pytest.raises(ValueError, match=r"different positions of its stream \(3\.\.4\)"):
        comm.take_seq(comm.group((0, 1, 2)))       # 0, 1 at 3; 2 at 4


def test_bad_groups_are_refused_naming_the_communicator():
    comm = Communicator("dp", RankIndex((0, 1)))
    with pytest.raises(ValueError, match="rank 5 is not in communicator 'dp'"):
        comm.group((5,))
    with pytest.raises(ValueError, match="arrives twice"):
        comm.group((1, 1))
