"""Run overrides (a training file's embsim: tables/layers, a sweep's model_overrides) are
held to the model file's own checks: a non-mapping entry, a value past the zoo's bounds
(repeat 100000 hung), an enum no layer knows, or a change that leaves a tied output
projection at another width than its table is one InputError naming the override key,
never an AttributeError / KeyError or a silently inconsistent model."""

from __future__ import annotations

import pytest

from embsim.errors import InputError
from embsim.workload import load_model


@pytest.mark.parametrize("overrides, words", [
    ({"tables": {"word": 5}}, ["overrides.tables.word", "mapping"]),
    ({"tables": [1]}, ["overrides.tables", "mapping"]),
    ({"layers": {"lstm": [1]}}, ["overrides.layers.lstm", "mapping"]),
    ({"layers": {"lstm": {"repeat": 100000}}}, ["overrides.layers.lstm.repeat", "1,000"]),
    ({"layers": {"lstm": {"hidden": 10 ** 11}}}, ["overrides.layers.lstm.hidden", "<="]),
    ({"layers": {"lstm": {"bias": "junk"}}}, ["overrides.layers.lstm.bias", "one of"]),
    ({"tables": {"word": {"vocab": 10 ** 13}}}, ["overrides.tables.word.vocab", "<="]),
    ({"tables": {"word": {"dim": 32}}}, ["layers.decoder.dim", "tied table 'word' has dim 32"]),
    ({"layers": {"decoder": {"dim": 32}}}, ["layers.decoder.dim", "not 32"]),
    ({"layers": {"decoder": {"tied": "nope"}}}, ["layers.decoder.tied", "no table named 'nope'"]),
    ({"framework": "jax"}, ["overrides.framework", "pytorch, tensorflow"]),
    ({"frameworks": "tensorflow"}, ["overrides", "'frameworks'"]),
])
def test_bad_override_names_its_key(overrides, words):
    with pytest.raises(InputError) as info:
        load_model("tiny-lm", overrides=overrides)
    message = str(info.value)
    assert "\n" not in message
    for w in words:
        assert w in message, (w, message)


def test_consistent_overrides_still_apply():
    spec_changes = {"tables": {"word": {"vocab": 12000, "dim": 32}},
                    "layers": {"decoder": {"dim": 32}, "lstm": {"in": 32, "repeat": 3}}}
    model = load_model("tiny-lm", overrides=spec_changes)
    assert model is not None


def test_override_of_heads_is_held_to_the_width():
    with pytest.raises(InputError, match="overrides.layers.encoder.heads: 7 heads do not split dim 768"):
        load_model("bert-base", overrides={"layers": {"encoder": {"heads": 7}}})


def test_a_framework_override_resets_the_dedup_unless_the_optimizer_sets_it():
    tf = load_model("tiny-lm", overrides={"framework": "tensorflow"})
    assert (tf.framework, tf.optimizer.sparse_dedup) == ("tensorflow", "tf-unique")
    told = load_model("tiny-lm", overrides={"framework": "tensorflow",
                                            "optimizer": {"sparse_dedup": "coalesce"}})
    assert told.optimizer.sparse_dedup == "coalesce"
