"""The shared DeepLearningExamples files as given (validation_data/training/original):
minimal `embsim:` blocks, so they test the zoo's defaults the way held-out files will."""

import hashlib
from pathlib import Path

import pytest

from embsim.validate.training import original_files, summary, training_errors

# sha256 of the shared originals: the copies must stay byte-identical
ORIGINALS = {
    "dle-pytorch-bert-single-node.yaml": "f217a6051f6ab2c556092a642201e9c8f03a770c46d2f5b8d2bf273cc1a22f3b",
    "dle-pytorch-gnmt.yaml": "d1eb06ad31c2822bc7b9027081ad13d41f5a3171eb94bdef309d59200bce7e6d",
    "dle-pytorch-transformer.yaml": "802b2d9a2a51fc009bef105b990180ea401050fe0a11dc3b71a6142995eb3bb3",
}
# the level the zoo defaults reach on them (18.2 % / 53.2 %; 20.6 % before gnmt and
# transformer-wmt carried their trainers' settings); the max is BERT phase 2 at a fully
# padded seq 512, which the real run does not compute (LDDL 64-token bins). Mean 0.185 ->
# 0.19 (18.8 %) when casts and concatenation copies got the copy bandwidth: the original
# Transformer files' 4-8 GPU runs, already too fast (no max-tokens variation), move further.
# 0.19 -> 0.186 (18.6 %) with autocast's FP32 parameters and per-forward weight casts.
# 0.186 -> 0.176 (17.1 %) with the tensor-rate LSTM step (GNMT A100 AMP 1-GPU -31.8 -> -16.3 %).
MEAN_BOUND, MAX_BOUND = 0.176, 0.54


@pytest.fixture(scope="module")
def original():
    return training_errors(original_files())


def test_originals_are_unchanged():
    files = {Path(p).name: p for p in original_files()}
    assert set(files) == set(ORIGINALS)
    for name, digest in ORIGINALS.items():
        assert hashlib.sha256(Path(files[name]).read_bytes()).hexdigest() == digest, name


def test_originals_within_the_achieved_bounds(original):
    runs, pairs = original
    s = summary(runs, pairs)
    assert s["simulated_runs"] == 20           # the V100 rows say not_simulated
    assert s["mean_abs_error"] <= MEAN_BOUND
    assert s["max_abs_error"] <= MAX_BOUND


def test_bert_defaults_match_what_run_pretraining_executes(original):
    runs, _ = original
    bert = {r.id: r for r in runs if r.file == "dle-pytorch-bert-single-node"}
    # masked-position MLM head and fused elementwise chains are the zoo defaults: the
    # accumulated batch at seq 128 lands within 8 % with no implementation keys
    for rid, r in bert.items():
        if "seq128" in rid:
            assert abs(r.error) <= 0.08, rid
            assert "elementwise kernels fused" in r.compute_source
    # seq 512 as given pads every sample to 512; the real run computes ~288 (binned): slow,
    # never fast, and the same gap whatever the precision or GPU count
    long = [r.error for rid, r in bert.items() if "seq512" in rid]
    assert len(long) == 4 and all(-0.54 <= e <= -0.4 for e in long)
