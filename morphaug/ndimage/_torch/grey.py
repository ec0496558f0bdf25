"""Grey-scale morphology on the torch backend: min/max filters of a :class:`Filter`.

:func:`min_or_max` is the torch kernel that ends the grey ops' dispatch
tables (``morphaug.ndimage._grey_dispatch``). It takes the filter in erosion
form (a dilation passes the reflected filter) and a min / max flag, like the
native kernels, and every input dtype. Algorithms and cost:

* ``size``, or a footprint known to be all true: separable 1-D minima/maxima,
  one axis at a time, after padding that axis with SciPy's border rule. A
  window of width ``k`` takes ``floor(log2 k) + 1`` elementwise ops: running
  extrema over 1, 2, 4, ... samples, then two overlapping windows.
* Any other footprint, and non-flat ``structure``: the input is padded once,
  and the result is the minimum (maximum) of shifted views of that one padded
  tensor, one element offset at a time. Extra memory is O(input), whatever
  the element size; no ``unfold``. A flat footprint shared by every slice and
  read on the host is visited as a union of 1-D runs along its last axis,
  one running extreme per distinct run length.
* Per-sample ``(B, *k)`` and per-(sample, channel) ``(B, C, *k)`` elements:
  the offsets of their union are visited, and a sample that does not use an
  offset sees the identity there (``+inf`` / dtype maximum for a minimum,
  ``-inf`` / dtype minimum for a maximum) through ``torch.where``.
* A footprint on an accelerator (``host`` is ``None``): every position of
  its box, masked on the device.
* ``structure``: SciPy's arithmetic (see :func:`_candidate`); integer
  inputs accumulate in float64 and saturate to the dtype's range at the end.
  A bool input follows SciPy's byte arithmetic (:func:`byte_steps`).
* ``uint16``, ``uint32``, ``uint64`` (flat elements): on their
  order-preserving signed image (``morphaug.ndimage._unsigned``), exactly.

:func:`extremum_gradient` is every backend's backward: ``max_pool``'s
subgradient, one pass over the element's positions (a separable filter: over
each axis's window).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import torch

from .. import _unsigned
from .._elements import Filter
from .._shift import pad, shifted, unpad

__all__ = ["min_or_max", "byte_steps", "extremum_gradient"]


def min_or_max(input: torch.Tensor, filt: Filter, minimum: bool) -> torch.Tensor:
    """The minimum (``minimum``) or maximum of ``input`` over ``filt``'s element."""
    if input.dtype in _unsigned.SIGNED:  # torch has no minimum for these: on their signed image
        cval = None if filt.cval is None else _unsigned.ordered_value(filt.cval, input.dtype)
        result = min_or_max(_unsigned.ordered(input), dataclasses.replace(filt, cval=cval), minimum)
        return _unsigned.from_ordered(result, input.dtype)
    if filt.separable:
        return _separable_torch(input, filt, minimum)
    return _shifted_torch(input, filt, minimum)


def _running_extreme(padded: torch.Tensor, dim: int, width: int, op) -> torch.Tensor:
    """``op`` over every window of ``width`` samples along ``dim`` (valid windows only).

    Running extrema over 1, 2, 4, ... samples, then the window as the extreme of
    two overlapping power-of-two windows (min and max are idempotent).
    """
    span, extreme = 1, padded
    while 2 * span <= width:
        length = extreme.shape[dim] - span
        extreme = op(extreme.narrow(dim, 0, length), extreme.narrow(dim, span, length))
        span *= 2
    if span == width:
        return extreme
    length = padded.shape[dim] - width + 1
    return op(extreme.narrow(dim, 0, length), extreme.narrow(dim, width - span, length))


def _separable_torch(input: torch.Tensor, filt: Filter, minimum: bool) -> torch.Tensor:
    op = torch.minimum if minimum else torch.maximum
    result = input
    for axis, width, origin, mode in zip(filt.axes, filt.shape, filt.origins, filt.modes):
        if width == 1:  # SciPy skips these axes (and their origins) too
            continue
        before = width // 2 + origin
        padded = pad(result, (axis,), ((before, width - 1 - before),), (mode,), filt.cval)
        result = _running_extreme(padded, axis + 2, width, op)
    return result.clone() if result is input else result


