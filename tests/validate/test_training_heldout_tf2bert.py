"""Held-out TensorFlow 2 BERT-large throughput (DeepLearningExamples
TensorFlow2/LanguageModeling/BERT/README.md at 729963dd, TF 21.02 container): another
framework's numbers for the model the packaged PyTorch BERT files hold. 24 pre-training rows
(DGX A100 80GB, 1-8 GPUs and 1-32 nodes) and 16 SQuAD v1.1 rows (DGX-1 V100 16GB/32GB, DGX
A100 80GB), every row of the README's training tables on a system with a preset (selection
rule in the files' notes, fixed and committed before the first simulation; nothing fitted or
chosen on them). The bounds are the level of that first simulation (s3-tdata, 2026-12-02),
so a change that makes these runs worse fails here:
- pre-training 6.93 % / 15.32 %, scaling max |difference| 0.155 (published TF32 seq-512
  1 -> 2-node efficiency 0.856 and AMP seq-512 single-node 1 -> 8-GPU 0.841, which the
  simulation's ~0.98-0.99 does not reach);
- SQuAD 33.3 % / 77.4 %, scaling 0.093: every row simulates fast (V100 +18..+42 %, A100
  AMP +4..+5 %, A100 "FP32" column run as TF32 +77 %); see docs/heldout-tf2-bert.md.
Re-based once (s10-compress, 2026-12-03) when the mixed-precision runs took the Horovod
Compression.fp16 the source sets (grad_compress: fp16, a mapping the code dictates, not a
choice on the numbers): pre-training mean 6.93 % -> 7.02 % (bound 0.0697 -> 0.0706, x1.005),
max 15.32 % -> 15.33 %; SQuAD 33.3 % -> 33.1 %."""

import pytest

from heldout_bounds import assert_within, dle_readme_file, heldout_fixture

PRETRAIN = dict(mean=0.0706, max_=0.1540, scaling=0.1560)
SQUAD = dict(mean=0.3347, max_=0.7781, scaling=0.0935)


pretraining = heldout_fixture("/dle-tensorflow2-bert.yaml")
squad = heldout_fixture("/dle-tensorflow2-bert-squad.yaml")


@pytest.mark.parametrize("name,count,models", [
    ("dle-tensorflow2-bert.yaml", 24, {"bert-large"}),
    ("dle-tensorflow2-bert-squad.yaml", 16, {"bert-large-squad"}),
])
def test_files_have_full_provenance_and_the_selection_rule(name, count, models):
    doc, runs = dle_readme_file(name, "TensorFlow2/LanguageModeling/BERT/README.md", count)
    src = doc["source"]
    assert not any("not_simulated" in r for r in runs)
    defaults = doc["embsim_defaults"]
    assert {r["embsim"].get("model", defaults["model"]) for r in runs} == models
    for r in runs:
        assert r["source"]["commit"] == src["commit"] and r["table"]
        e = r["embsim"]
        # the mapping the note states: Keras mixed_float16 -> autocast; TF32 only on A100
        assert (e["dtype"] == "fp16") == (e.get("amp") == "autocast")
        # Horovod Compression.fp16 if use_float16 (model_training_utils.py lines 272, 316)
        assert (e["dtype"] == "fp16") == (e.get("grad_compress") == "fp16")
        assert (e["dtype"] == "tf32") <= e["topology"].startswith("dgx-a100")
        assert e["topology"].split(":")[1] == f"{r['nodes']}x{r['gpus'] // r['nodes']}"


def test_pretraining_within_the_first_measured_level(pretraining):
    assert_within(*pretraining, counts={"simulated_runs": 24, "pairs": 16, "skipped": 0},
                  mean=PRETRAIN["mean"], max_=PRETRAIN["max_"], scaling=PRETRAIN["scaling"])


def test_squad_within_the_first_measured_level(squad):
    assert_within(*squad, counts={"simulated_runs": 16, "pairs": 10, "skipped": 0},
                  mean=SQUAD["mean"], max_=SQUAD["max_"], scaling=SQUAD["scaling"])


def test_pretraining_runs_at_the_fixed_padded_length(pretraining):
    """padding max: TF2's TFRecords are padded to max_seq_length, so no LDDL bins here."""
    runs, _ = pretraining
    assert all("padding" not in r.compute_source and "lengths" not in r.compute_source
               for r in runs)
