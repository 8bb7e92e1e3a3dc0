"""Pipeline parallelism's step plan: each stage's one-micro-batch plan (build_step_plan on
the stage's layers, its tensor-parallel collectives and data-parallel gradient
collectives included) unrolled into that stage's 1F1B program
(workload.pipeline_parallel.PipelineParallel.schedule), with the stage-to-stage transfers
as collectives of two stages. The engine runs one compute stream per stage (per rank
class of the stage, StepPlan.streams); the pipeline's bubble is what the stages' waits
for each other leave, nothing here computes it.

A stage's one-micro-batch stream is cut into its forward part (up to the first backward
op), its backward part (up to the first optimizer update) and its update part. Micro-batch
i's copy of an op is named `<layer>#m<i>`; a tensor-parallel collective (or any collective
a forward or backward op waits for) is copied per micro-batch, named `<name>#m<i>`; the
gradient collectives only once, ready after the last micro-batch's backward ops (Megatron
enables the data-parallel gradient sync for the last micro-batch only). Parameter-sized
ops of the forward or backward part (a DDP wrapper's bucket passes) run once too, in the
last micro-batch.

A blocking batch of point-to-point transfers is two zero-time ops on the stage's stream:
`pp-post` (the stage has reached the call: its side of every transfer in the batch is
posted) and `pp-wait` (which waits for every transfer of the batch). A transfer is a
`sendrecv` collective over the sender's and the receiver's ranks, ready when both stages
have posted it (NCCL's send completes only once the matching receive is posted), carried
over the rank pairs r -> r + W/P at once through the network model.

After the last backward, `pp-post` of the step waits for the stage's gradient collectives;
then the gradient-norm all-reduce of the optimizer's clipping (4 B over every model-parallel
group; with a tied output layer first Megatron's all-reduce of the word-embedding
gradient between the first and last stage), and the stage's optimizer updates wait for it.
"""

from __future__ import annotations

from dataclasses import replace

from ..plan.names import OpId, Role
from ..plan.ops import CommOp, ComputeOp, StepPlan, channel_family
from .tp_plan import CHANNEL as TP_CHANNEL

CHANNEL = "pp"


def is_pp_channel(channel: str) -> bool:
    """The pipeline's channels: "pp" (the step-end all-reduces) and one per stage pair
    ("pp:<s>", "pp:wrap"), whose sends queue in order as on that pair's NCCL communicator."""
    return channel == CHANNEL or channel.startswith(CHANNEL + ":")
FP32 = 4


def _mb(op_id: OpId, i: int) -> OpId:
    return replace(op_id, layer=f"{op_id.layer}#m{i}")


def _marker(stage: int, j: int, tag: str) -> ComputeOp:
    return ComputeOp(OpId(Role.EXTRA, f"stage{stage}#{j}", tag=tag), 0.0)


def _segments(stream) -> tuple[list, list, list]:
    ops = list(stream)
    b = next((i for i, o in enumerate(ops) if o.id.role in (Role.BWD, Role.BWD_INPUT)), len(ops))
    u = next((i for i, o in enumerate(ops) if i >= b and o.id.role is Role.UPDATE), len(ops))
    return ops[:b], ops[b:u], ops[u:]


