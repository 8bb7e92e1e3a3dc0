"""Per-layer and optimizer times of a model on one GPU from the kernel model.

    gpu = for_gpu(topology.node.gpu)
    times = model_times(model, gpu)            # name -> LayerTime
    source = gpu.label                         # "kernel model, A100-SXM4-80GB spec"
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .attention_rate import default_implementation, describe
from .gpu_props import GpuCompute
from .kernel_time import fp8_tn_only, kernels_time
from .kernels import Kernel, stream
from .fbgemm_tbe import tbe_apply_kernels, tbe_merge_kernels
from .lamb import lamb_kernels, tensor_chunks
from .model import Layer, Model
from .precision import precision
from .tf_dedup import tf_dedup_kernels, tf_unique_kernels
from .torch_coalesce import coalesce_kernels
from .torch_sparse_optim import SPARSE_OPTIMIZERS, torch_sparse_apply_kernels
from .torch_unique import torch_unique_kernels


@dataclass(frozen=True)
class LayerTime:
    name: str
    fwd_s: float
    bwd_s: float
    bwd_sparse_s: float | None = None     # embedding: backward with a sparse gradient
    core_fwd_s: float = 0.0               # transformer block: its attention cores' forward


def layer_time(layer: Layer, model: Model, gpu: GpuCompute) -> LayerTime:
    prec, e = precision(model.dtype), model.dtype_bytes
    kl = layer.kernels
    # an embedding's sparse backward may launch nothing (FBGEMM's TBE: all of it is the
    # fused update, timed with the optimizer); other layers have no sparse variant
    has_sparse = bool(kl.bwd_sparse) or layer.kind == "embedding"
    sparse = kernels_time(kl.bwd_sparse, gpu, prec, e) if has_sparse else None
    core = kernels_time(kl.core_fwd, gpu, prec, e) if getattr(kl, "core_fwd", ()) else 0.0
    return LayerTime(layer.name, kernels_time(kl.fwd, gpu, prec, e),
                     kernels_time(kl.bwd, gpu, prec, e), sparse, core)


def model_times(model: Model, gpu: GpuCompute, recompute: bool = True) -> dict[str, LayerTime]:
    """Forward order; repeats of one zoo layer share their kernels, so time them once. A
    checkpointed block (--recompute) runs its forward again in backward (`recompute`
    False: the plain times, for a caller that adds the recompute itself)."""
    gpu.gemm_peak(precision(model.dtype))      # refuse a dtype the GPU lacks, once
    cache: dict[int, LayerTime] = {}
    out = {}
    for layer in model.layers:
        key = id(layer.kernels)
        if key not in cache:
            cache[key] = layer_time(layer, model, gpu)
        t = cache[key]
        out[layer.name] = LayerTime(layer.name, t.fwd_s, t.bwd_s, t.bwd_sparse_s, t.core_fwd_s)
    return with_recompute(out, model) if recompute else out


def with_recompute(times: dict[str, LayerTime], model: Model) -> dict[str, LayerTime]:
    """Each checkpointed block's backward plus its forward again, or (selective) plus its
    attention cores' forward (embsim.workload.recompute)."""
    for name in model.recomputed:
        t = times[name]
        times[name] = replace(t, bwd_s=t.bwd_s + t.fwd_s)
    for name in model.core_recomputed:
        t = times[name]
        times[name] = replace(t, bwd_s=t.bwd_s + t.core_fwd_s)
    return times


def elementwise_style(model: Model) -> str | None:
    """How the model's transformer blocks run their elementwise chains (dropout, residual,
    LayerNorm, attention softmax), for the compute-source line: "fused" (generated or
    library-fused kernels: nvFuser/TorchScript, apex, Transformer Engine), "eager" (one
    kernel per op) or both with the layers of each; None without transformer blocks."""
    styles: dict[bool, list[str]] = {}
    for layer in model.layers:
        fused = getattr(layer.kernels, "fused_elementwise", None)
        if fused is not None:
            base = layer.name.split(".")[0]
            names = styles.setdefault(fused, [])
            if base not in names:
                names.append(base)
    if not styles:
        return None
    if len(styles) == 1:
        return "fused" if True in styles else "eager"
    return f"fused in {', '.join(styles[True])}, eager in {', '.join(styles[False])}"


