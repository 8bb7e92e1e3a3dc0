"""The elementwise chains of a Llama-style block as eager PyTorch runs them (no
torch.compile, no fused library kernel): one ATen kernel per op forward, and the kernels
autograd's backward formulas launch for each op (derivatives.yaml /
torch/csrc/autograd/FunctionsManual.cpp), each a memory-bound pass (Kernel "stream":
bytes read + written, one framework dispatch and one kernel gap each; a dtype cast is a
plain copy, fp32_cast).

Only a block with fused_elementwise false runs these (kernels_layers.transformer_block);
a fused block (torch.compile, Transformer Engine / Megatron / NeMo: TE's fused RMSNorm,
apply_rotary_pos_emb's fused RoPE, the bias-SwiGLU fusion) keeps its one-kernel charges.

The code counted, as torchtitan writes it at 9dec370ad26b5f8e9a7333a0e36165018262644b
(the commit of its Dec-2024 H100 benchmark; HF transformers' LlamaRMSNorm and
apply_rotary_pos_emb are the same ops in another order):

- RMSNorm (torchtitan/models/norms.py:96-101, norm_type "rmsnorm", train_configs/
  llama3_8b.toml:21 at that commit):
      output = self._norm(x.float()).type_as(x);  return output * self.weight
      _norm(x) = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
- RoPE (torchtitan/models/llama/model.py:87-113, apply_rotary_emb, on q and on k):
      xq_ = view_as_complex(xq.float().reshape(..., -1, 2))      # a cast; views
      xq_out = view_as_real(xq_ * freqs_cis).flatten(3)          # one complex product
      return xq_out.type_as(xq)                                  # a cast
- SwiGLU (model.py:252-253): self.w2(F.silu(self.w1(x)) * self.w3(x)): silu, then mul.

Byte counts: x is the normed / rotated tensor's elements, e the activations' bytes, F = 4
(the .float() intermediates), f the norm output's bytes (op_bytes: FP32 under autocast,
where the FP32 weight promotes the product, else e). A per-row (n) tensor is 4 bytes an
element. The broadcast freqs_cis table (s x head_dim/2 complex64, L2-resident across the
batch and heads) and the norm weight's reads in each row are not counted beyond one pass.
"""

from __future__ import annotations

from .kernels import COLUMN, FP32, fp32_cast, stream


