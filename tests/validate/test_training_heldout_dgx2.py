"""Held-out NVIDIA DeepLearningExamples PyTorch GNMT and Transformer throughput on DGX-2 / DGX-2H
(PyTorch/Translation/GNMT/README.md "Training throughput: NVIDIA DGX-2H (16x V100 32GB)" and
PyTorch/Translation/Transformer/README.md "Training performance: NVIDIA DGX-2 (16x V100 32GB)",
both at 729963dd): every cell (16; 1-16 GPUs, FP32 and mixed precision, tokens/s) on the
dgx2h-v100 / dgx2-v100 presets, mapped as the packaged dle-pytorch-gnmt.yaml and
dle-pytorch-transformer.yaml map their DGX-1 rows. Selection rule, mapping and expected biases
committed before the first simulation (commit 00d1a86); nothing fitted or chosen on them.

Bounds: the first simulation (branch dgx2, 2026-12-03) x1.005 rounded up: mean |error|
11.05 %, max 19.28 % (GNMT DGX-2H AMP on 1 GPU), scaling max |difference| 0.074 over 12
pairs; every run simulated slow. A change that moves these runs further off fails here; one
that brings them closer must tighten the bounds."""

from pathlib import Path

import yaml

from embsim.validate.training import HELDOUT_DIR
from heldout_bounds import assert_within, heldout_fixture

FILE = "dle-pytorch-dgx2.yaml"
MEAN_BOUND, MAX_BOUND, SCALING_BOUND = 0.1111, 0.1938, 0.0740
READMES = {"gnmt": "PyTorch/Translation/GNMT/README.md",
           "transformer": "PyTorch/Translation/Transformer/README.md"}

dgx2 = heldout_fixture("/" + FILE)


def test_file_has_full_provenance_and_its_selection_rule():
    doc = yaml.safe_load((Path(HELDOUT_DIR) / FILE).read_text())
    assert "selection rule" in doc["note"].lower()
    runs = doc["runs"]
    assert len(runs) == 16 and len({r["id"] for r in runs}) == 16
    for r in runs:
        src, model = r["source"], r["embsim"]["model"]
        assert src["repo"] == "NVIDIA/DeepLearningExamples" and len(src["commit"]) == 40
        assert src["commit"] in src["url"] and src["url"].startswith("https://github.com/")
        assert src["path"] == READMES["gnmt" if model == "gnmt" else "transformer"]
        assert r["embsim"]["topology"] == f"{'dgx2h-v100' if model == 'gnmt' else 'dgx2-v100'}:1x{r['gpus']}"
    gnmt = [r for r in runs if r["embsim"]["model"] == "gnmt"]
    assert len(gnmt) == 8 and all("DGX-2H" in r["system"] for r in gnmt)
    # --train-global-batch-size 1024 on 1/4/8 GPUs, 2048 on 16, at 128 per GPU
    assert all(r["embsim"].get("accumulate", 1) == {1: 8, 4: 2, 8: 1, 16: 1}[r["gpus"]] for r in gnmt)
    # --max-tokens 10240 (AMP) / 5120 (FP32) = batch 80 / 40 x seq 128
    tf = [r for r in runs if r["embsim"]["model"] == "transformer-wmt"]
    assert all(r["embsim"]["batch"] * r["embsim"]["seq"] == int(r["batch_per_gpu"].split()[0]) for r in tf)


def test_dgx2_within_the_first_measured_level(dgx2):
    assert_within(*dgx2, counts={"simulated_runs": 16, "pairs": 12, "skipped": 0},
                  mean=MEAN_BOUND, max_=MAX_BOUND, scaling=SCALING_BOUND)