def attention_source(model: Model, gpu: GpuCompute) -> str | None:
    """Which fused-attention kernel the model's layers run on this GPU and whose published
    figures time it (embsim.workload.attention_rate); None without flash attention or on a
    device that times it as a GEMM (a CPU, a measured table)."""
    if gpu.synchronous or gpu.gemm_table is not None:
        return None
    impls, seqs = [], set()
    for layer in model.layers:
        for k in layer.kernels.fwd:
            if k.kind == "attention":
                impl = k.impl or default_implementation(gpu.arch)
                if impl not in impls:
                    impls.append(impl)
                seqs.add(k.m)
    if not impls:
        return None
    return "; ".join(describe(i, gpu.arch, gpu.name, seqs) for i in impls)


def fp8_source(model: Model, gpu: GpuCompute) -> str | None:
    """Which Transformer Engine FP8 recipe's quantize kernels the blocks run
    (embsim.workload.fp8_quant) and whether this GPU writes the FP8 transposes; None
    without them."""
    recipes = []
    for layer in model.layers:
        for k in layer.kernels.fwd:
            if k.name.startswith("fp8."):
                r = "delayed" if k.name.endswith((".cast_transpose", ".transpose")) else "current"
                if r not in recipes:
                    recipes.append(r)
    if not recipes:
        return None
    transpose = "with" if fp8_tn_only(gpu) else "without"
    return (f"FP8 quantize kernels: Transformer Engine {'/'.join(recipes)} scaling, "
            f"{transpose} FP8 transposes")


def optimizer_bytes_per_element(dtype_bytes: int, state_bytes: int, master_bytes: int) -> int:
    """Fused: read param + grad, read+write state and master copy, write param; with mixed
    precision the loss-scale unscale/overflow check reads the gradient once more."""
    unscale = dtype_bytes if master_bytes else 0
    return 3 * dtype_bytes + 2 * state_bytes + 2 * master_bytes + unscale


FP32 = 4
# torch.optim's per-tensor step in PyTorch 1.x (torch/optim/adam.py etc., the default
# before foreach): each arithmetic op is its own elementwise kernel over one parameter
# tensor. Per kernel: (op, passes over param/grad-width data, passes over fp32 state),
# a pass being one read or one write of the tensor. Adam: m.mul_, m.add_(g), v.mul_,
# v.addcmul_(g, g), v.sqrt(), / sqrt(bias_correction2), .add_(eps), p.addcdiv_(m, denom).
PER_TENSOR_KERNELS = {
    "adam": (("exp_avg.mul_", 0, 2), ("exp_avg.add_", 1, 2), ("exp_avg_sq.mul_", 0, 2),
             ("exp_avg_sq.addcmul_", 1, 2), ("sqrt", 0, 2), ("div", 0, 2), ("add_eps", 0, 2),
             ("param.addcdiv_", 2, 2)),
    "sgd": (("param.add_", 3, 0),),
    "sgd-momentum": (("buf.mul_", 0, 2), ("buf.add_", 1, 2), ("param.add_", 2, 1)),
    "adagrad": (("sum.addcmul_", 1, 2), ("sqrt", 0, 2), ("add_eps", 0, 2),
                ("param.addcdiv_", 3, 1)),
}
# NVIDIA DeepLearningExamples Transformer-XL's JITLamb (pytorch/lamb.py at 729963dd,
# lamb_kernel :139-157, called per parameter tensor by JITLamb.step :199-238): one
# TorchScript function whose elementwise chains the CUDA fuser joins between its two
# reductions: the moments and the Adam step (read g, m, v, p; write m, v, adam_step),
# ||p|| and ||adam_step||, the scalar trust-ratio chain (one fused group on 0-d tensors),
# and the update p - lr * trust * adam_step written as a new tensor (read p, step; write).
PER_TENSOR_KERNELS["lamb"] = (("lamb.moments_step", 1, 6), ("lamb.param_norm", 0, 1),
                              ("lamb.step_norm", 0, 1), ("lamb.trust_ratio", 0, 0),
                              ("lamb.update", 0, 3))
