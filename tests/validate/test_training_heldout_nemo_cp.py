"""Held-out context-parallel NeMo rows (NVIDIA/NeMo/docs/source/performance/performance_summary.md,
DGX-H100 FP8: LLAMA3-8B TP 1 CP 2 on 8 GPUs, three published values; LLAMA2-7B 32K..1024K on
32..1024 GPUs, TP 2-8, CP 2-32), simulated with --context-parallel C (TE's p2p KV ring) and
strategy distopt; no constant fitted on them. LLAMA3-70B (PP 4, not a zoo model) is listed,
not simulated."""

import yaml

from heldout_bounds import assert_within, heldout_fixture
from embsim.validate.training import HELDOUT_DIR

# Set 2026-12-03 (s11-cp) at the level first reached x1.005: the first simulation gave mean
# |error| 25.71 %, max 45.68 % (LLAMA3-8B CP 2 +4.8 .. +8.2 %; LLAMA2-7B 32K..512K +34 ..
# +46 %, fast as the file expected; 1024K -13.5 %, where the 32-rank cross-node ring's
# transfers outlast the attention steps). After the fix that makes a block's ring wait for
# the previous block's tensor-parallel collectives (the ring had been placed after them and
# ran ahead of them), mean 22.95 %, max 42.47 % (the TP rows slower, LLAMA3-8B unchanged).
# The bounds stay at the first contact's.
# TIGHTENED 2026-12-03 (twelfth session, the lead) 0.2584 / 0.4591 -> 0.0666 / 0.1983: two mapping corrections read from
# the NeMo launcher, stated in the file: its config.yaml set NVTE_FUSED_ATTN 0 for releases
# 24.01-24.07 (FlashAttention-2, not cuDNN), and its configs run megatron_amp_O2 (amp megatron,
# FP32 gradient reduction): 22.95 / 42.47 % -> 6.63 / 19.73 % (FlashAttention-2 alone 6.9 / 20.0 %); x1.005.
# TIGHTENED 2026-12-06 (thirtieth session, 815db18: FP8 TP all-gathers) -> 0.0551 / 0.1958 (exact
# 0.05474 / 0.19482), x1.005.
MEAN_BOUND, MAX_BOUND = 0.0551, 0.1958
FILE = "nemo-cp.yaml"
errors = heldout_fixture(FILE)


def test_nemo_cp_heldout_within_the_achieved_bounds(errors):
    runs, pairs = errors
    assert_within(runs, pairs, counts={"simulated_runs": 9, "pairs": 0, "skipped": 3},
                  mean=MEAN_BOUND, max_=MAX_BOUND)
    for run in runs:
        if run.simulated is not None:
            assert "(TE p2p ring, load-balanced causal):" in run.compute_source
            assert "exposed" in run.compute_source


def test_the_file_states_its_rule_and_maps_every_selected_row():
    doc = yaml.safe_load((HELDOUT_DIR / FILE).read_text())
    assert "selection rule" in doc["note"].lower()
    assert doc["source"]["repo"] == "NVIDIA/NeMo" and doc["source"]["commit"] in doc["source"]["url"]
    simulated = [r for r in doc["runs"] if "not_simulated" not in r]
    assert len(simulated) == 9
    assert all(r["cp"] > 1 and r["pp"] == 1 and r["vp"] == 1 for r in simulated)
    for r in simulated:
        e = r["embsim"]
        assert e["context_parallel"] == r["cp"] and e.get("tensor_parallel", 1) == r["tp"]
        # GBS = replicas x MBS x micro-batches, replicas = GPUs / (TP x CP)
        assert r["gpus"] // (r["tp"] * r["cp"]) * r["micro_batch"] * e["accumulate"] == r["global_batch"]
        assert e["scale"] * r["gpus"] == 1
    assert all("not a zoo model" in r["not_simulated"] for r in doc["runs"] if "not_simulated" in r)
