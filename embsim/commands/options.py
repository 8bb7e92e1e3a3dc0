"""Options shared by the commands that run simulations (simulate, compare, scale; nccl-tests's --nccl-env)."""

from __future__ import annotations

import math

import click

from ..engine.config import SimulationConfig
from ..engine.trace_defaults import apply_trace_defaults
from ..engine.lengths import parse_lengths
from ..errors import InputError
from ..workload.model import OPTIMIZER_STATE_TENSORS
from ..workload.padding import parse_padding
from ..workload.pipeline_interleaved import SEND_WAITS
from ..workload.precision import AMP_STYLES, check_amp_flags
from ..workload.tokens import MAX_ZIPF_S, check_corpus_text
from ..workload.torch_cp import IMPLS as CP_IMPLS
from .checks import (MAX_ACCUMULATE, MAX_BATCH, MAX_ITERATIONS, MAX_SEED, MAX_SEQ, FiniteFloat,
                     count, model_option)


def _nccl_filter(kind: str):
    """Check --nccl-algo / --nccl-proto at the flag, so the error names the flag typed
    (the collective model's own check names nccl-tests' --algo / --proto)."""
    def check(ctx, param, value):
        if value is not None:
            from ..nccl_names import parse_filter
            parse_filter(value, kind, flag=f"--nccl-{kind}")
        return value
    return check


def _nccl_env(ctx, param, value):
    """--nccl-env NAME=BYTES ... -> the (NAME, bytes) pairs, checked at the flag."""
    from ..collectives.nccl_env import parse_env
    return parse_env(split_pairs(value, "--nccl-env", "NAME=BYTES")).values


def _nccl_version(ctx, param, value):
    """--nccl-version checked at the flag (2.18-2.30, a patch level accepted)."""
    if value is not None:
        from ..collectives.constants import constants_for
        constants_for(value)
    return value


def _zipf_positive(ctx, param, value):
    """--zipf within 0 <= s <= MAX_ZIPF_S, as its help says (0: every row alike, the uniform
    ids of a synthetic benchmark such as MLPerf DLRM-DCNv2's multi-hot bags), naming the flag."""
    if value is not None and not 0 <= value <= MAX_ZIPF_S:
        why = " (a Zipf exponent is not negative)" if value < 0 else ""
        raise click.BadParameter(f"{value:g} is not in the range 0 <= s <= {MAX_ZIPF_S:g}{why}",
                                 ctx=ctx, param=param)
    return value


# The trainer and NCCL flags, shared by simulate/compare (_options) and scale.
OPTIMIZER = click.option("--optimizer", type=click.Choice(sorted(OPTIMIZER_STATE_TENSORS)),
                         help="optimizer algorithm (lamb: NVIDIA FusedLAMBAMP's passes) (default: the model's)")
CORPUS = click.option("--corpus", type=click.Path(dir_okay=False), help="real text file for token statistics")
LENGTHS = click.option("--lengths", help="sample lengths for --padding and --jitter bucket:K/shuffle/maxtokens "
                                         "without a --corpus: a shipped measured histogram (wikipedia: BERT "
                                         "pre-training samples at 512; squad-1.1), or lognormal:MEAN:SD[:MAX], "
                                         "a corpus's published mean and standard deviation of tokens per sentence; "
                                         "either with ,ratio:SIGMA: translation pairs, target = source x "
                                         "exp(N(0, SIGMA)) (maxtokens) (default: the model's)")
PADDING = click.option("--padding", help="how each micro-batch is padded: max (to --seq), longest[:ALIGN] "
                                         "(to its longest sample, rounded up to ALIGN), bins:WIDTH[:ALIGN] "
                                         "(NVIDIA LDDL: one WIDTH-token length bin per batch, padded to its "
                                         "longest), packed (samples packed into --seq rows); the step computes "
                                         "the expectation over the padded lengths (default: the model's, else max)")


def _canonical(load):
    """A flag checked where it is given: `load()` returns the option's class (imported only
    when the flag is used), whose parse refuses a bad value in one line naming the flag and
    whose str is the value's canonical spelling."""
    def callback(ctx, param, value):
        return value if value is None else str(load().parse(value))
    return callback


def _recompute_class():
    from ..workload.recompute import Recompute
    return Recompute


def _grad_compress_class():
    from ..workload.grad_compress import GradCompress
    return GradCompress


RECOMPUTE = click.option("--recompute", callback=_canonical(_recompute_class),
                         help="activation checkpointing: none, full (every transformer block runs its "
                              "forward again in backward and keeps only its input), every:K (every "
                              "K-th block, torchtitan's selective layer AC) or selective (each "
                              "block's attention core, Megatron's selective granularity) "
                              "(default: none)")
