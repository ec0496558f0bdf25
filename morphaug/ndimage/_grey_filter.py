"""The grey ops' arguments as a :class:`Filter`: what SciPy's ``_min_or_max_filter`` decides.

:func:`prepare` turns ``size`` / ``footprint`` / ``structure``, ``mode``,
``cval``, ``origin`` and ``axes`` into the erosion-form filter that every
kernel takes (a separable box, or an element with its origins, modes and
``cval``); :func:`reflected` is the filter of the dilation (SciPy's reflection,
written once). ``size``, ``origin`` and ``mode`` sequences follow ``axes``;
the element's dimensions follow the filtered axes in increasing order, as
SciPy expands a footprint for ``axes``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import struct
import warnings
from collections.abc import Iterable

import numpy as np
import torch

from .._checks import check_int, check_mode
from ._elements import Filter
from ._normalize import (
    host_tensor,
    normalize_axes,
    normalize_element,
    normalize_modes,
    normalize_origin,
    normalize_sequence,
    validate_origin,
)
from ._shift import cast_cval

__all__ = ["prepare", "reflected"]


def prepare(input: torch.Tensor, size, footprint, structure, mode, cval, origin, axes) -> Filter:
    """The erosion-form :class:`Filter` of a grey op's arguments, checked.

    Called by each public function, itself called through its
    ``opaque_under_compile`` wrapper (the warning points at their caller). A
    box of plain arguments (``size`` alone, given as Python values) is
    normalised once per argument set, input dtype and spatial shape
    (:func:`_box_filter`).
    """
    if size is not None and footprint is not None:
        warnings.warn("ignoring size because footprint is set", UserWarning, stacklevel=4)
    if size is not None and footprint is None and structure is None:
        key = _typed((size, mode, cval, origin, axes))
        if key is not None:
            return _box_filter(key, input.dtype, tuple(input.shape[2:]))
    return _normalize_filter(input, size, footprint, structure, mode, cval, origin, axes)


def _typed(value):
    """``value`` with the type of each of its parts, so that ``3``, ``3.0`` and ``True`` differ
    (a float by its bits: ``-0.0`` is not ``0.0``, NaNs differ by payload); None unless every
    part is None, a bool, int, float or str, or a tuple or list of them."""
    if type(value) is float:
        return float, struct.pack("<d", value)
    if value is None or type(value) in (bool, int, str):
        return type(value), value
    if type(value) in (tuple, list):
        parts = tuple(_typed(v) for v in value)
        return None if any(p is None for p in parts) else (type(value), parts)
    return None


def _untyped(typed):
    """The value that :func:`_typed` described."""
    kind, value = typed
    if kind is float:
        return struct.unpack("<d", value)[0]
    if kind in (tuple, list):
        return kind(_untyped(part) for part in value)
    return value


@functools.lru_cache(maxsize=64)
def _box_filter(key, dtype: torch.dtype, spatial: tuple[int, ...]) -> Filter:
    """The filter of a box given by plain arguments (``key``, :func:`_typed` of ``(size, mode,
    cval, origin, axes)``), for inputs of ``dtype`` and spatial shape ``spatial``.

    A pipeline calls with the same few boxes, so each is normalised once.
    """
    size, mode, cval, origin, axes = _untyped(key)
    axes = normalize_axes(axes, len(spatial))
    order = _increasing(axes)
    origins = order(normalize_origin(origin, len(axes)))
    return _separable(spatial, dtype, order(axes), order(_normalize_size(size, len(axes))),
                      origins, order(normalize_modes(mode, len(axes))), cval)


def _increasing(axes: tuple[int, ...]):
    """A function putting per-axis values given in ``axes`` order into increasing axis order."""
    order = sorted(range(len(axes)), key=axes.__getitem__)
    if order == list(range(len(axes))):
        return tuple
    return lambda values: tuple(values[i] for i in order)


def _normalize_filter(input: torch.Tensor, size, footprint, structure, mode, cval, origin,
                      axes) -> Filter:
    """:func:`prepare` for every call (no box kept)."""
    if size is None and footprint is None and structure is None:
        raise ValueError("size, footprint, or structure must be specified")
    axes = normalize_axes(axes, input.ndim - 2)
    n = len(axes)
    order = _increasing(axes)
    origins = order(normalize_origin(origin, n))
    structure_host = None
    if structure is not None:
        if input.dtype == torch.uint64:
            raise TypeError("structure: a non-flat element does not take uint64 input (SciPy rounds its "
                            "values through float64); convert the input to int64 or float64")
        element = structure
        structure = normalize_element(element, input, n, "structure", torch.float64)
        structure_host = on_host(element, structure)
    host = None
    if footprint is not None:
        element = footprint
        footprint = normalize_element(element, input, n, "footprint", torch.bool)
        if structure is not None and footprint.shape[2:] != structure.shape[2:]:
            raise ValueError(
                f"footprint and structure must have the same element shape, got "
                f"{tuple(footprint.shape[2:])} and {tuple(structure.shape[2:])}"
            )
        host = on_host(element, footprint)
    if host is not None:
        per_slice = host.reshape(*host.shape[:2], math.prod(host.shape[2:]))  # B may be 0
        if not per_slice.any(axis=-1).all():
            empty = np.argwhere(~per_slice.any(axis=-1))
            raise ValueError(
                "footprint must have at least one true element (SciPy: all-zero "
                f"footprint is not supported); the element at (sample, channel) index "
                f"{tuple(empty[0].tolist())} of footprint shape {tuple(footprint.shape)} "
                "is all false"
            )

    if structure is None and (footprint is None or (host is not None and host.all())):
        # size, or an all-true footprint (= size): separable
        shape = order(_normalize_size(size, n)) if footprint is None else tuple(footprint.shape[2:])
        return _separable(tuple(input.shape[2:]), input.dtype, order(axes), shape, origins,
                          order(normalize_modes(mode, n)), cval)

    shape = tuple((structure if footprint is None else footprint).shape[2:])
    if not isinstance(mode, str) and isinstance(mode, Iterable):
        if structure is not None or host is not None:
            raise ValueError(
                "mode: a sequence of modes is only supported for separable filters "
                "(size, or an all-true footprint), not for this footprint/structure"
            )
        modes = order(normalize_modes(mode, n))
    else:
        modes = (check_mode(mode),) * n
    validate_origin(origins, shape)
    return Filter(order(axes), shape, origins, modes, _normalize_cval(cval, input.dtype, modes),
                  separable=False, footprint=footprint, structure=structure, host=host,
                  structure_host=structure_host)


def _separable(spatial, dtype, axes, shape, origins, modes, cval) -> Filter:
    """The separable filter of a box ``shape`` over ``axes`` (all in increasing axis order)."""
    validate_origin([o for o, k in zip(origins, shape) if k > 1],  # SciPy skips k == 1
                    [k for k in shape if k > 1])
    lengths = [spatial[axis] for axis in axes]
    shape, origins = zip(*map(_clamped_window, shape, origins, lengths, modes)) if axes else ((), ())
    return Filter(tuple(axes), tuple(shape), tuple(origins), tuple(modes),
                  _normalize_cval(cval, dtype, modes), separable=True)


def _normalize_size(size, n: int) -> list[int]:
    return [check_int(value, "size", minimum=1) for value in normalize_sequence(size, n, "size")]


def on_host(element, normalized: torch.Tensor) -> np.ndarray | None:
    """``normalized`` (the normalised ``element``) as a NumPy array of its dtype
    when it can be read without a host sync, else None (an accelerator tensor)."""
    if normalized.device.type == "cpu":
        return normalized.numpy(force=True)
    if isinstance(element, torch.Tensor):
        if element.device.type != "cpu":
            return None
    else:
        element = host_tensor(element)
    return element.to(normalized.dtype).numpy(force=True).reshape(normalized.shape)


def _normalize_cval(cval, dtype: torch.dtype, modes) -> object:
    """``cval`` as a scalar of the input's kind (only checked against a constant mode)."""
    try:
        float(cval)
    except (TypeError, ValueError):
        raise TypeError(f"cval must be a real scalar, got {cval!r}") from None
    return cast_cval(cval, dtype) if "constant" in modes else None


