"""LAMB as NVIDIA DeepLearningExamples' BERT pre-training runs it: the kernels and the
launch structure of FusedLAMBAMP (PyTorch/LanguageModeling/BERT/lamb_amp_opt at 729963dd;
the same algorithm as apex's csrc/multi_tensor_lamb.cu, which writes the update in place
of the gradient too).

One optimizer step, in order (file:line in lamb_amp_opt unless named):
- torch GradScaler.step -> FusedLAMBAMP.step(grad_scaler=...) -> _check_inf_per_device
  (torch/amp/grad_scaler.py _check_inf_per_device -> _unscale_grads_ ->
  torch._amp_foreach_non_finite_check_and_unscale_ with an inverse scale of 1): one
  in-place foreach pass over the gradients, read + write. Only with loss scaling (mixed
  precision; run_pretraining.py:436 GradScaler(enabled=args.fp16)); under FP32/TF32 the
  disabled scaler calls step() without it (fused_lamb/fused_lamb.py:148-151).
- fused_lamb.py:166-183: multi_tensor_l2norm over the FP32 and the 16-bit gradients
  (read the gradient), then :186-191 one more l2norm blending the two norms (tiny).
- csrc/multi_tensor_lamb.cu:415 per-tensor l2norm of the FP32 parameters (the master
  copies under O2, fused_lamb.py:224-229): read 4 B.
- :420-464 stage 1 (LAMBStage1Functor :43-245): read gradient, FP32 parameter (weight
  decay != 0, :115-116), m and v; write the update into the gradient's storage (:163,168),
  m and v.
- :467 per-tensor l2norm of the update (the gradient's storage): read.
- :470-497 stage 2 (LAMBStage2Functor :251-368): read update and FP32 parameter, write it;
  with a 16-bit model (N == 3) also read (:313-315, the aligned path loads it) and write
  the 16-bit model copy.
Each l2norm with per-tensor norms ends with a cleanup kernel (multi_tensor_l2norm_kernel.cu
:207), one launch.

Launches: apex's multi_tensor_applier cuts tensors into 65,536-element chunks (apex
multi_tensor_apply/__init__.py: MultiTensorApply(2048 * 32)); one launch holds at most 320
chunks and depth_to_max_tensors[depth - 1] tensors (csrc/multi_tensor_apply.cuh:16-17; the
same values in ATen's MultiTensorApply.cuh below CUDA 13) and launches when either fills or
at the last chunk (:97-101). `launches` replays that loop.

The step is one multi-tensor call over the whole model, but embsim times the update per
layer: each layer gets its share of a pass's launches in proportion to its chunks
(a fractional count), so the per-layer times add up to the whole step's.
Not modelled: run_pretraining.py:425-427 splits the parameters into two groups (weight
decay / none: biases and LayerNorm) and stage 1 and 2 and the two per-tensor norms run
once per group; a Model keeps a layer's tensor count, not which tensors are biases, so the
launches are counted as for one group (a few fewer than the real step). A layer's
elements are taken as spread evenly over its tensors when counting chunks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from .kernels import Kernel, stream

FP32 = 4
CHUNK = 2048 * 32                        # elements per chunk (one thread block)
MAX_TENSORS = (110, 64, 48, 36, 30)      # per launch, by the number of tensor lists
MAX_BLOCKS = 320                         # chunks per launch


@lru_cache(maxsize=4096)
def launches(chunks: tuple[int, ...], depth: int) -> int:
    """Kernel launches multi_tensor_apply<depth> issues for tensors of these chunk counts
    (csrc/multi_tensor_apply.cuh:78-131): a launch when the block table is full, when the
    tensor table is full at a tensor's last chunk, or at the very last chunk; a tensor cut
    by a full block table carries over into the next launch."""
    max_tensors, n, tensors, blocks = MAX_TENSORS[depth - 1], 0, 0, 0
    for c in chunks:
        if c <= 0:
            continue
        tensors += 1
        left = c
        while left:
            take = min(left, MAX_BLOCKS - blocks)
            blocks += take
            left -= take
            if blocks == MAX_BLOCKS or (tensors == max_tensors and not left):
                n += 1
                blocks = 0
                tensors = 1 if left else 0
    return n + (1 if blocks else 0)


def tensor_chunks(elements: float, tensors: int) -> tuple[int, ...]:
    """Chunks of each of `tensors` tensors sharing `elements` evenly."""
    t = max(1, tensors)
    return (math.ceil(elements / t / CHUNK),) * t if elements > 0 else ()


@dataclass(frozen=True)
class LambPass:
    name: str
    depth: int                 # tensor lists the multi-tensor kernel takes (0: fixed launches)
    bytes_per_element: float   # HBM bytes read + written per parameter element
    extra_launches: int = 0    # launches besides the multi-tensor ones (l2norm cleanup)
    ops: int = 0               # Python-level framework calls (the rest launch from C++)


def lamb_passes(grad_bytes: int, master: bool, loss_scaling: bool) -> tuple[LambPass, ...]:
    """The step's passes; `grad_bytes`: the gradient's (= the stored parameter's) element
    size, `master`: FP32 master copies of 16-bit parameters (O2), `loss_scaling`: a
    GradScaler is enabled (mixed precision)."""
    g = grad_bytes
    out = [LambPass("lamb.check_inf", 1, 2 * g, ops=1)] if loss_scaling else []
    return tuple(out + [
        LambPass("lamb.grad_norm", 1, g, extra_launches=1, ops=1),
        LambPass("lamb.global_norm", 0, 0, extra_launches=2, ops=1),
        LambPass("lamb.param_norm", 1, FP32, extra_launches=1, ops=1),
        LambPass("lamb.stage1", 4, 2 * g + FP32 + 4 * FP32),
        LambPass("lamb.update_norm", 1, g, extra_launches=1),
        LambPass("lamb.stage2", 3 if master else 2, g + 2 * FP32 + (2 * g if master else 0)),
    ])


def bytes_per_element(grad_bytes: int, master: bool, loss_scaling: bool) -> float:
    return sum(p.bytes_per_element for p in lamb_passes(grad_bytes, master, loss_scaling))


def lamb_kernels(elements: float, tensors: int, model_chunks: tuple[int, ...],
                 grad_bytes: int, master: bool, loss_scaling: bool,
                 index_bytes: float = 0) -> list[Kernel]:
    """The LAMB step's kernels for `elements` parameters held in `tensors` tensors, a part
    of a step over tensors of `model_chunks` chunks (the whole model's; the part's own when
    it is stepped alone, e.g. a sparse row update). Each pass: the part's bytes, and its
    share of the pass's launches and framework calls by chunks."""
    mine = tensor_chunks(elements, tensors)
    total = sum(model_chunks) or 1
    share = sum(mine) / total
    out = []
    for p in lamb_passes(grad_bytes, master, loss_scaling):
        n = (launches(model_chunks, p.depth) if p.depth else 0) + p.extra_launches
        count = n * share
        if count <= 0:
            continue
        nbytes = elements * p.bytes_per_element + (index_bytes if p.name == "lamb.stage1" else 0)
        out.append(stream(p.name, nbytes / count, count=count, ops=p.ops * share,
                          param_pass=True))
    return out