GRAD_COMPRESS = click.option("--grad-compress", callback=_canonical(_grad_compress_class),
                             help="16-bit compression of the data-parallel gradient all-reduce: "
                                  "none, fp16 or bf16 (PyTorch DDP's fp16/bf16_compress_hook, "
                                  "Horovod Compression.fp16): FP32 gradient buckets cast for the "
                                  "wire (half the bytes) and back; 16-bit gradients are left as "
                                  "they are (default: none)")
TENSOR_PARALLEL = click.option("--tensor-parallel", type=count(1, 1024), default=1, show_default=True,
                               help="Megatron tensor parallelism: K consecutive GPUs of a node hold one "
                                    "model replica, each 1/K of every transformer block's heads and GEMMs "
                                    "and of the vocab, with the TP collectives on the step's critical path; "
                                    "the data-parallel group is GPUs / K (allreduce, fsdp, distopt)")
SEQUENCE_PARALLEL = click.option("--sequence-parallel/--no-sequence-parallel", default=None,
                                 help="with --tensor-parallel > 1: Megatron's sequence parallelism (each "
                                      "all-reduce a reduce-scatter + all-gather; norms on 1/K of the "
                                      "sequence) (default: on with --tensor-parallel > 1, as the NeMo / "
                                      "Megatron-Bridge recipes set it)")
PIPELINE_PARALLEL = click.option("--pipeline-parallel", type=count(1, 1024), default=1, show_default=True,
                                 help="Megatron pipeline parallelism, 1F1B: the transformer blocks split "
                                      "into P contiguous stages (embedding on the first, output layer and "
                                      "loss on the last), each stage GPUs / P ranks, the --accumulate "
                                      "micro-batches pipelined through them with stage-to-stage sends; "
                                      "the data-parallel group is GPUs / (TP x P) (allreduce, distopt)")
VIRTUAL_PIPELINE = click.option("--virtual-pipeline", type=count(1, 1024), default=1, show_default=True,
                                help="with --pipeline-parallel P > 1: Megatron's interleaved (virtual) "
                                     "pipeline, V model chunks of blocks / (P V) blocks per rank, chunk c "
                                     "of rank r the (c P + r)-th; the interleaved 1F1B schedule with "
                                     "overlapped p2p (the --accumulate micro-batches a multiple of P)")
P2P_SEND_WAIT = click.option("--p2p-send-wait", type=click.Choice(list(SEND_WAITS)), default=None,
                             help="with --virtual-pipeline > 1: when a steady-state activation send is "
                                  "waited for: immediate (Megatron-Core from 2026-04-16) or deferred to "
                                  "the next forward's send, overlapping the backward (earlier releases, "
                                  "as NeMo 24.x-25.x ran) (default: immediate)")
P2P_OVERLAP = click.option("--p2p-overlap/--no-p2p-overlap", default=None,
                           help="with --virtual-pipeline > 1: Megatron's overlap_p2p_comm; off, the "
                                "blocking batch_isend_irecv calls (batch_p2p_comm), one per forward "
                                "and backward pair in the steady state (default: on)")
CONTEXT_PARALLEL = click.option("--context-parallel", type=count(1, 1024), default=1, show_default=True,
                                help="Megatron / Transformer Engine context parallelism (p2p KV ring, "
                                     "load-balanced causal split): C ranks of stride TP each hold 1/C of "
                                     "every sequence, passing key/value chunks around the ring beside each "
                                     "attention step; gradients are reduced over GPUs / TP ranks, replicas "
                                     "are GPUs / (TP x C) (allreduce, fsdp, distopt)")
CONTEXT_PARALLEL_IMPL = click.option(
    "--context-parallel-impl", type=click.Choice(list(CP_IMPLS)), default=None,
    help="with --context-parallel > 1: whose implementation: te (Transformer Engine's p2p ring, "
         "Megatron / NeMo) or PyTorch's experimental context_parallel as torchtitan runs it, "
         "its KV rotater torch-allgather (torchtitan's default) or torch-alltoall: per-step SDPA "
         "calls merged in FP32, FP32 dKV passed on (default: te)")
NCCL_ENV = click.option("--nccl-env", multiple=True, metavar="NAME=BYTES", callback=_nccl_env,
                        help="a buffer/chunk size the run sets, e.g. NCCL_BUFFSIZE=8388608 (also "
                             "NCCL_LL_BUFFSIZE, NCCL_LL128_BUFFSIZE, NCCL_P2P_NET/NVL/PCI_CHUNKSIZE); repeatable")

