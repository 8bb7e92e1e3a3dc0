"""The shared fit loop: a patched constant is restored, ties go to the smaller value."""

import types

import pytest

from embsim.collectives.fitting import grid_minimum, patched


def test_patched_restores_the_constant_even_on_error():
    mod = types.SimpleNamespace(K=1.0)
    with patched(mod, "K", 2.0):
        assert mod.K == 2.0
    assert mod.K == 1.0
    with pytest.raises(RuntimeError), patched(mod, "K", 3.0):
        raise RuntimeError
    assert mod.K == 1.0


def test_grid_minimum_breaks_ties_towards_the_smaller_value():
    assert grid_minimum([3, 1, 2], lambda v: abs(v - 2)) == 2
    assert grid_minimum([3, 1, 2], lambda v: 0.0) == 1
