"""Workload layer: the model zoo, token statistics, the kernel compute model and memory.

    from embsim.workload import load_model, list_models, TokenStats
    m = load_model("lstm-lm1b")            # Model at the zoo defaults
    m = load_model("bert-base", batch=16, seq=512)
    load_model("path/to/my-model.yaml")    # same dialect as embsim/workload/zoo/*.yaml
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from .. import suggest
from ..errors import InputError
from .build import build_model
from .overrides import apply_overrides
from .model import DTYPE_BYTES, EmbeddingTable, Layer, Model, Optimizer
from .spec import LIMITS as SPEC_LIMITS, ModelSpec, load_model_spec, per_sample, position_limit
from .tokens import TokenStats, expected_overlap, expected_unique, sample_batches

ZOO_DIR = Path(__file__).resolve().parent / "zoo"

__all__ = ["list_models", "load_model", "model_from_spec", "load_spec", "is_model_file", "Model",
           "Layer", "EmbeddingTable", "Optimizer", "ModelSpec", "TokenStats", "expected_unique", "expected_overlap",
           "sample_batches", "DTYPE_BYTES", "ZOO_DIR"]


def list_models() -> list[str]:
    """Names of the built-in models (the zoo/*.yaml file stems), sorted."""
    return sorted(p.stem for p in ZOO_DIR.glob("*.yaml"))


@lru_cache(maxsize=64)   # zoo files are package data and do not change
def _spec_from_path(path: str) -> ModelSpec:
    return load_model_spec(path)


def is_model_file(text: str) -> bool:
    """Whether a --model value names a file (a .yaml, or anything with a '/') rather
    than a zoo model: the one name-or-path rule load_spec follows."""
    return text.endswith((".yaml", ".yml")) or "/" in text


def load_spec(name_or_path: str, flag: str | None = None) -> ModelSpec:
    """The validated zoo file for a built-in name, or any model file by path.
    `flag` (e.g. "--model"): the option or command the value came from, named at the
    head of every error ("--model NAME: unknown model ...", "--model FILE: ...")."""
    text = str(name_or_path)
    try:
        return _load_spec(text)
    except InputError as exc:
        if flag is None:
            raise
        # a file's errors open with the file; a zoo name's with the name, given here
        raise InputError(f"{flag} {exc}" if is_model_file(text) else
                         f"{flag} {text}: {exc}") from None


def _in_zoo(name: str) -> bool:
    """A zoo file of that name (one stat: this runs on every model load)."""
    try:
        return (ZOO_DIR / f"{name}.yaml").is_file()
    except OSError:            # a name too long to look up is no zoo model
        return False


def _load_spec(text: str) -> ModelSpec:
    if is_model_file(text):
        return load_model_spec(text)         # user files are re-read: they may change
    name = text
    if not _in_zoo(name):
        # a spelling variant (case, underscores) names the same zoo model: BERT_Large is bert-large
        name = suggest.normalise(text)
        if not _in_zoo(name):
            models = list_models()
            near = suggest.nearest(text, models)
            hint = f"did you mean {' or '.join(near)}? " if near else ""
            raise InputError(f"unknown model {text!r} ({hint}known: {', '.join(models)}; "
                             "or give a path to a model .yaml)")
    path = ZOO_DIR / f"{name}.yaml"
    spec = _spec_from_path(str(path))
    if spec.name != name:
        raise InputError(f"{path}: name: is {spec.name!r} but the file is {path.name}")
    return spec


def load_model(name_or_path: str, batch: int | None = None, seq: int | None = None,
               untie_outputs: bool = False, dtype: str | None = None,
               overrides: dict | None = None, amp: str | None = None,
               recompute: str | None = None, tensor_parallel=None,
               context_parallel=None, positions: bool = True) -> Model:
    """Build a model at per-GPU `batch` and sequence length `seq` (zoo defaults if None).
    `untie_outputs`: a tied output projection gets its own vocab x dim weight and no longer
    shares the table, whose gradient becomes sparse: a full softmax's weight has a dense
    gradient, a sampled softmax's is a sparse table of its own (`<layer>_w`: its rows
    touched are the step's candidates and true classes).
    `dtype`: training precision (fp32, tf32, bf16, fp16, fp8; default the zoo file's).
    `overrides`: table/layer changes (embsim.workload.overrides); `amp`: mixed-precision
    style, autocast or o2 (embsim.workload.precision; None: the zoo file's, else autocast);
    `recompute`: activation checkpointing, none / full / every:K (embsim.workload.recompute);
    `tensor_parallel`: one TP rank's share (embsim.workload.tensor_parallel.TensorParallel);
    `context_parallel`: one CP rank's share of each `seq`-long sequence
    (embsim.workload.context_parallel.ContextParallel)."""
    return model_from_spec(load_spec(name_or_path), batch, seq, untie_outputs, dtype,
                           overrides, amp, recompute, tensor_parallel, context_parallel, positions)


def model_from_spec(spec: ModelSpec, batch: int | None = None, seq: int | None = None,
                    untie_outputs: bool = False, dtype: str | None = None,
                    overrides: dict | None = None, amp: str | None = None,
                    recompute: str | None = None, tensor_parallel=None,
                    context_parallel=None, positions: bool = True) -> Model:
    """load_model for a spec already loaded (a user file is then read once). The limits
    are on one GPU's share: under context parallelism seq / C. `positions`: refuse a seq
    beyond the model's learned positions (False for the padded shapes a length jitter
    derives from a seq read as a mean: their note says what --seq was read as)."""
    spec = apply_overrides(spec, overrides)
    c = context_parallel.size if context_parallel is not None else 1
    for flag, value in (("batch", batch), ("seq", seq)):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)
                                  or value <= 0):
            raise InputError(f"{flag}: must be a positive integer, got {value!r}")
        if value is not None and value > SPEC_LIMITS[flag] * (c if flag == "seq" else 1):
            raise InputError(f"{flag}: at most {SPEC_LIMITS[flag]:,}"
                             + (" per context-parallel rank" if c > 1 else "") + f", got {value:,}")
    if seq is not None and seq != 1 and per_sample(spec):
        raise InputError(f"seq (--seq) {seq:,}: {spec.name} reads one row of features per sample, "
                         "not a token sequence; leave --seq out")
    limit = position_limit(spec) if seq is not None and positions else None
    if limit is not None and seq > limit[1]:
        raise InputError(f"seq (--seq) {seq:,}: {spec.name} has {limit[1]:,} learned positions "
                         f"(its position table {limit[0]!r}, rows: {limit[1]}), so at most {limit[1]:,}")
    tokens = (batch or spec.batch) * (seq or spec.seq) // c
    if tokens > SPEC_LIMITS["tokens"]:
        raise InputError(f"batch x seq: {tokens:,} tokens per GPU, more than the "
                         f"{SPEC_LIMITS['tokens']:,} embsim samples per step")
    return build_model(spec, batch or spec.batch, seq or spec.seq,
                       untie_outputs=bool(untie_outputs), dtype=dtype,
                       amp=amp or spec.amp or "autocast", recompute=recompute,
                       tensor_parallel=tensor_parallel, context_parallel=context_parallel)
