"""docs/validation.md's section on the held-out NVIDIA Merlin distributed-embeddings
synthetic-model step times (its own module: training_docs_heldout is at its size limit)."""

from __future__ import annotations

from .training import heldout_files
from .training_docs import doc_section


def merlin_section() -> list[str]:
    return doc_section(
        "Held-out: Merlin distributed-embeddings synthetic recommenders on DGX A100, 1-128 GPUs (validation_data/training/heldout)",
        heldout_files("merlin-de-synthetic.yaml"), [
        "`embsim validate --training embsim/validation_data/training/heldout/merlin-de-synthetic.yaml`:",
        "every cell (14) of NVIDIA-Merlin/distributed-embeddings examples/benchmarks/synthetic_models/",
        "README.md \"Preliminary Benchmark Results\" at c6b2e2f5 (DGX A100, TensorFlow 2 + Horovod,",
        "global batch 65536, Adagrad, iteration time): Tiny (55 tables, 4.2 GiB) on 1 / 8 / 16 GPUs,",
        "Small (107, 26.3 GiB) on 1 / 8 / 16 / 32, Medium (311, 206 GiB) on 8 / 16 / 32 / 128, Large",
        "(612, 774 GiB) on 32 / 128, Jumbo (1022, 3.1 TiB) on 128. Zoo merlin-synthetic-*, generated",
        "from the repository's config_v3.py (benchmarks/merlin_synthetic_zoo.py, which checks each",
        "model's table count and size against the README): shared tables read by a one-hot and a",
        "10-200-hot input, the multi-hot lookups sum-pooled (`pooling: sum`), an average pool",
        "over the concatenated embeddings (`combine op: sum`), a ReLU MLP. Strategy embrace",
        "shard=tables with DE's own placement (`placement=memory_balanced`, tables above the",
        "README command's --column_slice_threshold cut along their width) and model-parallel",
        "input (`input=model`: no id exchange), TF32, NCCL 2.18 standing in for the container's",
        "2.11. Mapping and expected biases committed before the first simulation; nothing",
        "fitted. Gated in `.ci/run`.",
        ], [
        "What the errors say (the file's note has the figures; none acted on):",
        "- Every run is simulated fast, and the error falls with the tables each GPU holds:",
        "  Tiny +558 % with 55 tables on one GPU, +184 % with ~7 on 8 GPUs, +81 % with ~3.4 on",
        "  16; Small +368 / +204 / +93 / +56 % at 107 / 13 / 6.7 / 3.3 tables a GPU. What embsim",
        "  lacks grows with the per-table work: 0.38-0.50 ms a table a step on one GPU.",
        "- TensorFlow runs each table as its own ops: the lookup, an IndexedSlices gradient of one",
        "  row per id, and Keras Adagrad's duplicate-index path (tf.unique, whose GPU kernel sizes",
        "  its output on the host, unsorted_segment_sum, the sparse apply). embsim charges one",
        "  kernel chain per table at 5 us of host time an op: the same shortfall as the",
        "  TensorFlow 1 GNMT and TensorFlow 2 Wide & Deep rows (no TensorFlow execution model).",
        "- The multi-GPU rows scale worse in embsim than measured (scaling up to -0.31): with",
        "  the per-table cost missing, embsim's one-GPU step is too short, so its strong-scaling",
        "  efficiency is understated.",
    ])
