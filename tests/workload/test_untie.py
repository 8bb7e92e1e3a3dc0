"""load_model(untie_outputs=True): a tied output projection gets its own weight."""

from embsim.workload import load_model


def test_default_stays_tied():
    m = load_model("tiny-lm")
    assert m.table("word").tied_to == "decoder"
    assert m.layer("decoder").table == "word"


def test_untied_projection_owns_a_dense_vocab_by_dim_weight():
    tied, untied = load_model("tiny-lm"), load_model("tiny-lm", untie_outputs=True)
    t = untied.table("word")
    dec = untied.layer("decoder")
    assert t.tied_to is None and dec.table is None and not dec.sparse
    assert dec.params == t.vocab * t.dim + t.vocab          # weight + bias
    assert untied.params == tied.params + t.vocab * t.dim
    # the only other user of the table is the lookup: its gradient is sparse now
    assert all(l.sparse for l in untied.layers if l.table == "word")


def test_untie_changes_nothing_without_a_tied_head():
    a, b = load_model("bert-base", batch=2, seq=32), load_model("bert-base", batch=2, seq=32,
                                                                 untie_outputs=True)
    assert b.params - a.params == 30522 * 768
    assert [l.name for l in a.layers] == [l.name for l in b.layers]
