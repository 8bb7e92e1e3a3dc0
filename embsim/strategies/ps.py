"""ps: sparse embedding rows through parameter servers (BytePS / Parallax), dense layers
AllReduced (Parallax's hybrid); `--option payload=dense`: BytePS as shipped, every parameter's
whole gradient through the servers (strategies/ps_dense.py).

`payload=rows` (default) pushes only the rows a batch touched: Parallax's payload. BytePS
itself has no sparse path (bytedance/byteps @f5df52f README "not implemented yet: Sparse
model training"; byteps/torch/__init__.py push_pulls every `p.grad`, a dense
`p.data.new(p.size())`), so a BytePS baseline (EmbRace's, ByteScheduler's PS, P3's MXNet
PS) pushed and pulled every table whole: `payload=dense`.

Servers are CPU processes, attached to the topology (topology.servers):
`--option servers=colocated` (default: one per GPU node, sharing its NIC and PCIe) or
`servers=dedicated` (server machines with their own NICs: the YAML's
`parameter_servers:` section, else as many as GPU nodes at the GPU nodes' NIC rate;
`server_nodes`, `server_gbit`, `server_sum_gbps` override it).
Every table row lives on one server. `server_sharding=partitions` (default) is what
BytePS does: the tensor is cut into partitions of `server_partition_params` parameters
(BytePS's default partition, 4,096,000 bytes = 1,024,000 fp32 parameters) dealt out to
the servers in turn; the first partitions of a frequency-sorted vocabulary hold the
hottest rows, which every worker touches, so their servers receive more of every push.
(BytePS itself keys each partition to a server by a hash, djb2 of `(declared_key << 16) +
j` by default (byteps@f5df52f byteps/common/global.cc EncodeDefaultKey), which
payload=dense follows; the rows payload's turn-by-turn deal is [ASSUMPTION]: the hot
partitions' server is still the one hottest, where a hash could put two hot partitions
on one server.)
`contiguous`: one block of rows per server (TensorFlow's partitioned variables, as
Parallax ran them: the worst case); `hashed`: every row hashed on its own (the
optimistic bound). The load is uneven; max / mean is reported in the notes.
After backward each worker's U coalesced (index, row) pairs are pushed; each server sums
them and applies the optimizer on its CPU (the ps-cpu link of the push route: pushes to
a hot server queue there); the updated rows are pulled (values only: the server knows
the indices), and the embedding's next forward blocks on that pull.

`local_aggregation=true` (default): the G GPUs of a node are summed on the node before
one push per node, as both modelled systems do. Parallax (snuspl/parallax @95ede82,
parallax/core/python/common/graph_transform_lib.py, `_get_aggregated_sparse_grad`; the
`local_aggregation` flag defaults to True in common/config.py and in the LM-1B example's
parallax_config.py) applies every local GPU's IndexedSlices to one
SparseConditionalAccumulator on the machine's chief CPU, which sums rows of equal index,
and only the chief's aggregate goes to the servers (take_indexed_slices_grad needs
num_worker_machines pushes instead of machines x GPUs). BytePS (OSDI'20) reduces a tensor
within the machine (over NVLink/PCIe) before one push per machine and broadcasts the
pulled tensor back; it has no sparse path of its own (byteps/tensorflow push_pull takes
dense tensors; IndexedSlices go through sparse_as_dense), so for rows this is BytePS's
mechanism applied to Parallax's payload. So a node pushes the union of its GPUs' rows,
u(G) = the token model's union over G batches (embsim.workload.tokens union_inclusion),
instead of G x U, and the servers' CPUs sum per-node pushes. `pull=node` (default,
BytePS: one pull per machine, then an intra-machine broadcast) pulls the node's union
once; `pull=gpu` is Parallax's hybrid, where every GPU worker reads its own rows from the
servers (its mirror-variable cache is not used for sparse variables: "TODO: exploit
locality" at the same commit). The node's push and pull leave through all its NICs, each
GPU's route carrying u(G) / G ([ASSUMPTION]: a single-process aggregator on one NIC would
be slower on multi-NIC nodes). The intra-node legs (every GPU's rows into the node's host
memory before the push; with pull=node, every GPU's pulled rows back) are copies on the
push's and pull's own stream (SyncTensor copy_before / copy_after), off the compute stream,
carried as bytes on every node's PCIe / host links beside the step's other traffic
(ps_local.NodeHost; host memory at the first CPU socket, [ASSUMPTION]: TensorFlow's CPU:0
pins none). `local_aggregation=false`: every GPU pushes and pulls its own U rows (Parallax
with the flag off): per worker ~ 2 x U x row bytes.

One GPU keeps its servers: the tables live there whatever the worker count (OpenEmbedding
starts a server inside each worker process, Parallax places sparse variables on its PS), so
a single worker still pulls and pushes its rows and the server's CPU applies the update
(StrategyPlan.host_sync); only the dense AllReduce has nothing to do.

`dense_vocab_below=V` (default off): OpenEmbedding's "Cache Local" (4paradigm/OpenEmbedding
@6651723, test/benchmark/criteo_deepctr.py with `--cache`: a PSEmbedding whose
`input_dim < args.batch_size` is built with `sparse_as_dense=True`). A table of fewer than V
rows is not on the servers: every GPU holds it (openembedding/tensorflow/exb.py, Embedding.build
with sparse_as_dense: a mirrored Keras weight), its lookup's gradient is made dense
(`sparse_read_as_dense`: unsorted_segment_sum into vocab x dim), AllReduced with the dense
layers by Horovod and applied by the workers' own optimizer, as allreduce does for every
table. The other tables push and pull rows as above. The densified lookup backward
(scatter-add into a zeroed vocab x dim tensor, < V x dim elements) is timed as the sparse
one (the strategy's lookups are sparse), an approximation for the small tables it covers.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..errors import InputError
from ..identity import ByIdentity
from ..options import positive_number, switch
from ..plan.traits import Payload
from ..plan.names import bwd_name, fwd_name, update_name
from ..plan.ops import SyncTensor
from ..topology.servers import PLACEMENTS, host_vertex, with_servers
from ..topology.spec import ServerSpec
from ..workload.host_memory import HostMemoryNeed, capacity_bytes, need_text
from ..workload.memory import memory_per_gpu
from ..workload.row_groups import total as row_total
from ..workload.sharding import rows_per_shard
from ..workload.tokens import SHARDINGS, shard_shares, union_inclusion
from ..words import counted
from .ps_dense import PAYLOADS, plan_dense
from .ps_local import PULLS, NodeHost, server_matrix
from .base import STRATEGIES, Strategy, StrategyPlan
from .common import dense_sync, dense_table_notes, replicated_sync, replicated_update_time, sparse_tables


BYTEPS_PARTITION_PARAMS = 4_096_000 // 4   # BYTEPS_PARTITION_BYTES default, fp32
DEDICATED_ONLY = ("server_nodes", "server_gbit")   # server_sum_gbps applies to either placement


@dataclass(frozen=True)
class PsOptions:
    # what is pushed and pulled: the touched rows (Parallax) or every parameter's whole
    # gradient, tables included (BytePS as shipped, no sparse path: strategies/ps_dense.py)
    payload: str = "rows"
    servers: str = "colocated"             # or "dedicated" machines
    server_sharding: str = "partitions"    # BytePS partitions; "hashed" rows; "contiguous" blocks
    server_partition_params: int = BYTEPS_PARTITION_PARAMS
    server_nodes: int | None = None        # dedicated: machines (None: YAML or one per GPU node)
    server_gbit: float | None = None       # dedicated: NIC line rate (None: YAML or the GPU nodes')
    server_sum_gbps: float | None = None   # summation rate per server (None: YAML or 20 GB/s)
    # sum a node's GPUs' rows before one push per node (Parallax's default, BytePS)
    local_aggregation: bool = True
    pull: str = "node"                     # one pull per node (BytePS) or per GPU (Parallax hybrid)
    # tables of fewer rows than this are replicated and AllReduced densely (OpenEmbedding's
    # "Cache Local"; None: every sparse table on the servers)
    dense_vocab_below: int | None = None

    def __post_init__(self):
        if self.payload not in PAYLOADS:
            raise InputError(f"--option payload={self.payload!r}: expected one of {', '.join(PAYLOADS)}")
        object.__setattr__(self, "local_aggregation", switch(self.local_aggregation, "local_aggregation"))
        if self.pull not in PULLS:
            raise InputError(f"--option pull={self.pull!r}: expected one of {', '.join(PULLS)}")
        if self.servers not in PLACEMENTS:
            raise InputError(f"--option servers={self.servers!r}: expected one of {', '.join(PLACEMENTS)}")
        if self.server_sharding not in SHARDINGS:
            raise InputError(f"--option server_sharding={self.server_sharding!r}: expected one of "
                             f"{', '.join(SHARDINGS)}")
        for key in ("server_nodes", "server_partition_params", "dense_vocab_below"):
            value = getattr(self, key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise InputError(f"--option {key}={value!r}: must be a positive integer")
        for key in ("server_gbit", "server_sum_gbps"):
            if getattr(self, key) is not None:
                object.__setattr__(self, key, positive_number(getattr(self, key), key))
        if self.payload == "dense" and self.dense_vocab_below is not None:
            raise InputError("--option dense_vocab_below: only with payload=rows (payload=dense already "
                             "pushes every table whole through the servers)")
        # colocated servers are the GPU nodes' own (one each, on their NICs): machine
        # count and line rate would be ignored, so they are refused rather than dropped
        for key in DEDICATED_ONLY:
            if getattr(self, key) is not None and self.servers != "dedicated":
                raise InputError(f"--option {key}: only with servers=dedicated (servers={self.servers} "
                                 f"runs one server on every GPU node, on its own NICs)")


class _ByPayload:
    """A strategy trait that follows the instance's `payload` option; read on the class (the
    registry's listing of strategies alike) it is the default payload's (rows)."""

    def __init__(self, rows, dense):
        self.rows, self.dense = rows, dense

    def __get__(self, obj, owner=None):
        if obj is None or obj.options.payload != "dense":
            return self.rows
        return self.dense


@STRATEGIES.register("ps")
class ParameterServerStrategy(Strategy):
    description = ("sparse rows pushed to / pulled from CPU parameter servers (BytePS/Parallax); "
                   "payload=dense: every whole gradient (BytePS as shipped)")
    # pushed gradient rows and pulled rows; payload=dense: whole tensors, no rows to split
    embedding_payload = _ByPayload(Payload.ROWS, Payload.NONE)
    # payload=dense: nn.Embedding's dense vocab x dim gradient, as BytePS's torch optimizer takes it
    dense_table_gradient = _ByPayload(False, True)
    # payload=dense: the GPUs hold every parameter; push_pull once per step
    # (backward_passes_per_step), nothing pulled per micro-batch
    gathers_every_micro_batch = _ByPayload(True, False)
    Options = PsOptions

    server_count: int | None = None    # set by topology(): the servers attached
    host: NodeHost | None = None       # set by topology(): where a node's GPUs copy to
    # set by topology(): the host memory of a machine running a server, bytes (the GPU
    # node's when colocated, a dedicated server machine's), None where the topology gives none
    server_host_bytes: float | None = None
    node_topology = None               # set by topology(): the GPUs' topology with its servers
    # set by topology(): what the servers' result leans on that no one measured (the assumed
    # summation rate, a socket link the topology file marks [UNKNOWN]): notes, and the same
    # per link kind for a why: line (link_caveats)
    assumed_notes: tuple[str, ...] = ()
    assumed_links: dict = {}

    def topology(self, topo):
        o = self.options
        overrides = {k: v for k, v in (("nodes", o.server_nodes), ("nic_gbit", o.server_gbit),
                                       ("sum_gbps", o.server_sum_gbps)) if v is not None}
        if o.server_sum_gbps is not None:
            overrides["sum_gbps_given"] = True
        spec = replace(topo.node.servers or ServerSpec(), **overrides)
        self.server_host_bytes = capacity_bytes(spec.host_memory_gb if o.servers == "dedicated"
                                                else topo.node.host_memory_gb)
        # one GPU still keeps its tables on the servers (host_sync): they are where the
        # rows live, whatever the worker count. Where one GPU cannot reach them (dedicated
        # servers on a one-node topology have no network; colocated ones need a host
        # vertex) it trains alone, as any strategy's one-GPU run (the scaling baseline)
        if topo.n_gpus == 1 and not self._reachable(topo):
            self.server_count = None
            return topo
        out = with_servers(topo, self.options.servers, spec)
        self.server_count = out.servers.count
        self.node_topology = out
        root = host_vertex(topo._template)
        self.host = NodeHost(out._template, root, out.n_nodes, out._per_node) if root else None
        self.assumed_notes, self.assumed_links = self._assumed(topo, spec, root)
        return out

    def _assumed(self, topo, spec: ServerSpec, root: str | None) -> tuple[tuple[str, ...], dict]:
        """What the servers' time rests on that nobody measured, said where it is used:
        - the servers' summation rate (every push ends on its ps-cpu link), when neither the
          topology (parameter_servers.sum_gbps) nor --option server_sum_gbps gives it:
          ServerSpec's 20 GB/s, an [ASSUMPTION] (topology/spec.py);
        - the socket link, where the file marks fabric.cpu_link_gbps [UNKNOWN] (the Grace
          presets: NCCL's ARM_BW 6 stands in) and the servers' traffic crosses it: a colocated
          server, and local aggregation's host copies, sit at the node's first CPU socket
          (topology.servers, ps_local.NodeHost), so a node's GPUs under its other sockets
          reach them over that link. gb200/gb300-nvl72 model the whole 72-GPU rack as one
          node: one colocated server for all 72 GPUs.
        Returns (notes, {link kind: the same in a few words})."""
        o = self.options
        notes, links = [], {}
        if not spec.sum_gbps_given:
            notes.append(f"ps: each server sums and applies what is pushed to it at {spec.sum_gbps:g} GB/s "
                         f"(the ps-cpu link every push ends on), an assumed rate, not a measured one (a "
                         f"memory-bound sum and sparse optimizer step on one CPU socket): the topology "
                         f"gives no parameter_servers.sum_gbps; set it there or with --option "
                         f"server_sum_gbps=GBPS")
            links["ps-cpu"] = (f"the servers' summation rate, an assumed {spec.sum_gbps:g} GB/s a server "
                               f"(--option server_sum_gbps)")
        fabric, g = topo.node.fabric, topo.gpus_per_node
        colocated = o.servers == "colocated"
        copies = o.local_aggregation and g > 1 and topo.n_gpus > 1
        if ("fabric.cpu_link_gbps" in topo.node.unknown and root is not None
                and (fabric.cpu_sockets or 1) > 1 and (colocated or copies)):
            others = fabric.cpu_sockets - 1
            sockets = "its other socket" if others == 1 else f"its other {others} sockets"
            if colocated:
                lead = (f"the node's {counted(g, 'GPU')} share one colocated server at its first CPU "
                        f"socket; those under {sockets} reach it"
                        + (", and local aggregation's host copies," if copies else ""))
            else:
                lead = (f"local aggregation copies a node's rows to its first CPU socket; the GPUs "
                        f"under {sockets} reach it")
            notes.append(f"ps: {lead} over the socket link: {fabric.cpu_link_gbps:g} GB/s per direction, "
                         f"a figure the topology file ({topo.node.name}) marks [UNKNOWN]")
            links["cpu"] = (f"the socket link, {fabric.cpu_link_gbps:g} GB/s, a figure the topology file "
                            f"marks [UNKNOWN]")
        return tuple(notes), links

    def link_caveats(self) -> dict[str, str]:
        return dict(self.assumed_links)

    def _server_shares(self, once: ByIdentity, weights, counts, count: int, block: int):
        """Each server's share of a table's row weights (workload.sharding), once per arrays."""
        return once.get((weights, counts), lambda: shard_shares(
            weights, count, self.options.server_sharding, block_rows=block, counts=counts),
            ("shares", count, block))

    def _reachable(self, topo) -> bool:
        if self.options.servers == "dedicated":
            return topo.n_nodes > 1
        return host_vertex(topo._template) is not None

    def plan(self, ctx):
        plan = plan_dense(self, ctx) if self.options.payload == "dense" else self._rows_plan(ctx)
        if not self.assumed_notes:
            return plan
        # one GPU keeps its servers (host_sync), and so what their time rests on
        return replace(plan, notes=plan.notes + self.assumed_notes,
                       host_notes=plan.host_notes + (self.assumed_notes if plan.host_sync else ()))

    def _rows_plan(self, ctx):
        model, n = ctx.model, ctx.n_gpus
        count = self.server_count or max(1, n // ctx.gpus_per_node)
        sync = replicated_sync(ctx)
        update = replicated_update_time(ctx)
        held, cache, notes = {}, {}, dense_table_notes(ctx, "ps")
        # what one GPU alone still runs: the served tables' pushes and pulls and the notes
        # about them (a single worker reads and updates its rows on the servers)
        served_sync, server_notes = [], []
        g = ctx.gpus_per_node
        aggregate = self.options.local_aggregation and g > 1 and n > 1
        served, dense_layers = self._dense_tables(ctx, sync, update, server_notes)
        # tables of one configuration share their statistics' arrays (engine.context
        # table_traffic), and a synthetic recommender repeats one hundreds of times
        # (Merlin's jumbo: 1,022 tables): each sharded over the servers once
        once = ByIdentity()
        for t in served:
            row_push = model.row_bytes(t.table)      # one pushed (index, row) pair
            own_push = t.unique_per_gpu * row_push   # one GPU's own rows, pushed
            own_pull = t.unique_per_gpu * t.dim * model.table_bytes   # and pulled
            push_rows = pull_rows = t.unique_per_gpu
            weights = t.row_inclusion if t.row_inclusion is not None else np.full(t.vocab, 1.0 / t.vocab)
            pull_weights = weights
            if aggregate:
                # the node's union of its G GPUs' rows, pushed once, spread over its G routes
                inclusion = (t.row_inclusion if t.row_inclusion is not None
                             else np.full(t.vocab, t.unique_per_gpu / t.vocab))
                node_weights = once.get((inclusion,), lambda: union_inclusion(inclusion, g), "union")
                per_route = row_total(node_weights, t.row_counts) / g
                push_rows, weights = per_route, node_weights
                if self.options.pull == "node":
                    pull_rows, pull_weights = per_route, node_weights
                notes.append(f"ps {t.table}: local aggregation, a node of {g} GPUs pushes {g * per_route:,.0f} "
                             f"distinct rows instead of {g} x {t.unique_per_gpu:,.0f} "
                             f"({g * per_route / (g * t.unique_per_gpu) * 100:.0f} %); pull per {self.options.pull}")
            gather, back = self._host_copies(ctx, t, own_push, own_pull, notes) if aggregate else (None, None)
            push = push_rows * row_push
            pull = pull_rows * t.dim * model.table_bytes
            block = max(1, self.options.server_partition_params // t.dim)
            shares = self._server_shares(once, weights, t.row_counts, count, block)
            pull_shares = (shares if pull_weights is weights
                           else self._server_shares(once, pull_weights, t.row_counts, count, block))
            served_sync.append(SyncTensor(name=f"ps-push:{t.layer}", layer=t.layer, op="ps_push",
                                          nbytes=push, category="embedding", ready_after=bwd_name(t.layer),
                                          matrix=server_matrix(n, push, shares), copy_before=gather))
            served_sync.append(SyncTensor(name=f"ps-pull:{t.layer}", layer=t.layer, op="ps_pull",
                                          nbytes=pull, category="embedding",
                                          ready_after=update_name(t.layer), needed_by=fwd_name(t.layer),
                                          matrix=server_matrix(n, pull, pull_shares), copy_after=back))
            # the servers sum and apply on their CPUs (the push's ps-cpu links); the GPU
            # only waits for the push before pulling
            update[t.layer] = 0.0
            held[t.table] = t.vocab          # the table lives in the servers' host memory
            cache[f"ps worker cache ({t.table})"] = own_pull
            server_notes.append(f"ps {t.table}: {counted(count, self.options.servers + ' server')}, rows "
                                f"{self.options.server_sharding}: server load max/mean {shares.max() * count:.2f} "
                                f"(hottest server {shares.max() * 100:.1f} % of the pushed rows)")
        need = self._server_memory(ctx, served, count) if served else None
        if need is not None:
            server_notes.append(self._server_memory_note(need, count))
        reachable = self.server_count is not None      # topology() attached the servers
        return StrategyPlan(sync=tuple(sync + served_sync), update_time=update,
                            memory=memory_per_gpu(model, embedding_shards=held, sparse_embedding_grads=True,
                                                  buffers=cache, host=need),
                            notes=tuple(notes + server_notes),
                            host_sync=tuple(served_sync) if reachable else (),
                            host_notes=tuple(server_notes) if reachable else (),
                            one_gpu_updates=dense_layers)

    def _server_memory(self, ctx, served, count: int) -> HostMemoryNeed:
        """What the servers keep in host memory: each server its rows of every served table,
        dealt as `server_sharding` deals them (the load's own placement), with their
        optimizer state. A colocated server is its GPU node's (one per node), so the node's
        host memory holds its shard; a dedicated one its own machine's."""
        model = ctx.model
        per_row_element = model.table_bytes + model.optimizer.state_bytes_per_param
        per_server = np.zeros(count)
        rows: dict[tuple, np.ndarray] = {}       # many-table models repeat (vocab, dim)
        for t in served:
            key = (t.vocab, t.dim)
            if key not in rows:
                block = max(1, self.options.server_partition_params // t.dim)
                rows[key] = rows_per_shard(t.vocab, count, self.options.server_sharding, block) * t.dim
            per_server += rows[key]
        per_server *= per_row_element
        dedicated = self.options.servers == "dedicated"
        return HostMemoryNeed(holder="servers", per_node=int(per_server.max()),
                              capacity=self.server_host_bytes,
                              where="server machine" if dedicated else "node",
                              mean_per_node=int(per_server.mean()))

    def _server_memory_note(self, need: HostMemoryNeed, count: int) -> str:
        """The servers' host memory against the topology's, or why it is not checked."""
        total = need.mean_per_node * count
        verdict = ("does not fit" if need.fits is False else "fits" if need.fits else "")
        return (f"ps: the servers hold {total / 1e9:,.1f} GB of table rows and optimizer state in "
                f"host memory over {counted(count, self.options.servers + ' server')}, "
                f"{need.mean_per_node / 1e9:,.1f} GB each on average (rows {self.options.server_sharding}): "
                f"{need_text(need)}" + (f": {verdict}" if verdict else ""))

    def _dense_tables(self, ctx, sync: list, update: dict, notes: list) -> tuple[list, tuple[str, ...]]:
        """The sparse tables the servers hold; those under `dense_vocab_below` rows join the
        dense AllReduce instead (their DDP gradient tensor and dense optimizer step, as
        allreduce plans every table; on one GPU they stay dense: sparse_as_dense is how the
        table is built). Returns (the served tables, the dense tables' layers)."""
        below = self.options.dense_vocab_below
        tables = sparse_tables(ctx)
        if below is None:
            return tables, ()
        dense = [t for t in tables if t.vocab < below]
        owners = {t.layer for t in dense}
        sync.extend(s for s in dense_sync(ctx) if s.layer in owners)
        update.update({t.layer: ctx.layer_update[t.layer] for t in dense})
        if dense:
            rows = sum(t.vocab for t in dense)
            notes.append(f"ps: {len(dense)} of {len(tables)} sparse tables under {below:,} rows "
                         f"({rows:,} rows in all) {'replicated and AllReduced' if ctx.n_gpus > 1 else 'kept on the GPU and updated'} densely "
                         f"(OpenEmbedding's Cache Local); {len(tables) - len(dense)} on the servers")
        return [t for t in tables if t.layer not in owners], tuple(sorted(owners))

    def _host_copies(self, ctx, t, own_push: float, own_pull: float, notes: list) -> tuple:
        """The intra-node legs of a node's push and shared pull (plan.ops.NodeCopy, or None):
        every GPU's U (index, row) pairs into the node's host memory (Parallax's accumulator
        on the machine's CPU) before the push, and with pull=node every GPU's U pulled rows
        back from it after the pull. They are copies on the push's and pull's own stream,
        not on the compute stream: TensorFlow moves a GPU tensor to a CPU op on the GPU
        device's device-to-host stream (Parallax), and BytePS copies on its own cudaStream
        (core_loops.cc, GetCopyDevice2HostStream). So the chains bwd -> gather -> push and
        pull -> copy-back -> lookup keep their lengths while the GPU computes on, and the
        copies' bytes cross the node's PCIe / host links beside the step's other traffic."""
        host = self.host
        if host is None:
            notes.append(f"ps {t.table}: the topology has no host vertex: the node's gather and "
                         f"copy-back are not timed")
            return None, None
        g = ctx.gpus_per_node
        gather, idle = host.copies(g, own_push, to_host=True)
        text = f"ps {t.table}: gather into host memory before each push ({idle * 1e3:.2f} ms on an idle node"
        back = None
        if self.options.pull == "node":
            back, idle = host.copies(g, own_pull, to_host=False)
            text += f"), pulled rows back to the GPUs after each pull ({idle * 1e3:.2f} ms"
        notes.append(text + "): copy streams sharing the node's PCIe links")
        return gather, back

