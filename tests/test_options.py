"""Typed component options: each key reaches only the component that declares it."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from embsim.compare import compare
from embsim.engine.config import SimulationConfig, with_options
from embsim.errors import InputError
from embsim.options import NoOptions, build_options, route
from embsim.schedulers import SCHEDULERS
from embsim.strategies import STRATEGIES


@dataclass(frozen=True)
class A:
    x: int = 1
    shared: float = 0.0


@dataclass(frozen=True)
class B:
    y: str = "b"
    shared: float = 0.0


def test_route_hands_each_key_to_its_declarers_and_refuses_the_rest():
    assert route({"x": 2, "y": "c", "shared": 1.0}, {"a": A, "b": B}) == \
        {"a": {"x": 2, "shared": 1.0}, "b": {"y": "c", "shared": 1.0}}
    with pytest.raises(InputError, match=r"--option z: none of these takes it \(a: x, shared; b: y, shared\)"):
        route({"z": 1}, {"a": A, "b": B})


def test_build_options_lists_the_valid_keys():
    assert build_options(A, {"x": 3}, "strategy a") == A(x=3)
    with pytest.raises(InputError, match="--option q: strategy a takes x, shared"):
        build_options(A, {"q": 1}, "strategy a")
    with pytest.raises(InputError, match="takes no options"):
        build_options(NoOptions, {"q": 1}, "strategy n")


def test_every_component_declares_typed_options():
    for registry in (STRATEGIES, SCHEDULERS):
        for name in registry.names():
            cls = registry.get(name)
            assert cls.from_options({}).options == cls.Options()


def test_options_reach_only_their_component():
    cfg = with_options(SimulationConfig(strategy="embrace", scheduler="priority"),
                       {"shard": "rows", "partition_bytes": 4e6})
    assert cfg.strategy_options == {"shard": "rows"}
    assert cfg.scheduler_options == {"partition_bytes": 4e6}
    with pytest.raises(InputError, match="--option shard"):
        with_options(SimulationConfig(strategy="allreduce"), {"shard": "rows"})
    assert with_options(SimulationConfig(strategy="allreduce"), {"shard": "rows"}, strict=False) \
        == SimulationConfig(strategy="allreduce")


def test_values_are_checked_by_the_component():
    with pytest.raises(InputError, match="shard='diag'"):
        STRATEGIES.get("embrace").from_options({"shard": "diag"})
    with pytest.raises(InputError, match="credit_bytes"):
        SCHEDULERS.get("priority").from_options({"credit_bytes": 0})


def test_config_is_checked_when_made():
    with pytest.raises(InputError, match="--iterations 1"):
        SimulationConfig(iterations=1)
    with pytest.raises(InputError, match="--comm-interference"):
        SimulationConfig(comm_interference=-0.1)


def test_compare_routes_one_bag_over_the_matrix():
    cfg = SimulationConfig(topology="2x8", model="lstm-lm1b", iterations=2)
    res = compare(cfg, ["allreduce", "embrace"], ["fifo"], workers=1, options={"shard": "rows"})
    assert any("hottest shard" in n for r in res.rows for n in r.notes)
    with pytest.raises(InputError, match="--option shard"):
        compare(cfg, ["allreduce"], ["fifo"], workers=1, options={"shard": "rows"})


def test_options_cannot_hide_in_constructor_keywords():
    from embsim.schedulers import Scheduler
    from embsim.strategies import Strategy
    for base in (Strategy, Scheduler):
        with pytest.raises(TypeError, match="Options dataclass"):
            type("Sneaky", (base,), {"__init__": lambda self, bucket=1, **kw: None})


def test_a_size_typed_as_words_is_not_a_number():
    """'partition_bytes=abc' was answered with the size range, as if the number were out of
    it (probe U, U3)."""
    from embsim.options import positive_number
    with pytest.raises(InputError, match=r"partition_bytes='abc': not a number$"):
        positive_number("abc", "partition_bytes", minimum=65536)


def test_an_option_without_a_key_says_so(capsys):
    from embsim.cli import main
    assert main(["simulate", "--topology", "1x2", "--model", "tiny-lm", "--option", "=cols"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no KEY before '='" in err, err
