"""Megatron-style pipeline parallelism (Narayanan et al. 2021, "Efficient Large-Scale
Language Model Training on GPU Clusters Using Megatron-LM"), the 1F1B schedule.

    --pipeline-parallel P

The model's transformer blocks are split into P contiguous stages of equal block count;
the layers before the first block (the embeddings) run on the first stage, the layers
after the last block (final norm, output layer, loss) on the last, as Megatron's GPT model
places them. Megatron refuses a block count P does not divide ("Number of layers should
be divisible by the pipeline-model-parallel size", megatron/training/arguments.py, without
its num_layers_in_first/last_pipeline_stage options, which are not modelled), and so does
embsim; a model with other layers between its blocks (an encoder-decoder's target
embedding) is refused too.

Rank layout: Megatron's tp-cp-dp-pp order, pipeline outermost: stage s holds ranks
[s W/P, (s+1) W/P) of W GPUs, so a stage spans W/P GPUs (its tensor-parallel groups and its
data-parallel groups inside it) and a stage-to-stage transfer goes from rank r to rank
r + W/P (NVLink when both are on one node, the NICs otherwise).

The schedule (megatron/core/pipeline_parallel/schedules.py,
forward_backward_pipelining_without_interleaving): stage s runs min(P - s - 1, m) warm-up
forwards, then m - warm-up steady 1F1B steps (a forward, then the oldest outstanding
backward), then the warm-up count of cool-down backwards. Its point-to-point calls are
blocking batches (batch_isend_irecv, then wait on every request): recv_forward before a
warm-up forward, send_forward after it; in the steady state send_forward_recv_backward
after each forward and send_backward_recv_forward after each backward (send_backward after
the last); recv_backward before and send_backward after a cool-down backward. Megatron's
non-interleaved schedule refuses overlap_p2p_comm, so nothing of it overlaps compute. The
first stage's recv_forward / send_backward and the last stage's send_forward /
recv_backward are no-ops. A transfer is one (seq / TP with sequence parallelism, micro
batch, hidden) tensor of the activations' dtype (get_tensor_shapes).

The data-parallel gradient all-reduce is enabled only for the last micro-batch's backward
(no_sync before it); finalize_model_grads then waits for it, and the optimizer's gradient
clipping (--clip-grad, default 1.0) all-reduces the squared gradient norm over the
model-parallel group (every stage of one replica) before any stage steps: every stage
finishes its step with the slowest. 1F1B keeps at most min(P - s, m) micro-batches'
activations alive on stage s (the first stage P): Korthikanti et al. 2022, section 4.2.2.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InputError
from . import pipeline_interleaved as vpp
from .tensor_parallel import BLOCK_KINDS, parallel_size

# one blocking batch of point-to-point transfers: ("act" | "grad", micro-batch, "send" | "recv")
Transfer = tuple[str, int, str]


@dataclass(frozen=True)
class PipelineParallel:
    size: int = 1
    # Megatron's virtual pipeline: model chunks per rank, the interleaved schedule when > 1
    # (workload.pipeline_interleaved)
    virtual: int = 1
    # when the interleaved schedule waits for a steady-state activation send
    # (pipeline_interleaved.SEND_WAITS); None: "immediate", today's Megatron-Core
    send_wait: "str | None" = None
    # the interleaved schedule's overlap_p2p_comm: False, the blocking batch_isend_irecv
    # path (pipeline_interleaved's docstring); None: True, Megatron-LM's and NeMo's default
    # for a virtual pipeline
    overlap: "bool | None" = None

    @classmethod
    def of(cls, size: "int | None", virtual: "int | None" = None,
           send_wait: "str | None" = None, overlap: "bool | None" = None) -> "PipelineParallel":
        pp = cls(parallel_size(size, "--pipeline-parallel"), parallel_size(virtual, "--virtual-pipeline"),
                 send_wait, overlap)
        if pp.virtual > 1 and not pp.on:
            raise InputError(f"--virtual-pipeline {pp.virtual}: needs --pipeline-parallel > 1 "
                             f"(model chunks interleave over the pipeline's ranks)")
        if send_wait is not None:
            vpp.check_send_wait(send_wait)
            if not pp.interleaved:
                raise InputError(f"--p2p-send-wait {send_wait}: only the interleaved schedule "
                                 f"(--virtual-pipeline > 1) overlaps its sends with compute")
        if overlap is not None:
            flag = "--p2p-overlap" if overlap else "--no-p2p-overlap"
            if not isinstance(overlap, bool):
                raise InputError(f"p2p_overlap {overlap!r}: expected true or false")
            if not pp.interleaved:
                raise InputError(f"{flag}: only the interleaved schedule (--virtual-pipeline > 1) "
                                 f"has overlap_p2p_comm (Megatron's non-interleaved one always "
                                 f"blocks on its batched sends)")
            if not overlap and send_wait is not None:
                raise InputError(f"--p2p-send-wait {send_wait}: only with overlapped p2p "
                                 f"(--no-p2p-overlap waits for every send in its call)")
        return pp

    @property
    def on(self) -> bool:
        return self.size > 1

    @property
    def interleaved(self) -> bool:
        return self.virtual > 1

    @property
    def chunks(self) -> int:
        """Virtual stages in all: P V (chunk c of rank r is virtual stage c P + r)."""
        return self.size * self.virtual

    def check_world(self, n_gpus: int, tp: int) -> None:
        """P must divide the model replicas' GPUs: world / TP."""
        if self.on and (n_gpus % tp or (n_gpus // tp) % self.size):
            raise InputError(f"--pipeline-parallel {self.size}: does not divide {n_gpus} GPUs / "
                             f"--tensor-parallel {tp} = {n_gpus / tp:g} (each stage spans world / P GPUs)")

    def stages(self, name: str, layers) -> tuple[tuple, ...]:
        """The layers (objects with .kind) of each (virtual) stage, in order: embeddings on
        the first, blocks split evenly, everything after the last block on the last. With a
        virtual pipeline the P V virtual stages, chunk c of rank r being virtual stage c P + r
        (Megatron's layer offset (c P + r) L / (P V))."""
        layers = tuple(layers)
        if not self.on:
            return (layers,)
        at = [i for i, l in enumerate(layers) if l.kind in BLOCK_KINDS]
        if not at:
            raise InputError(f"--pipeline-parallel {self.size}: model {name} has no transformer "
                             f"blocks to split")
        first, last = at[0], at[-1]
        if len(at) != last - first + 1:
            raise InputError(f"--pipeline-parallel {self.size}: model {name} has other layers between "
                             f"its transformer blocks (only a model whose blocks are contiguous is split)")
        n = len(at)
        if n % self.size:
            raise InputError(f"--pipeline-parallel {self.size}: does not divide model {name}'s {n} "
                             f"transformer blocks (Megatron requires it)")
        if n % self.chunks:
            raise InputError(f"--virtual-pipeline {self.virtual}: --pipeline-parallel {self.size} x "
                             f"{self.virtual} virtual stages do not divide model {name}'s {n} "
                             f"transformer blocks (Megatron requires layers per stage divisible "
                             f"by layers per virtual stage)")
        per = n // self.chunks
        out = []
        for s in range(self.chunks):
            lo = 0 if s == 0 else first + s * per
            hi = len(layers) if s == self.chunks - 1 else first + (s + 1) * per
            out.append(layers[lo:hi])
        return tuple(out)

    def warmup(self, stage: int, micro_batches: int) -> int:
        return min(self.size - stage - 1, micro_batches)

    def in_flight(self, stage: int, micro_batches: int) -> int:
        """Micro-batches whose activations stage `stage` holds at once under 1F1B."""
        return min(self.size - stage, micro_batches)

    def schedule(self, stage: int, micro_batches: int) -> list:
        """Stage `stage`'s 1F1B program: ("F", i), ("B", i) and ("P", transfers) entries,
        each P one blocking batch of Transfers (no-ops at the pipeline's ends left out)."""
        m, last = micro_batches, self.size - 1
        warm = self.warmup(stage, m)
        rest = m - warm
        prog: list = []

        def p2p(*transfers: Transfer) -> None:
            kept = tuple(t for t in transfers
                         if not ((t[0] == "act" and t[2] == "recv" and stage == 0)
                                 or (t[0] == "act" and t[2] == "send" and stage == last)
                                 or (t[0] == "grad" and t[2] == "recv" and stage == last)
                                 or (t[0] == "grad" and t[2] == "send" and stage == 0)))
            if kept:
                prog.append(("P", kept))

        for i in range(warm):
            p2p(("act", i, "recv"))
            prog.append(("F", i))
            p2p(("act", i, "send"))
        if rest > 0:
            p2p(("act", warm, "recv"))
        for j in range(rest):
            f, b = warm + j, j
            prog.append(("F", f))
            p2p(("act", f, "send"), ("grad", b, "recv"))
            prog.append(("B", b))
            if j == rest - 1:
                p2p(("grad", b, "send"))
            else:
                p2p(("grad", b, "send"), ("act", f + 1, "recv"))
        for j in range(warm):
            b = rest + j
            p2p(("grad", b, "recv"))
            prog.append(("B", b))
            p2p(("grad", b, "send"))
        return prog

    def check_micro_batches(self, micro_batches: int) -> None:
        """The interleaved schedule's micro-batch count (m a multiple of P); the
        non-interleaved one takes any."""
        if self.interleaved:
            vpp.check_micro_batches(self.size, self.virtual, micro_batches)

    def program(self, stage: int, micro_batches: int) -> list:
        """Rank `stage`'s program in one form for both schedules: ("F" | "B", chunk,
        micro-batch), ("post", transfers), ("wait", transfers) and ("sync", chunk), each
        transfer (kind, micro-batch, sender virtual stage, side). The non-interleaved
        schedule's blocking batches are a post and a wait of the same transfers."""
        if self.interleaved:
            return self.programs(micro_batches)[stage]
        out: list = []
        for e in self.schedule(stage, micro_batches):
            if e[0] in ("F", "B"):
                out.append((e[0], 0, e[1]))
                continue
            tr = tuple((kind, i, stage if side == "send" else (stage - 1 if kind == "act" else stage + 1),
                        side) for kind, i, side in e[1])
            out += [("post", tr), ("wait", tr)]
        return out

    def programs(self, micro_batches: int) -> list:
        return vpp.programs(self.size, self.virtual, micro_batches, None,
                            self.send_wait or "immediate", self.overlap is not False)

    def label(self, micro_batches: int) -> str:
        if not self.on:
            return ""
        if self.interleaved:
            wait = ", activation sends waited for at the next send (Megatron-Core before 2026-04-16)" \
                if self.send_wait == "deferred" else ""
            if self.overlap is False:
                wait = ", blocking batched p2p (no overlap_p2p_comm)"
            return (f"pipeline parallel {self.size} x {self.virtual} virtual (interleaved 1F1B, "
                    f"{micro_batches} micro-batches{wait})")
        return f"pipeline parallel {self.size} (1F1B, {micro_batches} micro-batches)"
