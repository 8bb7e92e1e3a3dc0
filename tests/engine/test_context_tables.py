"""engine.context's table statistics: a table's gradient rows per GPU (lookups_per_gpu)
count every gather of it, a tied sampled softmax's included, so no table has fewer of them
than distinct rows."""

import pytest

from embsim.engine.config import SimulationConfig
from embsim.engine.context import table_traffic
from embsim.workload import load_model
from embsim.workload.tokens import TokenStats


def traffic(name: str, gpus: int = 8):
    model = load_model(name)
    stats = lambda t: TokenStats.zipf(t.vocab, SimulationConfig().zipf_s)   # noqa: E731
    return model, table_traffic(model, gpus, stats)


def test_a_tied_sampled_softmax_adds_its_true_classes_and_candidates():
    model, tables = traffic("lstm-lm1b")
    word = next(iter(tables.values()))
    table = model.table(word.table)
    tokens = model.batch * table.lookups_per_sample
    # the input lookups, then tf.nn.sampled_softmax_loss's gather of [labels; sampled]
    assert word.lookups_per_gpu == pytest.approx(tokens + model.batch * model.seq + table.sampled)
    assert word.lookups_per_gpu >= word.unique_per_gpu


@pytest.mark.parametrize("name", ["dlrm-criteo-f15", "gnmt", "bert-large"])
def test_without_a_sampled_softmax_the_rows_are_the_lookups(name):
    model, tables = traffic(name)
    for t in tables.values():
        table = model.table(t.table)
        assert t.lookups_per_gpu == model.batch * table.lookups_per_sample
        assert t.lookups_per_gpu >= t.unique_per_gpu * (1 - 1e-9)
