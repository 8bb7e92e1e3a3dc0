"""The kernel compute model: seconds for each kernel class, a pure function of the
kernel's shape and the GPU (embsim.workload.gpu_compute.GpuCompute).

- GEMM: the product is cut into output tiles, one per thread block, run in waves over
  the SMs (NVIDIA "Matrix Multiplication Background User's Guide": tile and wave
  quantisation). cuBLAS picks a tile shape and a split-K factor per shape; we take the
  fastest of the usual candidates. A tile's operands come through L2: a small tile has
  too little reuse to feed the tensor cores (efficiency = tile harmonic side / the GPU's
  full-rate side, at most 1). Large shapes run at the GPU's measured fraction of peak.
  A GEMM is never faster than streaming its operands through HBM.
- stream (memory-bound) kernels: bytes / (achievable HBM bandwidth); a transformer block's
  activation kernels reach only the framework's whole-layer fraction of it
  (GpuCompute.stream_efficiency, fitted in embsim.workload.stream_fit), every other
  activation kernel its mechanism's per-kernel fraction (Kernel.mechanism: a stream, a
  dropout mask's RNG, a column reduction; GpuCompute.memory_fraction, fitted in
  embsim.workload.kernel_check), an optimizer's parameter passes, plain copies (dtype
  casts, torch.cat, .contiguous(): ATen's copy_, one contiguous read and write per
  element, the access pattern of the streaming copy the bandwidth figure measures) and
  cuDNN's recurrent kernels the whole of it.
- fused (flash) attention: its FLOPs at the fraction of the GPU's 16-bit tensor peak that
  the library kernel reaches at this head dim and sequence length, from published
  benchmarks (embsim.workload.attention_rate), never faster than moving its real operands
  (Q, K, V, O and their gradients; the scores stay on chip);
- gather / scatter: random rows, each rounded up to whole 32-byte DRAM sectors; a gather
  reads the row and writes it out, a scatter-add reads the gradient row and reads + writes
  the table row; a kernel that only reads (or only writes) its rows says so (passes=1).
- recurrent timesteps: a fixed per-step overhead of library RNN kernels, fitted on
  published recurrent benchmarks (embsim.workload.recurrent_fit) or measured by calibrate;
- every kernel: a GPU-side gap before the next dependent kernel can start; on the host
  each framework op costs a dispatch and each library-internal launch a CUDA launch.
  A layer takes the longer of its GPU time and its host time (the GPU starves when the
  CPU cannot launch fast enough).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .attention_rate import attention_fraction, default_implementation
from .gpu_props import GpuCompute
from .kernels import Kernel
from .precision import Precision, unquantized

# cuBLAS/CUTLASS thread-block tiles on Ampere/Hopper (the guide above lists 256x128,
# 128x256, 128x128, 128x64, 64x128, 64x64, largest first).
TILES = ((256, 128), (128, 256), (128, 128), (128, 64), (64, 128), (64, 64))
SPLIT_K = (1, 2, 3, 4, 6, 8, 16)
MIN_SPLIT_DEPTH = 128      # split-K leaves each block at least this much of k
SECTOR = 32                # DRAM access granularity, bytes
PARTIAL_BYTES = 4          # split-K partial sums are FP32
# Per-tile fixed cost in steps of k, fitted on DeepBench's V100 GEMM results
# (embsim.workload.gemm_fit re-derives it; its test checks this value).
TILE_OVERHEAD_K = 200.0
# A GPU's gemm_fraction is measured on a large square product (Azure cuBLASLt 16384^3 on
# A100; 32768^3 on H100/H200, where the overhead is 0.6 % smaller): the tile rate is set
# so that the model reproduces the measurement at this depth.
FRACTION_REF_K = 16384


def tile_overhead_k(gpu: GpuCompute, prec: Precision) -> float:
    """The per-tile fixed cost in steps of k for this dtype. It is a fixed time (pipeline
    fill, epilogue), fitted as TILE_OVERHEAD_K steps at the 16-bit tensor rate: a dtype
    that runs its k-steps r times as fast pays r times as many (FP32 on V100: 200 x 15.7 /
    125 = 25 steps, which DeepBench's FP32 sheet, not used in the fit, confirms: mean
    |error| 7.4 % -> 3.5 %)."""
    ref = gpu.rates.get("fp16") or gpu.rates.get("bf16")
    rate = gpu.rates.get(prec.gemm_rate)
    return TILE_OVERHEAD_K * rate / ref if ref and rate else TILE_OVERHEAD_K


def asymptotic_fraction(gemm_fraction: float, tile_overhead_k: float = TILE_OVERHEAD_K) -> float:
    """The tile rate (fraction of peak) that gives `gemm_fraction` at FRACTION_REF_K."""
    return gemm_fraction * (FRACTION_REF_K + tile_overhead_k) / FRACTION_REF_K


@dataclass(frozen=True)
class KernelTime:
    gpu_s: float
    host_s: float

    @property
    def seconds(self) -> float:
        return max(self.gpu_s, self.host_s)


def gemm_compute_s(m: int, n: int, k: int, batch: int, rate: float, gpu: GpuCompute,
                   side_full: float, tile_overhead_k: float | None = None) -> float:
    """Tensor/CUDA-core time of one (batched) GEMM at `rate` achievable FLOP/s. Each tile
    also pays a fixed cost worth `tile_overhead_k` more steps of k (filling the operand
    pipeline, writing the output tile): default the fit in embsim.workload.gemm_fit."""
    k0 = TILE_OVERHEAD_K if tile_overhead_k is None else tile_overhead_k
    if not gpu.sms:
        return 2.0 * m * n * k * batch / rate
    per_sm = rate / gpu.sms
    best = math.inf
    for tm, tn in TILES:
        eff = min(1.0, (2 * tm * tn / (tm + tn)) / side_full) if side_full > 0 else 1.0
        tiles = math.ceil(m / tm) * math.ceil(n / tn) * batch
        for split in SPLIT_K:
            if split > 1 and k / split < MIN_SPLIT_DEPTH:
                break
            waves = math.ceil(tiles * split / gpu.sms)
            t = waves * 2.0 * tm * tn * (math.ceil(k / split) + k0) / (per_sm * eff)
            if split > 1:     # write and reduce the FP32 partial products
                t += 2.0 * m * n * batch * split * PARTIAL_BYTES / (gpu.hbm_bps * gpu.hbm_fraction)
            best = min(best, t)
    return best


def gemm_s(kr: Kernel, gpu: GpuCompute, prec: Precision, elem_bytes: int) -> float:
    """One launch of a GEMM kernel (all of its `batch` products)."""
    table = gpu.gemm_table
    if table is not None:
        rate = table.rate(prec.gemm_rate, kr.m, kr.n, kr.k, kr.batch)
        compute = 2.0 * kr.m * kr.n * kr.k * kr.batch / rate
    else:
        k0 = tile_overhead_k(gpu, prec)
        rate = gpu.gemm_peak(prec) * asymptotic_fraction(gpu.gemm_fraction_for(prec), k0)
        compute = gemm_compute_s(kr.m, kr.n, kr.k, kr.batch, rate, gpu,
                                 gpu.tile_side_full.get(prec.gemm_rate, 0.0), k0)
    io = (kr.m * kr.k + kr.k * kr.n + kr.m * kr.n) * kr.batch * elem_bytes
    return max(compute, io / (gpu.hbm_bps * gpu.hbm_fraction))


def attention_s(kr: Kernel, gpu: GpuCompute, prec: Precision, elem_bytes: int) -> float:
    """One flash-attention launch. The published rates count a causal pass as half the
    square's FLOPs, so the time is (FLOPs as counted there) / (fraction x 16-bit peak):
    the kernels run in 16-bit under any mixed-precision recipe (fp8 included; see
    attention_rate). A CPU or a measured GEMM table has no such kernel: timed as the
    GEMM it performs."""
    if gpu.synchronous or gpu.gemm_table is not None:
        return gemm_s(kr, gpu, prec, elem_bytes)
    s, hd = kr.m, kr.n
    mult = 5 if kr.backward else 2
    # an unmasked pass over another number of keys than queries (a context-parallel ring
    # step, workload.context_parallel) counts s x keys; a causal one half the square
    keys = s if kr.causal else kr.k // mult
    counted = 2.0 * s * hd * mult * keys * kr.batch * (0.5 if kr.causal else 1.0)
    impl = kr.impl or default_implementation(gpu.arch)
    frac = attention_fraction(impl, gpu.arch, kr.backward, kr.causal, hd, s)
    # a TF32/FP32 run has no fused kernel of its own (FlashAttention and cuDNN take 16-bit):
    # it takes the same fraction of its own GEMM peak
    rate_key = prec.gemm_rate if prec.storage_bytes >= 4 else (
        "bf16" if "bf16" in gpu.rates else "fp16")
    compute = counted / (frac * gpu.rates.get(rate_key, gpu.gemm_peak(prec)))
    # forward reads Q, K, V and writes O (+ FP32 row statistics); backward reads Q, K, V,
    # O, dO and writes dQ, dK, dV (+ statistics); K, V, dK, dV are `keys` rows
    io = kr.batch * ((s + keys) * hd * elem_bytes * (4 if kr.backward else 2) + 8 * s)
    return max(compute, io / (gpu.hbm_bps * gpu.hbm_fraction))


def fp8_tn_only(gpu: GpuCompute) -> bool:
    """FP8 GEMMs take only the TN layout: Transformer Engine's
    nvte_is_non_tn_fp8_gemm_supported() is false below compute capability 100 and on
    120-129 (consumer Blackwell). An unknown arch counts as Hopper."""
    arch = gpu.arch or 90
    return not (100 <= arch < 120 or arch >= 130)


def _rows_bytes(rows: float, row_bytes: int) -> float:
    return rows * math.ceil(row_bytes / SECTOR) * SECTOR


def kernel_time(kr: Kernel, gpu: GpuCompute, prec: Precision, elem_bytes: int) -> KernelTime:
    """All `count` launches of one kernel."""
    bw = gpu.hbm_bps * gpu.hbm_fraction
    if kr.kind == "gemm":
        one = gemm_s(kr, gpu, unquantized(prec) if kr.unquantized else prec, elem_bytes)
    elif kr.kind == "attention":
        one = attention_s(kr, gpu, prec, elem_bytes)
    elif kr.kind == "stream":
        full = kr.recurrent or kr.param_pass or kr.copy
        # an FP8 transpose is written only where FP8 GEMMs take the TN layout alone
        nbytes = kr.nbytes + (kr.transpose_bytes if kr.transpose_bytes and fp8_tn_only(gpu) else 0.0)
        if not nbytes and kr.transpose_bytes:       # a transpose-only kernel: not launched here
            return KernelTime(0.0, 0.0)
        one = nbytes / (bw if full else bw * gpu.memory_fraction(kr.mechanism))
    elif kr.kind in ("gather", "scatter"):
        gbw = gpu.hbm_bps * (gpu.gather_fraction or gpu.hbm_fraction)
        # gather: read + write; scatter-add: r + r/w; a kernel's own count when it sets one
        passes = kr.passes or (2 if kr.kind == "gather" else 3)
        one = passes * _rows_bytes(kr.rows, kr.row_bytes) / gbw
    else:
        raise AssertionError(f"unknown kernel kind {kr.kind!r}")
    if kr.recurrent:       # half the per-timestep overhead forward, half backward
        one += gpu.recurrent_step(prec) / 2
    gpu_s = kr.count * (one + gpu.kernel_gap_s)
    host_s = kr.ops * gpu.op_dispatch_s + max(0, kr.count - kr.ops) * gpu.launch_s
    return KernelTime(gpu_s, host_s)


def kernels_time(kernels, gpu: GpuCompute, prec: Precision, elem_bytes: int) -> float:
    """Seconds for a list of kernels run in order on one stream: the longer of the GPU's
    busy time and the host's launch time (their sum on a CPU device, which does both)."""
    gpu_s = host_s = 0.0
    for kr in kernels:
        t = kernel_time(kr, gpu, prec, elem_bytes)
        gpu_s += t.gpu_s
        host_s += t.host_s
    return gpu_s + host_s if gpu.synchronous else max(gpu_s, host_s)
