"""Megatron-Core's interleaved (virtual) pipeline schedule, as pure functions:

    --pipeline-parallel P --virtual-pipeline V

Source: NVIDIA/Megatron-LM megatron/core/pipeline_parallel/schedules.py at d98e8a6
(2026-08-22), forward_backward_pipelining_with_interleaving, get_pp_rank_microbatches and
get_schedule_table; the p2p calls of megatron/core/pipeline_parallel/p2p_communication.py.

Each of the P ranks holds V model chunks; virtual stage v = c P + r is chunk c of rank r
(Megatron's layer offset ((c P + r) L / (P V)), so the first chunk of rank 0 holds the
embedding and the last chunk of rank P - 1 the output layer and loss). A rank runs its
m V virtual micro-batches in the order of get_schedule_table: micro-batch groups of
microbatch_group_size_per_vp_stage (default P) micro-batches, each group through chunk 0,
then chunk 1, ... (depth-first). A backward virtual micro-batch k is the same table entry
with the chunk reversed (V - 1 - c). Warm-up: (P - r - 1) 2 + (V - 1) P forwards, capped
at m V; then one forward and one backward per step; then the cool-down backwards.
Megatron refuses a group size above m or below P, and a last group of 0 < m mod P < P
micro-batches: with the default group size, m must be a multiple of P.

The p2p calls are those of the overlap_p2p_comm path (overlap_p2p_comm: True,
batch_p2p_comm: False: Megatron-LM's default for the interleaved schedule, its
--no-overlap-p2p-communication flag, and what every NeMo launcher config with a virtual
pipeline sets), without overlap_p2p_comm_warmup_flush (default False), with
deallocate_pipeline_outputs (set by Megatron-LM's argument_utils and NeMo):

- before the first forward a blocking recv_forward (not on rank 0);
- each warm-up forward: a blocking send_forward_recv_forward; after the last, the first
  backward's gradient receive posted asynchronously (send_backward_recv_backward);
- each steady step: wait for the forward's pending receive, the forward, post its send and
  the next forward's receive, wait for the send (deallocate_pipeline_outputs); wait for the
  backward's pending receive, the backward, post its send and the next backward's receive,
  then wait for the previous backward's send;
  the forward's send waited for at once is `send_wait="immediate"`, Megatron-Core from
  260cba7 (2026-04-16, "fix: wait for async P2P send before deallocating output tensor");
  before it (`send_wait="deferred"`, the releases NeMo 24.x and 25.x shipped) the
  forward's send was waited for only when the next forward's send was posted, as the
  backward's still is (at 8a78edd, 2024-07: all of a forward call's handles at the start
  of the next forward, after the backward between them), so a send overlaps the backward;
- each cool-down backward: wait for a pending receive, the backward, a blocking
  send_backward_recv_backward; at the end, wait for the last backward send.

`overlap=False` is the path Megatron takes with overlap_p2p_comm False and batch_p2p_comm
True (Megatron-Core's ModelParallelConfig defaults; NeMo's Nemotron-340B launcher config
sets both): every call is one torch.distributed.batch_isend_irecv of its sends and
receives, all waited for before it returns (p2p_communication.py _batched_p2p_ops and
_communicate: at d98e8a6 lines 22-57 and 379-419, at 8a78edd lines 121-166 and 349-365), so
no transfer overlaps compute. schedules.py forward_backward_pipelining_with_interleaving at
d98e8a6 (warm-up lines 1542-1662, steady 1900-1951, cool-down 1954-2059; the same calls at
8a78edd, lines 766-833, 973-1049, 1051-1075):

- before the first forward a blocking recv_forward (not on rank 0);
- each warm-up forward, then a blocking send_forward_recv_forward; after the last (unless
  every micro-batch is a warm-up one) instead one send_forward_backward_recv_forward_backward
  that also receives the first backward's gradient (not on rank P - 1);
- each steady step: the forward, the backward, then ONE blocking
  send_forward_backward_recv_forward_backward: the forward's activation and the backward's
  gradient sent, the next forward's input and the next backward's gradient received;
- each cool-down backward, then a blocking send_backward_recv_backward (a blocking
  recv_backward first when every micro-batch was a warm-up one).

The receive flags are the overlapped path's (recv_tensor_from_previous_stage; 8a78edd's
warm-up test on chunk k + 1 is the same one for the default group size P).
batch_p2p_sync's torch.cuda.synchronize() after each call (default True; d98e8a6 line 421,
8a78edd line 368) is not modelled:
a call waits for its own transfers, not for the gradient syncs in flight.

Which tensor a receive gets is not named in the schedule (Megatron buffers them per
chunk); NCCL matches sends and receives between two ranks in order, and so does
`match_transfers` here. Gradient sync: Megatron's align_grad_reduce (the default in
Megatron-LM and NeMo) makes grad_sync_func the chunks' start_grad_sync, called after
backward virtual micro-batch k for the chunk whose last micro-batch was backward virtual
micro-batch k - r (so that all ranks launch together); chunks not synchronised by the end
of the cool-down are launched then. Parameter sync is not aligned (align_param_gather
defaults to False): a chunk's distributed-optimizer gathers are its forward pre-hooks'.
"""

