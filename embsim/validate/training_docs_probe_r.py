"""docs/validation.md's section on the held-out runs an outside probe (R) found and mapped:
torchtitan's own H100/H200 tables, AWS p5 torchtitan, Megatron-LM's weak-scaling table,
DeepLearningExamples DLRM on DGX-2 and DCNv2 on DGX A100, Merlin distributed-embeddings DLRM."""

from __future__ import annotations

from .training import heldout_files
from .training_docs import doc_section

# simulated here; megatron-lm-h100-weak-scaling-large.yaml (768-6144 GPUs) takes 10-15 min
# on two cores, so docs and CI leave it to its test (EMBSIM_SLOW_HELDOUT=1)
PROBE_R_FILES = ("llama3-h100-202412-torchtitan.yaml", "asynctp-llama3-h100-2025-06-torchtitan.yaml",
                 "llama3-8b-h200-202506-trainy.yaml", "aws-p5-torchtitan.yaml",
                 "megatron-lm-h100-weak-scaling.yaml", "dle-dlrm-dgx2.yaml", "dle-dcnv2-tf2.yaml",
                 "merlin-de-dlrm-mlperf.yaml")
PROBE_R_SLOW = ("megatron-lm-h100-weak-scaling-large.yaml",)


def probe_r_section() -> list[str]:
    files = [f for name in PROBE_R_FILES for f in heldout_files(name)]
    return doc_section(
        "Held-out: probe R's published runs (torchtitan H100/H200/p5, Megatron-LM weak scaling, DLRM DGX-2, DCNv2, Merlin DE)",
        files, [
        "`embsim validate --training embsim/validation_data/training/heldout/<file>` for each of:",
        "",
        *[f"- `{name}`" for name in PROBE_R_FILES],
        "",
        "An outside probe (2026-12-06) found eight published sources the project had not used and",
        "mapped 46 runs before simulating any: pytorch/torchtitan's benchmark pages (Llama 3.1 8B and",
        "70B on Meta's 500 W H100 HBM2e hosts, 8-256 GPUs, FSDP eager / compile / Float8, CP 1-8 and",
        "TP 8; Llama 3 8B on 32-64 H200), aws-samples' torchtitan on 4 p5.48xlarge, Megatron-LM's",
        "README weak-scaling table (GPT 1.7B-462B on 48-6144 H100, TFLOP/s per GPU over Megatron's",
        "own FLOP count), DeepLearningExamples' DLRM on DGX-2 and TF2 DCNv2 on DGX A100, and Merlin",
        "distributed-embeddings' MLPerf-config DLRM. Every simulated value was re-read from its",
        "source at the cited commit; each file's `note:` gives the mapping, its assumptions and the",
        "first-contact figures. The four largest Megatron-LM rows",
        f"(`{PROBE_R_SLOW[0]}`, 768-6144 GPUs) take 10-15 minutes on two cores and",
        "are not run here; tests/validate/test_training_heldout_probe_r.py holds them with",
        "EMBSIM_SLOW_HELDOUT=1.",
        ], [
        "What the errors say (each file's note has the evidence):",
        "- At first contact (079ab7b) the 46 runs gave mean 17.8 %, max 65.4 %, 27 within 15 %.",
        "  Two mechanisms were fixed from the frameworks' code since (3131470), none tuned on these",
        "  rows: the LM head runs at BF16 under FP8 (Megatron-Core's output layer is a plain",
        "  ColumnParallelLinear; torchtitan's Float8 converter skips `output`), and eager PyTorch",
        "  blocks pay RMSNorm, RoPE and SwiGLU as PyTorch's composite kernels",
        "  (embsim/workload/eager_ops.py).",
        "- Recommender rates published as epoch wall-clock averages (Merlin DE) include data",
        "  loading and per-step host work that embsim does not simulate: they read fast.",
        "- TensorFlow 2's `--xla` fusion of DCNv2's cross layers is not modelled: those rows",
        "  read slow.",
        "- The smaller Megatron-LM models (1.7B, 7.1B) read fast: embsim's GEMM fraction for",
        "  hidden sizes up to 4096 on H100 has no shape-resolved measurement behind it.",
    ])
