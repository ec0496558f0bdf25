"""SciPy border modes and shifted views: the torch backend's building blocks.

The grey ops of the torch backend pad the input once with SciPy's border rule
and then combine shifted views of the padded tensor, one element offset at a
time, so peak extra memory is O(input) whatever the element size (no
``unfold`` copy that grows with the element). The binary ops, whose border is
a constant, combine views of the unpadded input instead (``_torch.binary``).
"""

from __future__ import annotations

import operator
from collections.abc import Sequence

import torch

from .._checks import is_int

__all__ = ["border_indices", "pad", "unpad", "shifted", "cast_cval"]


def border_indices(n: int, before: int, after: int, mode: str,
                   device: torch.device) -> torch.Tensor:
    """Source index of each padded position along one axis of length ``n``.

    Modes are canonical SciPy names (see ``morphaug._checks.MODES``); for
    ``"constant"`` out-of-range positions get index ``-1``.
    """
    index = torch.arange(-before, n + after, device=device)
    if mode == "nearest":
        return index.clamp(0, n - 1)
    if mode == "wrap":
        return index.remainder(n)
    if mode == "reflect":  # d c b a | a b c d | d c b a
        folded = index.remainder(2 * n)
        return torch.where(folded < n, folded, 2 * n - 1 - folded)
    if mode == "mirror":  # d c b | a b c d | c b a
        if n == 1:
            return torch.zeros_like(index)
        folded = index.remainder(2 * n - 2)
        return torch.where(folded < n, folded, 2 * n - 2 - folded)
    if mode == "constant":
        return torch.where((index >= 0) & (index < n), index, -1)
    raise ValueError(f"unknown mode {mode!r}")


def cast_cval(cval, dtype: torch.dtype):
    """``cval`` as a Python scalar of ``dtype``'s kind (SciPy casts it likewise).

    Floats are rounded to ``dtype``; integers and bools truncate toward zero,
    as C's cast does, and must be representable (ValueError otherwise).
    """
    try:
        value = float(cval)
    except (TypeError, ValueError):
        raise TypeError(f"cval must be a real scalar, got {cval!r}") from None
    if dtype.is_floating_point:  # rounded (to +-inf if need be) like any value of dtype
        return torch.tensor(value, dtype=torch.float64).to(dtype).item()
    if is_int(cval):  # exact, however large (a float holds 53 bits)
        value = operator.index(cval)
    elif value != value or abs(value) == float("inf"):
        raise ValueError(f"cval={cval!r} is not representable in the input dtype {dtype}")
    else:
        value = int(value)  # SciPy truncates toward zero
    if dtype == torch.bool:
        return value != 0
    info = torch.iinfo(dtype)
    if not info.min <= value <= info.max:
        raise ValueError(f"cval={cval!r} is not representable in the input dtype {dtype}")
    return value


def pad(x: torch.Tensor, axes: Sequence[int], pads: Sequence[tuple[int, int]],
        modes: Sequence[str], cval=0.0) -> torch.Tensor:
    """Pad spatial ``axes`` of ``x (B, C, *spatial)`` by ``pads[i] = (before, after)``.

    ``modes[i]`` is the canonical SciPy mode of ``axes[i]``; ``cval`` fills the
    ``"constant"`` borders (cast to ``x.dtype``).
    """
    for axis, (before, after), mode in zip(axes, pads, modes):
        if before == 0 and after == 0:
            continue
        dim = axis + 2
        n = x.shape[dim]
        if mode == "constant":
            shape = list(x.shape)
            fill = cast_cval(cval, x.dtype)
            shape[dim] = before
            head = x.new_full(shape, fill)
            shape[dim] = after
            tail = x.new_full(shape, fill)
            x = torch.cat([head, x, tail], dim=dim)
        elif max(before, after) <= (n - 1 if mode == "mirror" else n):
            x = torch.cat([_border_block(x, dim, before, mode, head=True), x,
                           _border_block(x, dim, after, mode, head=False)], dim=dim)
        else:  # borders wider than the axis: fold indices
            x = x.index_select(dim, border_indices(n, before, after, mode, x.device))
    return x


def unpad(grad: torch.Tensor, axes: Sequence[int], pads: Sequence[tuple[int, int]],
          modes: Sequence[str], shape: Sequence[int]) -> torch.Tensor:
    """The adjoint of :func:`pad` into an input of ``shape``: each padded position's ``grad``
    added to the voxel it copies (constant borders copy none)."""
    for axis, (before, after), mode in zip(axes, pads, modes):
        if before == 0 and after == 0:
            continue
        dim, n = axis + 2, shape[axis + 2]
        if mode == "constant":
            grad = grad.narrow(dim, before, n)
        else:
            size = list(grad.shape)
            size[dim] = n
            grad = grad.new_zeros(size).index_add_(dim, border_indices(n, before, after, mode, grad.device), grad)
    return grad


def _border_block(x: torch.Tensor, dim: int, width: int, mode: str, head: bool) -> torch.Tensor:
    """The ``width`` border values before (``head``) or after axis ``dim``, for
    borders no wider than the axis (``n - 1`` for ``mirror``): copies of slices."""
    n = x.shape[dim]
    if mode == "nearest":
        edge = x.narrow(dim, 0 if head else n - 1, 1)
        shape = list(x.shape)
        shape[dim] = width
        return edge.expand(shape)
    if mode == "wrap":
        return x.narrow(dim, n - width, width) if head else x.narrow(dim, 0, width)
    skip = 1 if mode == "mirror" else 0  # mirror leaves out the edge value itself
    if head:
        return x.narrow(dim, skip, width).flip(dim)
    return x.narrow(dim, n - skip - width, width).flip(dim)


def shifted(padded: torch.Tensor, axes: Sequence[int], offset: Sequence[int],
            shape: Sequence[int]) -> torch.Tensor:
    """The view ``padded[..., offset[i] : offset[i] + shape[axes[i]], ...]``."""
    view = padded
    for axis, start in zip(axes, offset):
        dim = axis + 2
        view = view.narrow(dim, start, shape[dim])
    return view

