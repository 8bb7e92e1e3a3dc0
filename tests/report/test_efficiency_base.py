"""probe F11: a scaling efficiency is against N x one GPU running the same strategy, whose
one-GPU step differs between strategies; the words say which base it is."""

from embsim.report.efficiency_base import efficiency_base


def test_the_base_names_the_runs_own_strategy():
    text = efficiency_base("allreduce", "fifo")
    assert text.startswith(" running allreduce/fifo itself (each strategy against its own one-GPU run")
    assert "not by efficiency" in text
