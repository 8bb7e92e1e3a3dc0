"""A results.jsonl row holding a number past Python's int digit limit is a damaged row
(its point runs again), not a ValueError traceback on resume."""

from embsim.sweep import read_results


def test_overlong_integer_row_is_skipped(tmp_path):
    (tmp_path / "results.jsonl").write_bytes(b'{"hash": "x", "status": "ok", "result": {"n": 1'
                                             + b"0" * 5000 + b"}}\n")
    assert read_results(tmp_path) == {}
