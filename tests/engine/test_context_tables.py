"""engine.context's table statistics: a table's gradient rows per GPU (lookups_per_gpu)
count every gather of it, a tied sampled softmax's included, so no table has fewer of them
than distinct rows."""

import pytest

from embsim.engine.config import SimulationConfig
from embsim.engine.context import table_traffic
from embsim.workload import load_model
from embsim.workload.tokens import RowTouches, TokenStats


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


def test_an_untied_sampled_softmax_table_touches_its_true_classes_and_candidates():
    """Untied, the sampled softmax's own table (softmax_w) is touched by the batch's true
    classes (one per token, deduplicated as any lookup's) and the step's 8,192 distinct
    candidates; the word table by the input lookups alone. Together they touch what the
    tied table did, each row once per table."""
    model = load_model("lstm-lm1b", untie_outputs=True)
    stats = lambda t: TokenStats.zipf(t.vocab, SimulationConfig().zipf_s)   # noqa: E731
    tables = {t.table: t for t in table_traffic(model, 8, stats).values()}
    _, tied = traffic("lstm-lm1b")
    (tied_word,) = tied.values()
    tokens = model.batch * model.seq
    word, w = tables["word"], tables["softmax_w"]
    assert w.layer == "softmax" and not w.dense_grad and word.layer == "word_embedding"
    assert word.lookups_per_gpu == tokens and w.lookups_per_gpu == tokens + 8192
    touches = RowTouches(TokenStats.zipf(w.vocab, SimulationConfig().zipf_s), tokens=tokens,
                         candidates=8192)
    assert w.unique_per_gpu == pytest.approx(touches.unique())
    assert w.unique_union == pytest.approx(touches.union(8))
    assert w.unique_per_gpu == pytest.approx(tied_word.unique_per_gpu)
    assert word.unique_per_gpu == pytest.approx(TokenStats.zipf(word.vocab, SimulationConfig().zipf_s)
                                                .unique(tokens))
    # the true classes add fewer rows than tokens: they repeat, and hot ones are candidates too
    assert tokens > w.unique_per_gpu - 8192 > 0.3 * tokens
