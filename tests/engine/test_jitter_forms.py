"""--jitter bucket:K with K past a float's range (5000 digits, 1e400) parsed as inf and
int(inf) raised OverflowError (a traceback): now the bucket-count error."""

import pytest

from embsim.engine.jitter import parse_jitter
from embsim.errors import InputError


@pytest.mark.parametrize("k", ["1" * 5000, "1e400", "inf", "nan"])
def test_bucket_count_beyond_a_float_is_refused(k):
    with pytest.raises(InputError, match="bucket count must be an integer >= 1"):
        parse_jitter(f"bucket:{k}")
