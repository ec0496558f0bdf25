"""Unsigned integers wider than 8 bits (``uint16``, ``uint32``, ``uint64``), losslessly.

torch has these dtypes with few ops (no ``minimum``, no subtraction). The
native flat grey kernels (``grey_box``, ``grey_footprint``) compare them as
they are; everything else computes on signed views of the same bits:

* order: ``u ^ 2**(N-1)`` read as a signed ``N``-bit integer is
  ``u - 2**(N-1)``, an order-preserving bijection, so a minimum or maximum
  (saturation to the range included) commutes with it exactly;
* arithmetic: the same bits read as signed wrap around modulo ``2**N`` as
  the unsigned values do, so sums and differences are NumPy's;
* a non-flat element adds float64 weights to the values themselves: those
  run on a wider signed dtype that holds them (:data:`WIDER`).

Binary ops and distance transforms only compare with zero, which torch
does for every dtype.
"""

from __future__ import annotations

import functools

import numpy as np
import torch

__all__ = ["SIGNED", "WIDER", "ordered", "from_ordered", "ordered_value", "wrapping", "from_wrapping", "numpy_dtype", "result_dtype"]

#: Each wide unsigned dtype and the signed dtype of its size.
SIGNED = {torch.uint16: torch.int16, torch.uint32: torch.int32, torch.uint64: torch.int64}
#: The signed dtypes that hold every value of a wide unsigned dtype (none holds uint64's).
WIDER = {torch.uint16: torch.int32, torch.uint32: torch.int64}


def _offset(dtype: torch.dtype) -> int:
    return 1 << (torch.iinfo(dtype).bits - 1)


def ordered(x: torch.Tensor) -> torch.Tensor:
    """The order-preserving signed image of unsigned ``x`` (a new tensor)."""
    signed = SIGNED[x.dtype]
    return x.view(signed) ^ torch.iinfo(signed).min


def from_ordered(y: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The inverse of :func:`ordered`: the unsigned ``dtype`` values of ``y``."""
    return (y ^ torch.iinfo(y.dtype).min).view(dtype)


def ordered_value(value: int, dtype: torch.dtype) -> int:
    """:func:`ordered` of one Python int of unsigned ``dtype``."""
    return value - _offset(dtype)


def wrapping(x: torch.Tensor) -> torch.Tensor:
    """``x`` as a signed view where it is wide unsigned (the same arithmetic mod ``2**N``)."""
    return x.view(SIGNED[x.dtype]) if x.dtype in SIGNED else x


def from_wrapping(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The inverse of :func:`wrapping`: ``x`` read as ``dtype`` where that is wide unsigned."""
    return x.view(dtype) if dtype in SIGNED else x


@functools.cache  # dtypes are few: every grey op asks, per call
def numpy_dtype(dtype: torch.dtype) -> np.dtype:
    """The NumPy dtype with ``dtype``'s kind and size (bfloat16 counts as float32)."""
    if dtype == torch.bfloat16:
        return np.dtype(np.float32)
    return torch.empty((), dtype=dtype).numpy().dtype


@functools.cache
def result_dtype(a: torch.dtype, b: torch.dtype) -> torch.dtype:
    """NumPy's result dtype of ``a op b``; torch's where one is bfloat16 (not a NumPy dtype)."""
    if torch.bfloat16 in (a, b):
        return torch.promote_types(a, b)
    return torch.from_numpy(np.empty(0, np.promote_types(numpy_dtype(a), numpy_dtype(b)))).dtype
