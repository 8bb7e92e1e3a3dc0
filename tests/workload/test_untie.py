"""load_model(untie_outputs=True): a tied output projection gets its own weight: a dense
one for a full softmax, a sparse table of its own for a sampled softmax."""

from dataclasses import replace
from pathlib import Path

import pytest

import embsim.workload
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


def test_untied_sampled_softmax_gets_its_own_sparse_table():
    """lstm-lm1b's sampled softmax (samples: 8192) untied: tf.nn.sampled_softmax_loss
    gathers the weight rows of [true classes; candidates], so the weight is a sparse table
    of its own (Parallax LM-1B's softmax_w), not a dense vocab x dim gradient."""
    tied, untied = load_model("lstm-lm1b"), load_model("lstm-lm1b", untie_outputs=True)
    word, w = untied.table("word"), untied.table("softmax_w")
    assert (w.vocab, w.dim) == (word.vocab, word.dim)
    assert w.weight_of == "softmax" and w.tied_to is None and w.sampled == 8192
    assert w.lookups_per_sample == untied.seq            # one true class per position
    assert word.tied_to is None and word.sampled == 0 and word.weight_of is None
    head = untied.layer("softmax")
    assert head.table == "softmax_w" and head.sparse
    assert head.params == w.vocab * w.dim + w.vocab     # the table and the bias
    assert untied.table_owner("softmax_w") == "softmax"
    assert not untied.dense_gradient("softmax_w") and not untied.dense_gradient("word")
    assert untied.embedding_params == tied.embedding_params + w.vocab * w.dim
    assert untied.dense_params == tied.dense_params
    # gradient rows: one per scored row (the batch's true classes + the candidates)
    assert untied.rows_read(head) == pytest.approx(untied.tokens_per_gpu + 8192, rel=0.01)
    # tied, the softmax read the word table's rows; now it reads its own
    assert tied.table("word").sampled == 8192 and tied.layer("softmax").table == "word"
    assert head.grad_bytes == tied.layer("softmax").grad_bytes


def test_untied_full_softmax_stays_dense():
    m = load_model("gpt2", batch=2, seq=64, untie_outputs=True)
    head = m.layer("lm_head")
    assert head.table is None and not head.sparse
    assert [t.name for t in m.tables] == ["word"] and m.table("word").weight_of is None


def test_the_model_file_form_is_what_untie_builds(tmp_path):
    """A model file may say it: the output layer's own `table:` with `samples:`."""
    zoo = (Path(embsim.workload.__file__).parent / "zoo" / "lstm-lm1b.yaml").read_text()
    text = (zoo.replace("name: lstm-lm1b", "name: lstm-lm1b-own", 1)
            .replace("  - {name: word, vocab: 793471, dim: 512, input: tokens}\n",
                     "  - {name: word, vocab: 793471, dim: 512, input: tokens}\n"
                     "  - {name: softmax_w, vocab: 793471, dim: 512, input: sampled ids}\n")
            .replace("tied: word, bias: true, samples: 8192", "table: softmax_w, bias: true, samples: 8192"))
    path = tmp_path / "own.yaml"
    path.write_text(text)
    own, untied = load_model(str(path)), load_model("lstm-lm1b", untie_outputs=True)
    assert own.tables == tuple(replace(t, input="sampled ids") if t.name == "softmax_w" else t
                               for t in untied.tables)
    assert [(l.name, l.params, l.grad_bytes, l.sparse, l.table) for l in own.layers] == \
        [(l.name, l.params, l.grad_bytes, l.sparse, l.table) for l in untied.layers]
    # untie has nothing more to untie
    assert load_model(str(path), untie_outputs=True).tables == own.tables