SEED = click.option("--seed", type=count(0, MAX_SEED), default=0, show_default=True,
                    help="random seed of --jitter (which GPU draws which factor, corpus batches)")

NCCL_VERSION = click.option("--nccl-version", callback=_nccl_version,
                            help="NCCL release whose algorithm choice and kernels the collectives "
                                 "follow, 2.18 to 2.30 (e.g. 2.21.5) (default: the newest, 2.30)")


def extra_option(help: str):
    """--option/-o KEY=VALUE (repeatable): strategy and scheduler parameters, the `extra`
    argument parse_kv reads."""
    return click.option("--option", "-o", "extra", multiple=True, help=help)


def _options(f):
    opts = [
        click.option("--topology", default="16x8", show_default=True,
                     help="NxG, PRESET:NxG, PRESET or a topology YAML file"),
        model_option(default="lstm-lm1b", show_default=True),
        click.option("--batch", type=count(1, MAX_BATCH), help="per-GPU batch (default: the model's)"),
        click.option("--seq", type=count(1, MAX_SEQ), help="sequence length (default: the model's)"),
        click.option("--dtype", type=click.Choice(["fp32", "tf32", "bf16", "fp16", "fp8"], case_sensitive=False),
                     help="training precision; bf16/fp16/fp8 = mixed precision (AMP) "
                          "(default: the model's)"),
        click.option("--amp", type=click.Choice(list(AMP_STYLES)),
                     help="mixed-precision style: autocast (FP32 softmax/LayerNorm outputs, FP32 embedding tables), o2 "
                          "(16-bit model, apex O2 / model.half()) or megatron (16-bit model, FP32 main_grad the "
                          "weight-gradient GEMMs accumulate into: Megatron-Core, NeMo) (default: the model's, else autocast)"),
        OPTIMIZER,
        RECOMPUTE,
        GRAD_COMPRESS,
        TENSOR_PARALLEL,
        SEQUENCE_PARALLEL,
        PIPELINE_PARALLEL,
        VIRTUAL_PIPELINE,
        P2P_SEND_WAIT,
        P2P_OVERLAP,
        CONTEXT_PARALLEL,
        CONTEXT_PARALLEL_IMPL,
        click.option("--accumulate", type=count(1, MAX_ACCUMULATE),
                     help="gradient accumulation: micro-batches (of --batch) per optimizer step "
                          "(default: the model's global batch over the GPUs' batches, else 1)"),
        click.option("--accumulate-sync", type=click.Choice(["last", "every"]),
                     help="with --accumulate: gradients synchronised after the last micro-batch "
                          "(DDP no_sync) or after every one (apex DDP) (default: the model's, else last)"),
        click.option("--jitter", help="per-GPU compute-time variation: normal:CV, lognormal:SIGMA, "
                                      "uniform:HALFWIDTH, seq:WIDTH (padded lengths in a bucket), "
                                      "bucket:K or shuffle (each GPU's batch of --corpus sentences, "
                                      "K length buckets or none, padded to its longest), "
                                      "maxtokens (fairseq --max-tokens batches of --corpus "
                                      "sentences, --batch x --seq tokens each), "
                                      "or trace (the --trace's measured rank skew); none: off "
                                      "(default: the model's, else none)"),
        click.option("--gpu-variation", type=FiniteFloat(0, 0.99), default=None,
                     help="GPU-to-GPU speed variation of one SKU (whisker span / median; the "
                          "slowest of N GPUs sets the step); default: 0.08 on GPUs (Sinha et al. "
                          "SC22), 0 on CPU devices"),
        click.option("--iterations", type=int, default=4, show_default=True,
                     help="simulated iterations (the first is warm-up)"),
        SEED,
        click.option("--trace", type=click.Path(dir_okay=False), help="calibration trace (traces/*.yaml)"),
        click.option("--straggler", help="gpu:RANK:FACTOR or node:NODE:FACTOR (compute slowdown)"),
        click.option("--interference", type=FiniteFloat(0, 100), default=None,
                     help="compute slowdown while collectives run (0.1 = 10 % slower); default: "
                          "the trace's or topology's measured fabric.interference, else 0.189 on "
                          "GPUs (arXiv 2507.03114 mean), 0 on CPU devices"),
        click.option("--comm-interference", type=FiniteFloat(0, 100), default=None,
                     help="collective slowdown while compute runs; default: the trace's or "
                          "topology's measured fabric.comm_interference, else 0"),
        click.option("--untie-outputs", is_flag=True, default=False,
                     help="give tied output projections their own weight (as calibrate's real steps): "
                          "dense for a full softmax, a sparse table of its own for a sampled one"),
        click.option("--zipf", "zipf_s", type=FiniteFloat(), default=1.05, show_default=True,
                     callback=_zipf_positive,
                     help=f"Zipf exponent s of the token (or id) distribution, 0 <= s <= {MAX_ZIPF_S:g} "
                          "(0: uniform, every row alike)"),
        CORPUS,
        LENGTHS,
        PADDING,
        click.option("--nccl-algo", callback=_nccl_filter("algo"),
                     help="NCCL_ALGO-style override, e.g. Ring or ^NVLS"),
        click.option("--nccl-proto", callback=_nccl_filter("proto"),
                     help="NCCL_PROTO-style override, e.g. Simple"),
        NCCL_ENV,
        NCCL_VERSION,
        extra_option("strategy/scheduler parameter KEY=VALUE (e.g. shard=rows, partition_bytes=4e6)"),
    ]
    for opt in reversed(opts):
        f = opt(f)
    return f


