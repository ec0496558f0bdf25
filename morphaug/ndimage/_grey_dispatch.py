"""Which kernel runs a grey op: the dispatch tables of ``grey_erosion`` and ``grey_dilation``.

Every grey op is a chain of min/max filters, each a ``(filter, minimum)``
step with the :class:`Filter` in erosion form (reflected for a maximum, by
:func:`~morphaug.ndimage._grey_filter.reflected`): one step for an erosion or
a dilation, two for an opening or a closing, in SciPy's order. The steps of
a chain share their element kind (a reflection keeps it), so one table case
takes the whole chain: the table of its first step, the place where a
kernel is chosen. The last step writes ``into`` where its kernel can.

Every runner takes each step through :func:`_step`: an input that requires
grad goes through :class:`_Extremum`, whose backward is ``max_pool``'s
subgradient on every backend (``_torch.grey.extremum_gradient``).
"""

from __future__ import annotations

import torch

from .. import _ops
from . import _unsigned
from ._elements import Filter
from ._torch import grey as _torch_grey

__all__ = ["filter_steps"]


def filter_steps(input: torch.Tensor, steps, into: torch.Tensor | None = None) -> torch.Tensor:
    """``input`` through the ``(filter, minimum)`` steps in turn, by the table of the first
    step; the last step writes ``into`` (a tensor for the result, or None) where its kernel can
    (``_normalize.written_in_place``), else the result is a new tensor.

    A wide unsigned input with a non-flat structure runs in a signed dtype that holds its
    values (SciPy's sums are not the unsigned dtype's), each step saturated to its range.
    """
    if input.numel() == 0:
        return input.clone()
    table = _TABLES[steps[0][1]]
    if input.dtype in _unsigned.WIDER and steps[0][0].structure is not None:
        wider = input.to(_unsigned.WIDER[input.dtype])
        return table(wider, wider, tuple(steps), None, torch.iinfo(input.dtype).max).to(input.dtype)
    return table(input, input, tuple(steps), into, None)


def _step(kernel, input: torch.Tensor, filt: Filter, minimum: bool, into) -> torch.Tensor:
    """One min/max filter on ``kernel(input, filt, minimum, into)``, differentiable."""
    if input.requires_grad and torch.is_grad_enabled():
        return _Extremum.apply(input, kernel, filt, minimum)
    return kernel(input, filt, minimum, into)


class _Extremum(torch.autograd.Function):
    """A min/max filter on a kernel, differentiated as ``max_pool`` is: each output's
    gradient goes to the input voxel that attains it (``_torch.grey.extremum_gradient``)."""

    @staticmethod
    def forward(ctx, input, kernel, filt, minimum):
        result = kernel(input, filt, minimum, None)
        ctx.save_for_backward(input, result)
        ctx.filt, ctx.minimum = filt, minimum
        return result

    @staticmethod
    def backward(ctx, grad):
        input, result = ctx.saved_tensors
        return _torch_grey.extremum_gradient(input, result, grad, ctx.filt, ctx.minimum), None, None, None


def _chain(kernel):
    """A table runner: ``steps`` in turn on ``kernel``, the last into ``into``, each result
    clamped to ``[0, high]`` when ``high`` is given."""
    def run(input, steps, into, high):
        last = len(steps) - 1
        for index, (filt, minimum) in enumerate(steps):
            input = _step(kernel, input, filt, minimum, into if index == last else None)
            if high is not None:
                input = input.clamp_(0, high)
        return input
    return run


def _kernel_arguments(input: torch.Tensor, filt: Filter):
    """``(shape, origin, mode, cval)`` of ``filt`` on every spatial axis for the native
    kernels (extent 1, origin 0 and any mode where it is not filtered)."""
    rank = input.ndim - 2
    shape, origin, mode = [1] * rank, [0] * rank, ["nearest"] * rank
    for axis, width, o, m in zip(filt.axes, filt.shape, filt.origins, filt.modes):
        shape[axis], origin[axis], mode[axis] = width, o, m
    return shape, origin, mode, 0 if filt.cval is None else filt.cval


