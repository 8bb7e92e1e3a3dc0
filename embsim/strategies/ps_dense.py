"""`ps --option payload=dense`: BytePS as shipped, a dense parameter server.

BytePS (bytedance/byteps @f5df52fe2794d4e3d2931a9dcfa5ca56151062a1, the newest commit,
2022-02-09) has no sparse path: README.md "Limitations and Future Plans ... not implemented
yet: Sparse model training", and its PyTorch DistributedOptimizer (byteps/torch/__init__.py
_register_hooks / _push_pull_grad_async) gives every parameter a dense `p.grad =
p.data.new(p.size()).zero_()` and push_pulls that whole tensor, whatever the layer: an
nn.Embedding's vocab x dim gradient included. So EmbRace's BytePS baseline, ByteScheduler's
PS charts and P3 pushed and pulled every table whole. What this module plans, per parameter
tensor (one per layer: BytePS keys weight and bias apart, [ASSUMPTION] one tensor a layer):

- partitions: the tensor is cut into BYTEPS_PARTITION_BYTES pieces (default 4,096,000,
  byteps/common/global.cc `_partition_bytes`, byteps/docs/env.md "The default and recommended value
  is 4096000"), rounded up to a multiple of local_size x page size (global.cc: RoundUp to
  `_local_size * _pagesize`); here the `server_partition_params` option x 4 bytes. Partition
  j of the i-th declared tensor has key (i << 16) + j (operations.cc InitTensor: `start_key =
  context.declared_key << 16`) and goes to server djb2(decimal key) % servers
  (global.cc EncodeDefaultKey, BYTEPS_KEY_HASH_FN default "djb2"); tensors are declared in
  sorted name order (torch/__init__.py: `for name in sorted(...): declare("Gradient."+name)`),
  here sorted layer names. `server_sharding=hashed|contiguous`: every tensor split evenly
  over the servers instead (all of a dense tensor's elements weigh alike).
- the node's reduce (local_aggregation=true): BytePS's push queue (operations.cc
  GetPushQueueList) runs REDUCE, COPYD2H, then PUSH from the root device only; REDUCE
  (core_loops.cc PostNcclCalls, from RunRootNcclLoopOnce) is an ncclReduceScatter over the node's
  GPUs, each keeping 1/G of the partition summed, and COPYD2H copies each GPU's 1/G into the
  node's shared host buffer (cudaMemcpyAsync of `num_elem_per_gpu` elements at
  `nccl_rank * num_elem_per_gpu`). So one push per node, of the node's sum. The pull queue
  mirrors it: PULL into host memory, COPYH2D of each GPU's 1/G, then ncclAllGather (the
  BROADCAST stage). Here the reduce-scatter is the node's ring (collectives.demand
  ring_demand: each GPU sends (G-1)/G of the tensor to its successor) and the copy each
  GPU's 1/G over the PCIe / host tree (ps_local), carried together on the push's own stream
  before it (NodeCopy; [ASSUMPTION] the two pipelined over partitions, as BytePS's queues
  do, at the links' rate: NCCL's own efficiency on them is not applied); the pull's copy
  back and all-gather after it. The node's push then leaves through all its NICs as the
  rows payload's does (1/G per GPU route). No distinct-row union: a dense tensor has no
  rows to merge. local_aggregation=false: every GPU pushes and pulls the whole tensor itself
  (a worker per GPU without BytePS's reduce: TensorFlow's or MXNet's PS with one worker per
  GPU); pull=gpu: every GPU pulls the whole tensor.
- one push_pull per tensor: BytePS's API is one asynchronous push_pull (byteps.torch.ops
  push_pull_async_inplace, one handle per tensor) that the optimizer's step() waits for
  (torch/__init__.py: synchronize(), then the wrapped optimizer's step). So each tensor is
  one SyncTensor: its transfer the push (op ps_push: workers to servers, the servers' CPUs
  summing it on the push route's ps-cpu link) and, on the same stream after it, the pull
  (the servers' bytes back over the pull routes, collectives.servers server_transfer) with
  the node's copy back and all-gather. The layer's update, the workers' own optimizer step
  on their GPUs, waits for the whole push_pull; the servers only sum (byteps/docs/rationale.md:
  "after the PS sums up the data across the workers"; byteps/server/server.cc keeps one
  `stored->tensor` of each key's length and sums into it, no optimizer). Bytes per GPU and
  per op count the push (the pull's bytes ride among the copies and host work around it;
  the NICs' bytes, "into the network", count both). A scheduler partitions the push_pull
  whole, as ByteScheduler's MXNet PS task is a partition's push_pull (bytedance/byteps
  @2a75e49 bytescheduler/mxnet/kvstore_task.py `_post_communication`); its credit counts the
  push's bytes and is held until the pull ends, where ByteScheduler's task returns it when
  the push completes ("Called after push instead pull"): [ASSUMPTION] of the runtime.
- one node: BytePS is not distributed (operations.cc: COPYD2H and PUSH only when
  IsDistributed() or across PCIe switches): push_pull is its NCCL reduce and broadcast
  inside the machine, planned as DDP's AllReduce of every gradient.
- memory: every GPU holds every parameter, its dense gradient and its optimizer state, as
  DDP; host memory holds each server's partitions (one copy) and, on every GPU node, the
  worker's host copy of every tensor (operations.cc InitTensor: "We always allocate our own
  cpu buffer", shared memory of the tensor's size).
"""

