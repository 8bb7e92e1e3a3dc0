"""The data-parallel wrapper's passes over the gradient buckets (schedulers.ddp_passes):
the copies into and out of the flat buckets its all-reduce reads, and the divides by the
world size. They run on the compute stream, so the step's compute includes them; these
are their names and sources, for the step breakdown to say how much of the compute they
are (StepMetrics.extra_by_tag times them by the tag of their ops)."""

from __future__ import annotations

from dataclasses import dataclass

@dataclass(frozen=True)
class BucketPass:
    tag: str          # the extra op's tag (plan.names.extra_name) schedulers.ddp_passes gives it
    what: str
    source: str       # where the wrapper runs it (schedulers.ddp_passes quotes the code)


# PyTorch: torch/csrc/distributed/c10d/reducer.cpp (mark_variable_ready_dense copies each
# gradient into its bucket with at::mul_out(bucket_view, grad, 1/world) in the gradient's
# autograd hook; finalize_bucket_dense copies it back, grad.copy_(bucket_view), after the
# all-reduce); apex: apex/parallel/distributed.py allreduce_bucket (flatten = torch.cat)
BUCKET_PASSES = (
    BucketPass("ddp-copy-in", "copy into the flat buckets, with the divide",
               "PyTorch DDP reducer.cpp mark_variable_ready_dense"),
    BucketPass("ddp-copy-out", "copy back out of the buckets",
               "PyTorch DDP reducer.cpp finalize_bucket_dense"),
    BucketPass("ddp-divide", "divide in the buckets",
               "PyTorch DDP gradient_as_bucket_view, reducer.cpp mark_variable_ready_dense"),
    BucketPass("ddp-hook-divide", "the comm hook's divide of each full bucket",
               "DDP comm hook default_hooks.allreduce_hook"),
    BucketPass("ddp-flatten", "flatten each full bucket (a copy)",
               "apex DistributedDataParallel.allreduce_bucket"),
)


def bucket_pass_times(extra_by_tag: dict) -> tuple[tuple[BucketPass, float], ...]:
    """(pass, s per step) for the passes that ran, in BUCKET_PASSES' order."""
    return tuple((p, extra_by_tag[p.tag]) for p in BUCKET_PASSES if extra_by_tag.get(p.tag, 0.0) > 0)