from __future__ import annotations

from functools import lru_cache

from ..errors import InputError

# a transfer of the canonical program: (kind "act" | "grad", micro-batch, sender virtual
# stage, "send" | "recv")
Transfer = tuple[str, int, int, str]


def check_micro_batches(P: int, V: int, m: int) -> None:
    """Megatron's refusals of the micro-batch count with the default group size P."""
    if m < P or m % P:
        raise InputError(f"--virtual-pipeline {V}: the interleaved schedule needs the micro-batch "
                         f"count (--accumulate, {m}) to be a multiple of --pipeline-parallel {P} "
                         f"(Megatron refuses microbatch_group_size_per_vp_stage P > m and a last "
                         f"group of 0 < m mod P < P micro-batches)")


def schedule_table(m: int, V: int, group: int) -> list[tuple[int, int]]:
    """(micro-batch, chunk) of each forward virtual micro-batch (get_schedule_table)."""
    table = []
    for lo in range(0, m, group):
        hi = m if lo + group >= m else lo + group
        table += [(i, c) for c in range(V) for i in range(lo, hi)]
    return table


def warmup(P: int, V: int, rank: int, m: int, group: int) -> int:
    """get_pp_rank_microbatches' warm-up count, capped at m V."""
    return min((P - rank - 1) * 2 + (V - 1) * group, m * V)


SEND_WAITS = ("immediate", "deferred")


def check_send_wait(send_wait: str) -> None:
    if send_wait not in SEND_WAITS:
        raise InputError(f"--p2p-send-wait {send_wait!r}: expected one of {', '.join(SEND_WAITS)}")


