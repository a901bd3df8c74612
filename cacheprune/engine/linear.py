"""The model's linear layers: prefill-sized CPU matmuls on the native kernel csrc/linear.c
(OpenBLAS, rows split over torch's threads), everything else on its twin F.linear."""

from __future__ import annotations

import ctypes
import functools

import torch
import torch.nn.functional as F
from torch import nn

from cacheprune.engine.native import load_kernel

# Below this many rows (decode steps, short prompts) the kernel gains nothing over torch.
MIN_ROWS = 16


@functools.cache
def _kernel() -> ctypes.CDLL | None:
    """The loaded kernel with its signature declared, once per process."""
    lib = load_kernel("linear")
    if lib is not None:
        lib.cp_linear.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int64] * 3 + [ctypes.c_int]
        lib.cp_linear.restype = None
    return lib


def native_linear_available() -> bool:
    return _kernel() is not None


def native_linear(
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None = None,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    """F.linear(x, weight, bias) on the native kernel: x [..., k] and weight [n, k], float32 on
    the CPU; written into `out` [rows, n] (contiguous) when given. Raises if the kernel is
    unavailable or the tensors don't fit it."""
    lib = _kernel()
    if lib is None:
        raise RuntimeError("the native linear kernel is unavailable (see the log for why)")
    for name, t in (("x", x), ("weight", weight), ("out", out)):
        if t is not None and (t.dtype != torch.float32 or t.device.type != "cpu"):
            raise ValueError(f"native_linear needs float32 CPU tensors, {name} is "
                             f"{t.dtype} on {t.device}")
    if weight.dim() != 2 or x.shape[-1] != weight.shape[1]:
        raise ValueError(f"shapes don't match: x {tuple(x.shape)}, weight {tuple(weight.shape)}")
    rows = x.reshape(-1, x.shape[-1]).contiguous()
    weight = weight.contiguous()
    shape = (rows.shape[0], weight.shape[0])
    if out is None:
        out = torch.empty(shape)
    elif out.shape != shape or not out.is_contiguous():
        raise ValueError(f"out must be a contiguous {shape} tensor, got {tuple(out.shape)}")
    lib.cp_linear(rows.data_ptr(), weight.data_ptr(), out.data_ptr(), rows.shape[0],
                  rows.shape[1], weight.shape[0], torch.get_num_threads())
    if bias is not None:
        out.add_(bias)
    return out.view(*x.shape[:-1], weight.shape[0])


def linear(
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None = None,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    """F.linear on the native kernel where it applies (no autograd, float32 on the CPU,
    MIN_ROWS rows or more), else on its twin; `out` as in native_linear (x 2-D then)."""
    if (
        not torch.is_grad_enabled()
        and x.device.type == "cpu"
        and x.dtype == weight.dtype == torch.float32
        and x.numel() >= MIN_ROWS * x.shape[-1]
        and native_linear_available()
    ):
        return native_linear(x, weight, bias, out)
    if out is None:
        return F.linear(x, weight, bias)
    torch.mm(x, weight.t(), out=out)
    return out if bias is None else out.add_(bias)


class Linear(nn.Linear):
    """nn.Linear whose inference matmuls of MIN_ROWS rows or more run on the native kernel."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return linear(x, self.weight, self.bias)