def _identity(dtype: torch.dtype, minimum: bool):
    """The value that never wins a minimum (``minimum``) or a maximum."""
    if dtype == torch.bool:
        return minimum
    if dtype.is_floating_point:
        return math.inf if minimum else -math.inf
    info = torch.iinfo(dtype)
    return info.max if minimum else info.min


def _visits(filt: Filter):
    """Yield ``(position, keep, first)`` for each element position to visit.

    ``keep`` is ``None`` when every sample uses the position, else the
    ``(B|1, C|1, *shape)``-indexable mask of samples that do. ``first`` says
    whether the position is the first one (C order) of a sample's element:
    ``False`` (of none), ``True`` (of every sample) or a mask (some samples).
    SciPy adds the structure exactly there only (see :func:`_candidate`).
    """
    positions = list(np.ndindex(*filt.shape))
    if filt.footprint is None:  # a structure alone: its whole box
        for position in positions:
            yield position, None, position == positions[0]
        return
    firsts = None
    if filt.structure is not None:
        flat = filt.footprint.flatten(2)
        firsts = (flat & (flat.cumsum(-1) == 1)).reshape(filt.footprint.shape)
    if filt.host is None:  # on an accelerator: every position, masked on the device
        for position in positions:
            index = (..., *position)
            yield position, filt.footprint[index], False if firsts is None else firsts[index]
        return
    host = filt.host.reshape(-1, *filt.shape)
    first_index = host.reshape(len(host), -1).argmax(axis=1)
    for flat_index, position in enumerate(positions):
        users = host[(slice(None), *position)]
        if not users.any():
            continue
        index = (..., *position)
        starts = first_index == flat_index
        first = False
        if firsts is not None and starts.any():
            first = True if starts.all() else firsts[index]
        yield position, None if users.all() else filt.footprint[index], first


def _candidate(value: torch.Tensor, weight: torch.Tensor, first, minimum: bool) -> torch.Tensor:
    """``value -/+ weight`` with SciPy's arithmetic, in the accumulation dtype.

    SciPy's C loop adds the structure in float64 at the element's first
    position, and elsewhere adds the structure cast to the input dtype (in the
    input dtype's arithmetic), which rounds it for floats and truncates it for
    integers. Floats accumulate in the input dtype (the exact float64 sum is
    rounded once, which commutes with min/max), integers in float64 (no
    wrap-around; :func:`_from_float64` saturates at the end).
    """
    if minimum:
        weight = -weight
    if value.dtype.is_floating_point:
        cast = value + weight.to(value.dtype)
    else:
        cast = value.to(torch.float64) + weight.trunc()
    if first is False:
        return cast
    exact = (value.to(torch.float64) + weight).to(cast.dtype)
    return exact if first is True else torch.where(first, exact, cast)


def _spread(mask: torch.Tensor, rank: int) -> torch.Tensor:
    """A ``(B|1, C|1)`` per-sample value shaped to broadcast over ``rank`` spatial axes."""
    return mask.reshape(*mask.shape, *([1] * rank))


def _row_runs(footprint: np.ndarray) -> dict[int, list[tuple[int, ...]]]:
    """Runs of true values along the footprint's last axis, grouped by length.

    Maps each run length ``w`` to the positions ``(*row, start)`` of the runs
    of that length: a flat footprint is the union of these 1-D boxes.
    """
    runs: dict[int, list[tuple[int, ...]]] = {}
    for row in np.ndindex(*footprint.shape[:-1]):
        line = footprint[row]
        start = None
        for j, value in enumerate([*line, False]):
            if value and start is None:
                start = j
            elif not value and start is not None:
                runs.setdefault(j - start, []).append((*row, start))
                start = None
    return runs