from __future__ import annotations

import math

import numpy as np

from ..collectives.demand import ring_demand
from ..collectives.servers import server_transfer
from ..network import Demand
from ..plan.names import bwd_name
from ..plan.ops import NodeCopy, StrategyPlan, SyncTensor
from ..workload.host_memory import HostMemoryNeed, need_text
from ..workload.memory import memory_per_gpu
from ..words import counted
from .ps_local import server_matrix
from .common import dense_sync

PAYLOADS = ("rows", "dense")
PAGE_BYTES = 4096          # sysconf(_SC_PAGESIZE) on x86-64 Linux, BytePS's _pagesize
PARAM_BYTES = 4            # the partition option counts fp32 parameters (4,096,000 B)
KEY_BITS = 16              # partition keys: declared_key << 16 (operations.cc InitTensor)


def djb2(key: int) -> int:
    """BytePS's default key hash (global.cc Hash_DJB2): djb2 over the key's decimal digits,
    in uint64 arithmetic."""
    h = 5381
    for c in str(key).encode():
        h = (h * 33 + c) & 0xFFFF_FFFF_FFFF_FFFF
    return h


def partition_bytes(partition_params: int, local_size: int) -> int:
    """BytePS's partition bound: the option's bytes rounded up to local_size x page size
    (global.cc: `_partition_bytes = RoundUp(_partition_bytes, _local_size * _pagesize)`)."""
    unit = max(1, local_size) * PAGE_BYTES
    return -(-partition_params * PARAM_BYTES // unit) * unit


def tensor_shares(nbytes: float, declared: int, servers: int, sharding: str, bound: int) -> np.ndarray:
    """Each server's share of one tensor's bytes: its BytePS partitions keyed to servers by
    djb2 (`partitions`), or an even split (`hashed`, `contiguous`)."""
    if servers <= 1:
        return np.ones(max(1, servers))
    if sharding != "partitions":
        return np.full(servers, 1.0 / servers)
    parts = max(1, math.ceil(nbytes / bound))
    out = np.zeros(servers)
    for j in range(parts):
        size = min(bound, nbytes - j * bound) if j == parts - 1 else bound
        out[djb2((declared << KEY_BITS) + j) % servers] += size
    return out / out.sum()


def _node_ring(topo, n_nodes: int, g: int) -> Demand:
    """Every node's GPUs in a ring, each sending one byte to its successor (ring_demand per
    node: the node's own links, as NCCL's intra-node reduce-scatter uses them)."""
    return Demand.sum(ring_demand(topo, list(range(a * g, (a + 1) * g)), 1.0) for a in range(n_nodes))


def plan_dense(strategy, ctx) -> StrategyPlan:
    """The strategy plan of `payload=dense` (module docstring)."""
    o = strategy.options
    model, n, g = ctx.model, ctx.n_gpus, ctx.gpus_per_node
    tensors = dense_sync(ctx)
    table_of = {t.layer: t for t in ctx.tables.values()}
    nodes = max(1, n // g)
    if nodes == 1:
        notes = ("ps payload=dense on one node: BytePS runs no server there (not distributed: "
                 "its push queue copies to host memory and pushes only across machines), so its "
                 "push_pull is NCCL's reduce and broadcast inside the machine, planned as DDP's "
                 "AllReduce of every gradient (allreduce's plan)",)
        return StrategyPlan(sync=tuple(tensors), update_time=dict(ctx.layer_update),
                            memory=memory_per_gpu(model), notes=notes)
    count = strategy.server_count or nodes
    aggregate = o.local_aggregation and g > 1
    pull_node = aggregate and o.pull == "node"
    bound = partition_bytes(o.server_partition_params, g)
    host = strategy.host
    before = after = None
    if aggregate and host is not None:
        # one byte of tensor: the reduce-scatter's (G-1)/G to the ring successor plus each
        # GPU's 1/G into host memory; the pull's mirror image after it
        ring = _node_ring(strategy.node_topology, nodes, g).scaled((g - 1) / g)
        d2h = host.copies(g, 1.0 / g, to_host=True)[0]
        before = NodeCopy(d2h.latency, Demand.sum((ring, d2h.demand)))
        if pull_node:
            h2d = host.copies(g, 1.0 / g, to_host=False)[0]
            after = NodeCopy(h2d.latency, Demand.sum((ring, h2d.demand)))
    declared = {name: i for i, name in enumerate(sorted(t.layer for t in tensors))}
    topo, ranks = strategy.node_topology, tuple(range(n))
    sync, update, per_server = [], {}, np.zeros(count)
    total = 0.0
    table_notes = []
    for t in tensors:
        size = t.nbytes
        total += size
        shares = tensor_shares(size, declared[t.layer], count, o.server_sharding, bound)
        per_server += size * shares
        push = size / g if aggregate else size
        pull = size / g if pull_node else size
        # one push_pull per tensor (byteps_push_pull: one handle the optimizer's synchronize()
        # waits on): the push is the transfer; the pull follows it on the same stream, from
        # the servers back to every worker (its demand over the pull routes), with the node's
        # copy back and all-gather
        latency, _, pulled = server_transfer(topo, topo.capacity, "ps_pull", server_matrix(n, pull, shares), ranks)
        tail = NodeCopy(latency + (after.latency if after is not None else 0.0),
                        Demand.sum((pulled,) + ((after.demand.scaled(size),) if after is not None else ())))
        sync.append(SyncTensor(name=f"ps-push-pull:{t.layer}", layer=t.layer, op="ps_push", nbytes=push,
                               category="dense", ready_after=bwd_name(t.layer),
                               matrix=server_matrix(n, push, shares),
                               copy_before=None if before is None else NodeCopy(before.latency, before.demand.scaled(size)),
                               copy_after=tail))
        update[t.layer] = ctx.layer_update[t.layer]      # the worker's GPU optimizer, after the pull
        table = table_of.get(t.layer)
        if table is not None:
            table_notes.append(
                f"ps {table.table}: dense payload, the whole table's gradient {table.vocab:,} x {table.dim} x "
                f"{model.grad_elem_bytes(ctx.layer(t.layer))} B = {size / 1e6:,.1f} MB pushed and pulled a step "
                f"{'per node' if aggregate else 'per GPU'} ({table.unique_per_gpu:,.0f} rows of it touched "
                f"per GPU)")
    how = (f"a node's {g} GPUs reduce-scatter each tensor over their own links and copy 1/{g} each to "
           f"host memory before one push per node (BytePS's NCCL reduce and COPYD2H), "
           + (f"the pulled tensor copied back 1/{g} each and all-gathered" if pull_node
              else "every GPU pulling the whole tensor")
           if aggregate else "every GPU pushing and pulling every tensor whole (no reduce in the node)")
    if aggregate and host is None:
        how += "; the topology has no host vertex: the node's reduce and copies are not timed"
    load = per_server.max() / per_server.mean() if per_server.mean() > 0 else 1.0
    where = (f"BytePS partitions of {bound:,} B keyed to servers by djb2" if o.server_sharding == "partitions"
             else "every tensor split evenly over the servers")
    notes = [f"ps payload=dense (BytePS as shipped: no sparse path): every parameter's whole gradient, "
             f"{len(tensors)} tensors of {total / 1e6:,.1f} MB, pushed to and pulled from "
             f"{counted(count, o.servers + ' server')}; {how}; each tensor's push and pull are one "
             f"push_pull (BytePS's), the pull on the push's stream after it, among the copies and host work "
             f"around it (bytes per GPU count the push); the servers only sum, the GPUs step the optimizer",
             *table_notes,
             f"ps payload=dense: {where}: server load max/mean {load:.2f} (hottest server "
             f"{per_server.max() / per_server.sum() * 100:.1f} % of the pushed bytes)"]
    need = _host_need(strategy, per_server, total, count)
    workers = (f" and each GPU node its worker's host copy of every tensor, {total / 1e9:,.1f} GB"
               if o.servers == "colocated" else "")
    verdict = "" if need.fits is None else (": fits" if need.fits else ": does not fit")
    notes.append(f"ps payload=dense: the servers hold {per_server.sum() / 1e9:,.1f} GB of partitions (one "
                 f"copy, no optimizer state){workers}: {need_text(need)}{verdict}")
    return StrategyPlan(sync=tuple(sync), update_time=update,
                        memory=memory_per_gpu(model, host=need), notes=tuple(notes))


def _host_need(strategy, per_server: np.ndarray, total: float, count: int) -> HostMemoryNeed:
    """The servers' partitions, and with colocated servers the GPU node's own host copy of
    every tensor (BytePS's worker buffer) on the same node."""
    dedicated = strategy.options.servers == "dedicated"
    own = 0.0 if dedicated else total
    return HostMemoryNeed(holder="servers", per_node=int(per_server.max() + own),
                          capacity=strategy.server_host_bytes,
                          where="server machine" if dedicated else "node",
                          mean_per_node=int(per_server.mean() + own))
