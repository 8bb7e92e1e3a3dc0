"""Held-out NVIDIA DeepLearningExamples PyTorch Transformer-XL throughput
(PyTorch/LanguageModeling/Transformer-XL/README.md at 729963dd, "Training performance
results"): every cell of the base and large tables, all 72 simulated on DGX A100 40GB, DGX-1
V100 and DGX-2H (1-16 GPUs, 1-8 DGX-2H nodes, TF32/FP32 and apex O2 mixed precision, tokens/s)
on zoo transformer-xl-base / transformer-xl-large; the 28 DGX-2H cells were listed
not_simulated until the dgx2h-v100 preset (branch dgx2, mapped in 00d1a86 before their first
simulation). Selection rule, mapping and expected biases committed before the first
simulation (commit 61040f2); nothing fitted or chosen on them.

Bounds: the first simulation (branch txl, 2026-12-03) x1.005 rounded up: mean |error|
13.76 %, max 51.98 % (V100 large AMP batch 2 on 8 GPUs), scaling max |difference| 0.189 over
33 pairs. A change that moves these runs further off fails here; one that brings them closer
must tighten the bounds.

LOOSENED 2026-12-03 (dgx2): mean 0.1384 -> 0.1434 when the 28 DGX-2H cells were simulated
(their first contact: mean 15.06 %, max 26.52 %, scaling 0.119 over 22 pairs; the file 14.27 %
/ 51.98 % / 0.189 over 72 runs and 55 pairs, x1.005 rounded up); max and scaling unchanged
(0.5225 / 0.1895: the V100 batch-2 row and pair still set them)."""

from heldout_bounds import assert_within, dle_readme_file, heldout_fixture

FILE = "dle-pytorch-transformer-xl.yaml"
MEAN_BOUND, MAX_BOUND, SCALING_BOUND = 0.1434, 0.5225, 0.1895

txl = heldout_fixture("/" + FILE)


def test_file_has_full_provenance_and_its_selection_rule():
    doc, runs = dle_readme_file(FILE, "PyTorch/LanguageModeling/Transformer-XL/README.md", 72)
    simulated = [r for r in runs if "embsim" in r]
    assert len(simulated) == 72
    assert {r["embsim"]["model"] for r in simulated} == {"transformer-xl-base", "transformer-xl-large"}
    # the DGX-2H cells on dgx2h-v100, one node per 16 GPUs
    dgx2h = [r for r in simulated if "DGX-2H" in r["system"]]
    assert len(dgx2h) == 28
    assert all(r["embsim"]["topology"] == f"dgx2h-v100:{r['nodes']}x{r['gpus'] // r['nodes']}" for r in dgx2h)
    # --local_batch_size is per GPU, trainbench keeps batch_chunk 1: no accumulation
    assert doc["embsim_defaults"]["accumulate"] == 1
    assert all(r["embsim"]["batch"] == r["batch_per_gpu"] for r in simulated)


def test_transformer_xl_within_the_first_measured_level(txl):
    assert_within(*txl, counts={"simulated_runs": 72, "pairs": 55, "skipped": 0},
                  mean=MEAN_BOUND, max_=MAX_BOUND, scaling=SCALING_BOUND)