def program(P: int, V: int, rank: int, m: int, group: int | None = None,
            send_wait: str = "immediate", overlap: bool = True) -> list:
    """Rank `rank`'s program: ("F", chunk, micro-batch), ("B", chunk, micro-batch),
    ("post", sends, n_recv_act, n_recv_grad) posting a call's transfers (sends as
    ("act" | "grad", micro-batch, sender virtual stage); receives only counted: which tensor
    each gets is `match_transfers`'), ("wait", call index, "send" | "recv" | "all") waiting for
    the transfers of an earlier post (its index among the posts), and ("sync", chunk)
    launching a chunk's gradient sync. `send_wait`: when a steady-state forward's
    activation send is waited for (SEND_WAITS; the module's docstring). `overlap` False:
    the blocking batched calls of the overlap_p2p_comm False path (`send_wait` moot)."""
    check_send_wait(send_wait)
    G = P if group is None else group
    total = m * V
    table = schedule_table(m, V, G)
    warm = warmup(P, V, rank, m, G)
    rest = total - warm
    all_warm = warm >= total
    first, last = rank == 0, rank == P - 1
    prog: list = []
    posts = [0]

    def chunk(k: int, forward: bool) -> int:
        c = table[k % total][1]
        return c if forward else V - 1 - c

    def mb(k: int) -> int:
        return table[k][0]

    def receives(k: int, forward: bool) -> bool:
        """recv_tensor_from_previous_stage's flag."""
        leading = first if forward else last
        end = V - 1 if forward else 0
        if leading:
            nxt = chunk(k + 1, forward) if k < P - 1 else chunk(k - (P - 1), forward)
            return k >= P - 1 and nxt != end
        return True

    def call(send=None, recv_act=False, recv_grad=False, blocking=True, send2=None) -> int | None:
        sends = tuple(x for x in (send, send2) if x)
        if not sends and not recv_act and not recv_grad:
            return None
        prog.append(("post", sends, int(recv_act), int(recv_grad)))
        idx = posts[0]
        posts[0] += 1
        if blocking:
            prog.append(("wait", idx, "all"))
        return idx

    def act_send(k: int):
        c = chunk(k, True)
        return None if (c == V - 1 and last) else ("act", mb(k), c * P + rank)

    def grad_send(k: int):
        c = chunk(k, False)
        return None if (c == 0 and first) else ("grad", mb(k), c * P + rank)

    synced: set[int] = set()

    def backward(k: int) -> None:
        prog.append(("B", chunk(k, False), mb(k)))
        j = k - rank           # grad_sync_func, aligned across ranks
        if j >= 0 and mb(j) == m - 1:
            c = chunk(j, False)
            prog.append(("sync", c))
            synced.add(c)

    def finish() -> list:
        for c in range(V):
            if c not in synced:
                prog.append(("sync", c))
        return prog

    if not overlap:
        call(recv_act=not first)    # recv_forward of the first forward
        for k in range(warm):
            recv = receives(k, True) and k != total - 1
            prog.append(("F", chunk(k, True), mb(k)))
            # the last warm-up forward's call also receives the first backward's gradient
            grad = k == warm - 1 and not all_warm and not last
            call(act_send(k), recv_act=recv, recv_grad=grad)
        for k in range(rest):
            fk, bk = k + warm, k
            prog.append(("F", chunk(fk, True), mb(fk)))
            backward(bk)
            call(act_send(fk), recv_act=receives(fk, True) and k != rest - 1,
                 recv_grad=receives(bk, False), send2=grad_send(bk))
        if all_warm and not last:
            call(recv_grad=True)
        for k in range(rest, total):
            backward(k)
            call(grad_send(k), recv_grad=receives(k, False) and k != total - 1)
        return finish()

    pending_act: list[int] = []     # recv_prev_wait_handles
    pending_grad: list[int] = []    # recv_next_wait_handles
    call(recv_act=not first)        # recv_forward of the first forward
    for k in range(warm):
        recv = receives(k, True) and k != total - 1
        prog.append(("F", chunk(k, True), mb(k)))
        call(act_send(k), recv_act=recv)
        if k == warm - 1 and not all_warm and not last:
            pending_grad.append(call(recv_grad=True, blocking=False))
    send_grad_wait = None
    send_act_wait = None            # deferred: the previous forward's send
    for k in range(rest):
        fk, bk = k + warm, k
        if not (chunk(fk, True) == 0 and first) and pending_act:
            prog.append(("wait", pending_act.pop(0), "recv"))
        prog.append(("F", chunk(fk, True), mb(fk)))
        recv = receives(fk, True) and k != rest - 1
        idx = call(act_send(fk), recv_act=recv, blocking=False)
        if send_act_wait is not None:
            prog.append(("wait", send_act_wait, "send"))
            send_act_wait = None
        if idx is not None:
            if recv:
                pending_act.append(idx)
            if act_send(fk) is not None:
                if send_wait == "immediate":
                    prog.append(("wait", idx, "send"))
                else:
                    send_act_wait = idx
        if not (chunk(bk, False) == V - 1 and last) and pending_grad:
            prog.append(("wait", pending_grad.pop(0), "recv"))
        backward(bk)
        recv = receives(bk, False)
        idx = call(grad_send(bk), recv_grad=recv, blocking=False)
        if send_grad_wait is not None:
            prog.append(("wait", send_grad_wait, "send"))
            send_grad_wait = None
        if idx is not None:
            if grad_send(bk) is not None:
                send_grad_wait = idx
            if recv:
                pending_grad.append(idx)
    if send_act_wait is not None:
        prog.append(("wait", send_act_wait, "send"))
    if all_warm and not last:
        call(recv_grad=True)
    for k in range(rest, total):
        if not (chunk(k, False) == V - 1 and last) and k != 0 and pending_grad:
            prog.append(("wait", pending_grad.pop(0), "recv"))
        recv = receives(k, False) and k != total - 1
        backward(k)
        call(grad_send(k), recv_grad=recv)
    if send_grad_wait is not None:
        prog.append(("wait", send_grad_wait, "send"))
    return finish()


