"""Run TorchRec's own default sharding planner on the three rows of
embsim/validation_data/training/heldout/torchrec-dlrm-p4d.yaml (a record of how that file's
note got its plans; nothing in embsim imports this).

    git -C TORCHREC_CLONE archive 488c02b0f7249b43527bd1ce50661321ea846e9d torchrec | tar -x -C DIR
    python benchmarks/torchrec_planner_plan.py DIR

It builds each row's EmbeddingBagCollection on the meta device as examples/dlrm/dlrm_main.py
does (lines 343-363) and plans it as DistributedModelParallel does with no plan
(model_parallel.py 179-189: EmbeddingShardingPlanner(Topology(world_size, "cuda")), the
default sharders). FBGEMM's kernel modules are stubbed: planning never calls them (the
sharder's storage_usage and the estimators are plain arithmetic). Needs torch (any 2.x CPU
build that still has torch.distributed._sharding_spec).

Output on 2026-12-04 (torch 2.13 CPU): MLPerf 8 GPUs: 16 table_wise, 2 column_wise (t_cat_0,
t_cat_9: 4 shards of 32 columns), 8 data_parallel (t_cat_5, 8, 12, 15, 16, 18, 24, 25);
MLPerfx2 16 GPUs: 14 table_wise, 4 column_wise (t_cat_0, 9, 19, 21), 8 data_parallel;
Full Size 80 GPUs: 14 table_wise, 3 column_wise batched_fused (t_cat_0, 9, 21), t_cat_19
column_wise batched_fused_uvm_caching, 8 data_parallel, every sharded table on ranks 0-29.
"""

import collections
import os
import sys
import tempfile

ROWS = {
    "MLPerf": (8, "40000000,39060,17295,7424,20265,3,7122,1543,63,40000000,3067956,405282,10,2209,"
                  "11938,155,4,976,14,40000000,40000000,40000000,590152,12973,108,36"),
    "MLPerfx2": (16, "80000000,39060,17295,7424,20265,3,7122,1543,63,80000000,3067956,405282,10,2209,"
                     "11938,155,4,976,14,80000000,40790948,80000000,590152,12973,108,36"),
    "Full Size": (80, "227605432,39060,17295,7424,20265,3,7122,1543,63,130229467,3067956,405282,10,"
                      "2209,11938,155,4,976,14,292775614,40790948,187188510,590152,12973,108,36"),
}
STUB = '''import enum
class _Dummy:
    def __init__(self, *a, **k): pass
class SparseType(enum.Enum):
    FP32 = "fp32"; FP16 = "fp16"; INT8 = "int8"; INT4 = "int4"; INT2 = "int2"
class EmbOptimType(enum.Enum):
    EXACT_SGD = "exact_sgd"; SGD = "sgd"
def __getattr__(name):
    if name in ("EmbeddingLocation", "ComputeDevice", "PoolingMode", "CacheAlgorithm"):
        class E(enum.Enum):
            DEVICE = 0; MANAGED = 1; MANAGED_CACHING = 2; HOST = 3; CPU = 4; CUDA = 5; SUM = 6; MEAN = 7; NONE = 8; LRU = 9; LFU = 10
        return E
    return type(name, (_Dummy,), {})
'''


def main(torchrec_dir: str) -> None:
    stubs = tempfile.mkdtemp()
    os.makedirs(os.path.join(stubs, "fbgemm_gpu"))
    open(os.path.join(stubs, "fbgemm_gpu", "__init__.py"), "w").close()
    for mod in ("split_embedding_configs", "split_table_batched_embeddings_ops",
                "permute_pooled_embedding_modules"):
        with open(os.path.join(stubs, "fbgemm_gpu", mod + ".py"), "w") as f:
            f.write(STUB)
    sys.path[:0] = [stubs, torchrec_dir]
    import torch
    from torchrec import EmbeddingBagCollection
    from torchrec.distributed.model_parallel import get_default_sharders
    from torchrec.distributed.planner import EmbeddingShardingPlanner, Topology
    from torchrec.modules.embedding_configs import EmbeddingBagConfig

    names = [f"cat_{i}" for i in range(26)]      # torchrec/datasets/criteo.py DEFAULT_CAT_NAMES
    for row, (world, text) in ROWS.items():
        rows = list(map(int, text.split(",")))
        ebc = EmbeddingBagCollection(tables=[
            EmbeddingBagConfig(name=f"t_{f}", embedding_dim=128, num_embeddings=rows[i], feature_names=[f])
            for i, f in enumerate(names)], device=torch.device("meta"))
        plan = EmbeddingShardingPlanner(topology=Topology(world_size=world, compute_device="cuda")).plan(
            ebc, get_default_sharders())
        print(f"== {row}: {world} GPUs, {sum(rows) * 128 * 4 / 2**30:.2f} GiB of FP32 tables")
        kinds = collections.Counter()
        for name, ps in next(iter(plan.plan.values())).items():
            kinds[(ps.sharding_type, ps.compute_kernel)] += 1
            print(f"  {name:9s} {rows[names.index(name[2:])]:>10d} {ps.sharding_type:13s} "
                  f"{ps.compute_kernel:26s} ranks {sorted(set(ps.ranks)) if len(ps.ranks) < world else 'all'}")
        print("  ", dict(kinds))


if __name__ == "__main__":
    main(sys.argv[1])
