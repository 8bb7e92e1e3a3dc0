"""CPU-resident embedding tables: `--option table_device=cpu` of the `allgather` strategy.

What it models is TensorFlow 2.0-2.5's Keras `Embedding`: `build()` runs in an init_scope
(eager) and, "most sparse optimizers do not have GPU kernels defined", places the table on
`cpu:0` whenever a GPU is present (keras-team/keras @9c266106, the sync "where TF 2.5 RC is
cut": keras/layers/embeddings.py `build`, `if tf.executing_eagerly() and
tf.config.list_logical_devices('GPU'): with tf.compat.v1.device('cpu:0')`; removed in
@8a96b50b, 2021-03-30, so Keras 2.6+ keeps tables on the GPU). Each worker process then
holds a full copy of the table and its optimizer state in host memory, and per step:

- forward: the lookup (ResourceGather, colocated with the CPU variable) gathers the batch's
  rows from host memory, and the looked-up activations are copied host -> GPU before the
  first layer that reads them;
- backward: the gradient rows (IndexedSlices values, one per lookup, with their int64
  indices) come back GPU -> host;
- synchronisation: Horovod's IndexedSlices allreduce is two allgathers of host tensors, so
  it runs through MPI / Gloo, not NCCL (HOROVOD_GPU_OPERATIONS=NCCL covers GPU tensors
  only); on one node that is copies between the worker processes through host memory;
- optimizer: Keras OptimizerV2 sums duplicate indices (unsorted_segment_sum over every
  gathered row) and the sparse apply (ResourceSparseApplyAdagradV2 & co., CPU kernels)
  read-modify-writes the union's rows and their state, in every worker process.

Costs, all from the topology and the existing `ps` figures (nothing fitted):
- host -> GPU and GPU -> host copies: the node's PCIe / host tree (the `ps` strategy's
  co-located server routes, topology.servers), carried by the network beside the step's
  other traffic;
- host memory work: a per-node link of the host memory's rate, which the node's worker
  processes share. The rate is the `ps` servers' summation figure (ServerSpec.sum_gbps,
  the topology's `parameter_servers.sum_gbps`, default 20 GB/s [ASSUMPTION]) times the
  APPLY_PASSES memory passes that figure was derived from (reading the gradient, the row
  and its state, writing both back: ServerSpec's comment), so a sparse Adagrad apply of B
  gradient bytes costs B / sum_gbps exactly as on a `ps` server. Each host operation is
  charged its own passes: a gather reads a row and writes it out (2); the allgather's
  copies read a peer's buffer and write the receiver's (2, a single-copy shared-memory
  transport: [ASSUMPTION], a two-copy one would double it), and Horovod's fusion buffer
  adds its own copies around them (horovod/common/ops/mpi_operations.cc MPIAllgather::
  Execute: with more than one tensor in the response, MemcpyInFusionBuffer of the
  process's own slices before MPI_Allgatherv in place, MemcpyOutFusionBuffer of the whole
  gathered result after it, 2 passes each; a step's 2 x tables IndexedSlices tensors fuse);
  at one process Horovod's _allreduce_cond skips the collective; the de-duplication reads every
  gathered row and writes the union's (1 + 1); the apply reads the summed gradient and
  read-modify-writes the row and each state tensor.

Refused (one-line errors, exit 2): more than one node (the host allgather across NICs
from host memory is not modelled), a table whose gradient is dense (a tied full softmax),
and a topology without a PCIe / host description. Other strategies do not take the option:
under `allreduce` a CPU table's gradient would be a dense host AllReduce of the whole table
through MPI / Gloo, which embsim does not model, so the option is an unknown key there.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..collectives.traffic import Traffic
from ..errors import InputError
from ..network import Demand
from ..plan.names import bwd_name, fwd_name, update_name
from ..plan.ops import NodeCopy, SyncTensor
from ..topology.servers import host_vertex, with_servers
from ..topology.spec import ServerSpec
from ..words import counted
from ..workload.host_memory import HostMemoryNeed, need_text

GB = 1e9
HOST_MEMORY = "host-mem"    # the link kind of a node's host memory (no parameter server here)
TABLE_DEVICES = ("gpu", "cpu")
# Memory passes per byte of applied gradient in ServerSpec.sum_gbps's derivation: read the
# gradient, the row and its state, write the row and the state (topology/spec.py ServerSpec).
APPLY_PASSES = 5
GATHER_PASSES = 2          # read the row, write it into the lookup's output
COPY_PASSES = 2            # read a peer process's buffer, write one's own [ASSUMPTION] single copy
FUSION_PASSES = 2          # Horovod's fusion buffer: a memcpy in of one's own, out of everything


@dataclass(frozen=True)
class HostMemory:
    """The node's host memory as one link per node (appended by with_servers, kind
    `host-mem`, id cpu_base + node) of `rate` bytes/s of memory traffic."""
    cpu_base: int
    n_nodes: int
    rate: float
    sum_gbps: float

    def work(self, bytes_per_node: float) -> NodeCopy:
        """`bytes_per_node` of host memory traffic on every node, as network bytes."""
        links = self.cpu_base + np.arange(self.n_nodes, dtype=np.int64)
        return NodeCopy(0.0, Demand(links=links, bytes=np.full(self.n_nodes, float(bytes_per_node))))


def host_topology(topo):
    """(topology with the node's host memory and PCIe routes to it, HostMemory)."""
    if topo.n_nodes > 1:
        raise InputError(f"--option table_device=cpu: {topo.n_nodes} nodes; the host-memory allgather "
                         f"across nodes (MPI/Gloo over the NICs, no GPUDirect) is not modelled: one node only")
    if host_vertex(topo._template) is None:
        raise InputError("--option table_device=cpu: the topology has no PCIe / host description "
                         "(fabric.pcie_* or kind: host) to reach host memory")
    spec = topo.node.servers or ServerSpec()
    rate = spec.sum_gbps * APPLY_PASSES
    out = with_servers(topo, "colocated", replace(spec, sum_gbps=rate), cpu_kind=HOST_MEMORY)
    return out, HostMemory(out.servers.cpu_base, out.n_nodes, rate * GB, spec.sum_gbps)


def _one_server(n: int, nbytes: float) -> Traffic:
    """Every worker to (or from) its node's one host: the ps server matrix with one server."""
    return Traffic(np.ones(n), np.full(1, float(nbytes)))


def host_table_plan(ctx, t, host: HostMemory, gather_rows: str) -> tuple[list[SyncTensor], list[str]]:
    """The lookup (host gather, host -> GPU copy) and the gradient (GPU -> host copy,
    host allgather, de-duplication and sparse apply) of CPU-resident table `t` on one
    node of n = G GPUs, one worker process per GPU."""
    model, n = ctx.model, ctx.n_gpus
    tb = model.table_bytes
    value_row = t.dim * tb
    lookups = t.lookups_per_gpu
    sent_rows = lookups if gather_rows == "lookups" else t.unique_per_gpu
    pull = lookups * value_row                       # looked-up activations, host -> GPU
    push = lookups * model.row_bytes(t.table)        # IndexedSlices values + int64 indices, GPU -> host
    sent = sent_rows * model.row_bytes(t.table)      # what each process contributes to the allgather
    g = n                                            # one node: every process shares its host memory
    gather = g * GATHER_PASSES * lookups * value_row
    # MPI moves the n - 1 peers' bytes; the fusion buffer takes one's own in, all n out
    copies = g * (COPY_PASSES * (n - 1) * sent + FUSION_PASSES * (1 + n) * sent) if n > 1 else 0.0
    state = model.optimizer.state_bytes_per_param * t.dim
    dedup = g * (n * sent_rows * value_row + t.unique_union * value_row)
    apply = g * t.unique_union * (value_row + 2 * value_row + 2 * state)
    lookup = SyncTensor(name=f"host-lookup:{t.layer}", layer=t.layer, op="host_lookup", nbytes=pull,
                        category="embedding", ready_after=update_name(t.layer), needed_by=fwd_name(t.layer),
                        matrix=_one_server(n, pull), copy_before=host.work(gather))
    grad = SyncTensor(name=f"host-grad:{t.layer}", layer=t.layer, op="host_allgather", nbytes=push,
                      category="embedding", ready_after=bwd_name(t.layer),
                      matrix=_one_server(n, push), copy_after=host.work(copies + dedup + apply))
    rate = host.rate
    note = (f"allgather {t.table}: table on the CPU (table_device=cpu): per step {g} processes gather "
            f"{lookups:,.0f} rows each ({gather / rate * 1e3:.2f} ms of host memory), copy "
            f"{pull / 1e6:.2f} MB host->GPU and {push / 1e6:.2f} MB GPU->host each, allgather "
            f"{(n - 1) * sent / 1e6:.2f} MB through host memory ({copies / rate * 1e3:.2f} ms) and apply "
            f"{t.unique_union:,.0f} rows on the CPU ({(dedup + apply) / rate * 1e3:.2f} ms), at "
            f"{rate / GB:.0f} GB/s host memory ({APPLY_PASSES} x sum_gbps {host.sum_gbps:g})")
    return [lookup, grad], [note]


def host_memory_need(model, tables, g: int, capacity: float | None) -> HostMemoryNeed:
    """What the CPU tables hold in the node's host memory: every one of its g worker
    processes its own copy of each table and its optimizer state."""
    per = sum(tb.vocab * tb.dim * (model.table_bytes + model.optimizer.state_bytes_per_param)
              for tb in tables)
    return HostMemoryNeed(holder="the CPU tables", per_node=int(g * per), capacity=capacity)


def host_memory_note(model, tables, g: int, need: HostMemoryNeed) -> str:
    """The CPU tables' host memory, per process and node, against the node's."""
    per = need.per_node / g
    return (f"allgather: {counted(len(tables), 'table')} on the CPU, {per / 1e9:.2f} GB of table and "
            f"optimizer state per worker process in host memory ({g} processes: {need_text(need)}"
            + (": does not fit" if need.fits is False else "")
            + "), none in HBM; the GPU-side lookup kernels are still timed [ASSUMPTION: microseconds]")
