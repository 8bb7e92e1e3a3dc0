"""Which collectives move FP8 (1-byte) elements under --dtype fp8.

Tensor parallelism with sequence parallelism: a transformer block's all-gathers move FP8,
its reduce-scatters 16-bit, under both FP8 recipes embsim models (per-tensor scaling:
fp8_recipe current and delayed) in both frameworks that run them:
- Transformer Engine (Megatron-Core, as NeMo and Megatron-Bridge run it: QKV and FC1 are
  TELayerNormColumnParallelLinear, attention-out and FC2 TERowParallelLinear,
  NVIDIA/Megatron-LM megatron/core/models/gpt/gpt_layer_specs.py:59-61,119-120 @ f2e5db40):
  * forward: the norm writes FP8 and the FP8 output is all-gathered
    (transformer_engine/pytorch/module/layernorm_linear.py:126,157 @ v1.8 3ec998e9 and
    layernorm_mlp.py:151,182; @ v2.4 3cd6870c layernorm_linear.py:255
    gather_along_first_dim(..., quantizer) -> distributed.py:1202 _all_gather_fp8, which
    gathers the uint8 data, :960-961);
  * backward: the weight gradient's re-gather of that saved FP8 input (layernorm_linear.py
    :444 @ v1.8, :651 @ v2.4) and the row-parallel GEMMs' output-gradient all-gather, cast
    to FP8 first (module/base.py grad_output_preprocess :677-689 @ v1.8, :1070 @ v2.4);
  * the reduce-scatters (row-parallel outputs, column-parallel input gradients) carry the
    GEMMs' 16-bit outputs.
- torchtitan tensorwise Float8 (torchtitan/models/llama3/infra/parallelize.py:56-71,153-165
  @ 2887250b: Float8ColwiseParallel, Float8RowwiseParallel, PrepareFloat8ModuleInput): the
  input is cast before its Shard -> Replicate redistribute (torchao
  torchao/float8/float8_tensor_parallel.py:59-71,123-134 @ 6243040), the output gradient
  before the backward all-gather (NoopFwToFloat8BwDynamic, :142-150;
  float8_scaling_utils.py:109-120), and Float8Tensor's all-gather moves its FP8 data
  (float8_ops.py:453-479). Its rowwise recipes keep regular TP with 16-bit all-gathers
  (parallelize.py:62-65); embsim has no rowwise recipe.
Left 16-bit: the output layer's input gather (no FP8 recipe quantizes that layer:
kernels_layers.output_layer_16bit), the embedding's output-gradient gather, pipeline
sends. Not charged: the per-tensor FP32 scale sent with each gather.

FSDP: torchtitan's float8.enable_fsdp_float8_all_gather has FSDP2 all-gather the
Float8Linear weights cast to FP8 (torchao float8/fsdp_utils.py:218-236
fsdp_pre_all_gather @ 6243040): 1 byte per parameter. Off by default
(torchtitan/config_manager.py:475 @ 2887250b, torchao float8/config.py:184) and in the 8B and
70B train configs (train_configs/llama3_8b.toml:60, llama3_70b.toml:59 @ 2887250b); on in
llama3_405b.toml:60. So embsim's fsdp takes it as an option (float8_all_gather, default off).
"""

from __future__ import annotations

FP8_BYTES = 1


def tp_gathers_fp8(dtype: str) -> bool:
    """Whether a transformer block's tensor-parallel all-gathers move FP8."""
    return dtype == "fp8"


def tp_gather_bytes(dtype: str, elem_bytes: int) -> int:
    """Bytes per element of a block's tensor-parallel all-gather; `elem_bytes` the
    activations' (what every other TP collective moves)."""
    return FP8_BYTES if tp_gathers_fp8(dtype) else elem_bytes


TP_NOTE = ("blocks' all-gathers in FP8, 1 byte per element (Transformer Engine, torchtitan "
           "tensorwise Float8), reduce-scatters 16-bit")