def _clamped_window(width: int, origin: int, length: int, mode: str) -> tuple[int, int]:
    """A box window of ``width`` at ``origin`` on an axis of ``length``, as a window no wider
    than ``2 * length + 1`` that reads the same values, so that a huge ``size`` costs nothing.

    With a periodic border (reflect: period ``2 n``, mirror: ``2 n - 2``, wrap:
    ``n``) a window of a period or more reads the whole line, as one period
    does; with ``nearest`` or ``constant``, a window reaching more than ``n``
    voxels past an end reads nothing more there.
    """
    if width <= 1 or length == 0:
        return width, origin
    if mode in ("reflect", "mirror", "wrap"):
        period = {"reflect": 2 * length, "mirror": max(2 * length - 2, 1), "wrap": length}[mode]
        return (period, 0) if width >= period else (width, origin)
    before = width // 2 + origin
    before, after = min(before, length), min(width - 1 - before, length)
    width = before + after + 1
    return width, before - width // 2


def reflected(filt: Filter) -> Filter:
    """The filter that dilation uses: element reflected, origin negated (minus 1 if even)."""
    dims = tuple(range(2, 2 + len(filt.shape)))
    return dataclasses.replace(
        filt,
        origins=tuple(-o - (1 - k % 2) for o, k in zip(filt.origins, filt.shape)),
        footprint=None if filt.footprint is None else filt.footprint.flip(dims),
        structure=None if filt.structure is None else filt.structure.flip(dims),
        host=None if filt.host is None else np.flip(filt.host, dims),
        structure_host=None if filt.structure_host is None else np.flip(filt.structure_host, dims),
    )
