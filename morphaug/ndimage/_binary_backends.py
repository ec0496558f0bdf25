"""The binary ops' worker on normalised arguments, and their dispatch tables.

Each public binary function (``_binary``, ``_propagation``) normalises its
arguments (:func:`arguments`) and then calls :func:`binary_erosion_worker`
(``binary_fill_holes``: its own table, over the same kernels' helpers),
SciPy's private ``_binary_erosion`` on normalised arguments; it is the one
place where a backend is chosen: propagation to a fixpoint (``iterations <
1``, binary_propagation, binary_fill_holes) with an element that holds its
centre runs on the native propagation kernel where it is built and it fits
the slices padded by the element's reach (CPU: one flood fill per slice, or
for ``binary_fill_holes`` with one element within ``(3,) * S`` for the batch,
the background labelled by ``label``'s run scan; CUDA: the components of the
region labelled, no host sync, for an element within ``(3,) * S`` that is
centrosymmetric in every slice; other elements run on torch there); a
centred Euclidean ball (one step), cross or box (any ``iterations >= 1``)
with ``border_value=0`` and no mask on the native ball kernel where it fits
the radius; any other element (host or device, per sample, any origin, axes,
mask and border) with ``1 <= iterations <= 8`` on the native ``binary_erosion``
kernel (its offsets as ``hit``, or for a dilation the reflected element's as
``miss``), as is ``binary_hit_or_miss`` (both elements in one pass, its own
table); everything else on the torch backend
(``morphaug.ndimage._torch.binary``, whose docstring gives its algorithms and
their cost). What each kernel fits is its contract in ``morphaug._ops.KERNELS``.
The ball kernel writes a bool ``output`` (contiguous, sharing no memory with
the input) itself (its ``.out`` variant; the last step of an opening or
closing); any other ``output`` receives a copy of the result.
"""

from __future__ import annotations

import torch

from .. import _ops, _sync
from .._checks import check_host_int
from ._elements import Element
from ._normalize import (
    check_input,
    check_output,
    foreground,
    normalize_axes,
    normalize_iterations,
    normalize_mask,
)
from ._torch import binary as _torch_binary

__all__ = ["arguments", "binary_erosion_worker", "hit_or_miss_worker", "holds_its_centre", "flood_sizes",
           "flood_element"]


def _border(border_value) -> bool:
    """``border_value`` as SciPy reads it: an int (nonzero is 1) or a bool; never a tensor,
    whose value would be read back from its device."""
    return border_value if isinstance(border_value, bool) else bool(check_host_int(border_value, "border_value"))


def arguments(input, structure, iterations, mask, output, border_value, origin, axes):
    """Normalised arguments shared by erosion, dilation, opening and closing."""
    input = check_input(input)
    axes = normalize_axes(axes, input.ndim - 2)
    element = Element.from_argument(structure, input, axes, origin)
    iterations = normalize_iterations(iterations)
    mask = normalize_mask(mask, input)
    output = check_output(output, input)
    return foreground(input), element, iterations, mask, _border(border_value), output


def binary_erosion_worker(x, element, iterations, mask, border, invert, into=None):
    """SciPy's ``_binary_erosion`` on normalised arguments; the backend switch.

    ``invert=False`` erodes: the AND of ``x`` over the element's positions.
    ``invert=True`` is the OR instead (``binary_dilation`` passes the
    reflected element). ``x`` and ``mask`` are ``(B, C, *spatial)`` bool.
    The ball kernel writes ``into`` where given (``_normalize.written_in_place``);
    the other cases return a new tensor.
    """
    if x.numel() == 0:  # e.g. an empty batch, whose per-sample elements have no positions
        return x.clone()
    return _TABLES[invert](x, x, element, iterations, mask, border, invert, into)


#: The most steps the binary_erosion kernel's case takes.
_MAX_STEPS = 8


def _iterated_ball(element, iterations, mask, border) -> tuple[str, int] | None:
    """``(metric, radius)`` of the ball that ``iterations`` steps of ``element`` make, when the
    native ball kernel's case takes the call (border 0, no mask), else None."""
    if mask is not None or border or iterations < 1 or element.ball is None:
        return None
    metric, radius = element.ball
    if metric == "euclidean" and iterations > 1:
        return None  # an iterated Euclidean ball is no Euclidean ball
    return metric, radius * iterations  # iterated L1 / L-infinity balls add their radii


def _propagate_case(x, element, iterations, mask, border, invert, into):
    if not invert:  # erosion = complement of the dilation of the complement
        return ~_propagate_native(~x, element, mask, not border)
    return _propagate_native(x, element, mask, border)


def _ball_case(x, element, iterations, mask, border, invert, into):
    metric, radius = _iterated_ball(element, iterations, mask, border)
    lead = dict(size=x.shape[:2], device=x.device)
    code = _ops.kernels.BALL_METRIC_CODES[metric]
    return _ops.kernels.ball_morphology(x, torch.full(fill_value=radius, dtype=torch.long, **lead),
                                        torch.full(fill_value=code, dtype=torch.long, **lead),
                                        torch.full(fill_value=not invert, dtype=torch.bool, **lead), out=into)


