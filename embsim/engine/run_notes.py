"""Notes a simulation's output carries where a figure would otherwise read as a bug: --seq
read as a mean sentence length by --jitter's length forms, a scaling efficiency above 100 %."""

from __future__ import annotations

from ..collectives.server_demand import PUSH_OPS
from ..workload import load_spec
from .accumulate import global_batch_micro_batches
from .config import SimulationConfig
from .jitter import NONE, parse_jitter, sentence_lengths


def seq_as_mean_label(cfg: SimulationConfig, seq: int) -> str:
    """--jitter bucket:K / shuffle read --seq as the sentences' real mean length (GNMT's
    convention) and scale the lengths to it: where that scale is far from 1, --seq was
    most likely meant as a maximum (BERT's 512), and the output says what it was read as."""
    spec = parse_jitter(cfg.jitter) if cfg.jitter and cfg.jitter != NONE else None
    if spec is None or spec[0] not in ("bucket", "shuffle"):
        return ""
    mean = float(sentence_lengths(cfg.corpus, cfg.lengths, cfg.seed).mean())
    scale = seq / mean
    if 2 / 3 <= scale <= 1.5:
        return ""
    return (f"; --jitter {cfg.jitter} reads --seq {seq} as the sentences' real mean length: their "
            f"lengths (mean {mean:.1f} tokens) scaled {scale:.2f}x before padding (for --seq as a "
            f"maximum length, use --padding longest)")


def superlinear_note(efficiency: float, compute: float, single_compute: float, dp: int,
                      cfg: SimulationConfig) -> tuple:
    """Why an efficiency above 100 % is not a bug: each GPU of the N-GPU step computes
    less than one GPU alone, e.g. FSDP updates 1/N of the parameters (its optimizer state
    sharded) where the one-GPU baseline updates all of them."""
    if efficiency <= 1.0:
        return ()
    sharded = {"fsdp": "FSDP", "distopt": "the distributed optimizer"}
    what = (f"{sharded[cfg.strategy]} shards the optimizer step, each GPU updating 1/{dp} of the "
            f"parameters" if cfg.strategy in sharded else f"{cfg.strategy} spreads work one GPU does alone")
    return (f"scaling efficiency {efficiency * 100:.1f} % (above 100 %): {what} (compute "
            f"{compute * 1e3:.2f} ms per step on each GPU, {single_compute * 1e3:.2f} ms on one "
            f"GPU alone)",)


def accumulated_rows_note(cfg: SimulationConfig, sync, each: bool) -> tuple:
    """With gradient accumulation synchronised once per step, a sparse gradient (index,
    row) exchange carries the rows of all K micro-batches; embsim sizes it from one
    micro-batch's distinct rows, and says so rather than leave it unsaid."""
    if cfg.accumulate <= 1 or each:
        return ()
    ops = sorted({t.op for t in sync if t.category == "embedding" and t.needed_by is None
                  and t.op in ("all_gather", *PUSH_OPS)})
    if not ops:
        return ()
    k = cfg.accumulate
    return (f"--accumulate {k}: the sparse gradients synchronised once per step ({', '.join(ops)}) "
            f"are sized by one micro-batch's distinct rows; the union of the {k} micro-batches' rows "
            f"(up to {k}x as many where ids rarely repeat) is not modelled, so those bytes read low",)


def global_batch_note(cfg: SimulationConfig, batch: int, replicas: int) -> tuple:
    """Where the step accumulates micro-batches because the zoo model fixes its reference
    benchmark's global batch (engine.run.with_global_batch), the output says so: a what-if on
    fewer GPUs otherwise reads as a slower step with no cause given."""
    global_batch = load_spec(cfg.model).global_batch
    if cfg.accumulate <= 1 or cfg.accumulate != global_batch_micro_batches(global_batch, batch, replicas):
        return ()
    return (f"accumulate {cfg.accumulate}: the model's global batch {global_batch:,} over {replicas} "
            f"replica(s) x batch {batch} (the zoo file's `global_batch`, its reference benchmark's: "
            f"without --accumulate a step accumulates to it; --accumulate 1 runs one micro-batch per step)",)


def unauthored_pairing_note(cfg: SimulationConfig) -> tuple:
    """S2 Reducer's trainer reduces after the whole backward and steps the optimizer once;
    priority and embrace-2d update layer by layer, so under them the post-backward
    AllReduces overlap the next forward: a what-if no author ran, said as such (the
    strategy's own note describes S2's reduce, not this timing)."""
    if (cfg.strategy != "s2reducer" or cfg.scheduler == "fifo"
            or cfg.strategy_options.get("sync", "after_backward") != "after_backward"):
        return ()
    return (f"s2reducer with --scheduler {cfg.scheduler}: S2 Reducer's reduce after the backward, but "
            f"{cfg.scheduler}'s per-layer optimizer updates let those AllReduces overlap the next "
            f"forward, which S2 Reducer's trainer (one optimizer step after every reduce) does not; no "
            f"author ran this pairing (--scheduler fifo is S2 Reducer's own timing)",)


def unused_flag_notes(cfg: SimulationConfig, spec) -> tuple:
    """Flags a run gave that its model has nothing for (probe U: they were taken without a
    word, and the JSON recorded them as if applied): --untie-outputs on a model that ties no
    output layer, --lengths on one without sequences, and --corpus read as the ids of tables
    that are not words (a recommender's categorical features: its word counts become their
    row frequencies, which is what runs, but rarely what was meant)."""
    notes = []
    if cfg.untie_outputs and not any("tied" in layer.params for layer in spec.layers):
        notes.append(f"--untie-outputs changes nothing: {spec.name} ties no output layer to a table")
    if cfg.lengths is not None and cfg.lengths != spec.lengths and (cfg.seq or spec.seq) <= 1:
        notes.append(f"--lengths {cfg.lengths} changes nothing: {spec.name} has no sequence "
                     f"(seq 1: one sample is one row of features)")
    if cfg.corpus:
        fields = [t.name for t in spec.tables if "token" not in t.input]
        if fields:
            shown = ", ".join(fields[:3]) + (f" and {len(fields) - 3} more" if len(fields) > 3 else "")
            notes.append(f"--corpus {cfg.corpus}: its word frequencies stand for the row frequencies of "
                         f"tables that are not words ({shown}); --zipf S sets a skew instead")
    return tuple(notes)

