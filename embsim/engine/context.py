"""Build a StepContext: per-layer compute times (measured, or the labelled kernel
model), optimizer times and the token statistics of every embedding table."""

from __future__ import annotations

from functools import lru_cache

from ..errors import InputError
from ..plan.context import StepContext, TableTraffic
from ..workload.compute import (attention_source, elementwise_style, fp8_source, model_times,
                                optimizer_step_time, sparse_merge_time,
                                sparse_optimizer_step_time)
from ..topology.measured_gpus import preset_with_measurements
from ..workload.gpu_compute import GEMM_DTYPE_GAP, for_gpu, from_measurement
from ..workload.grad_compress import GradCompress
from ..workload.kernel_time import kernels_time
from ..workload.precision import precision
from ..workload import load_model
from ..workload.row_groups import total
from ..workload.tokens import DEFAULT_ZIPF_S, RowTouches, TokenStats
from .padded import expected_layer_times, run_length_mix
from .trace_times import trace_layer_times

GiB = 1 << 30


def table_traffic(model, n_gpus: int, stats_for) -> dict[str, TableTraffic]:
    """Per owning layer, in the order those layers run (a strategy issues each table's
    exchange as the framework reaches it, whatever order the model file lists tables in)."""
    out, shared = {}, {}
    order = {layer.name: i for i, layer in enumerate(model.layers)}
    owners = {table.name: model.table_owner(table.name) for table in model.tables}
    for table in sorted(model.tables, key=lambda t: order[owners[t.name]]):
        owner = owners[table.name]
        stats, tokens = stats_for(table), float(model.batch * table.lookups_per_sample)
        # tables with the same statistics and load touch rows alike (a synthetic recommender
        # repeats one table config hundreds of times): their row sums are computed once; the
        # stats object is kept in the entry so its id is not reused while the dict lives
        key = (id(stats), tokens, table.sampled)
        if key not in shared:
            shared[key] = (stats, _touched_rows(stats, tokens, table.sampled, n_gpus))
        out[owner] = TableTraffic(
            table=table.name, layer=owner, vocab=table.vocab, dim=table.dim,
            lookups_per_gpu=tokens + _softmax_rows(model, table),
            dense_grad=model.dense_gradient(table.name), **shared[key][1])
    return out


def _softmax_rows(model, table) -> float:
    """Rows a sampled softmax gathers per GPU and step beyond the table's lookups, its
    gradient's IndexedSlices rows (tf.nn.sampled_softmax_loss gathers the weights of
    [labels; sampled] in one embedding_lookup): on a table tied to the input lookup every
    position's true class and the shared candidates (TensorFlow concatenates that gradient
    with the input lookup's); on the softmax's own table (weight_of) the candidates, its
    true classes being the table's lookups already."""
    if not table.sampled:
        return 0.0
    if table.weight_of is not None:
        return float(table.sampled)
    return float(model.batch * model.seq + table.sampled)


def _touched_rows(stats, tokens: float, candidates: int, n_gpus: int) -> dict:
    """The row statistics of one table's step: one GPU's tokens' rows plus a sampled
    softmax's distinct candidates (the softmax's true classes are the same tokens' rows;
    on a softmax's own table the tokens are those true classes)."""
    touches = RowTouches(stats, tokens=tokens, candidates=candidates)
    return dict(unique_per_gpu=touches.unique(), unique_union=touches.union(n_gpus),
                unique_next_overlap=touches.next_overlap(n_gpus),
                lookup_fraction_next=touches.read_fraction_next(n_gpus),
                row_probs=touches.reads / total(touches.reads, touches.counts),
                row_inclusion=touches.inclusion, row_counts=touches.counts)


