"""Held-out tensor-parallel NeMo rows (NVIDIA/NeMo/docs/source/performance/performance_summary.md,
DGX-H100 FP8: GPT3-20B and Nemotron-8B on 64 GPUs, LLAMA2-7B at 16K on 16 GPUs, all TP 2 with
sequence parallelism, PP = CP = 1), simulated with --tensor-parallel 2; no constant fitted on
them. The pipeline / context-parallel rows of the same tables are listed, not simulated."""

import yaml

from heldout_bounds import assert_within, heldout_fixture
from embsim.validate.training import HELDOUT_DIR

# Set 2026-12-03 (s10-tp) at the level first reached x1.005. The first simulation (before
# the fix that simulates the K-1 earlier micro-batches' TP collectives apart) gave mean
# 15.2 %, max 22.9 %; with it: mean 14.0 %, max 21.8 % (GPT3-20B -21.3 / -21.8 %, Nemotron-8B
# +4.0 / +5.6 %, LLAMA2-7B 16K +17.4 %).
# Re-based 2026-12-03 (ninth session) when the file's strategy became distopt, as the
# launcher configures it (the mapping change is stated in the file): 12.1 % / 17.6 %.
# TIGHTENED 2026-12-03 (twelfth session, the lead) 0.122 / 0.177 -> 0.0447 / 0.0881: two mapping corrections read from
# the NeMo launcher, stated in the file: its config.yaml set NVTE_FUSED_ATTN 0 for releases
# 24.01-24.07 (FlashAttention-2, not cuDNN), and its configs run megatron_amp_O2 (amp megatron,
# FP32 gradient reduction): 12.1 / 17.6 % -> 4.44 / 8.77 % (FlashAttention-2 alone 7.4 / 14.1 %); x1.005.
# 2026-12-06 (thirtieth session, 815db18: FP8 TP all-gathers): as .ci/run, 0.0312 / 0.0516 (exact
# 0.03101 / 0.05133, every row 1-1.5 points faster), x1.005.
MEAN_BOUND, MAX_BOUND = 0.0312, 0.0516
FILE = "nemo-24.07-tp.yaml"
errors = heldout_fixture(FILE)


def test_nemo_tp_heldout_within_the_achieved_bounds(errors):
    runs, pairs = errors
    assert_within(runs, pairs, counts={"simulated_runs": 5, "pairs": 0, "skipped": 15},
                  mean=MEAN_BOUND, max_=MAX_BOUND)
    for run in runs:
        if run.simulated is not None:
            assert "tensor parallel 2 (sequence parallel)" in run.compute_source


def test_the_file_states_its_rule_and_lists_pipeline_rows_as_not_simulated():
    doc = yaml.safe_load((HELDOUT_DIR / FILE).read_text())
    assert "selection rule" in doc["note"].lower()
    assert doc["source"]["repo"] == "NVIDIA/NeMo" and doc["source"]["commit"] in doc["source"]["url"]
    simulated = [r for r in doc["runs"] if "not_simulated" not in r]
    assert all(r["tp"] == 2 and r["pp"] == 1 and r["cp"] == 1 for r in simulated)
    skipped = [r["not_simulated"] for r in doc["runs"] if "not_simulated" in r]
    assert all("pipeline" in s or "context" in s for s in skipped)
