"""Held-out interleaved-pipeline NeMo rows (NVIDIA/NeMo/docs/source/performance/performance_summary.md,
blob 98dae2d, DGX-H100 FP8: GPT3-175B TP 4 PP 8 VP 6 on 128 and 512 GPUs, LLAMA2-13B TP 1 PP 4
VP 10 on 16, LLAMA2-70B TP 4 PP 4 VP 20 on 64, Nemotron-22B TP 2 PP 4 VP 10 on 64), simulated
with --virtual-pipeline V (Megatron-Core's interleaved 1F1B) and strategy distopt; no constant
fitted on them. Nemotron-340B TP 8 PP 8 VP 12 on 128 is simulated with its blocking p2p
(p2p_overlap false) since s12-bp2p. LLAMA3-70B (CP with PP) is listed, not simulated."""

import pytest
import yaml

from heldout_bounds import assert_within, heldout_fixture, slow_heldout
from embsim.validate.training import HELDOUT_DIR

# Set 2026-12-03 (s12-vpp) at the level first reached x1.005: the first simulation gave mean
# |error| 27.0 %, max 48.1 % (GPT3-175B 128 GPUs -48.1 %, 512 GPUs -45.9 %, LLAMA2-13B -13.5 %,
# LLAMA2-70B -24.7 %, Nemotron-22B -2.8 %: all simulated slow).
# LOOSENED 2026-12-03 (the lead) to the six rows' level x1.005 (with the rounding of the
# printed figures): the Nemotron-340B row joined (first contact -60.9 %, -60.7 % with the
# stage-pair channels), and the five rows moved with the mapping change to Megatron-Core 0.8's
# deferred send waits and the per-pair channels: 27.0 / 48.1 -> 24.6 / 47.3 %; all six
# 30.6 % / 60.7 %.
# TIGHTENED 2026-12-03 (eleventh session, the lead) after two engine bug fixes: each pipeline
# stage's TP and data-parallel collectives on that stage's own channels (13.1 / 23.6 %), and
# interference only from a GPU's own collectives (9.62 / 16.81 %); x1.005.
# TIGHTENED 2026-12-03 (twelfth session, the lead) 0.0967 / 0.1689 -> 0.0669 / 0.1542: two mapping
# corrections read from the NeMo launcher, stated in the file: its config.yaml set NVTE_FUSED_ATTN 0
# for releases 24.01-24.07 (FlashAttention-2, not cuDNN; GPT3-175B's example re-enables cuDNN),
# and its configs run megatron_amp_O2 (amp megatron; gradients reduced in FP32, BF16 where the
# run sets grad_sync_dtype): 9.62 / 16.81 % -> 6.65 / 15.33 %; x1.005.
# TIGHTENED 2026-12-06 (thirtieth session) to the achieved level after 815db18 (FP8 TP all-gathers:
# exact 0.04157 / 0.10451), x1.005, as .ci/run.
MEAN_BOUND, MAX_BOUND = 0.0418, 0.1051
# The rows take about 15 minutes to simulate (64 .. 512 GPUs, 16 .. 64 micro-batches x
# 6 .. 20 chunks), over the suite's 600 s per-test timeout: the bound is checked here only with
# EMBSIM_SLOW_HELDOUT=1, and always by .ci/run's gate (the same bounds).
SLOW = slow_heldout(13)
FILE = "nemo-vp.yaml"
errors = heldout_fixture(FILE)


@SLOW
def test_nemo_vp_heldout_within_the_achieved_bounds(errors):
    runs, pairs = errors
    assert_within(runs, pairs, counts={"simulated_runs": 6, "pairs": 0, "skipped": 1},
                  mean=MEAN_BOUND, max_=MAX_BOUND)
    for run in runs:
        if run.simulated is not None:
            assert " virtual (interleaved 1F1B, " in run.compute_source


def test_the_file_states_its_rule_and_maps_every_selected_row():
    doc = yaml.safe_load((HELDOUT_DIR / FILE).read_text())
    assert "selection rule" in doc["note"].lower()
    assert doc["source"]["repo"] == "NVIDIA/NeMo" and doc["source"]["commit"] in doc["source"]["url"]
    simulated = [r for r in doc["runs"] if "not_simulated" not in r]
    assert len(simulated) == 6
    # each row's own p2p: Nemotron-340B's launcher config (1a7171d) sets overlap_p2p_comm False,
    # batch_p2p_comm True; the others overlap, with Megatron-Core 0.8's deferred send waits
    for r in simulated:
        blocking = r["id"] == "h100-nemotron-340b-128gpu-vp12"
        assert r["embsim"].get("p2p_overlap", True) is not blocking
        assert ("p2p_send_wait" in r["embsim"]) is not blocking
    for r in simulated:
        e = r["embsim"]
        assert r["vp"] > 1 and r["cp"] == 1
        assert (e["pipeline_parallel"], e["virtual_pipeline"], e.get("tensor_parallel", 1)) == (
            r["pp"], r["vp"], r["tp"])
        # GBS = DP x MBS x micro-batches, DP = GPUs / (TP x PP)
        assert r["gpus"] // (r["tp"] * r["pp"]) * r["micro_batch"] * e["accumulate"] == r["global_batch"]
        assert e["batch"] == r["micro_batch"] and e["scale"] * r["gpus"] == 1