PER_TENSOR_KERNELS["adamw"] = (("param.mul_", 2, 0),) + PER_TENSOR_KERNELS["adam"]
TENSORS_PER_LAYER = 2      # weight and bias: a layer whose tensor count is not given


def optimizer_kernels(elements: float, model: Model, kernels: int = 1,
                      index_bytes: float = 0, tensors: int | None = None, table: bool = False) -> list:
    """The optimizer step's kernels for `elements` parameters (embsim.workload.model.Optimizer).
    fused: one multi-tensor kernel (apex FusedAdam, torch foreach/fused); `kernels` > 1
    launches share its bytes (a sparse step's coalesce and row update), not repeat them.
    lamb: FusedLAMBAMP's seven passes (embsim.workload.lamb), the layer's share of the
    whole model's multi-tensor launches; per-tensor: JITLamb's (PER_TENSOR_KERNELS).
    per-tensor: torch.optim's for-loop; with mixed precision apex amp O2 first unscales
    the 16-bit gradients into the fp32 master gradients and after the step copies the
    master weights back into the model (one multi-tensor kernel each).
    clip_grad_norm: one norm kernel per tensor over the gradients the optimizer reads.
    All are passes over parameter-sized contiguous tensors (Kernel.param_pass): they run at
    the copy bandwidth, not at the framework's activation-kernel fraction of it.
    `tensors`: the parameter tensors holding the elements (the layer's
    LayerKernels.param_tensors); default TENSORS_PER_LAYER per kernel. `table`: the
    elements are an embedding table's, stored in the table's precision. Under autocast
    every parameter is FP32 (precision.param_bytes): no master copy, no unscale into one;
    the loss scaler still unscales the FP32 gradients in place."""
    n_tensors = max(1, tensors) if tensors is not None else TENSORS_PER_LAYER * kernels
    opt = model.optimizer
    d = model.table_bytes if table else model.dense_param_bytes
    master = 0 if d >= FP32 else opt.master_bytes_per_param
    grad_w = FP32 if master else d
    if opt.name == "lamb" and opt.implementation == "fused":
        # FusedLAMBAMP reads the gradients in the parameters' dtype (embsim.workload.lamb);
        # a sparse row update (index_bytes) is a multi-tensor call of its own
        whole = tensor_chunks(elements, n_tensors) if index_bytes else model_chunks(model)
        out = lamb_kernels(elements, n_tensors, whole, d, bool(master),
                           bool(opt.master_bytes_per_param), index_bytes)
        grad_w = d
    elif opt.implementation == "fused":
        # an FP32 table in a mixed-precision model has no master copy, but the loss
        # scaler still unscales (and checks) its gradient once
        unscale = d if not master and opt.master_bytes_per_param else 0
        nbytes = elements * (optimizer_bytes_per_element(
            d, opt.state_bytes_per_param, master) + unscale) + index_bytes
        # the step's bytes move once, however many launches it takes
        out = [stream("optimizer", nbytes / kernels, count=kernels, param_pass=True)]
    else:
        n = n_tensors
        out = [stream(f"optimizer.{op}", elements * (pw * grad_w + sw * FP32) / n, count=n,
                      param_pass=True)
               for op, pw, sw in PER_TENSOR_KERNELS[opt.name]]
        if index_bytes:
            out.append(stream("optimizer.indices", index_bytes, param_pass=True))
        if not master:
            out += grad_scaler_unscale(elements, model, d)
        else:
            out += [stream("unscale_to_master", elements * (d + FP32), param_pass=True),
                    stream("master_to_model", elements * (FP32 + d), param_pass=True)]
    return out + clip_grad_norm_kernels(elements, model, grad_w, n_tensors)