class _Chunk:
    """One (virtual) stage's one-micro-batch plan, ready to be unrolled: its collectives
    copied per micro-batch or once, and its forward / backward ops per micro-batch."""

    def __init__(self, plan: StepPlan, m: int, once: set, sync_marker: "OpId | None"):
        self.plan, self.m = plan, m
        fwd, bwd, upd = _segments(plan.stream)
        self.fwd, self.bwd, self.upd = fwd, bwd, upd
        self.part = {o.id: "F" for o in fwd} | {o.id: "B" for o in bwd}
        # collectives a forward or backward op waits for run every micro-batch
        self.sized = sized = {o.id for o in fwd + bwd if o.param_sized}
        self.once = once
        per_mb = {c for op_id, lst in plan.comm_waits.items()
                  if op_id in self.part and op_id not in sized for c, _ in lst} - once
        # a tensor-parallel collective runs every micro-batch even where the op after it is
        # a parameter-sized one (a DDP bucket pass, run in the last micro-batch only)
        tp_comms = {c.name for c in plan.comms if channel_family(c.channel) == TP_CHANNEL}
        per_mb |= {c for op_id in sized for c, _ in plan.comm_waits.get(op_id, ()) if c in tp_comms}
        # ... and where it is the stage's first block's overlapped backward collective, which
        # the stage's first update waits for: each micro-batch's copy is waited for before the
        # stage goes on (its next post), not once at the step's end
        self.tail_tp = list(dict.fromkeys(c for op in upd for c, _ in plan.comm_waits.get(op.id, ())
                                          if c in tp_comms))
        per_mb |= set(self.tail_tp)
        changed = True
        while changed:          # and those they wait for (a chain of TP collectives)
            changed = False
            for c in plan.comms:
                if c.name in per_mb:
                    for d, _ in c.ready_after:
                        if isinstance(d, str) and d not in per_mb:
                            per_mb.add(d)
                            changed = True
        self.per_mb = per_mb
        self.last = m - 1
        # a parameter-sized op runs in the last micro-batch only: in the others, what
        # depends on it depends on the op before it instead (none: on nothing)
        self.alias, prev = {}, None
        for o in fwd + bwd:
            if o.param_sized:
                self.alias[o.id] = prev
            else:
                prev = o.id
        # the gradient collectives: launched by the chunk's grad sync (the interleaved
        # schedule's grad_sync_func) where there is one, else as their buckets' backward ops
        # finish. A strategy whose backward itself waits for a gradient collective (PyTorch
        # DDP's copy of a reduced bucket back, which Megatron's DDP does not have) keeps that:
        # its buckets cannot wait for a launch after the backward that waits for them
        self.sync_marker = sync_marker
        grads = {c.name for c in plan.comms} - per_mb - once
        if any(c in grads for o in fwd + bwd for c, _ in plan.comm_waits.get(o.id, ())):
            self.sync_marker = None

    def dep(self, d, i: int):
        if isinstance(d, str):
            return f"{d}#m{i}" if d in self.per_mb else d
        if d in self.sized and i != self.last:
            d = self.alias[d]
            if d is None:
                return None
        return _mb(d, i) if d in self.part else d

    def deps(self, ready_after, i: int) -> tuple:
        return tuple((x, o) for x, o in ((self.dep(d, i), o) for d, o in ready_after) if x is not None)

    def comms(self) -> list:
        out = []
        m, fwd, bwd = self.m, self.fwd, self.bwd
        for c in self.plan.comms:
            if c.name in self.per_mb:
                for i in range(m):
                    ready = self.deps(c.ready_after, i)
                    if not ready:     # ready at once: after the stage's first op of the micro-batch
                        ready = ((_mb((fwd + bwd)[0].id, i), 0),)
                    out.append(replace(c, name=f"{c.name}#m{i}", ready_after=ready))
            elif c.name in self.once:
                out.append(replace(c, ready_after=self.deps(c.ready_after, 0)))
            else:
                ready = self.deps(c.ready_after, self.last)
                if self.sync_marker is not None:
                    ready += ((self.sync_marker, 0),)
                out.append(replace(c, ready_after=ready))
        return out