def _label_for(model, kgpu) -> str:
    """The kernel model's label naming only the data this run lacked: no LSTM-step gap
    without an LSTM, and the per-dtype GEMM gap only for the dtype its GEMMs run in (a bf16
    run on a GPU with a measured bf16 figure lacks nothing there)."""
    from dataclasses import replace
    gemm = precision(model.dtype).gemm_rate
    gaps = []
    for gap in kgpu.gaps:
        if gap.startswith("LSTM step") and not any(l.kind == "lstm" for l in model.layers):
            continue
        if gap.startswith(GEMM_DTYPE_GAP):
            if gemm in kgpu.gemm_fractions:      # the GPU's gap, not this run's
                continue
            gap = f"{GEMM_DTYPE_GAP}{gemm} ({kgpu.gemm_fraction:g} used)"
        gaps.append(gap)
    return replace(kgpu, gaps=tuple(gaps)).label


def _where_measured(kgpu, topo):
    """The kernel model's gaps, plus the preset that has the measured figures this file's
    GPU lacks (a user's file for a shipped GPU without its gemm/hbm fractions)."""
    from dataclasses import replace
    name = preset_with_measurements(topo.node.gpu, own_preset=topo.preset)
    if name is None:
        return kgpu
    return replace(kgpu, gaps=kgpu.gaps + (f"preset {name} has measured figures for {kgpu.name} "
                                           f"(its gpu: gemm_fraction, gemm_fractions, hbm_fraction)",))


def _tensors(layer) -> int | None:
    """The layer's parameter tensors (a per-tensor optimizer launches per tensor)."""
    return getattr(layer.kernels, "param_tensors", None)