def _row_segments_torch(input: torch.Tensor, filt: Filter, padded: torch.Tensor,
                        minimum: bool) -> torch.Tensor:
    """A shared flat footprint as a union of 1-D boxes along its last axis.

    Each distinct run length ``w`` costs one running extreme of ``padded``
    along that axis (:func:`_running_extreme`); each run is then one shifted
    view of it. A radius-3 ball visits 37 runs instead of its 123 positions.
    """
    op = torch.minimum if minimum else torch.maximum
    dim = filt.axes[-1] + 2
    result = None
    for width, positions in sorted(_row_runs(filt.host.reshape(filt.shape)).items()):
        boxed = padded if width == 1 else _running_extreme(padded, dim, width, op)
        for position in positions:
            value = shifted(boxed, filt.axes, position, input.shape)
            result = value.clone() if result is None else op(result, value, out=result)
    return result


def _pads(filt: Filter) -> list[tuple[int, int]]:
    """The border ``(before, after)`` per filtered axis that ``filt``'s element reads."""
    return [(k // 2 + o, k - 1 - k // 2 - o) for k, o in zip(filt.shape, filt.origins)]


def _padded(input: torch.Tensor, filt: Filter) -> torch.Tensor:
    """``input`` padded by ``filt``'s element with its border rule, once for every position."""
    return pad(input, filt.axes, _pads(filt), filt.modes, filt.cval)


def _candidates(padded: torch.Tensor, filt: Filter, minimum: bool, shape):
    """Yield ``(position, value, keep)`` per element position: the candidates of the output
    voxels of ``shape`` there (``padded`` shifted, with SciPy's structure arithmetic), and the
    broadcastable mask of the samples that use the position (``None``: all of them)."""
    rank = len(shape) - 2
    for position, keep, first in _visits(filt):
        value = shifted(padded, filt.axes, position, shape)
        if filt.structure is not None:
            weight = _spread(filt.structure[(..., *position)], rank)
            if not isinstance(first, bool):
                first = _spread(first, rank)
            value = _candidate(value, weight, first, minimum)
        yield position, value, None if keep is None else _spread(keep, rank)


def _shifted_torch(input: torch.Tensor, filt: Filter, minimum: bool) -> torch.Tensor:
    op = torch.minimum if minimum else torch.maximum
    padded = _padded(input, filt)
    if filt.structure is None and filt.shared_host:
        return _row_segments_torch(input, filt, padded, minimum)
    exact_dtype = filt.structure is None or input.dtype.is_floating_point
    dtype = input.dtype if exact_dtype else torch.float64
    identity = _identity(dtype, minimum)
    result = torch.full(input.shape, identity, dtype=dtype, device=input.device)
    for _, value, keep in _candidates(padded, filt, minimum, input.shape):
        if keep is not None:
            value = torch.where(keep, value, identity)
        op(result, value, out=result)
    return result if exact_dtype else _from_float64(result, input.dtype)


# --------------------------------------------------------------------------
# Bool input with a non-flat structure: SciPy's byte arithmetic
# --------------------------------------------------------------------------

def byte_steps(input: torch.Tensor, steps) -> torch.Tensor:
    """The ``(filter, minimum)`` steps on a bool ``input`` with a non-flat structure, as SciPy
    runs them: its bool array holds a byte, and each step passes its bytes on to the next
    (:func:`_byte_step`); the result is true where the last step's byte is non-zero."""
    codes = input.to(torch.float64)
    for filt, minimum in steps:
        codes = _byte_step(codes, filt, minimum)
    return codes != 0


def _byte(values: torch.Tensor) -> torch.Tensor:
    """C's cast of float64 ``values`` to an unsigned byte as x86 computes it (through a
    32-bit int): truncated toward zero, modulo 256; 0 outside the int32 range."""
    whole = values.trunc()
    return torch.where(whole.abs() < 2.0 ** 31, whole.remainder(256), 0.0)


def _byte_step(codes: torch.Tensor, filt: Filter, minimum: bool) -> torch.Tensor:
    """SciPy's min/max filter with a non-flat structure on a bool array holding ``codes``.

    ``codes`` are the float64 bytes 0..255 that SciPy's ``npy_bool`` array
    holds: 0 and 1 for a real bool input, any byte for a step's result. SciPy's
    C loop takes ``x + w`` in float64 at the first position (C order) of the
    footprint, ``w`` being the structure (negated for a minimum); elsewhere it
    casts ``w`` to a byte and adds it to ``x`` modulo 256. The extreme is
    stored as a byte (:func:`_byte`), which is returned. Every position of the
    element's box is visited, masked by the footprint on the device; a sample
    whose footprint is all false gets the identity (1 for a minimum, else 0).
    """
    sign = -1.0 if minimum else 1.0
    identity = -sign * math.inf
    footprint = filt.footprint if filt.footprint is not None else torch.ones_like(
        filt.structure, dtype=torch.bool)
    flat = footprint.flatten(2)
    first = (flat & (flat.cumsum(-1) == 1)).reshape(footprint.shape)
    weight = sign * filt.structure
    padded = pad(codes, filt.axes, _pads(filt), filt.modes, 0.0 if filt.cval is None else float(filt.cval))
    rank = codes.ndim - 2
    extreme = torch.full_like(codes, identity)
    op = torch.minimum if minimum else torch.maximum
    for position in np.ndindex(*filt.shape):
        index = (..., *position)
        value = shifted(padded, filt.axes, position, codes.shape)
        w = _spread(weight[index], rank)
        term = torch.where(_spread(first[index], rank), value + w, (value + _byte(w)).remainder(256))
        op(extreme, torch.where(_spread(footprint[index], rank), term, identity), out=extreme)
    return torch.where(_spread(flat.any(-1), rank), _byte(extreme), float(minimum))


# --------------------------------------------------------------------------
# Gradients
# --------------------------------------------------------------------------

def extremum_gradient(input: torch.Tensor, result: torch.Tensor, grad: torch.Tensor, filt: Filter,
                      minimum: bool) -> torch.Tensor:
    """The gradient of ``result = min_or_max(input, filt, minimum)`` for ``grad`` (of ``result``).

    ``max_pool``'s subgradient: each output voxel's gradient goes to one input
    voxel that attains it, the first element position (C order) that does; a
    separable filter routes through its 1-D passes, last first. A border voxel
    passes its gradient to the voxel it copies; a constant border takes none.
    Any backend's ``result`` will do: the extrema are exact.
    """
    if not filt.separable:
        return _routed(input, result, grad, filt, minimum)
    passes = [dataclasses.replace(filt, axes=(axis,), shape=(width,), origins=(origin,), modes=(mode,))
              for axis, width, origin, mode in zip(filt.axes, filt.shape, filt.origins, filt.modes)
              if width > 1]  # SciPy skips width-1 axes
    values = [input]
    for one_axis in passes[:-1]:
        values.append(_separable_torch(values[-1], one_axis, minimum))
    for one_axis, value, out in reversed(list(zip(passes, values, values[1:] + [result]))):
        grad = _routed(value, out, grad, dataclasses.replace(one_axis, separable=False), minimum)
    return grad


def _routed(input: torch.Tensor, result: torch.Tensor, grad: torch.Tensor, filt: Filter,
            minimum: bool) -> torch.Tensor:
    """:func:`extremum_gradient` through the element positions of ``filt`` (not separable)."""
    padded = _padded(input.detach(), filt)
    routed = torch.zeros(padded.shape, dtype=grad.dtype, device=grad.device)
    taken = torch.zeros(result.shape, dtype=torch.bool, device=result.device)
    for position, value, keep in _candidates(padded, filt, minimum, input.shape):
        hit = (value == result) & ~taken
        if keep is not None:
            hit &= keep
        taken |= hit
        shifted(routed, filt.axes, position, input.shape).add_(torch.where(hit, grad, 0))
    return unpad(routed, filt.axes, _pads(filt), filt.modes, input.shape)


def _from_float64(values: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Float64 results in an integer or bool ``dtype``: truncated toward zero, saturated."""
    values = values.trunc()
    if dtype == torch.bool:
        return values != 0
    info = torch.iinfo(dtype)
    high = float(info.max)
    if high > info.max:  # int64: 2**63 is not an int64
        high = math.nextafter(high, 0.0)
    return values.clamp(float(info.min), high).to(dtype)

