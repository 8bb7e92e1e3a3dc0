"""Precision names as published tables write them."""

import pytest

from embsim.errors import InputError
from embsim.workload.precision import canonical_dtype, precision


def test_amp_is_refused_with_what_it_stands_for():
    """A table's "AMP" column does not say FP16 or BF16; the refusal says what to write."""
    with pytest.raises(InputError, match="AMP is mixed precision: fp16 .* or bf16, with --amp"):
        precision(canonical_dtype("AMP"), "embsim.dtype")
    with pytest.raises(InputError) as exc:
        precision("int8")
    assert "AMP" not in str(exc.value)
