"""engine.families: like collectives joined into families, and the engine's runs with
families equal to its runs with every collective on its own."""

from __future__ import annotations

import json

import pytest

from embsim.engine import simulation
from embsim.engine.families import Family, FamilyWait, families, family_waits
from embsim.engine.run import SimulationConfig, simulate
from embsim.plan.ops import CommOp
from embsim.report.result_json import simulation_json


def op(name, priority=1.0, nbytes=32e6, deps=(("bwd:l1", 0),)):
    return CommOp(name=name, op="all_reduce", nbytes=nbytes, category="dense", channel="nccl",
                  ready_after=deps, priority=priority, tensors=("t",))


def test_consecutive_like_collectives_form_one_family():
    comms = (op("t#p0"), op("t#p1"), op("t#p2"), op("u", priority=2.0), op("v", nbytes=1e6),
             op("t#p3"))
    assert [[c.name for c in f.members] for f in families(comms)] == [
        ["t#p0", "t#p1", "t#p2"], ["u"], ["v"], ["t#p3"]]


def test_a_wait_for_a_whole_family_in_order_is_one_wait():
    fam, lone = families((op("t#p0"), op("t#p1"), op("u", priority=2.0)))
    family_of = {c.name: f for f in (fam, lone) for c in f.members}
    assert family_waits((("t#p0", 0), ("t#p1", 0), ("u", 0)), family_of) == (
        FamilyWait(fam, 0), ("u", 0))
    # part of a family, another order or mixed offsets: member by member
    for deps in ((("t#p0", 0),), (("t#p1", 0), ("t#p0", 0)), (("t#p0", 0), ("t#p1", -1))):
        assert family_waits(deps, family_of) == deps


CASES = [
    dict(topology="dgx-h100:2x8", model="merlin-synthetic-tiny", strategy="allreduce",
         scheduler="priority", jitter="normal:0.1"),
    dict(topology="dgx-a100:2x8", model="gnmt", strategy="embrace",
         scheduler="embrace-2d"),
    dict(topology="dgx-a100:2x8", model="lstm-lm1b", strategy="ps", scheduler="priority",
         scheduler_options={"partition_bytes": 4e6, "credit_bytes": 16e6}),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c['model']}-{c['scheduler']}")
def test_families_change_nothing_but_the_cost(case, monkeypatch):
    def result():
        return json.dumps(simulation_json(simulate(SimulationConfig(iterations=3, **case))),
                          sort_keys=True)

    sizes = []

    def spy(comms):
        found = families(comms)
        sizes.extend(len(f.members) for f in found)
        return found

    monkeypatch.setattr(simulation, "families", spy)
    joined = result()
    assert max(sizes) > 1            # the run had families to join
    monkeypatch.setattr(simulation, "families", lambda comms: tuple(Family((c,)) for c in comms))
    assert result() == joined