def rmsnorm_eager_fwd_bwd(name: str, n: int, dim: int, e: int, f: int = FP32) -> tuple[list, list]:
    """torchtitan's RMSNorm, eager. Forward (6 kernels over x, 2 over the n row values, and
    the two casts where e < 4): x.float() (cast, e+F), pow(2) (2F), mean(-1) (F, a row
    reduction), + eps and rsqrt (n each), x * rstd (2F), type_as(x) (cast, F+e),
    * weight (e + f). Under autocast the FP32 product is cast back for the next GEMM, as
    norm_fwd_bwd does.

    Backward, autograd in reverse order (FunctionsManual.cpp; broadcasting reduces with
    sum_to_size, a dtype mismatch is cast by the engine's validate_outputs):
      * weight:  d_out = dy * weight (2f, then cast to e if f > e); dweight = dy * out
        (f + e + f), then summed over the rows (a column reduction over f);
      * type_as: the gradient cast up to FP32 (e + F);
      * x * rstd: dx = g * rstd (2F); drstd = g * x (3F) summed over the row (F);
      * rsqrt: -0.5 * grad * result.pow(3): three kernels over n;
      * + eps: passes the gradient on, no kernel;
      * mean: sum_backward(grad) / dim, an expanded view divided: writes F;
      * pow(2): pow_backward, grad * (2.0 * x.pow(1.0)): pow(1) is copy_ (ATen Pow.cpp
        pow_Tensor_Scalar_out), then 2.0 * (2F) and grad * (3F);
      * x.float() has two consumers (pow, * rstd): autograd adds their gradients (3F);
      * x.float(): the gradient cast back down (F + e).
    With e = f = 2 (BF16 model): 36 bytes per element forward, 92 backward, where the fused
    library kernel (norm_fwd_bwd) moves 4 and 8."""
    x, F = n * dim, FP32
    fwd = (fp32_cast(f"{name}.x_float", x, e, F)
           + [stream(f"{name}.pow", 2 * F * x, pointwise=True),
              stream(f"{name}.mean", F * x + F * n),
              stream(f"{name}.add_eps", 2 * F * n, pointwise=True),
              stream(f"{name}.rsqrt", 2 * F * n, pointwise=True),
              stream(f"{name}.mul_rstd", 2 * F * x + F * n, pointwise=True)]
           + fp32_cast(f"{name}.type_as", x, e, F)
           + [stream(f"{name}.mul_weight", x * (e + f) + dim * f, pointwise=True)]
           + fp32_cast(name, x, e, f))
    bwd = (fp32_cast(f"{name}.bwd", x, e, f)
           + [stream(f"{name}.mul_weight_bwd", 2 * f * x + dim * f, pointwise=True)]
           + fp32_cast(f"{name}.mul_weight_bwd", x, e, f)
           + [stream(f"{name}.weight_grad_mul", x * (2 * f + e), pointwise=True),
              stream(f"{name}.param_grad", f * x + f * dim, mechanism=COLUMN)]
           + fp32_cast(f"{name}.type_as_bwd", x, e, F)
           + [stream(f"{name}.mul_rstd_bwd", 2 * F * x + F * n, pointwise=True),
              stream(f"{name}.rstd_grad_mul", 3 * F * x, pointwise=True),
              stream(f"{name}.rstd_grad_sum", F * x + F * n),
              stream(f"{name}.rsqrt_bwd_scale", 2 * F * n, pointwise=True),
              stream(f"{name}.rsqrt_bwd_pow", 2 * F * n, pointwise=True),
              stream(f"{name}.rsqrt_bwd_mul", 3 * F * n, pointwise=True),
              stream(f"{name}.mean_bwd", F * x + F * n, pointwise=True),
              stream(f"{name}.pow_bwd_copy", 2 * F * x, copy=True),
              stream(f"{name}.pow_bwd_scale", 2 * F * x, pointwise=True),
              stream(f"{name}.pow_bwd_mul", 3 * F * x, pointwise=True),
              stream(f"{name}.grad_accumulate", 3 * F * x, pointwise=True)]
           + fp32_cast(f"{name}.x_float_bwd", x, e, F))
    return fwd, bwd


def rope_eager_fwd_bwd(name: str, n: int, width: int, e: int) -> tuple[list, list]:
    """apply_rotary_emb on one of q or k (n tokens x `width` elements: heads x head_dim of
    one rank), eager. Forward: .float() (cast, e+F), the complex product with freqs_cis
    (read and write F per real element), .type_as (cast, F+e); the reshapes and
    view_as_complex / view_as_real / flatten are views. Backward: the type_as cast up, the
    product's gradient grad * freqs_cis.conj() (freqs_cis needs no gradient: one kernel,
    2F), the cast back down; view_as_real / view_as_complex backward are views of the
    contiguous gradient. 20 bytes per element each way with e = 2."""
    x, F = n * width, FP32
    fwd = (fp32_cast(f"{name}.float", x, e, F)
           + [stream(f"{name}.mul_freqs", 2 * F * x, pointwise=True)]
           + fp32_cast(f"{name}.type_as", x, e, F))
    bwd = (fp32_cast(f"{name}.type_as_bwd", x, e, F)
           + [stream(f"{name}.mul_freqs_bwd", 2 * F * x, pointwise=True)]
           + fp32_cast(f"{name}.float_bwd", x, e, F))
    return fwd, bwd


def swiglu_eager_fwd_bwd(name: str, n: int, f: int, e: int) -> tuple[list, list]:
    """F.silu(gate) * up over n x f, eager: silu (read and write, 2e), mul (read two,
    write one, 3e): 5e forward against the fused kernel's 3e. Backward: MulBackward0's two
    products, dgate_out = dy * up and dup = dy * silu(gate) (3e each), then silu_backward
    (grad, gate) (3e): 9e against the fused 5e."""
    x = n * f
    fwd = [stream(f"{name}.silu", 2 * x * e, pointwise=True),
           stream(f"{name}.mul", 3 * x * e, pointwise=True)]
    bwd = [stream(f"{name}.mul_bwd_gate", 3 * x * e, pointwise=True),
           stream(f"{name}.mul_bwd_up", 3 * x * e, pointwise=True),
           stream(f"{name}.silu_bwd", 3 * x * e, pointwise=True)]
    return fwd, bwd