def step_context(model, topo, measured, cfg, dense_table_gradient: bool) -> tuple[StepContext, str]:
    """`measured`: the trace's MeasuredInputs (or None); `dense_table_gradient`: the
    strategy's trait; without it a sparse table's lookup backward is the trace's
    sparse-gradient kernel. Layers come from the trace when it timed them for this model;
    otherwise from the kernel model, on calibrate's measured kernel table when the trace
    carries one (it replaces the spec sheet on that device). A shape beyond what the trace
    measured is scaled by the kernel model, and the compute source says so (trace_times)."""
    kgpu = for_gpu(topo.node.gpu)
    if measured is not None and measured.kernel_table is not None:
        kgpu = from_measurement(topo.node.gpu, measured.kernel_table, measured.source)
    elif kgpu.gaps:
        kgpu = _where_measured(kgpu, topo)
    if cfg.dtype is None and precision(model.dtype).gemm_rate not in kgpu.rates:
        # the model's own default, not a flag the user typed: say so, and what would run
        have = [k for k in ("fp16", "bf16", "tf32", "fp32") if k in kgpu.rates]
        raise InputError(f"--dtype: model {model.name} trains in {model.dtype} by default and "
                         f"{kgpu.name} has no {model.dtype} tensor-core rate; give --dtype "
                         f"{' or '.join(have) or '(none it has)'}")
    times = model_times(model, kgpu)      # also refuses a dtype the GPU lacks
    sparse_lookups = not dense_table_gradient

    def at_shape(batch: int, seq: int):    # the same model at another shape
        return load_model(cfg.model, batch=batch, seq=seq, untie_outputs=cfg.untie_outputs,
                          dtype=cfg.dtype, overrides=cfg.model_overrides, amp=cfg.amp,
                          recompute=cfg.recompute, tensor_parallel=model.tensor_parallel,
                          positions=False)

    def layer_times(m, times) -> tuple[dict, dict, str]:
        # a trace times whole layers, not one tensor-parallel rank's share of them
        if (measured is not None and not m.tensor_parallel.on and not m.context_parallel.on
                and measured.covers(m)):
            fwd, bwd, extrapolated = trace_layer_times(
                m, measured.trace, lambda mm: model_times(mm, kgpu, recompute=False), at_shape,
                sparse_lookups=sparse_lookups)
            for name in m.recomputed:      # the measured forward, again in backward
                bwd[name] += fwd[name]
            if m.core_recomputed:          # the core's share of the measured forward
                plain = model_times(m, kgpu, recompute=False)
                for name in m.core_recomputed:
                    t = plain[name]
                    bwd[name] += fwd[name] * (t.core_fwd_s / t.fwd_s if t.fwd_s > 0 else 0.0)
            return fwd, bwd, measured.compute_source + (f"; {extrapolated}" if extrapolated else "")
        fwd = {n: t.fwd_s for n, t in times.items()}
        bwd = {n: (t.bwd_sparse_s if sparse_lookups and t.bwd_sparse_s is not None
                   and not m.dense_gradient(m.layer(n).table) else t.bwd_s)
               for n, t in times.items()}
        source = f"compute: {_label_for(m, kgpu)}"
        if measured is not None and m.tensor_parallel.on and measured.covers(m):
            source += "; the trace's layer times not used (whole layers, not one tensor-parallel rank's)"
        style, attn, fp8 = elementwise_style(m), attention_source(m, kgpu), fp8_source(m, kgpu)
        return fwd, bwd, (source + (f"; elementwise kernels {style}" if style else "")
                          + (f"; {attn}" if attn else "") + (f"; {fp8}" if fp8 else ""))

    fwd, bwd, source = layer_times(model, times)
    padded = run_length_mix(cfg, model)
    if padded is not None:
        # every layer at every padded length of the mix, weighted (padded.py)
        def times_at(seq: int) -> tuple[dict, dict]:
            m = model if seq == model.seq else at_shape(model.batch, seq)
            f, b, _ = layer_times(m, times if m is model else model_times(m, kgpu))
            return f, b
        fwd, bwd = expected_layer_times(padded[0], times_at)
        source += f"; {padded[1]}"
    if model.recompute.on:
        source += f"; {model.recompute.label(model.layers)}"
    # Optimizer steps are always the kernel model's: a trace's optimizer timing is per
    # element and scaled below when present.
    dense_update = {l.name: optimizer_step_time(l.params, model, kgpu, tensors=_tensors(l),
                                                table=l.kind == "embedding")
                    for l in model.layers if l.params > 0}
    per_elem = measured.optimizer_rates() if measured is not None else None
    measured_sparse = per_elem.get("sparse-rows") if per_elem is not None else None
    tf_dedup = model.optimizer.sparse_dedup == "tf-unique"
    if (tf_dedup and model.tables and not dense_table_gradient and model.optimizer.name != "sgd"
            and not measured_sparse):
        source += ("; sparse updates after TensorFlow's dedup (tf.unique: two CUB radix sorts "
                   "and a host sync per table, then unsorted_segment_sum)")
    if model.framework == "tensorflow" and model.tables and dense_table_gradient:
        source += "; dense table gradients as TensorFlow makes them (unsorted_segment_sum, no sort)"
    source += _tbe_note(model, dense_table_gradient, measured_sparse)
    if per_elem is not None and per_elem.get("dense"):
        dense_update = {n: per_elem["dense"] * model.layer(n).params for n in dense_update}

    def sparse_update(layer_name: str, rows: float, lookups: float | None = None,
                      columns: float = 1.0, received: float | None = None) -> float:
        """`rows` distinct rows touched; `lookups`: the gradient rows the step receives
        (one per lookup) where the caller knows them (the merge before the update sorts
        them; plain SGD updates per lookup); `columns`: the share of each row's columns
        updated (a column slice's owner): the merge runs over every id whatever the share,
        the row update scales with it. `received`: gradient rows a caller that merges them
        before the update (a coalesced all-gather) knows the owner got: the rows the
        owner's sparse gradient holds, so they stand in for `lookups`."""
        table = model.table(model.layer(layer_name).table)
        if measured_sparse:
            return columns * measured_sparse * rows * table.dim
        if received is not None:
            lookups = received
        return sparse_time(table.dim, rows, lookups, columns, sorted_rows(table))

    def sorted_rows(table) -> int | None:
        # only FBGEMM's sort depends on the table's size (its key bits): other frameworks'
        # merges leave it out of the cache keys below
        return table.vocab if model.optimizer.sparse_dedup == "tbe" else None

    @lru_cache(maxsize=None)
    def sparse_time(dim: int, rows: float, lookups: float | None, columns: float,
                    table_rows: int | None) -> float:
        # many-table models repeat (dim, rows, lookups): one kernel model per distinct one
        width = max(1, round(dim * columns)) if columns < 1.0 else dim
        return sparse_optimizer_step_time(rows, width, model, kgpu, lookups, table_rows)

    def sparse_merge(layer_name: str, gradient_rows: float, unique_rows: float) -> float:
        table = model.table(model.layer(layer_name).table)
        return merge_time(table.dim, gradient_rows, unique_rows, sorted_rows(table))

    @lru_cache(maxsize=None)
    def merge_time(dim: int, gradient_rows: float, unique_rows: float, table_rows: int | None) -> float:
        return sparse_merge_time(gradient_rows, unique_rows, dim, model, kgpu, table_rows)

    if cfg.corpus:
        def stats_for(table):
            return TokenStats.from_corpus(cfg.corpus, vocab=table.vocab)
    else:
        def stats_for(table):
            return TokenStats.zipf(table.vocab, cfg.zipf_s)

    compress = GradCompress.parse(cfg.grad_compress)
    compress.check_gpu(kgpu)               # bf16 on a GPU without bfloat16: refused
    # the data-parallel view: with tensor parallelism K a replica is K GPUs, so the
    # strategies see world / K ranks (the engine runs their collectives over the DP groups);
    # with pipeline parallelism P, world / (K P), a stage's W / P ranks spanning at most a node
    k = model.tensor_parallel.size
    stage = topo.n_gpus // cfg.pipeline_parallel
    dp = stage // k
    ctx = StepContext(model=model, n_gpus=dp, gpus_per_node=max(1, min(topo.gpus_per_node, stage) // k),
                      layer_fwd=fwd, layer_bwd=bwd, layer_update=dense_update,
                      sparse_update=sparse_update, sparse_merge=sparse_merge,
                      tables=table_traffic(model, dp, stats_for),
                      hbm_bytes=float(topo.node.gpu.hbm_gb) * GiB,
                      kernel_seconds=lambda kernels: kernels_time(kernels, kgpu, precision(model.dtype),
                                                                  model.dtype_bytes),
                      grad_compress=compress)
    return ctx, source + _zipf_unused(cfg, ctx.tables, dense_table_gradient)


def _tbe_note(model, dense_table_gradient: bool, measured_sparse) -> str:
    """The compute-source words for framework torchrec's tables (embsim.workload.fbgemm_tbe)."""
    if model.framework != "torchrec" or not model.tables:
        return ""
    if dense_table_gradient:
        return ("; dense table gradients as FBGEMM's dense table-batched embedding makes them "
                "(zero fill, radix sort, one write per distinct row)")
    if measured_sparse:
        return ""
    # wherever a GPU steps the rows (embrace's owners, allgather's replicas); a strategy that
    # leaves the update to servers (ps) keeps FBGEMM's merge, its servers step the rows
    return ("; embedding backward as FBGEMM's table-batched embedding runs it, fused with the "
            "optimizer where a GPU steps the rows (exact: a radix sort over the table rows' bits, "
            "a run-length encode, one update per distinct row reading every lookup's gradient; no "
            "host sync; one TBE a table, where TorchRec batches a GPU's tables into one)")


def _zipf_unused(cfg, tables: dict, dense_table_gradient: bool) -> str:
    """--zipf shapes only which rows a batch touches, which only a row-sparse embedding
    gradient sees: where none has one, a --zipf the run set is said to change nothing."""
    if cfg.corpus or cfg.zipf_s == DEFAULT_ZIPF_S:
        return ""
    if not tables:
        why = "the model has no embedding tables"
    elif dense_table_gradient:
        why = f"--strategy {cfg.strategy} synchronises every table's gradient densely"
    elif all(t.dense_grad for t in tables.values()):
        why = "every table's gradient is dense (a full softmax tied to it)"
    else:
        return ""
    return f"; --zipf {cfg.zipf_s:g} has no effect: {why}"
