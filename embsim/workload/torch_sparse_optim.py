"""torch.optim's update of a coalesced sparse (COO) embedding gradient, as the ATen ops it
runs: the row update after PyTorch's coalesce (embsim.workload.torch_coalesce) for the
stateful optimizers that take sparse gradients.

A sparse gradient never reaches a multi-tensor or fused kernel: torch.optim's foreach and
fused paths and apex's FusedAdam / FusedAdagrad refuse it, and torch.optim.Adam raises
("consider SparseAdam"), so a sparse table's step is the single-tensor sparse branch, one
ATen op per line, whatever the model's dense `implementation`:

- Adagrad (torch/optim/adagrad.py _single_tensor_adagrad, `if grad.is_sparse`, unchanged
  from 1.x to 2.x): grad_values.pow(2); state_sum.add_(sparse), which is
  add_out_dense_sparse_cuda's index_add_ of the rows; state_sum.sparse_mask(grad), an
  index_select of the u rows; .sqrt_(); .add_(eps); grad_values / std_values; and
  param.add_(sparse, alpha=-clr): the values scaled by alpha, then index_add_.
- Adam on a sparse gradient is SparseAdam (torch/optim/_functional.py sparse_adam): two
  sparse_mask gathers (exp_avg, exp_avg_sq), the moments' sub / mul_ / pow / sub_ / mul_,
  two index_add_ into the dense state, add_ / add_ / sqrt_ / add_(eps) / div_, the
  step-size mul and the param's index_add_.

Each op is one framework dispatch and one kernel over the u x dim values (u rows of the
table's width for the gathers and index adds), FP32 state; the optimizer's per-tensor loop
runs them table by table.
"""

from __future__ import annotations

from .kernels import FP32, Kernel, stream

SPARSE_OPTIMIZERS = ("adagrad", "adam")


def _values(name: str, elements: float, passes: int) -> Kernel:
    """An elementwise op over the sparse values: `passes` reads and writes of u x dim FP32."""
    return stream(name, elements * passes * FP32, param_pass=True)


def _index_add(name: str, rows: float, row_bytes: float) -> Kernel:
    return Kernel("scatter", rows=rows, row_bytes=row_bytes, ops=0, name=name)


def _sparse_mask(name: str, rows: float, row_bytes: float) -> Kernel:
    """dense.sparse_mask(grad) on a coalesced 1-D-indexed gradient: index_select of the rows."""
    return Kernel("gather", rows=rows, row_bytes=row_bytes, passes=2, name=name)


def torch_sparse_apply_kernels(rows: float, dim: int, optimizer: str, table_bytes: int) -> list[Kernel]:
    """The ATen kernels of one table's sparse step over `rows` distinct rows of `dim`
    values (the table stored at `table_bytes` a value, its state FP32)."""
    u = float(rows)
    if u <= 0:
        return []
    e = u * dim
    row, state_row = dim * table_bytes, dim * FP32
    if optimizer == "adagrad":
        return [_values("adagrad.grad_pow2", e, 2),
                _index_add("adagrad.state_sum.index_add", u, state_row),
                _sparse_mask("adagrad.state_sum.sparse_mask", u, state_row),
                _values("adagrad.std.sqrt_", e, 2),
                _values("adagrad.std.add_eps", e, 2),
                _values("adagrad.grad_div_std", e, 3),
                _values("adagrad.param.alpha_mul", e, 2),
                _index_add("adagrad.param.index_add", u, row)]
    if optimizer == "adam":
        return [_sparse_mask("sparse_adam.exp_avg.sparse_mask", u, state_row),
                _values("sparse_adam.exp_avg.sub", e, 3),
                _values("sparse_adam.exp_avg.mul_", e, 2),
                _index_add("sparse_adam.exp_avg.index_add", u, state_row),
                _sparse_mask("sparse_adam.exp_avg_sq.sparse_mask", u, state_row),
                _values("sparse_adam.grad.pow", e, 2),
                _values("sparse_adam.exp_avg_sq.sub_", e, 3),
                _values("sparse_adam.exp_avg_sq.mul_", e, 2),
                _index_add("sparse_adam.exp_avg_sq.index_add", u, state_row),
                _values("sparse_adam.numer.add_", e, 3),
                _values("sparse_adam.denom.add_", e, 3),
                _values("sparse_adam.denom.sqrt_", e, 2),
                _values("sparse_adam.denom.add_eps", e, 2),
                _values("sparse_adam.numer.div_", e, 3),
                _values("sparse_adam.step_size.mul", e, 2),
                _index_add("sparse_adam.param.index_add", u, row)]
    raise ValueError(f"no torch.optim sparse branch for {optimizer!r}")