def grad_scaler_unscale(elements: float, model: Model, param_bytes: int, ops: float = 1) -> list:
    """autocast's GradScaler.unscale_: the FP32 gradients rescaled in place (none without
    a loss scaler). `ops` 0: inside its multi-tensor kernel over every gradient, no launch
    of the tensor's own."""
    if not model.optimizer.master_bytes_per_param:
        return []
    return [stream("amp.unscale", elements * 2 * param_bytes, param_pass=True, ops=ops)]


def clip_grad_norm_kernels(elements: float, model: Model, grad_bytes: int, tensors: int = 1) -> list:
    """clip_grad_norm_'s norm: one kernel per gradient tensor over the bytes the optimizer
    reads (none without clipping)."""
    if not model.optimizer.clip_grad_norm:
        return []
    return [stream("clip_grad_norm", elements * grad_bytes / tensors, count=tensors, param_pass=True)]


def model_chunks(model: Model) -> tuple[int, ...]:
    """65,536-element chunks of every parameter tensor the optimizer steps, in layer order
    (a layer's elements spread evenly over its tensors: embsim.workload.lamb)."""
    out: list[int] = []
    for layer in model.layers:
        if layer.params > 0:
            t = getattr(layer.kernels, "param_tensors", None)
            out += tensor_chunks(layer.params, TENSORS_PER_LAYER if t is None else max(1, t))
    return tuple(out)


def optimizer_step_time(elements: float, model: Model, gpu: GpuCompute, kernels: int = 1,
                        index_bytes: float = 0, tensors: int | None = None,
                        table: bool = False) -> float:
    """Update `elements` parameters (memory-bound kernels, optimizer_kernels)."""
    return kernels_time(optimizer_kernels(elements, model, kernels, index_bytes, tensors, table),
                        gpu,
                        precision(model.dtype), model.dtype_bytes)


def sparse_optimizer_step_time(rows: float, dim: int, model: Model, gpu: GpuCompute,
                               lookups: float | None = None, table_rows: int | None = None) -> float:
    """Update only the `rows` touched rows of a `dim`-wide table (8-byte indices), the
    sparse gradient holding `lookups` rows (one per lookup; default `rows`, none repeated)
    merged first: PyTorch's coalesce (sparse_dedup coalesce: embsim.workload.
    torch_coalesce) or TensorFlow's Unique and UnsortedSegmentSum (tf-unique:
    embsim.workload.tf_dedup), each as the parts its host syncs separate, then the row
    update; or FBGEMM's fused backward (tbe: embsim.workload.fbgemm_tbe), whose sort runs
    over the bits of the `table_rows` rows. Plain SGD on an FP32 table never merges
    outside FBGEMM: given the `lookups`, it is an index_add over them
    (uncoalesced_sgd_kernels)."""
    if (lookups is not None and model.optimizer.name == "sgd" and model.table_bytes >= FP32
            and model.optimizer.sparse_dedup != "tbe"):
        return kernels_time(uncoalesced_sgd_kernels(lookups, dim, model), gpu,
                            precision(model.dtype), model.dtype_bytes)
    r = int(round(rows))
    n = r if lookups is None else lookups
    parts = sparse_merge_kernels("optimizer", n, r, dim, model, table_rows)
    apply = sparse_apply_kernels(r, dim, model, n)
    parts = parts[:-1] + [parts[-1] + apply] if parts else [apply]
    return synced_kernels_time(parts, gpu, precision(model.dtype), model.dtype_bytes)


