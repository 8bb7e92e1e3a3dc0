"""Held-out NVIDIA DeepLearningExamples PyTorch Transformer-XL throughput
(PyTorch/LanguageModeling/Transformer-XL/README.md at 729963dd, "Training performance
results"): every cell of the base and large tables, 44 simulated on DGX A100 40GB and DGX-1
V100 (1-8 GPUs, TF32/FP32 and apex O2 mixed precision, tokens/s) on zoo transformer-xl-base /
transformer-xl-large, 28 DGX-2H cells listed not_simulated (no preset). Selection rule,
mapping and expected biases committed before the first simulation (commit 61040f2); nothing
fitted or chosen on them.

Bounds: the first simulation (branch txl, 2026-12-03) x1.005 rounded up: mean |error|
13.76 %, max 51.98 % (V100 large AMP batch 2 on 8 GPUs), scaling max |difference| 0.189 over
33 pairs. A change that moves these runs further off fails here; one that brings them closer
must tighten the bounds."""

from heldout_bounds import assert_within, dle_readme_file, heldout_fixture

FILE = "dle-pytorch-transformer-xl.yaml"
MEAN_BOUND, MAX_BOUND, SCALING_BOUND = 0.1384, 0.5225, 0.1895

txl = heldout_fixture("/" + FILE)


def test_file_has_full_provenance_and_its_selection_rule():
    doc, runs = dle_readme_file(FILE, "PyTorch/LanguageModeling/Transformer-XL/README.md", 72)
    simulated = [r for r in runs if "embsim" in r]
    assert len(simulated) == 44
    assert {r["embsim"]["model"] for r in simulated} == {"transformer-xl-base", "transformer-xl-large"}
    # --local_batch_size is per GPU, trainbench keeps batch_chunk 1: no accumulation
    assert doc["embsim_defaults"]["accumulate"] == 1
    assert all(r["embsim"]["batch"] == r["batch_per_gpu"] for r in simulated)


def test_transformer_xl_within_the_first_measured_level(txl):
    assert_within(*txl, counts={"simulated_runs": 44, "pairs": 33, "skipped": 28},
                  mean=MEAN_BOUND, max_=MAX_BOUND, scaling=SCALING_BOUND)