def _box_native(input: torch.Tensor, filt: Filter, minimum: bool, into) -> torch.Tensor:
    """A box on ``_ops.kernels.grey_box``. Like every native grey kernel it takes the element
    in erosion form, as ``filt`` holds it, and a min / max flag."""
    size, origin, mode, cval = _kernel_arguments(input, filt)
    for axis, width in zip(filt.axes, filt.shape):
        if width == 1:  # SciPy skips these axes (and their origins)
            origin[axis] = 0
    return _ops.kernels.grey_box(input, size, origin, mode, cval, maximum=not minimum, out=into)


def _footprint_native(input: torch.Tensor, filt: Filter, minimum: bool, into) -> torch.Tensor:
    """A shared host footprint on ``_ops.kernels.grey_footprint``."""
    shape, origin, mode, cval = _kernel_arguments(input, filt)
    return _ops.kernels.grey_footprint(input, filt.host.reshape(shape), origin, mode, cval,
                                       maximum=not minimum, out=into)


def _structure_native(input: torch.Tensor, filt: Filter, minimum: bool, into) -> torch.Tensor:
    """A shared host structure (with a shared host footprint, if any) on
    ``_ops.kernels.grey_structure``."""
    shape, origin, mode, cval = _kernel_arguments(input, filt)
    structure = filt.structure_host.reshape(shape)
    footprint = None if filt.host is None else filt.host.reshape(shape)
    return _ops.kernels.grey_structure(input, structure, footprint, origin, mode, cval,
                                       maximum=not minimum, out=into)


def _element_native(input: torch.Tensor, filt: Filter, minimum: bool, into) -> torch.Tensor:
    """Elements per slice or on the device (``filt.footprint`` / ``filt.structure``, never read
    on the host) on ``_ops.kernels.grey_element``."""
    shape, origin, mode, cval = _kernel_arguments(input, filt)
    footprint, structure = (None if e is None else e.reshape(*e.shape[:2], *shape)
                            for e in (filt.footprint, filt.structure))
    return _ops.kernels.grey_element(input, footprint, structure, origin, mode, cval, maximum=not minimum,
                                     out=into)


def _torch_min_or_max(input: torch.Tensor, filt: Filter, minimum: bool, into) -> torch.Tensor:
    """The torch backend's step: a new tensor (``into`` is left to ``finish_output``)."""
    return _torch_grey.min_or_max(input, filt, minimum)


_TORCH_STEPS = _chain(_torch_min_or_max)


def _torch_chain(input: torch.Tensor, steps, into, high) -> torch.Tensor:
    """The torch backend: a bool input with a non-flat structure by SciPy's byte arithmetic,
    whose steps pass bytes on to the next (``_torch.grey.byte_steps``), else step by step."""
    if input.dtype == torch.bool and steps[0][0].structure is not None:
        return _torch_grey.byte_steps(input, steps)
    return _TORCH_STEPS(input, steps, into, high)


def _shared_structure(input, steps, into, high) -> bool:
    """Whether the chain's element is one non-flat structure for every slice, read on the
    host (with one host footprint or none); a bool input takes SciPy's byte arithmetic."""
    filt = steps[0][0]
    return (filt.structure_host is not None and filt.structure.shape[0] * filt.structure.shape[1] == 1
            and (filt.footprint is None or filt.shared_host) and input.dtype != torch.bool)


def _table(op: str) -> _ops.Table:
    """grey_erosion's or grey_dilation's dispatch table (and so the compound ops')."""
    return _ops.Table(op, [
        _ops.Case("size, or an all-true footprint", "grey_box",
                  lambda input, steps, into, high: steps[0][0].separable, _chain(_box_native)),
        _ops.Case("one flat footprint for every slice, read on the host", "grey_footprint",
                  lambda input, steps, into, high: steps[0][0].structure is None and steps[0][0].shared_host,
                  _chain(_footprint_native)),
        _ops.Case("one non-flat structure for every slice, read on the host, not on bool input", "grey_structure",
                  _shared_structure, _chain(_structure_native)),
        _ops.Case("elements per slice or on the device; not a structure on bool input", "grey_element",
                  lambda input, steps, into, high: input.dtype != torch.bool or steps[0][0].structure is None,
                  _chain(_element_native)),
    ], _torch_chain)


#: By the first step's ``minimum``: grey_erosion's table, else grey_dilation's.
_TABLES = {True: _table("grey_erosion"), False: _table("grey_dilation")}
