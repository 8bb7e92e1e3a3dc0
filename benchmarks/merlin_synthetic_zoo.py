"""Write the zoo files of NVIDIA Merlin distributed-embeddings' synthetic benchmark models
(embsim/workload/zoo/merlin-synthetic-{tiny,small,medium,large,jumbo}.yaml).

    python benchmarks/merlin_synthetic_zoo.py [--check]

The five models have 55-1022 tables, too many to write by hand. Their configuration is
data transcribed from NVIDIA-Merlin/distributed-embeddings at c6b2e2f (2022-03-31, the
commit whose examples/benchmarks/synthetic_models/README.md published the step times):
config_v3.py (each EmbeddingConfig: num_tables, nnz, num_rows, width, shared; mlp_sizes,
num_numerical_features, interact_stride) and synthetic_models.py (SyntheticModel). The
files are committed; `--check` exits 1 if a committed file differs from what this writes
(tests/workload/test_merlin_synthetic_zoo.py runs it).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

ZOO = Path(__file__).resolve().parent.parent / "embsim" / "workload" / "zoo"
COMMIT = "c6b2e2f52d3b30a873b72b020bc4bfeead343830"

# config_v3.py lines 28-120: EmbeddingConfig(num_tables, nnz, num_rows, width, shared)
MODELS = {
    "tiny": dict(tables=[(1, [1, 10], 10_000, 8, True), (1, [1, 10], 1_000_000, 16, True),
                         (1, [1, 10], 25_000_000, 16, True), (1, [1], 25_000_000, 16, False),
                         (16, [1], 10, 8, False), (10, [1], 1000, 8, False),
                         (4, [1], 10_000, 8, False), (2, [1], 100_000, 16, False),
                         (19, [1], 1_000_000, 16, False)],
                 mlp=[256, 128], numerical=10, stride=None, published=(55, 4.2)),
    "small": dict(tables=[(5, [1, 30], 10_000, 16, True), (3, [1, 30], 4_000_000, 32, True),
                          (1, [1, 30], 50_000_000, 32, True), (1, [1], 50_000_000, 32, False),
                          (30, [1], 10, 16, False), (30, [1], 1000, 16, False),
                          (5, [1], 10_000, 16, False), (5, [1], 100_000, 32, False),
                          (27, [1], 4_000_000, 32, False)],
                  mlp=[512, 256, 128], numerical=10, stride=None, published=(107, 26.3)),
    "medium": dict(tables=[(20, [1, 50], 100_000, 64, True), (5, [1, 50], 10_000_000, 64, True),
                           (1, [1, 50], 100_000_000, 128, True), (1, [1], 100_000_000, 128, False),
                           (80, [1], 10, 32, False), (60, [1], 1000, 32, False),
                           (80, [1], 100_000, 64, False), (24, [1], 200_000, 64, False),
                           (40, [1], 10_000_000, 64, False)],
                   mlp=[1024, 512, 256, 128], numerical=25, stride=7, published=(311, 206.2)),
    "large": dict(tables=[(40, [1, 100], 100_000, 64, True), (16, [1, 100], 15_000_000, 64, True),
                          (1, [1, 100], 200_000_000, 128, True), (1, [1], 200_000_000, 128, False),
                          (100, [1], 10, 32, False), (100, [1], 10_000, 32, False),
                          (160, [1], 100_000, 64, False), (50, [1], 500_000, 64, False),
                          (144, [1], 15_000_000, 64, False)],
                  mlp=[2048, 1024, 512, 256], numerical=100, stride=8, published=(612, 773.8)),
    "jumbo": dict(tables=[(50, [1, 200], 100_000, 128, True), (24, [1, 200], 20_000_000, 128, True),
                          (1, [1, 200], 400_000_000, 256, True), (1, [1], 400_000_000, 256, False),
                          (100, [1], 10, 32, False), (200, [1], 10_000, 64, False),
                          (350, [1], 100_000, 128, False), (80, [1], 1_000_000, 128, False),
                          (216, [1], 20_000_000, 128, False)],
                  mlp=[2048, 1024, 512, 256], numerical=200, stride=20, published=(1022, 3109.5)),
}


def expand(cfg: dict) -> tuple[list[tuple[str, int, int]], list[tuple[str, str, int]]]:
    """(tables as (name, rows, width), inputs as (layer name, table, hotness)), in the order
    SyntheticModel builds them: config by config, table by table, one input per nnz entry
    (a shared config's table is read by a one-hot and a multi-hot input)."""
    tables, inputs = [], []
    for c, (count, nnz, rows, width, _shared) in enumerate(cfg["tables"]):
        for i in range(count):
            name = f"c{c}_t{i}"
            tables.append((name, rows, width))
            inputs += [(f"{name}_h{h}", name, h) for h in nnz]
    return tables, inputs


def model_yaml(size: str) -> str:
    cfg = MODELS[size]
    tables, inputs = expand(cfg)
    width = {name: w for name, _, w in tables}
    total = sum(width[t] for _, t, _ in inputs)          # the concatenated embeddings
    n_tables, gib = cfg["published"]
    gib_here = sum(r * w for _, r, w in tables) * 4 / 2**30
    assert len(tables) == n_tables and abs(gib_here - gib) < 0.06, (size, len(tables), gib_here)
    out = [f"name: merlin-synthetic-{size}",
           "description: >-",
           f"  NVIDIA Merlin distributed-embeddings' synthetic '{size}' recommender",
           f"  (examples/benchmarks/synthetic_models): {n_tables} tables, {gib_here:.1f} GiB of FP32",
           f"  rows, {len(inputs)} categorical inputs (sum-pooled), {cfg['numerical']} numerical features,",
           f"  an MLP {' -> '.join(str(x) for x in cfg['mlp'])} -> 1, BCE with logits. Generated by",
           "  benchmarks/merlin_synthetic_zoo.py; do not edit by hand.",
           "source: >-",
           f"  NVIDIA-Merlin/distributed-embeddings at {COMMIT[:8]} (2022-03-31):",
           "  examples/benchmarks/synthetic_models/config_v3.py (the model's EmbeddingConfig list,",
           "  mlp_sizes, num_numerical_features, interact_stride) and synthetic_models.py",
           "  SyntheticModel (one Embedding(num_rows, width, combiner='sum') per table, one input",
           "  per nnz entry; a shared config's table is read by a one-hot and a multi-hot input;",
           "  then an AveragePooling1D of stride interact_stride over the concatenated embeddings",
           "  where the config sets one, tf.concat with the numerical features, Dense+ReLU layers,",
           "  Dense(1)); main.py: BinaryCrossentropy(from_logits=True).",
           "published:",
           f"  embedding_params: {sum(r * w for _, r, w in tables)}   # README 'Models': {n_tables} tables, {gib} GiB",
           "defaults:",
           "  batch: 65536        # the README's global batch, on one GPU",
           "  seq: 1",
           "  dtype: fp32",
           "  optimizer: adagrad  # main.py --optimizer adagrad (the README's run config)",
           "  # TensorFlow 2's kernels: tf.keras.optimizers.Adagrad merges each table's repeated",
           "  # ids with tf.unique and unsorted_segment_sum before its sparse apply",
           "  # (embsim.workload.tf_dedup: the framework's sparse_dedup, tf-unique)",
           "  framework: tensorflow",
           "tables:"]
    out += [f"  - {{name: {n}, vocab: {r}, dim: {w}, input: {n}}}" for n, r, w in tables]
    out.append("layers:")
    for name, table, hot in inputs:
        pool = ", pooling: sum" if hot > 1 else ""    # Embedding(combiner='sum'): one vector
        out.append(f"  - {{name: {name}, kind: embedding, table: {table}, lookups: {hot}{pool}}}")
    n, f = len(inputs), cfg["numerical"]
    if cfg["stride"]:
        s = cfg["stride"]
        pooled = math.ceil(total / s)                   # padding='same'
        out += [f"  # tf.concat of the {n} embeddings ({total} wide), written as {n} inputs of the mean width",
                f"  - {{name: concat, kind: combine, op: concat, inputs: {n}, dim: {math.ceil(total / n)}}}",
                f"  # AveragePooling1D({s}, padding='same') over the {total} columns: {pooled} per sample",
                f"  - {{name: interact, kind: combine, op: sum, inputs: {s}, dim: {pooled}}}",
                f"  # tf.concat([pooled, numerical]): {pooled} + {f} wide",
                f"  - {{name: concat_numerical, kind: combine, op: concat, inputs: 2, dim: {math.ceil((pooled + f) / 2)}}}"]
        width_in = pooled + f
    else:
        out += [f"  # tf.concat of the {n} embeddings ({total} wide) and the {f} numerical features",
                f"  - {{name: concat, kind: combine, op: concat, inputs: {n + 1}, dim: {math.ceil((total + f) / (n + 1))}}}"]
        width_in = total + f
    sizes = [width_in] + cfg["mlp"]
    for i, (a, b) in enumerate(zip(sizes, sizes[1:])):
        out.append(f"  - {{name: mlp{i}, kind: linear, in: {a}, out: {b}, activation: relu}}")
    out += [f"  - {{name: out, kind: linear, in: {sizes[-1]}, out: 1}}",
            "  - {name: loss, kind: softmax_loss, classes: 1}     # BCE with logits"]
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    for size in MODELS:
        path, text = ZOO / f"merlin-synthetic-{size}.yaml", model_yaml(size)
        if check:
            if not path.exists() or path.read_text() != text:
                stale.append(path.name)
        else:
            path.write_text(text)
    if stale:
        print(f"out of date (run python benchmarks/merlin_synthetic_zoo.py): {', '.join(stale)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
