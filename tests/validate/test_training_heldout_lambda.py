"""Held-out Lambda Labs PyTorch GPU benchmarks (lambdal/deeplearning-benchmark at 4e11f689,
pytorch/pytorch-train-throughput-{fp16,fp32}.csv with the -bs- batch tables; NGC pytorch
22.09/22.10 running the LambdaLabsML DeepLearningExamples fork): every bert_base_squad,
bert_large_squad, gnmt, ncf and Transformer-XL cell, 248 simulated on the presets of the same
GPU (V100 SXM2, RTX 3090, RTX 4090, A100 80GB PCIe / SXM4, H100 SXM5 in six vendors' boxes;
1-8 GPUs), 308 listed not_simulated. Selection rule and mapping committed before the first
simulation (commit 9463b96); nothing fitted or chosen on them.

Bounds: the first simulation (s11-lambda, 2026-12-03, main 421ac04) x1.005: mean |error| 18.81 %,
max 159.77 % (8x A100 80GB SXM4 GNMT FP32, whose measured scaling efficiency is 0.39), scaling
max |difference| 0.580 over 155 pairs. TIGHTENED 2026-12-03 (thirteenth session) 0.1890 -> 0.1794
(17.85 %, max unchanged): the RTX 3090 / 4090 presets got measured large-GEMM fractions from a
torch.mm benchmark (zzc0721/torch-performance-test-data), not from these rows; their 28 rows
-25.0 % -> -13.0 % signed mean.


2026-12-03 (presets): six PCIe presets for the GPUs that had none (H100 PCIe, RTX 6000 Ada, RTX
A6000, Quadro RTX 8000, A10, A100 40GB PCIe) map 97 more rows, mapping committed before their
first simulation, nothing fitted. TIGHTENED mean 0.1890 -> 0.1808 (x1.005 of the new 17.99 %
over 345 runs); max (159.77 %, the same row) and scaling (0.580, now over 196 pairs) unchanged.
Both changes merged: 17.30 % over 345 runs, mean bound 0.1739; then the RTX A6000's measured
GEMM fractions (the same torch.mm source): 17.25 %, TIGHTENED 0.1739 -> 0.1734.

2026-12-03 (lambdatxl): the Transformer-XL columns mapped onto the zoo transformer-xl-base /
-large with Lambda's arguments (no --adaptive: a full softmax; large tgt/mem 256, torch Adam),
mapping committed (abdcaa5) before the first simulation, nothing fitted: the 52 one-GPU cells
simulated (22.9 % / 120.4 %, signed +14.7 %), the 80 multi-GPU cells listed (no --multi_gpu:
ranks train alone, no gradient exchange). File 17.99 % over 397 runs: LOOSENED 0.1734 -> 0.1808;
max (159.77 %) and scaling (0.580, 196 pairs) unchanged."""

import statistics

import yaml

from embsim.validate.training import HELDOUT_DIR
from heldout_bounds import assert_within, heldout_fixture

FILE = "lambda-pytorch.yaml"
# LOOSENED 2026-12-03 (lambdatxl) 0.1734 -> 0.1808: the 52 one-GPU Transformer-XL rows mapped
# (first contact 22.9 % mean over them), file 17.99 % over 397 runs x1.005; max / scaling unchanged
# LOOSENED 2026-12-04 (seventeenth session) 0.1808 -> 0.1820: nn.Embedding's backward as ATen
# runs it (64-bit radix sort, embsim.workload.embedding_kernels) makes the slow NCF cells slower:
# 18.10 % over 397 runs
MEAN_BOUND, MAX_BOUND, SCALING_BOUND = 0.1820, 1.6057, 0.5831
PRESETS = {"dgx1-v100", "pcie-rtx3090", "pcie-rtx4090", "azure-nc-a100-v4", "dgx-a100", "dgx-h100",
           # added 2026-12-03 (presets): the GPUs that had no preset
           "pcie-h100", "pcie-rtx6000ada", "pcie-rtxa6000", "pcie-quadro-rtx8000", "pcie-a10", "pcie-a100-40gb"}
FP32_PRESETS = {"dgx1-v100", "pcie-quadro-rtx8000"}     # V100 and Turing: no TF32
errors = heldout_fixture("/" + FILE)


def _doc():
    return yaml.safe_load((HELDOUT_DIR / FILE).read_text())


def test_lambda_heldout_within_the_first_measured_level(errors):
    assert_within(*errors, counts={"simulated_runs": 397, "pairs": 196, "skipped": 159},
                  mean=MEAN_BOUND, max_=MAX_BOUND, scaling=SCALING_BOUND)