def pipeline_plan(pp, micro_batches: int, stage_plans, stage_ranks, act_bytes: float,
                  tied_bytes: float = 0.0, tp: int = 1,
                  once_per_step=None) -> tuple[StepPlan, dict, dict]:
    """(the step plan, stage -> its stream, the rank groups its own collectives name:
    the stage pairs "pp:<s>" (and "pp:wrap", rank P - 1 to rank 0, with a virtual
    pipeline), "pp:embedding", "pp:model"; the stages' own groups are the caller's).
    `stage_plans`: each (virtual) stage's one-micro-batch StepPlan whose collectives name
    groups "<group>@s<rank>" and carry their ranks (virtual stage v = c P + r: chunk c of
    rank r); `stage_ranks`: each rank's (pipeline stage's) GPUs; `act_bytes`: one transfer's
    bytes; `tied_bytes`: the word-embedding gradient the first and last stage all-reduce
    (0: none).
    `once_per_step`: per (virtual) stage, the names of collectives a forward waits for that
    run once per optimizer step, not per micro-batch (Megatron's distributed optimizer
    gathers the updated parameters before the first micro-batch's forward only): the first
    micro-batch's ops wait for them, the later ones do not."""
    m, P, V = micro_batches, pp.size, pp.virtual
    comms: list[CommOp] = []
    waits: dict[OpId, list] = {}
    streams: dict[int, tuple[ComputeOp, ...]] = {}
    groups: dict[str, tuple] = {}
    transfer_deps: dict[str, list] = {}
    norm_deps: list = []

    def transfer_name(kind: str, i: int, sender: int) -> str:
        return f"pp:{kind}:s{sender}:m{i}"

    for s in range(P):
        chunks = []
        for c in range(V):
            v = c * P + s
            once = set(once_per_step[v]) if once_per_step else set()
            sync = (OpId(Role.EXTRA, f"stage{s}#sync{c}", tag="pp-sync") if pp.interleaved
                    else None)
            chunks.append(_Chunk(stage_plans[v], m, once, sync))
            comms += chunks[-1].comms()

        stream: list[ComputeOp] = []
        posted = waited = 0
        # the per-micro-batch waits of a skipped parameter-sized op: the next op takes them
        pending: list = []

        def take_pending(op_id) -> None:
            if pending:
                waits.setdefault(op_id, []).extend(pending)
                pending.clear()

        def add_op(ch: _Chunk, op: ComputeOp, i: int) -> None:
            new = replace(op, id=_mb(op.id, i))
            stream.append(new)
            take_pending(new.id)
            for d, o in ch.plan.comm_waits.get(op.id, ()):
                if d in ch.once and i != 0:
                    continue
                waits.setdefault(new.id, []).append((ch.dep(d, i), o))   # a comm: never None

        for entry in pp.program(s, m):
            if entry[0] in ("F", "B"):
                ch, i = chunks[entry[1]], entry[2]
                for op in (ch.fwd if entry[0] == "F" else ch.bwd):
                    if op.param_sized and i != ch.last:
                        pending.extend((ch.dep(d, i), o) for d, o in ch.plan.comm_waits.get(op.id, ())
                                       if d in ch.per_mb)
                        continue
                    add_op(ch, op, i)
                if entry[0] == "B":
                    pending.extend((ch.dep(d, i), 0) for d in ch.tail_tp)
            elif entry[0] == "sync":
                if chunks[entry[1]].sync_marker is not None:
                    marker = ComputeOp(chunks[entry[1]].sync_marker, 0.0)
                    stream.append(marker)
                    take_pending(marker.id)
            elif entry[0] == "post":
                post = _marker(s, posted, "pp-post")
                posted += 1
                stream.append(post)
                take_pending(post.id)
                for kind, i, sender, _ in entry[1]:
                    transfer_deps.setdefault(transfer_name(kind, i, sender), []).append((post.id, 0))
            else:
                wait = _marker(s, waited, "pp-wait")
                waited += 1
                stream.append(wait)
                take_pending(wait.id)
                for kind, i, sender, _ in entry[1]:
                    waits.setdefault(wait.id, []).append((transfer_name(kind, i, sender), 0))
        # the step's end: gradients reduced, then the clipping's norm, then the updates
        post = _marker(s, posted, "pp-post")
        stream.append(post)
        take_pending(post.id)
        grads = [(d, o) for ch in chunks for op in ch.upd for d, o in ch.plan.comm_waits.get(op.id, ())
                 if o == 0 and d not in ch.tail_tp]
        if grads:
            waits[post.id] = list(dict.fromkeys(grads))
        norm_deps.append((post.id, 0))
        first_update = next((ch.upd[0] for ch in chunks if ch.upd), None)
        if first_update is not None:
            waits.setdefault(first_update.id, []).append(("pp:grad-norm", 0))
        for ch in chunks:
            stream += ch.upd
            for op in ch.upd:
                for d, o in ch.plan.comm_waits.get(op.id, ()):
                    if d not in ch.tail_tp:
                        waits.setdefault(op.id, []).append((d, o))
        streams[s] = tuple(stream)

    n_per = len(stage_ranks[0])
    for name, deps in transfer_deps.items():
        _, kind, sender, _ = name.split(":")
        a = int(sender[1:]) % P
        b = (a + 1) % P if kind == "act" else (a - 1) % P
        if abs(a - b) == 1:
            lo = min(a, b)
            group = f"pp:{lo}"
            groups[group] = tuple((r, r + n_per) for r in stage_ranks[lo])
        else:   # a virtual pipeline's chunk boundary from rank P - 1 to rank 0 (and back)
            group = "pp:wrap"
            groups[group] = tuple((r, r + (P - 1) * n_per) for r in stage_ranks[0])
        ranks = tuple(sorted(stage_ranks[a] + stage_ranks[b]))
        # one channel per stage pair: PyTorch runs a pair's isend/irecv on that pair's own
        # NCCL communicator and stream (ProcessGroupNCCL's p2p key), so the pair's transfers
        # go one at a time in order while other pairs' run beside them
        comms.append(CommOp(name=name, op="sendrecv", nbytes=float(act_bytes), category="activation",
                            channel=group, ready_after=tuple(deps), priority=-1.0, tensors=(),
                            group=group, ranks=ranks))
    everyone = tuple(sorted(r for ranks in stage_ranks for r in ranks))
    norm_after = list(norm_deps)
    if tied_bytes > 0:
        ends = (norm_deps[0], norm_deps[-1])
        groups["pp:embedding"] = tuple((r, r + (P - 1) * n_per) for r in stage_ranks[0])
        comms.append(CommOp(name="pp:embedding-grads", op="all_reduce", nbytes=float(tied_bytes),
                            category="dense", channel=CHANNEL, ready_after=ends, priority=-1.0,
                            tensors=(), group="pp:embedding",
                            ranks=tuple(sorted(stage_ranks[0] + stage_ranks[-1]))))
        norm_after.append(("pp:embedding-grads", 0))
    # the model-parallel groups: one replica's TP x PP ranks (stage ranks [s W/P, (s+1) W/P),
    # TP groups of tp consecutive ranks inside them)
    groups["pp:model"] = tuple(tuple(s * n_per + d + t for s in range(P) for t in range(tp))
                               for d in range(0, n_per, tp))
    comms.append(CommOp(name="pp:grad-norm", op="all_reduce", nbytes=float(FP32), category="dense",
                        channel=CHANNEL, ready_after=tuple(norm_after), priority=-1.0, tensors=(),
                        group="pp:model", ranks=everyone))
    notes = tuple(dict.fromkeys(n for p in stage_plans for n in p.notes))
    plan = StepPlan(stream=streams[0], comms=tuple(comms),
                    comm_waits={k: tuple(dict.fromkeys(v)) for k, v in waits.items()}, notes=notes)
    return plan, streams, groups