simulation_options = _options


def split_pairs(items, flag: str, form: str = "KEY=VALUE") -> list[tuple[str, str]]:
    """'a=b' flag values -> [(a, b)], stripped; anything without '=' is one-line bad input."""
    pairs = []
    for item in items:
        if "=" not in item:
            raise InputError(f"{flag} {item!r}: expected {form}")
        key, value = item.split("=", 1)
        if not key.strip():
            raise InputError(f"{flag} {item!r}: no KEY before '=' (expected {form})")
        pairs.append((key.strip(), value.strip()))
    return pairs


def parse_kv(items) -> dict:
    """--option KEY=VALUE pairs, numbers converted, dashes in keys as underscores."""
    out = {}
    for key, value in split_pairs(items, "--option"):
        text = value
        for conv in (int, float):
            try:
                value = conv(value)
                break
            except ValueError:
                continue
        if isinstance(value, float) and not math.isfinite(value):
            # the user's own spelling: 1e999 overflows to inf, which they did not type
            raise InputError(f"--option {key}={text}: not a finite number")
        key = key.replace("-", "_")
        if key in out and out[key] != value:
            # click keeps both; the last would silently win
            raise InputError(f"--option {key}: given twice, {out[key]!r} and {value!r}")
        out[key] = value
    return out


def config_from_options(options: dict, **fixed) -> tuple[SimulationConfig, dict]:
    """The SimulationConfig of the shared flags, and the --option bag (KEY -> value) for
    the caller to route: to one strategy and scheduler (engine.config.with_options) or
    across a compare matrix."""
    options = dict(options)
    check_amp_flags(options.get("dtype"), options.get("amp"))
    check_corpus(options.get("corpus"))
    extra = parse_kv(options.pop("extra", ()))
    options.update(optimizer_override(options.pop("optimizer", None)))
    if options.get("iterations") is not None and not 2 <= options["iterations"] <= MAX_ITERATIONS:
        raise InputError(f"--iterations {options['iterations']}: need 2..{MAX_ITERATIONS} "
                         f"(the first is warm-up)")
    return apply_trace_defaults(SimulationConfig(**options, **fixed), explicit_flags()), extra


def optimizer_override(optimizer: str | None) -> dict:
    """--optimizer as the SimulationConfig field it sets: a model override
    (embsim.workload.overrides); nothing without the flag."""
    return {} if optimizer is None else {"model_overrides": {"optimizer": {"name": optimizer}}}


def trainer_fields(optimizer: str | None, corpus: str | None, lengths: str | None,
                   padding: str | None, nccl_env: tuple, nccl_version: str | None = None) -> dict:
    """The trainer and NCCL flags (OPTIMIZER .. NCCL_ENV) as JSON-able SimulationConfig fields
    for sweep points (scale), each checked here so a bad value names its flag, not a point."""
    parse_lengths(lengths)
    parse_padding(padding)
    check_corpus(corpus)
    return {"corpus": corpus, "lengths": lengths, "padding": padding,
            "nccl_env": [list(pair) for pair in nccl_env], "nccl_version": nccl_version,
            **optimizer_override(optimizer)}


def check_corpus(corpus: str | None) -> None:
    """--corpus checked at the flag: missing, a folder, a pipe, a name too long to look up,
    or not UTF-8 text (workload.tokens.check_corpus_text) is one line naming the flag."""
    if corpus is not None:
        try:
            check_corpus_text(corpus)
        except InputError as exc:
            raise InputError(f"--corpus {exc}") from None


def explicit_flags() -> set[str]:
    """Parameters the user gave (command line or environment), not click's defaults."""
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return set()
    return {name for name in ctx.params
            if ctx.get_parameter_source(name) not in (click.core.ParameterSource.DEFAULT,
                                                      click.core.ParameterSource.DEFAULT_MAP)}
