"""SimulationConfig: what one simulation is asked to do, checked when it is made."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from ..collectives.constants import constants_for
from ..errors import InputError
from ..options import option_keys, route
from ..schedulers import SCHEDULERS
from ..strategies import STRATEGIES
from .accumulate import check_accumulate, check_sync
from .iteration_rate import check_average
from .jitter import parse_jitter
from .gpu_speed import check_variation
from ..workload.padding import parse_padding
from ..nccl_names import parse_filter
from ..workload.precision import canonical_amp, canonical_dtype, check_amp_style, precision
from ..workload.grad_compress import GradCompress
from ..workload.recompute import Recompute
from ..workload.pipeline_parallel import PipelineParallel
from ..workload.context_parallel import ContextParallel
from ..workload.tensor_parallel import TensorParallel
from .lengths import parse_lengths


@dataclass(frozen=True)
class SimulationConfig:
    topology: str = "16x8"
    model: str = "lstm-lm1b"
    batch: int | None = None
    seq: int | None = None
    strategy: str = "allreduce"
    scheduler: str = "fifo"
    # --option values, each for the one component that declares the key (see embsim.options)
    strategy_options: dict = field(default_factory=dict)
    scheduler_options: dict = field(default_factory=dict)
    iterations: int = 4
    seed: int = 0
    trace: str | None = None
    straggler: str | None = None
    # compute slowdown f while a collective runs, and collective slowdown g while compute
    # runs; None: measured (the trace's, on its own topology, else the topology's
    # fabric.interference / comm_interference), 0 where nothing was measured
    interference: float | None = None
    comm_interference: float | None = None
    zipf_s: float = 1.05
    corpus: str | None = None
    lengths: str | None = None     # sample-length distribution for --padding and --jitter's corpus forms
    padding: str | None = None     # how batches are padded (workload.padding); None: the model's, else max
    nccl_algo: str | None = None
    nccl_proto: str | None = None
    nccl_env: tuple = ()           # NCCL_BUFFSIZE & co as (NAME, bytes) pairs (collectives.nccl_env)
    nccl_version: str | None = None   # NCCL release whose choices and kernels are modelled (2.18-2.30); None: the newest
    hardware: dict = field(default_factory=dict)   # what-ifs: nic_gbit, nvlink_gbps, oversubscription
    efficiency_baseline: bool = True               # also simulate 1 GPU for scaling efficiency
    untie_outputs: bool = False                    # tied output projections get their own weight
    dtype: str | None = None       # training precision (fp32 tf32 bf16 fp16 fp8); None: the model's
    amp: str | None = None         # mixed-precision style: autocast | o2 (workload.precision); None: the model's, else autocast
    # micro-batches per optimizer step (gradient accumulation); None: the model's global
    # batch over the GPUs' batches if its zoo file names one, else 1
    accumulate: int | None = None
    # gradients synchronised after the last micro-batch or every one; None: the model's, else last
    accumulate_sync: str | None = None
    # how the throughput averages: "time" (work over elapsed time) or "iterations" (the
    # mean of per-iteration rates, engine.iteration_rate); None: the model's, else time
    throughput: str | None = None
    jitter: str | None = None      # per-GPU compute variation, e.g. normal:0.05 (embsim.engine.jitter); None: the model's; "none": off
    model_overrides: dict = field(default_factory=dict)   # tables/layers changes (workload.overrides)
    # GPU-to-GPU speed variation (4 IQR / median, engine.gpu_speed); None: the published 8 %
    # on GPU devices, none on CPU devices; 0: off
    gpu_variation: float | None = None
    # activation recomputation: none | full | every:K (workload.recompute); None: none
    recompute: str | None = None
    # 16-bit compression of the data-parallel all-reduce: none | fp16 | bf16
    # (workload.grad_compress); None: none
    grad_compress: str | None = None
    # Megatron tensor parallelism over K consecutive ranks of a node (workload.tensor_parallel)
    tensor_parallel: int = 1
    # its sequence parallelism; None: on whenever tensor_parallel > 1 (the NeMo recipes')
    sequence_parallel: bool | None = None
    # Megatron pipeline parallelism over P stages, 1F1B (workload.pipeline_parallel)
    pipeline_parallel: int = 1
    # its virtual pipeline: V model chunks per rank, Megatron's interleaved 1F1B
    # (workload.pipeline_interleaved); 1: the non-interleaved schedule
    virtual_pipeline: int = 1
    # when its steady-state activation sends are waited for (pipeline_interleaved.SEND_WAITS);
    # None: immediate (Megatron-Core from 2026-04-16)
    p2p_send_wait: str | None = None
    # its overlap_p2p_comm; False: the blocking batched calls (pipeline_interleaved);
    # None: overlapped (Megatron-LM's and NeMo's default for a virtual pipeline)
    p2p_overlap: bool | None = None
    # Megatron / Transformer Engine context parallelism over C ranks, the p2p KV ring
    # (workload.context_parallel)
    context_parallel: int = 1
    # whose CP: "te" (None, the default) or PyTorch's context_parallel with its KV rotater,
    # "torch-allgather" (torchtitan's default) or "torch-alltoall" (workload.torch_cp)
    context_parallel_impl: str | None = None

    def __post_init__(self):
        if not isinstance(self.iterations, int) or self.iterations < 2:
            raise InputError(f"--iterations {self.iterations}: need at least 2 (the first is warm-up)")
        for key in ("interference", "comm_interference"):
            if (getattr(self, key) or 0) < 0:
                raise InputError(f"--{key.replace('_', '-')} must be >= 0")
        if self.accumulate is not None:
            check_accumulate(self.accumulate)
        if self.accumulate_sync is not None:
            check_sync(self.accumulate_sync)
        if self.throughput is not None:
            check_average(self.throughput)
        parse_jitter(self.jitter)
        # one spelling whichever way the value came (flag, training file, sweep file):
        # TF32/float16 as tf32/fp16, recompute true/every:1 as full
        if self.dtype is not None:
            object.__setattr__(self, "dtype", canonical_dtype(self.dtype))
            precision(self.dtype)                 # an unknown precision: InputError naming --dtype
        if self.amp is not None:
            object.__setattr__(self, "amp", canonical_amp(self.amp))
            check_amp_style(self.amp)
        # NCCL_ALGO / NCCL_PROTO syntax, checked as the flags check it (a sweep's point too)
        parse_filter(self.nccl_algo, "algo", "--nccl-algo")
        parse_filter(self.nccl_proto, "proto", "--nccl-proto")
        if self.recompute is not None:
            object.__setattr__(self, "recompute", str(Recompute.parse(self.recompute)))
        if self.grad_compress is not None:
            object.__setattr__(self, "grad_compress", str(GradCompress.parse(self.grad_compress)))
        TensorParallel.of(self.tensor_parallel, self.sequence_parallel)
        PipelineParallel.of(self.pipeline_parallel, self.virtual_pipeline, self.p2p_send_wait,
                            self.p2p_overlap)
        ContextParallel.of(self.context_parallel, self.context_parallel_impl)
        check_variation(self.gpu_variation)
        parse_lengths(self.lengths)
        parse_padding(self.padding)
        if self.nccl_version is not None:
            constants_for(self.nccl_version)      # an unmodelled release: InputError naming --nccl-version


def tensor_parallel_of(cfg: SimulationConfig) -> TensorParallel:
    return TensorParallel.of(cfg.tensor_parallel, cfg.sequence_parallel)


def pipeline_parallel_of(cfg: SimulationConfig) -> PipelineParallel:
    return PipelineParallel.of(cfg.pipeline_parallel, cfg.virtual_pipeline, cfg.p2p_send_wait,
                               cfg.p2p_overlap)


def context_parallel_of(cfg: SimulationConfig) -> ContextParallel:
    return ContextParallel.of(cfg.context_parallel, cfg.context_parallel_impl)


def with_options(cfg: SimulationConfig, given: Mapping[str, Any], strict: bool = True) -> SimulationConfig:
    """Route one `--option KEY=VALUE` bag: each key to the strategy and/or the scheduler
    whose Options declare it. strict: a key neither declares is refused; otherwise it is
    left out (compare: it belongs to another combination)."""
    components = {f"strategy {cfg.strategy}": STRATEGIES.get(cfg.strategy).Options,
                  f"scheduler {cfg.scheduler}": SCHEDULERS.get(cfg.scheduler).Options}
    if not strict:
        declared = {k for t in components.values() for k in option_keys(t)}
        given = {k: v for k, v in given.items() if k in declared}
    st, sc = route(given, components).values()
    return replace(cfg, strategy_options={**cfg.strategy_options, **st},
                   scheduler_options={**cfg.scheduler_options, **sc})
