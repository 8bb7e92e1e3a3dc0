"""Gradient compression of the data-parallel all-reduce: FP32 gradients cast to 16 bits for
the wire and back.

    --grad-compress none | fp16 | bf16          (training files: grad_compress:)

What real frameworks run:

* PyTorch DDP's fp16_compress_hook / bf16_compress_hook
  (torch/distributed/algorithms/ddp_comm_hooks/default_hooks.py, _compress_hook): per
  bucket, ``buffer.to(dtype).div_(world_size)`` (a cast, read 4 B write 2 B per element,
  then an in-place divide of the 16-bit copy, read 2 B write 2 B), an all-reduce of the
  16-bit tensor, and ``decompressed_tensor.copy_(value)`` back into the FP32 bucket (read
  2 B write 4 B) in the future's then-callback once the all-reduce has completed.
* Horovod's Compression.fp16 (horovod/tensorflow/compression.py, horovod/torch/
  compression.py, FP16Compressor): each floating gradient tensor cast to float16 before the
  (fused) all-reduce and back to its own dtype after it. NVIDIA DeepLearningExamples' TF1
  and TF2 BERT pass it whenever they train in mixed precision (--amp / --use_fp16), TF2
  Wide & Deep always.

Only gradients wider than 16 bits shrink (FP32 gradients: fp32/tf32 runs, autocast AMP,
an optimizer with fp32_gradients). A 16-bit gradient is left as it is, as both frameworks
do: ``tensor.to(torch.float16)`` of a half tensor returns it uncopied and Horovod's cast
of a float16 tensor is the identity. Such a run is accepted, not refused (a training file
maps the source's code, which sets the compressor whatever the precision), and its output
says that nothing was compressed.

bf16 needs a GPU with bfloat16 arithmetic (the preset's bf16 tensor rate): Volta and
Turing have none, and the run is refused there.

Which collectives compress, and where the passes run: schedulers.ddp_passes (the DDP
wrapper's gradient buckets, dense layers of every strategy that reduces them through DDP;
sparse embedding exchanges never pass through the hook).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InputError

FLAG = "--grad-compress"
DTYPES = ("fp16", "bf16")
# bytes per element on the wire: IEEE half and bfloat16 are both 16 bits
WIRE_BYTES = 2
# the only wider gradient embsim holds: IEEE single (Model.grad_elem_bytes)
FP32_BYTES = 4


@dataclass(frozen=True)
class GradCompress:
    dtype: str = "none"          # none | fp16 | bf16

    @classmethod
    def parse(cls, text: "str | GradCompress | None", flag: str = FLAG) -> "GradCompress":
        if isinstance(text, GradCompress):
            return text
        if text is None:
            return cls()
        key = str(text).strip().lower()
        key = {"off": "none", "float16": "fp16", "half": "fp16", "bfloat16": "bf16"}.get(key, key)
        if key == "none" or key in DTYPES:
            return cls(key)
        raise InputError(f"{flag} {text!r}: must be none, fp16 or bf16")

    @property
    def on(self) -> bool:
        return self.dtype != "none"

    def __str__(self) -> str:
        return self.dtype

    def wire_bytes(self, elem_bytes: int) -> int:
        """Bytes per element an all-reduce of `elem_bytes` gradients sends."""
        return WIRE_BYTES if self.on and elem_bytes > WIRE_BYTES else elem_bytes

    def check_gpu(self, gpu) -> None:
        """Refuse bf16 on a GPU without bfloat16 (a workload.gpu_props.GpuCompute)."""
        if self.dtype == "bf16" and "bf16" not in gpu.rates:
            raise InputError(f"{FLAG} bf16: {gpu.name} has no bfloat16 arithmetic "
                             f"(use fp16)")

    def label(self, model, n_gpus: int) -> str:
        """What the outputs say (empty when off)."""
        if not self.on:
            return ""
        widths = {model.grad_elem_bytes(layer) for layer in model.layers if layer.params > 0}
        if n_gpus <= 1:
            return f"gradient compression {self}: no effect on one GPU (no all-reduce)"
        if not any(w > WIRE_BYTES for w in widths):
            return (f"gradient compression {self}: no effect, the gradients are already "
                    f"16-bit (nothing to cast)")
        return (f"gradient compression {self}: FP32 gradient buckets cast to {self} for the "
                f"all-reduce (half the bytes) and back")


def cast_bytes(numel: float, src: int, dst: int) -> float:
    """Bytes one elementwise cast moves: each element read at `src` and written at `dst`."""
    return numel * (src + dst)