def sparse_apply_kernels(rows: int, dim: int, model: Model, lookups: float | None = None) -> list[Kernel]:
    """The row update of a merged sparse gradient: torch.optim's single-tensor sparse branch
    (Adagrad, SparseAdam: one ATen op per line, embsim.workload.torch_sparse_optim) after
    PyTorch's coalesce; FBGEMM's fused row kernels, reading the `lookups` gradient rows
    themselves (tbe); otherwise the optimizer's own kernels over the rows' elements
    (TensorFlow's fused ResourceSparseApply* ops, SGD with momentum and the rest)."""
    opt = model.optimizer
    if opt.sparse_dedup == "tbe":
        # no loss scaler or clipping reaches it: the update runs inside the backward
        return tbe_apply_kernels("optimizer", rows if lookups is None else lookups, rows, dim,
                                 model.table_bytes, opt.name)
    if opt.sparse_dedup == "coalesce" and opt.name in SPARSE_OPTIMIZERS:
        e, d = rows * dim, model.table_bytes
        # an FP32 table's values unscaled in place (a 16-bit one has a master copy instead)
        unscale = grad_scaler_unscale(e, model, d, ops=0) if d >= FP32 else []
        return (torch_sparse_apply_kernels(rows, dim, opt.name, d) + unscale
                + clip_grad_norm_kernels(e, model, d))
    return optimizer_kernels(rows * dim, model, kernels=1, index_bytes=8 * rows, table=True)


def sparse_merge_kernels(name: str, gradient_rows: float, unique_rows: float, dim: int,
                         model: Model, table_rows: int | None = None) -> list[list[Kernel]]:
    """The model's framework merge of a sparse gradient's repeated rows (its optimizer's
    sparse_dedup), as the kernel lists its host syncs separate (FBGEMM's: none; its sort
    needs the `table_rows`)."""
    if model.optimizer.sparse_dedup == "tbe":
        if table_rows is None:
            raise ValueError("FBGEMM's merge sorts over the bits of the table's rows: give table_rows")
        kernels = tbe_merge_kernels(name, gradient_rows, unique_rows, table_rows)
        return [kernels] if kernels else []
    if model.optimizer.sparse_dedup == "tf-unique":
        return list(tf_dedup_kernels(name, gradient_rows, unique_rows, dim, model.table_bytes))
    return coalesce_kernels(name, gradient_rows, unique_rows, dim, model.table_bytes)


def unique_ids_kernels(name: str, ids: float, unique: float, model: Model) -> list[list[Kernel]]:
    """The model's framework finding the distinct values of `ids` int64 ids and each id's
    position among them (torch.unique(return_inverse=True), TensorFlow's Unique), as the
    kernel lists its host syncs separate."""
    if model.framework == "tensorflow":
        return [part for part in tf_unique_kernels(name, ids, unique) if part]
    kernels = torch_unique_kernels(name, ids, unique)
    return [kernels] if kernels else []


def sparse_merge_time(gradient_rows: float, unique_rows: float, dim: int, model: Model,
                      gpu: GpuCompute, table_rows: int | None = None) -> float:
    """Seconds of sparse_merge_kernels alone (a GPU merging its rows before it sends them)."""
    return synced_kernels_time(sparse_merge_kernels("merge", gradient_rows, unique_rows, dim, model,
                                                    table_rows),
                               gpu, precision(model.dtype), model.dtype_bytes)


def synced_kernels_time(parts: list, gpu: GpuCompute, prec, elem_bytes: int) -> float:
    """Kernel lists the host runs one after another with a synchronisation between them
    (it waits for the GPU to drain before it launches the next list): their times add."""
    return sum(kernels_time(p, gpu, prec, elem_bytes) for p in parts)


def uncoalesced_sgd_kernels(lookups: float, dim: int, model: Model) -> list:
    """Plain SGD on a sparse gradient with one row per lookup (torch.optim.SGD's
    param.add_(grad, alpha=-lr): add_out_dense_sparse_cuda sends an uncoalesced gradient
    to index_add_, an atomic read-modify-write of the table row per lookup; Keras SGD's
    _resource_apply_sparse: ResourceScatterAdd of the IndexedSlices, likewise per lookup).
    Under autocast the loss scaler first unscales those FP32 values in place
    (torch.cuda.amp GradScaler._unscale_grads_ takes a sparse FP32 gradient's _values()
    without coalescing)."""
    row = dim * model.table_bytes
    out = [Kernel("scatter", rows=lookups, row_bytes=row, name="optimizer.index_add"),
           stream("optimizer.indices", lookups * 8, param_pass=True, ops=0)]
    if model.optimizer.master_bytes_per_param:
        out.insert(0, stream("amp.unscale", lookups * row * 2, param_pass=True))
    return out
