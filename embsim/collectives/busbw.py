"""nccl-tests' size conventions and busbw factors (nccl-tests doc/PERFORMANCE.md, src/*.cu).

`algbw = S / t`; `busbw = algbw * factor`, with S the "size" column: AllReduce, Broadcast,
Reduce, SendRecv: the buffer; AllGather: total output; ReduceScatter: total input;
AlltoAll: the per-rank send buffer. GB are 1e9 bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

from embsim.errors import InputError

OPS = ("all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "reduce", "sendrecv")


def canonical_op(name: str) -> str:
    """An op as people write it (AllReduce, all-reduce, allreduce, all_reduce_perf,
    all_to_all, send_recv) as nccl-tests' binary names it, the spelling OPS uses; an
    unknown name is returned unchanged for the caller to refuse."""
    key = name.strip().lower().replace("-", "_")
    if key.endswith("_perf"):
        key = key[: -len("_perf")]
    squashed = key.replace("_", "")
    for op in OPS:
        if squashed == op.replace("_", ""):
            return op
    return "alltoall" if squashed == "all2all" else name


# nccl-tests' datatype names (src/common.cu test_typenames) and their sizes in bytes.
DATATYPES = {
    "int8": 1, "uint8": 1, "int32": 4, "uint32": 4, "int64": 8, "uint64": 8,
    "half": 2, "float": 4, "double": 8, "bfloat16": 2, "f8e4m3": 1, "f8e5m2": 1,
}
_ALIASES = {"char": "int8", "int": "int32", "float16": "half", "fp16": "half", "float32": "float",
            "fp32": "float", "float64": "double", "bf16": "bfloat16", "fp8_e4m3": "f8e4m3",
            "fp8_e5m2": "f8e5m2"}
REDUCING = ("all_reduce", "reduce_scatter", "reduce")


def datatype_size(name: str) -> tuple[str, int]:
    key = _ALIASES.get(name.lower(), name.lower())
    if key not in DATATYPES:
        raise InputError(f"--datatype {name!r}: unknown; known: {', '.join(DATATYPES)}")
    return key, DATATYPES[key]


def busbw_factor(op: str, n_ranks: int) -> float:
    n = n_ranks
    if op == "all_reduce":
        return 2.0 * (n - 1) / n
    if op in ("all_gather", "reduce_scatter", "alltoall"):
        return (n - 1) / n
    if op in ("broadcast", "reduce", "sendrecv"):
        return 1.0
    raise InputError(f"op {op!r}: known ops are {', '.join(OPS)}")


@dataclass(frozen=True)
class SizeConvention:
    size: int     # bytes, the "size" column
    count: int    # elements, the "count" column
    redop: str
    root: int


def size_convention(op: str, nbytes: int, elt: int, n_ranks: int) -> SizeConvention:
    """Round a requested size like nccl-tests: whole elements, divisible by n for AG/RS/A2A."""
    busbw_factor(op, n_ranks)  # validates op
    count = int(nbytes) // elt
    if op in ("all_gather", "reduce_scatter", "alltoall"):
        per_rank = count // n_ranks
        size, shown = per_rank * n_ranks * elt, per_rank
    else:
        size, shown = count * elt, count
    return SizeConvention(size=size, count=shown, redop="sum" if op in REDUCING else "none",
                    root=0 if op in ("broadcast", "reduce") else -1)


def algbw_busbw(op: str, size: int, time_s: float, n_ranks: int) -> tuple[float, float]:
    """(algbw, busbw) in GB/s for a size (bytes) and time (seconds)."""
    if time_s <= 0:
        return 0.0, 0.0
    alg = size / time_s / 1e9
    return alg, alg * busbw_factor(op, n_ranks)
