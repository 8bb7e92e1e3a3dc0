"""docs/validation.md's sections on held-out NVIDIA Merlin recommender runs: the
distributed-embeddings synthetic-model step times and HugeCTR's Sparse Operation Kit DLRM
(their own module: training_docs_heldout is at its size limit)."""

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
        "",
        "First contact: 150.7 % mean, 557.6 % max, scaling 0.313, every run fast, the error",
        "falling with the tables each GPU holds (0.38-0.50 ms a table a step missing on one GPU).",
        "One of those per-table costs was then built from TensorFlow's source (the set is no",
        "longer blind to it): Keras Adagrad merges each table's repeated ids before its sparse",
        "apply (`_deduplicate_indexed_slices`: tf.unique, unsorted_segment_sum), and TF's GPU",
        "Unique radix-sorts the ids over all 64 bits, copies the unique count to the host and",
        "launches the rest from a host callback: ~40 launches and a host sync per table and step",
        "(embsim.workload.radix_sort, tf_dedup; CUB 1.15's onesweep dispatch). The zoo models say",
        "so (`optimizer_options: {sparse_dedup: tf-unique}`); nothing fitted. The table below is",
        "the second simulation.",
        ], [
        "What the errors say (the file's note has the figures):",
        "- Every run is still simulated fast, and the error still falls with the tables each GPU",
        "  holds: Tiny +172 % with 55 tables on one GPU, +101 % with ~7 on 8 GPUs, +51 % with",
        "  ~3.4 on 16. About 0.28 ms a table a step is still missing on one GPU.",
        "- What remains is unexplained. Not TensorFlow's executor, whose inter-op latency is",
        "  \"hundreds of nanoseconds\" (TensorFlow commit 1736e0bb) where embsim charges 5 us a",
        "  framework op; the ~50 small kernels a table a step each pay embsim's global 1.5 us GPU",
        "  gap, not revisited here.",
        "- The multi-GPU rows scale worse in embsim than measured (scaling up to -0.14, -0.31 at",
        "  first contact): with per-table cost still missing, embsim's one-GPU step is too short,",
        "  so its strong-scaling efficiency is understated.",
    ])


def sok_section() -> list[str]:
    return doc_section(
        "Held-out: HugeCTR Sparse Operation Kit DLRM on 8 A100 and 8 V100 (validation_data/training/heldout)",
        heldout_files("sok-dlrm-criteo.yaml"), [
        "`embsim validate --training embsim/validation_data/training/heldout/sok-dlrm-criteo.yaml`:",
        "every row (8) of NVIDIA-Merlin/HugeCTR sparse_operation_kit/documents/tutorials/",
        "DLRM_Benchmark/README.md \"Performance\" at 025c6c14 (TensorFlow 2.8 + Horovod + SOK,",
        "Criteo Terabyte, global batch 65536 and 55296, XLA, DLE's custom dot interaction;",
        "FP32 with --compress, AMP without it; steady-state training samples/s). SOK offsets the",
        "26 features into one key space and looks them up with ONE All2AllDenseEmbedding (rows",
        "on GPU key % 8): one all2all of keys and one of vectors a direction. embsim maps it to",
        "zoo dlrm-tf2-criteo-t3 (the same MLPs, interaction op and TensorFlow kernels) with the",
        "MLPerf 40M-cap cardinalities (inferred from main.py's MLPerf v1 schedule and AUC exit)",
        "and embrace shard=hashed exchange=fused, dedup on the --compress rows. That exchange was",
        "built for this file (2026-12-05): it was refused before ('a fused row-sharded exchange",
        "is not modelled'); per table (26 exchanges and 26 tf.unique a step, a mapping SOK's",
        "code rules out) the same rows, mapped as below, simulate -15..-36 %, mean 25.0 %. The",
        "set is not blind:",
        "- first contact with the fused exchange: +31.0 / -19.6 / +10.0 / -10.3 % on the four",
        "  batch-65536 rows;",
        "- then what every dedup'd exchange pays on the requester (the distinct rows gathered back",
        "  to one per lookup, the lookups' gradients summed into them): 12.9 % / 21.4 % over 8;",
        "- then, read from SOK's dispatchers (kit_cc_impl/embedding/dispatcher at the cited",
        "  commit), the per-step exchange of id counts with its host read-back before the keys",
        "  leave, and the reorder of the exchanged rows (batch order forward, owner order",
        "  backward): 14.2 % / 23.4 %;",
        "- then the AMP rows' wire dtype, mapped FP32 at first contact: SOK builds its lookuper",
        "  and output dispatcher for the compute dtype (dense_gather.cu converts the FP32 rows to",
        "  __half; All2AllOutputDispatcher<__half>), so the rows travel in FP16 (`alltoall_dtype:",
        "  compute`): 8.3 % / 19.1 %;",
        "- then the owners' work with dedup: an owner receives each sender's distinct rows, so it",
        "  looks up, scatters and updates those, not one row per lookup (SOK's owners under",
        "  --compress; embsim had charged every lookup): the table below, the compress rows",
        "  further off. Mechanisms and a mapping from source; nothing fitted.",
        "Gated in `.ci/run`.",
        ], [
        "What the errors say (none acted on):",
        "- The AMP rows (no dedup) are within 9 %. Every FP32 row with --compress is fast:",
        "  +10..+13 % on V100, +32..+33 % on A100 (4.1 against 5.4 ms a step). What the dedup'd",
        "  path costs beyond the tf.unique, the expansion, the merge and the smaller owner work",
        "  that embsim charges is not known (XLA's auto-clustering around the dynamic-shape",
        "  unique, TensorFlow's per-op costs around it, not modelled); the A100 TF32 MLP GEMMs",
        "  are the step's largest part (2.0 of 4.1 ms simulated) and rest on the spec rate.",
        "- The token statistics are embsim's per-table Zipf default, not Criteo's frequencies:",
        "  the hashed owners' imbalance (the owner of the small features' rows serves up to",
        "  1.97x an even share) and the distinct-row share (55 % of lookups on cat_0) rest on it.",
    ])