def test_the_file_states_its_source_rule_and_mapping():
    doc = _doc()
    src = doc["source"]
    assert src["repo"] == "lambdal/deeplearning-benchmark" and len(src["commit"]) == 40
    assert src["commit"] in src["url"]
    assert "selection rule" in doc["note"].lower()
    runs = doc["runs"]
    assert len(runs) == 556 and len({r["id"] for r in runs}) == 556
    for r in runs:
        if "not_simulated" in r:
            continue
        e = r["embsim"]
        preset, shape = e["topology"].split(":")
        assert preset in PRESETS and shape == f"1x{r['gpus']}"
        # the bs tables hold the global batch; BERT and GNMT run global / GPUs per GPU
        assert e["batch"] * (1 if r["column"] == "ncf" else r["gpus"]) == r["global_batch"]
        fp16_column = r["precision"].startswith("fp16")
        if e["dtype"] == "fp16":
            assert fp16_column and e["amp"] == "o2"          # apex amp O2 in every script
        else:
            # FP32 math: TF32 on Ampere and later (NGC's TORCH_ALLOW_TF32_CUBLAS_OVERRIDE),
            # FP32 on V100 and the Turing Quadro; the fp16 column only for NCF on the 80GB configs (no --amp)
            assert e["dtype"] == ("fp32" if preset in FP32_PRESETS else "tf32")
            assert not fp16_column or (r["column"] == "ncf" and "80GB" in r["system"])


def test_not_simulated_rows_say_why_and_ncf_is_only_simulated_on_one_gpu():
    runs = _doc()["runs"]
    reasons = ("no embsim preset", "no embsim zoo model", "host with no device synchronisation",
               "two epochs end after", "no gradient exchange")
    assert all(any(k in r["not_simulated"] for k in reasons) for r in runs if "not_simulated" in r)
    assert all(r["gpus"] == 1 for r in runs if r["column"] == "ncf" and "embsim" in r)
    # Transformer-XL (added 2026-12-03, lambdatxl): no --multi_gpu, so on 2-8 GPUs every rank
    # trains alone (no gradient all-reduce): only the 1-GPU cells are simulated, all 52 of them
    txl = [r for r in runs if r["column"].startswith("transformerxl")]
    assert len(txl) == 132
    assert all(("embsim" in r) == (r["gpus"] == 1) for r in txl)
    assert all("no gradient exchange" in r["not_simulated"] for r in txl if r["gpus"] > 1)


def test_transformer_xl_rows_run_lambdas_arguments():
    """config_v1: no --adaptive (a full softmax, one table: cutoffs []), base tgt_len = mem_len
    192 with JITLamb, large tgt_len = mem_len 256, div_val 1 and torch Adam."""
    for r in _doc()["runs"]:
        if not r["column"].startswith("transformerxl") or "embsim" not in r:
            continue
        e, large = r["embsim"], r["column"] == "transformerxllarge"
        assert e["model"] == ("transformer-xl-large" if large else "transformer-xl-base")
        assert e["seq"] == r["seq"] == (256 if large else 192) and e["metric"] == "tokens_per_s"
        layers = e["layers"]
        assert layers["word_embedding"]["cutoffs"] == layers["crit"]["cutoffs"] == []
        assert layers["crit"]["tie_projs"] == [False]
        if large:
            assert layers["rel_position"]["mem"] == layers["layers"]["mem"] == 256
            assert layers["word_embedding"]["div_val"] == layers["crit"]["div_val"] == 1
            assert e["optimizer"]["name"] == "adam"
        else:
            assert "optimizer" not in e and "rel_position" not in layers     # zoo: JITLamb, mem 192


def test_the_first_measured_shape(errors):
    """What the first simulation showed, none acted on: the consumer Ampere/Ada cards slow
    (-25 % signed mean; still -13 % with the measured GEMM fractions of 2026-12-03),
    embsim's scaling never far below Lambda's (its multi-GPU boxes scale worse than the
    presets, the 8x A100 80GB SXM4 box worst)."""
    runs, pairs = errors
    rtx = [r.error for r in runs if r.simulated is not None and "-txl-" not in r.id
           and ("RTX 3090" in r.system or "RTX 4090" in r.system)]
    assert len(rtx) == 28 and statistics.mean(rtx) < -0.10
    # Transformer-XL (first contact 2026-12-03, lambdatxl): fast on the H100 / A100 boards at
    # batch 24-104 (H100 SXM5 base FP16 +120 %, the TXL max), the RTX 4090 slow as elsewhere
    txl = {r.id: r.error for r in runs if "-txl-" in r.id and r.simulated is not None}
    assert len(txl) == 52 and max(txl, key=lambda k: abs(txl[k])) == "h100-80gb-sxm5-txl-base-fp16"
    assert all(e > 0.15 for k, e in txl.items() if k.startswith("h100-80gb-sxm5"))
    assert all(e < -0.15 for k, e in txl.items() if k.startswith("rtx-4090"))
    # the RTX 6000 Ada box's 4x / 8x BERT rows measure super-linear (1.02-1.05), embsim 0.97:
    # the only pairs below -0.05 (added 2026-12-03 with the presets, -0.080 at first contact;
    # -0.086 since 2026-12-05, when the kernels run the one ring NCCL's search leaves this
    # dual-socket box, channels._kernel_graph)
    assert all(p.difference > -0.05 or "rtx-6000-ada" in p.run for p in pairs)
    assert all(p.difference > -0.09 for p in pairs)
    worst = max(pairs, key=lambda p: p.difference)
    assert worst.run == "8x-a100-80gb-sxm4-gnmt-fp32" and worst.measured < 0.40