def _erosion_case(x, element, iterations, mask, border, invert, into):
    weights, offsets = flood_element(element, x)
    none = torch.zeros_like(weights)
    hit, miss = (none, weights) if invert else (weights, none)  # dilation: not an erosion by misses
    return _ops.kernels.binary_erosion(x, mask, hit, miss, offsets, iterations, border, invert)


def _torch_case(x, element, iterations, mask, border, invert, into):
    return _torch_binary.erosion(x, element, iterations, mask, border, invert)


def erosion_sizes(*elements) -> dict:
    """The size facts of the ``binary_erosion`` kernel for offsets of ``elements`` (one list):
    their count and reach along each spatial axis."""
    offsets = torch.cat([element.offsets for element in elements])
    reach = offsets.abs().amax(0).tolist() if len(offsets) else [0] * elements[0].rank
    return {"count": len(offsets), "reach": reach}


def hit_or_miss_worker(x, hit, miss):
    """``binary_hit_or_miss`` on normalised arguments: ``hit`` fits in ``x`` (outside: false)
    and ``miss`` (not reflected) in its complement; the backend switch."""
    if x.numel() == 0:
        return x.clone()
    return _HIT_OR_MISS(x, x, hit, miss)


def _hit_or_miss_case(x, hit, miss):
    (hits, hit_offsets), (misses, miss_offsets) = flood_element(hit, x), flood_element(miss, x)
    return _ops.kernels.binary_erosion(
        x, None, torch.cat([hits, torch.zeros_like(misses)], 2), torch.cat([torch.zeros_like(hits), misses], 2),
        hit_offsets + miss_offsets, 1, False, False)


def _hit_or_miss_torch(x, hit, miss):
    """``hit`` through the erosion table (a ball, cross or box: the ball kernel), ``miss`` on
    the torch backend (on the CPU, faster there than the offsets' pass for a ball's complement)."""
    fits = binary_erosion_worker(x, hit, 1, None, False, invert=False)
    return fits & ~_torch_binary.erosion(x, miss, 1, None, False, True)


def holds_its_centre(element) -> bool:
    return element.used_by_all(element.centre)


def flood_sizes(x, element) -> dict:
    """The size facts of the propagation kernels (``propagate``, ``fill_holes``): the reach of
    ``element``'s offsets along each spatial axis of ``x``, and whether every slice's element
    is centrosymmetric (``two_way``: the CUDA kernels label, see their contract)."""
    reach = element.offsets.abs().amax(0).tolist() if len(element.used) else [0] * (x.ndim - 2)
    return {"reach": reach, "two_way": bool((element.host == element.mirror_host).all())}


def _table(op: str) -> _ops.Table:
    """binary_erosion's or binary_dilation's dispatch table (and so every binary op's)."""
    return _ops.Table(op, [
        _ops.Case("iterations < 1 with an element read on the host that holds its centre", "propagate",
                  lambda x, element, iterations, mask, border, invert, into: (
                      iterations < 1 and holds_its_centre(element)),
                  _propagate_case,
                  sizes=lambda x, element, *_: flood_sizes(x, element)),
        _ops.Case("a centred ball, cross or box over every axis read on the host (iterated: cross or box), "
                  "border_value 0, no mask", "ball_morphology",
                  lambda x, element, iterations, mask, border, invert, into: _iterated_ball(
                      element, iterations, mask, border) is not None,
                  _ball_case,
                  sizes=lambda x, element, iterations, mask, border, invert, into: {
                      "radius": _iterated_ball(element, iterations, mask, border)[1]}),
        # more steps stay on the torch backend, which stops at a fixpoint (the CUDA launcher runs every step)
        _ops.Case("any element, 1 <= iterations <= 8", "binary_erosion",
                  lambda x, element, iterations, mask, border, invert, into: 1 <= iterations <= _MAX_STEPS,
                  _erosion_case, sizes=lambda x, element, *_: erosion_sizes(element)),
    ], _torch_case)


def _propagate_native(x, element, mask, border):
    """The propagation kernel (``_ops.kernels.propagate``) for an element that holds its centre."""
    return _ops.kernels.propagate(x, mask, *flood_element(element, x), border)


def flood_element(element, x):
    """``(weights, offsets)`` of an element for ``_ops.kernels.propagate`` / ``fill_holes``."""
    weights = element.tensor.flatten(2)
    if element.host is not None:  # the positions some slice holds (an accelerator element keeps them all)
        weights = weights.index_select(2, _sync.to_device(element.used, element.tensor.device))
    return weights.expand(x.shape[0], x.shape[1], len(element.used)), element.offsets.tolist()


_TABLES = {False: _table("binary_erosion"), True: _table("binary_dilation")}
_HIT_OR_MISS = _ops.Table("binary_hit_or_miss", [
    # on the CPU the ball kernel's erosion by a ball, cross or box beats the offsets' pass
    _ops.Case("both elements in one pass (on the CPU: unless the first is a ball, cross or box)", "binary_erosion",
              lambda x, hit, miss: x.device.type != "cpu" or _iterated_ball(hit, 1, None, False) is None,
              _hit_or_miss_case, sizes=lambda x, hit, miss: erosion_sizes(hit, miss)),
], _hit_or_miss_torch)
