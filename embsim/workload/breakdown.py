"""Where a micro-batch's GPU time goes, by kernel class: the kernel model's own account
of one forward + backward (no optimizer, no communication), for checking a model's
rows against published profiles kernel class by kernel class.

Classes (Kernel fields, embsim.workload.kernels):
- gemm: dense products (linear layers, output projections, LSTM input GEMMs);
- batched gemm: products over (sample, head) pairs (unfused attention's scores/context);
- flash attention: fused attention passes;
- memory-bound <mechanism>: activation kernels by what bounds them (layer, stream, rng,
  column; embsim.workload.gpu_props);
- copy: dtype casts and contiguous copies; recurrent: cuDNN per-timestep kernels;
- gather/scatter: embedding lookups and their gradient rows.
Each class's GPU seconds include the per-kernel gap; `host` is the framework's dispatch
time, which the model charges instead of the GPU time for a layer whose launches take longer.

`python -m embsim.workload.breakdown --model bert-large --topology dgx-a100 --dtype tf32
--batch 128 --seq 128` prints the table (the zoo's amp, lengths and padding defaults; a
shipped length histogram only).
"""

from __future__ import annotations

from collections import defaultdict

from .kernel_time import kernel_time
from .kernels import Kernel
from .precision import precision


def kernel_class(k: Kernel) -> str:
    if k.kind == "gemm":
        return "batched gemm" if k.batch > 1 else "gemm"
    if k.kind == "attention":
        return "flash attention"
    if k.kind in ("gather", "scatter"):
        return "gather/scatter"
    if k.recurrent:
        return "recurrent"
    if k.copy:
        return "copy"
    if k.param_pass:
        return "parameter pass"
    return f"memory-bound {k.mechanism}"


def breakdown(model, gpu) -> dict[str, float]:
    """Seconds per class of one micro-batch's forward and backward on `gpu` (the dense
    gradient for embeddings), plus `host`: the layers' framework dispatch time."""
    prec, e = precision(model.dtype), model.dtype_bytes
    out: dict[str, float] = defaultdict(float)
    for layer in model.layers:
        for k in (*layer.kernels.fwd, *layer.kernels.bwd):
            t = kernel_time(k, gpu, prec, e)
            out[kernel_class(k)] += t.gpu_s
            out["host"] += t.host_s
    return dict(out)


def mixed(build, lengths, weights) -> dict[str, float]:
    """The weighted sum of breakdown(build(L)) over padded lengths L (embsim.workload.
    padding.LengthMix), `build` returning (model, gpu)."""
    out: dict[str, float] = defaultdict(float)
    for length, w in zip(lengths, weights):
        for key, s in breakdown(*build(length)).items():
            out[key] += w * s
    return dict(out)


def table(parts: dict[str, float]) -> str:
    gpu_total = sum(v for k, v in parts.items() if k != "host")
    rows = [f"{'class':24s} {'ms':>10s} {'share':>7s}"]
    for key, s in sorted(((k, v) for k, v in parts.items() if k != "host"), key=lambda kv: -kv[1]):
        rows.append(f"{key:24s} {s * 1e3:10.2f} {s / gpu_total:7.1%}")
    rows.append(f"{'GPU total':24s} {gpu_total * 1e3:10.2f}")
    rows.append(f"{'host dispatch':24s} {parts.get('host', 0.0) * 1e3:10.2f}")
    return "\n".join(rows)


def main(argv=None) -> None:
    from ..topology.clusterspec import load_topology
    from . import load_model, load_spec
    from .gpu_compute import for_gpu
    from .length_data import list_datasets, load_histogram
    from .padding import length_mix, parse_padding
    from ..toolargs import ToolParser, positive_int
    ap = ToolParser(prog="python -m embsim.workload.breakdown", description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--topology", required=True, help="a preset name or topology file")
    ap.add_argument("--dtype")
    ap.add_argument("--amp")
    ap.add_argument("--batch", type=positive_int)
    ap.add_argument("--seq", type=positive_int)
    ap.add_argument("--padding", help="default: the zoo model's at --seq, else max")
    args = ap.parse_args(argv)
    spec = load_spec(args.model)
    batch, seq = args.batch or spec.batch, args.seq or spec.seq
    gpu = for_gpu(load_topology(args.topology).node.gpu)
    amp = args.amp or spec.amp
    policy = parse_padding(args.padding or spec.padding_for(seq))
    if policy is None or policy.kind == "max" or spec.lengths not in list_datasets():
        lengths, weights, note = (seq,), (1.0,), f"every sample at {seq}"
    else:
        mix = length_mix(load_histogram(spec.lengths).probabilities(seq), seq, policy, batch)
        lengths, weights = mix.lengths, mix.weights
        note = f"padding {policy.text} of {spec.lengths}: mean padded length {mix.mean_length:.1f}"
    parts = mixed(lambda L: (load_model(args.model, batch=batch, seq=L, dtype=args.dtype, amp=amp), gpu),
                  lengths, weights)
    print(f"{spec.name} batch {batch} x seq {seq}, {args.dtype or spec.dtype}, {gpu.label}; {note}")
    print(table(parts))


if __name__ == "__main__":
    import sys
    from ..errors import InputError
    try:
        main()
    except InputError as exc:         # bad input: one line, exit status 2
        print(f"embsim.workload.breakdown: error: {exc}", file=sys.stderr)
        sys.exit(2)