def match_transfers(P: int, V: int, programs: list) -> list:
    """Every rank's program with its transfers named: ("post", transfers) and ("wait",
    transfers), each transfer (kind, micro-batch, sender virtual stage, side). A rank's
    activations go to rank r + 1 mod P, its gradients to r - 1 mod P; NCCL pairs each
    pair's sends and receives in order."""
    sent: dict[tuple[str, int], list] = {}
    for r, prog in enumerate(programs):
        for e in prog:
            if e[0] == "post":
                for kind, i, v in e[1]:
                    sent.setdefault((kind, r), []).append((kind, i, v))
    taken = {key: 0 for key in sent}
    out = []
    for r, prog in enumerate(programs):
        named, by_post = [], []
        for e in prog:
            if e[0] == "post":
                tr = [(kind, i, v, "send") for kind, i, v in e[1]]
                for kind, n, peer in (("act", e[2], (r - 1) % P), ("grad", e[3], (r + 1) % P)):
                    for _ in range(n):
                        queue = sent.get((kind, peer), [])
                        at = taken.get((kind, peer), 0)
                        if at >= len(queue):
                            raise AssertionError(f"rank {r}: a {kind} receive from rank {peer} no "
                                                 f"send matches")
                        taken[(kind, peer)] = at + 1
                        tr.append((*queue[at], "recv"))
                by_post.append(tuple(tr))
                named.append(("post", tuple(tr)))
            elif e[0] == "wait":
                tr = by_post[e[1]]
                if e[2] != "all":
                    tr = tuple(t for t in tr if t[3] == e[2])
                named.append(("wait", tr))
            else:
                named.append(e)
        out.append(named)
    for key, queue in sent.items():
        if taken.get(key, 0) != len(queue):
            raise AssertionError(f"{key}: {len(queue) - taken.get(key, 0)} sends never received")
    return out


@lru_cache(maxsize=16)
def programs(P: int, V: int, m: int, group: int | None = None,
             send_wait: str = "immediate", overlap: bool = True) -> tuple:
    """Every rank's named program (program, then match_transfers)."""
    return tuple(tuple(p) for p in match_transfers(P, V, [program(P, V, r, m, group, send_wait, overlap)
                                                         for r in range(P)]))


def peak_activations(prog, per_chunk) -> float:
    """The most activation bytes a rank holds at once: forward-without-backward micro-batches
    of its chunks, `per_chunk[c]` bytes each (a chunk's one-micro-batch activations), their
    largest sum over the program."""
    alive = [0] * len(per_chunk)
    best = 0.0
    for e in prog:
        if e[0] == "F":
            alive[e[1]] += 1
            best = max(best, sum(n * b for n, b in zip(alive, per_chunk)))
        elif e[0] == "B":
            alive[e[1]] -= 1
    return best
