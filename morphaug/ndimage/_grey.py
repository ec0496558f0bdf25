"""Grey-scale morphology: ``scipy.ndimage.grey_*`` and the ops built on them.

Each public function normalises its arguments into a :class:`Filter` (what
SciPy's ``_min_or_max_filter`` decides: separable box or element, origins,
modes, ``cval``) and hands it to :func:`_min_or_max`, the single place where
a backend is chosen: its dispatch table takes a native kernel where one
is built for the call, else the torch backend (``morphaug.ndimage._torch.grey``,
whose docstring gives its algorithms and their cost: separable running
extrema for boxes, shifted views of one padded tensor for other elements).

With native kernels (``morphaug._C``, see ``morphaug._ops``), on CPU and
CUDA, boxes run on ``_ops.kernels.grey_box``, a shared footprint read on the host
on ``_ops.kernels.grey_footprint`` (CPU: the same row-segment decomposition, each
run read from one running extreme per line; CUDA: a thread per output voxel
over the true positions), a shared non-flat ``structure`` read on the host
(with a shared host footprint, if any) on ``_ops.kernels.grey_structure`` (direct
loops over the true positions, the torch backend's arithmetic); everything
else, and those cases where their kernel is not built, runs on the torch
backend. A structure given on an accelerator is never read back, so it stays
on the torch backend there. An ``output`` tensor of the input's dtype,
contiguous and sharing no memory with the input, is written by the native
kernel itself (its ``.out`` variant; the last step of an opening or closing);
any other ``output`` receives a copy of the result.

A footprint on the CPU (or array-like) is read on the host: an all-true one
takes the separable path, an all-false one is a ``ValueError``, and only its
true positions are visited. A footprint on an accelerator is never read back
(that would be a host sync): every position of its box is visited, masked on
the device. Such a footprint takes the general path even when it is all true
(same result), accepts a per-axis ``mode`` sequence, and a sample whose
footprint is all false gets the identity (SciPy refuses an all-false one).

Gradients
    On every backend and element kind, :func:`_extremum` of an input that
    requires grad is a ``torch.autograd.Function`` whose backward is
    ``max_pool``'s subgradient (``_torch.grey.extremum_gradient``): each
    output's gradient goes to one input voxel that attains it. The compound
    ops differentiate through it and their arithmetic.

Axes
    ``size``, ``origin`` and ``mode`` sequences follow ``axes`` (entry ``i``
    for axis ``axes[i]``); the dimensions of ``footprint`` / ``structure``
    follow the filtered axes in increasing order, which is how SciPy expands
    a footprint for ``axes``.

NaN policy
    A NaN anywhere in the window (footprint positions only, border values
    included) makes the result NaN, on every path (``torch.minimum`` /
    ``torch.maximum`` semantics). SciPy's result depends on where the NaN
    sits in the window (its comparisons are false for NaN), so it is not
    matched on NaN input.

SciPy parity
    Identical results for bool, integer and floating inputs (float16 and
    bfloat16 follow the float rules; ``uint16``, ``uint32`` and ``uint64``,
    which torch computes little with, go as they are to the native flat
    kernels and run losslessly on signed views of the same bits elsewhere,
    see ``morphaug.ndimage._unsigned``), including non-flat ``structure`` with
    SciPy's exact arithmetic: at the first position (C order) of each
    slice's element the structure is added in float64, elsewhere it is first
    cast to the input dtype (rounded for floats, truncated toward zero for
    integers); the extreme is then cast to the input dtype. A bool input
    with a ``structure`` follows SciPy's byte arithmetic exactly, as its C
    loop does it on x86: SciPy's bool array holds a byte, the structure is
    cast to a byte and added modulo 256 (in float64 at the first position),
    and each step of a compound op (opening, closing, top-hats) passes its
    bytes on to the next; the result is ``True`` where the byte is non-zero.
    Differences, all where SciPy overflows, rounds, or is inconsistent with
    itself:

    * A ``structure`` that pushes an integer result out of the dtype's range:
      SciPy wraps around (or hits an undefined C cast), morphaug saturates to
      the dtype's range.
    * Bool input with a ``structure``: a constant-mode ``cval`` counts as 0
      or 1 (non-zero), where SciPy uses its byte (``cval=2`` is 2); with a
      non-bool ``output`` SciPy stores the unwrapped float64 extreme of the
      last step, morphaug the bool result cast to ``output``'s dtype.
    * ``int64`` and ``uint64`` values beyond 2**53: SciPy rounds them through
      float64, morphaug is exact without ``structure`` (with one, both use
      float64). A non-flat ``structure`` with ``uint64`` input is a
      ``TypeError``.
    * Unsorted ``axes``: SciPy maps an all-true footprint's dimensions to
      ``axes`` order (other footprints to increasing order), and with every
      axis listed takes ``origin`` in array order on the non-separable path;
      morphaug applies the rule above in every case.
    * A ``size`` below 1 is a ``ValueError`` (SciPy silently skips the axis);
      ``size`` must be an int or a sequence of ints. A box wider than its
      axis needs is computed as the narrowest box that reads the same values
      (at most ``2 n + 1``), so ``size=2**40`` costs no more than the whole
      axis (SciPy runs out of memory).
    * A ``cval`` that an integer input dtype cannot hold is a ``ValueError``
      when a constant mode is used; a float16/bfloat16 ``cval`` out of range
      rounds to infinity.
    * A sequence of modes is a ``ValueError`` (SciPy: ``RuntimeError``) for a
      non-flat or host-known non-box element; an all-false footprint is a
      ``ValueError`` even with ``structure`` (SciPy crashes).
    * ``output`` given as a dtype is honoured by ``morphological_gradient``
      and ``morphological_laplace`` (SciPy ignores it there).
"""

from __future__ import annotations

import collections
import dataclasses
import math
import operator
import struct
import threading
import warnings
from collections.abc import Iterable

import numpy as np
import torch

from .. import _ops
from .._checks import is_int
from ._docs import GREY, filler
from ._elements import Filter
from ._normalize import (
    check_input,
    check_output,
    finish_output,
    host_tensor,
    normalize_axes,
    normalize_element,
    normalize_mode,
    normalize_modes,
    normalize_origin,
    normalize_sequence,
    validate_origin,
    written_in_place,
)
from . import _unsigned
from ._shift import cast_cval, pad, shifted
from ._torch import grey as _torch_grey

__all__ = [
    "grey_erosion",
    "grey_dilation",
    "grey_opening",
    "grey_closing",
    "morphological_gradient",
    "morphological_laplace",
    "white_tophat",
    "black_tophat",
]


# --------------------------------------------------------------------------
# Argument normalisation
# --------------------------------------------------------------------------

def _normalize_size(size, n: int) -> list[int]:
    sizes = []
    for value in normalize_sequence(size, n, "size"):
        if not is_int(value):
            raise TypeError(f"size must contain ints, got {value!r}")
        value = operator.index(value)
        if value < 1:
            raise ValueError(f"size must be >= 1 on every axis, got {size!r}")
        sizes.append(value)
    return sizes


def _on_host(element, normalized: torch.Tensor) -> np.ndarray | None:
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


#: The box filters of the last calls, by their arguments (:func:`_box_key`), oldest first:
#: a pipeline calls with the same few, and normalising them (about 9 us) cost a 64^3 float32
#: ``grey_erosion(size=3)`` into ``output=`` (90 us in its kernel) 10% of its time. Threads
#: share it: :data:`_RECENT_BOXES_LOCK` guards every read and write.
_RECENT_BOXES: collections.OrderedDict = collections.OrderedDict()
_RECENT_BOXES_COUNT = 64
_RECENT_BOXES_LOCK = threading.Lock()


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


def _box_key(input: torch.Tensor, size, mode, cval, origin, axes):
    """The key of a box filter's arguments in :data:`_RECENT_BOXES`, or None when some
    argument is not plain data (a tensor, an array: normalised each call)."""
    typed = _typed((size, mode, cval, origin, axes))
    return None if typed is None else (typed, input.dtype, tuple(input.shape[2:]))


def _prepare(input: torch.Tensor, size, footprint, structure, mode, cval, origin,
             axes) -> Filter:
    """Normalise grey-op arguments into the erosion-form :class:`Filter`.

    Called directly by each public function, itself called through its
    ``opaque_under_compile`` wrapper (the warning points at the caller).
    A box (``size`` alone) of plain arguments comes from :data:`_RECENT_BOXES`
    after its first call.
    """
    if size is not None and footprint is not None:
        warnings.warn("ignoring size because footprint is set", UserWarning, stacklevel=4)
    if footprint is not None or structure is not None or size is None:
        return _normalize_filter(input, size, footprint, structure, mode, cval, origin, axes)
    key = _box_key(input, size, mode, cval, origin, axes)
    if key is None:
        return _normalize_filter(input, size, footprint, structure, mode, cval, origin, axes)
    with _RECENT_BOXES_LOCK:
        filt = _RECENT_BOXES.get(key)
        if filt is not None:
            _RECENT_BOXES.move_to_end(key)  # the most recent last
            return filt
    filt = _normalize_filter(input, size, footprint, structure, mode, cval, origin, axes)
    with _RECENT_BOXES_LOCK:
        _RECENT_BOXES[key] = filt
        if len(_RECENT_BOXES) > _RECENT_BOXES_COUNT:
            _RECENT_BOXES.popitem(last=False)
    return filt


def _normalize_filter(input: torch.Tensor, size, footprint, structure, mode, cval, origin,
                      axes) -> Filter:
    """:func:`_prepare` without the cache of recent boxes."""
    if size is None and footprint is None and structure is None:
        raise ValueError("size, footprint, or structure must be specified")
    axes = normalize_axes(axes, input.ndim - 2)
    n = len(axes)
    # size, origin and mode sequences follow ``axes``; element dimensions follow
    # the filtered axes in increasing order, as in SciPy's footprint expansion.
    order = sorted(range(n), key=axes.__getitem__)
    in_order = tuple if order == list(range(n)) else (lambda values: tuple(values[i] for i in order))
    origins = in_order(normalize_origin(origin, n))
    structure_host = None
    if structure is not None:
        element = structure
        structure = normalize_element(element, input, n, "structure", torch.float64)
        structure_host = _on_host(element, structure)
    host = None
    if footprint is not None:
        element = footprint
        footprint = normalize_element(element, input, n, "footprint", torch.bool)
        if structure is not None and footprint.shape[2:] != structure.shape[2:]:
            raise ValueError(
                f"footprint and structure must have the same element shape, got "
                f"{tuple(footprint.shape[2:])} and {tuple(structure.shape[2:])}"
            )
        host = _on_host(element, footprint)
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
        shape = in_order(_normalize_size(size, n)) if footprint is None else footprint.shape[2:]
        modes = in_order(normalize_modes(mode, n))
        validate_origin([o for o, k in zip(origins, shape) if k > 1],  # SciPy skips k == 1
                        [k for k in shape if k > 1])
        lengths = [input.shape[2 + axis] for axis in in_order(axes)]
        shape, origins = zip(*map(_clamped_window, shape, origins, lengths, modes)) if n else ((), ())
        return Filter(in_order(axes), tuple(shape), tuple(origins), modes,
                       _normalize_cval(cval, input.dtype, modes), separable=True)

    shape = tuple((structure if footprint is None else footprint).shape[2:])
    if not isinstance(mode, str) and isinstance(mode, Iterable):
        if structure is not None or host is not None:
            raise ValueError(
                "mode: a sequence of modes is only supported for separable filters "
                "(size, or an all-true footprint), not for this footprint/structure"
            )
        modes = in_order(normalize_modes(mode, n))
    else:
        modes = (normalize_mode(mode),) * n
    validate_origin(origins, shape)
    return Filter(in_order(axes), shape, origins, modes,
                   _normalize_cval(cval, input.dtype, modes), separable=False,
                   footprint=footprint, structure=structure, host=host,
                   structure_host=structure_host)


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


def _reflected(filt: Filter) -> Filter:
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


# --------------------------------------------------------------------------
# Dispatch and the native runners
# --------------------------------------------------------------------------

def _min_or_max(input: torch.Tensor, filt: Filter, minimum: bool,
                into: torch.Tensor | None = None) -> torch.Tensor:
    """Minimum (erosion) or maximum (dilation, given the reflected filter), by the op's table."""
    return _filter_steps(input, [(filt, minimum)], into)


def _opening(input: torch.Tensor, filt: Filter, into: torch.Tensor | None = None) -> torch.Tensor:
    """Erosion, then dilation (SciPy's ``grey_opening``)."""
    return _filter_steps(input, [(filt, True), (_reflected(filt), False)], into)


def _closing(input: torch.Tensor, filt: Filter, into: torch.Tensor | None = None) -> torch.Tensor:
    """Dilation, then erosion (SciPy's ``grey_closing``)."""
    return _filter_steps(input, [(_reflected(filt), False), (filt, True)], into)


def _filter_steps(input: torch.Tensor, steps, into: torch.Tensor | None = None) -> torch.Tensor:
    """``input`` through the ``(filter, minimum)`` steps in turn, as SciPy chains them; the
    last step writes ``into`` where its kernel can (``_normalize.written_in_place``).

    A bool input with a non-flat structure follows SciPy's byte arithmetic
    (:func:`_bool_structure`), whose steps pass bytes, not bools, on to the next.
    """
    if input.numel() == 0:
        return input.clone()
    if input.dtype == torch.bool and steps[0][0].structure is not None:
        codes = input.to(torch.float64)
        for filt, minimum in steps:
            codes = _bool_structure(codes, filt, minimum)
        return codes != 0
    for step, (filt, minimum) in enumerate(steps):
        input = _extremum(input, filt, minimum, into if step == len(steps) - 1 else None)
    return input


def _extremum(input: torch.Tensor, filt: Filter, minimum: bool,
              into: torch.Tensor | None = None) -> torch.Tensor:
    """One min/max filter by the op's table: wide unsigned inputs with a non-flat element in
    a wider signed dtype (``_unsigned``), an input that requires grad through :class:`_Extremum`;
    a native kernel writes ``into`` (a tensor for the result, or None), the torch backend
    returns a new tensor."""
    if input.dtype in _unsigned.SIGNED and filt.structure is not None:  # SciPy's sums, in a wider dtype
        wider = _unsigned.WIDER.get(input.dtype)
        if wider is None:
            raise TypeError("structure: a non-flat element does not take uint64 input (SciPy rounds its "
                            "values through float64); convert the input to int64 or float64")
        result = _extremum(input.to(wider), filt, minimum)
        return result.clamp_(0, torch.iinfo(input.dtype).max).to(input.dtype)  # saturated, as documented
    if input.requires_grad and torch.is_grad_enabled():
        return _Extremum.apply(input, filt, minimum)
    return _TABLES[minimum](input, input, filt, minimum, into)


def _byte(values: torch.Tensor) -> torch.Tensor:
    """C's cast of float64 ``values`` to an unsigned byte as x86 computes it (through a
    32-bit int): truncated toward zero, modulo 256; 0 outside the int32 range."""
    whole = values.trunc()
    return torch.where(whole.abs() < 2.0 ** 31, whole.remainder(256), 0.0)


def _bool_structure(codes: torch.Tensor, filt: Filter, minimum: bool) -> torch.Tensor:
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
    pads = [(k // 2 + o, k - 1 - k // 2 - o) for k, o in zip(filt.shape, filt.origins)]
    padded = pad(codes, filt.axes, pads, filt.modes, 0.0 if filt.cval is None else float(filt.cval))
    spread = (lambda value: value.reshape(*value.shape, *[1] * (codes.ndim - 2)))
    extreme = torch.full_like(codes, identity)
    op = torch.minimum if minimum else torch.maximum
    for position in np.ndindex(*filt.shape):
        index = (..., *position)
        value = shifted(padded, filt.axes, position, codes.shape)
        w = spread(weight[index])
        term = torch.where(spread(first[index]), value + w, (value + _byte(w)).remainder(256))
        op(extreme, torch.where(spread(footprint[index]), term, identity), out=extreme)
    return torch.where(spread(flat.any(-1)), _byte(extreme), float(minimum))


class _Extremum(torch.autograd.Function):
    """A min/max filter by the op's table, differentiated as ``max_pool`` is: each output's
    gradient goes to the input voxel that attains it (``_torch.grey.extremum_gradient``)."""

    @staticmethod
    def forward(ctx, input, filt, minimum):
        result = _TABLES[minimum](input, input, filt, minimum, None)
        ctx.save_for_backward(input, result)
        ctx.filt, ctx.minimum = filt, minimum
        return result

    @staticmethod
    def backward(ctx, grad):
        input, result = ctx.saved_tensors
        return _torch_grey.extremum_gradient(input, result, grad, ctx.filt, ctx.minimum), None, None


def _table(op: str) -> _ops.Table:
    """grey_erosion's or grey_dilation's dispatch table (and so the compound ops')."""
    return _ops.Table(op, [
        _ops.Case("size, or an all-true footprint", "grey_box",
                  lambda input, filt, minimum, into: filt.separable, _min_or_max_native),
        _ops.Case("one flat footprint for every slice, read on the host", "grey_footprint",
                  lambda input, filt, minimum, into: filt.structure is None and filt.shared_host,
                  _footprint_native),
        _ops.Case("one non-flat structure for every slice, read on the host", "grey_structure",
                  lambda input, filt, minimum, into: (filt.structure_host is not None
                                                and filt.structure.shape[0] * filt.structure.shape[1] == 1
                                                and (filt.footprint is None or filt.shared_host)),
                  _structure_native),
    ], _torch_min_or_max)


def _torch_min_or_max(input: torch.Tensor, filt: Filter, minimum: bool, into) -> torch.Tensor:
    """The torch backend, a new tensor (``into`` is left to ``finish_output``); a wide unsigned
    input (flat elements: the native flat kernels take it as it is) on its order-preserving
    signed image (``_unsigned``), which is exact."""
    if input.dtype in _unsigned.SIGNED:
        cval = None if filt.cval is None else _unsigned.ordered_value(filt.cval, input.dtype)
        result = _torch_grey.min_or_max(_unsigned.ordered(input), dataclasses.replace(filt, cval=cval),
                                        minimum)
        return _unsigned.from_ordered(result, input.dtype)
    return _torch_grey.min_or_max(input, filt, minimum)


def _min_or_max_native(input: torch.Tensor, filt: Filter, minimum: bool,
                       into: torch.Tensor | None) -> torch.Tensor:
    """A box filter on the native box kernel (``_ops.kernels.grey_box``), into ``into`` if given.

    Like every native grey kernel it takes the element in erosion form, as
    ``filt`` holds it (reflected for dilation), and a min / max flag.
    """
    size, origin, mode, cval = _kernel_arguments(input, filt)
    for axis, width in zip(filt.axes, filt.shape):
        if width == 1:  # SciPy skips these axes (and their origins)
            origin[axis] = 0
    return _ops.kernels.grey_box(input, size, origin, mode, cval, maximum=not minimum, out=into)


def _kernel_arguments(input: torch.Tensor, filt: Filter):
    """``(shape, origin, mode, cval)`` of ``filt`` on every spatial axis for the native
    kernels (extent 1, origin 0 and any mode where it is not filtered)."""
    rank = input.ndim - 2
    shape, origin, mode = [1] * rank, [0] * rank, ["nearest"] * rank
    for axis, width, o, m in zip(filt.axes, filt.shape, filt.origins, filt.modes):
        shape[axis], origin[axis], mode[axis] = width, o, m
    return shape, origin, mode, 0 if filt.cval is None else filt.cval


def _footprint_native(input: torch.Tensor, filt: Filter, minimum: bool,
                      into: torch.Tensor | None) -> torch.Tensor:
    """A shared host footprint on the native row-segment kernel (``_ops.kernels.grey_footprint``)."""
    shape, origin, mode, cval = _kernel_arguments(input, filt)
    return _ops.kernels.grey_footprint(input, filt.host.reshape(shape), origin, mode, cval,
                                       maximum=not minimum, out=into)


def _structure_native(input: torch.Tensor, filt: Filter, minimum: bool,
                      into: torch.Tensor | None) -> torch.Tensor:
    """A shared non-flat element read on the host on the native direct-loop kernel
    (``_ops.kernels.grey_structure``)."""
    shape, origin, mode, cval = _kernel_arguments(input, filt)
    structure = filt.structure_host.reshape(shape)
    footprint = None if filt.host is None else filt.host.reshape(shape)
    return _ops.kernels.grey_structure(input, structure, footprint, origin, mode, cval,
                                       maximum=not minimum, out=into)


_TABLES = {True: _table("grey_erosion"), False: _table("grey_dilation")}


# --------------------------------------------------------------------------
# Arithmetic of the compound ops (NumPy's rules, as SciPy applies them)
# --------------------------------------------------------------------------

def _output_dtype(input: torch.Tensor, output) -> torch.dtype:
    if output is None:
        return input.dtype
    return output if isinstance(output, torch.dtype) else output.dtype


def _check_arithmetic(input: torch.Tensor, out_dtype: torch.dtype, name: str, *,
                      xor_bool: bool) -> None:
    """Raise where NumPy would: boolean subtract, or an unsafe cast into ``output``."""
    work = _unsigned.result_dtype(input.dtype, out_dtype)
    if work == torch.bool and not xor_bool:
        raise TypeError(
            f"{name} does not support boolean input (NumPy's boolean subtract, as "
            "used by SciPy, is not supported); convert the input to an integer dtype"
        )
    if not np.can_cast(_unsigned.numpy_dtype(work), _unsigned.numpy_dtype(out_dtype), casting="same_kind"):
        raise TypeError(
            f"output dtype {out_dtype} cannot hold the {work} result of {name} "
            "(NumPy's same_kind casting rule, as in SciPy)"
        )


def _ufunc(op, a: torch.Tensor, b: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """NumPy's ``op(a, b, out=<array of dtype>)``: NumPy's result dtype (wide unsigned: on the
    signed view, which wraps alike), stored as ``dtype``."""
    work = _unsigned.result_dtype(a.dtype, b.dtype)
    result = op(_unsigned.wrapping(a.to(work)), _unsigned.wrapping(b.to(work)))
    return _unsigned.from_wrapping(result, work).to(dtype)


# --------------------------------------------------------------------------
# Public functions
# --------------------------------------------------------------------------

_document = filler(GREY)
_opaque = _ops.opaque_under_compile(_ops.one_result("input", lambda kw: kw["input"].dtype))


@_opaque
@_document
def grey_erosion(input, size=None, footprint=None, structure=None, output=None,
                 mode="reflect", cval=0.0, origin=0, *, axes=None):
    """Grey-scale erosion: the minimum over the element, batched.

    ``out[x] = min_{y in footprint} input[x + y - c] - structure[y]`` with
    ``c = k // 2 + origin``.

    Parameters
    ----------
{parameters}
    Returns
    -------
    torch.Tensor
        The eroded input, in the input's dtype (or ``output``).

    Notes
    -----
{notes}
    See Also
    --------
    scipy.ndimage.grey_erosion

    Examples
    --------
    >>> import torch
    >>> from morphaug.ndimage import grey_erosion
    >>> x = torch.tensor([[[3., 1., 4., 1., 5., 9.]]])
    >>> grey_erosion(x, size=3)
    tensor([[[1., 1., 1., 1., 1., 5.]]])
    """
    input = check_input(input)
    output = check_output(output, input)
    filt = _prepare(input, size, footprint, structure, mode, cval, origin, axes)
    return finish_output(_min_or_max(input, filt, True, written_in_place(output, input)), output)


@_opaque
@_document
def grey_dilation(input, size=None, footprint=None, structure=None, output=None,
                  mode="reflect", cval=0.0, origin=0, *, axes=None):
    """Grey-scale dilation: the maximum over the reflected element, batched.

    As in SciPy, the element is reflected and ``origin`` negated (minus 1
    on axes of even length), so dilation is the adjoint of erosion.

    Parameters
    ----------
{parameters}
    Returns
    -------
    torch.Tensor
        The dilated input, in the input's dtype (or ``output``).

    Notes
    -----
{notes}
    See Also
    --------
    scipy.ndimage.grey_dilation

    Examples
    --------
    >>> import torch
    >>> from morphaug.ndimage import grey_dilation
    >>> x = torch.tensor([[[0, 0, 7, 0, 0, 0]]], dtype=torch.uint8)
    >>> grey_dilation(x, footprint=[1, 1, 0])
    tensor([[[0, 7, 7, 0, 0, 0]]], dtype=torch.uint8)
    """
    input = check_input(input)
    output = check_output(output, input)
    filt = _reflected(_prepare(input, size, footprint, structure, mode, cval, origin, axes))
    return finish_output(_min_or_max(input, filt, False, written_in_place(output, input)), output)


@_opaque
@_document
def grey_opening(input, size=None, footprint=None, structure=None, output=None,
                 mode="reflect", cval=0.0, origin=0, *, axes=None):
    """Grey-scale opening: erosion, then dilation by the same element, batched.

    Parameters
    ----------
{parameters}
    Returns
    -------
    torch.Tensor
        The opened input, in the input's dtype (or ``output``).

    Notes
    -----
{notes}
    See Also
    --------
    scipy.ndimage.grey_opening

    Examples
    --------
    >>> import torch
    >>> from morphaug.ndimage import grey_opening
    >>> x = torch.tensor([[[1., 1., 9., 1., 5., 5., 5., 1.]]])
    >>> grey_opening(x, size=3)
    tensor([[[1., 1., 1., 1., 5., 5., 5., 1.]]])
    """
    input = check_input(input)
    output = check_output(output, input)
    filt = _prepare(input, size, footprint, structure, mode, cval, origin, axes)
    return finish_output(_opening(input, filt, written_in_place(output, input)), output)


@_opaque
@_document
def grey_closing(input, size=None, footprint=None, structure=None, output=None,
                 mode="reflect", cval=0.0, origin=0, *, axes=None):
    """Grey-scale closing: dilation, then erosion by the same element, batched.

    Parameters
    ----------
{parameters}
    Returns
    -------
    torch.Tensor
        The closed input, in the input's dtype (or ``output``).

    Notes
    -----
{notes}
    See Also
    --------
    scipy.ndimage.grey_closing

    Examples
    --------
    >>> import torch
    >>> from morphaug.ndimage import grey_closing
    >>> x = torch.tensor([[[5., 5., 0., 5., 1., 1., 1., 5.]]])
    >>> grey_closing(x, size=3)
    tensor([[[5., 5., 5., 5., 1., 1., 1., 5.]]])
    """
    input = check_input(input)
    output = check_output(output, input)
    filt = _prepare(input, size, footprint, structure, mode, cval, origin, axes)
    return finish_output(_closing(input, filt, written_in_place(output, input)), output)


@_opaque
@_document
def morphological_gradient(input, size=None, footprint=None, structure=None, output=None,
                           mode="reflect", cval=0.0, origin=0, *, axes=None):
    """Morphological gradient: dilation minus erosion, batched.

    Computed as SciPy does: in the input's dtype (integers wrap around), or,
    with ``output``, the erosion stored in ``output``'s dtype and subtracted
    from the dilation with NumPy's type promotion. Boolean input is a
    ``TypeError``, as in SciPy (NumPy has no boolean subtract).

    Parameters
    ----------
{parameters}
    Returns
    -------
    torch.Tensor
        ``grey_dilation(input) - grey_erosion(input)``.

    Notes
    -----
{notes}
    ``output`` given as a dtype is honoured (SciPy ignores it here).

    See Also
    --------
    scipy.ndimage.morphological_gradient

    Examples
    --------
    >>> import torch
    >>> from morphaug.ndimage import morphological_gradient
    >>> x = torch.tensor([[[0., 0., 2., 2., 2., 0.]]])
    >>> morphological_gradient(x, size=3)
    tensor([[[0., 2., 2., 0., 2., 2.]]])
    """
    input = check_input(input)
    output = check_output(output, input)
    dtype = _output_dtype(input, output)
    _check_arithmetic(input, dtype, "morphological_gradient", xor_bool=False)
    filt = _prepare(input, size, footprint, structure, mode, cval, origin, axes)
    dilated = _min_or_max(input, _reflected(filt), minimum=False)
    eroded = _min_or_max(input, filt, minimum=True).to(dtype)
    return finish_output(_ufunc(torch.sub, dilated, eroded, dtype), output)


@_opaque
@_document
def morphological_laplace(input, size=None, footprint=None, structure=None, output=None,
                          mode="reflect", cval=0.0, origin=0, *, axes=None):
    """Morphological Laplace: dilation + erosion - 2 * input, batched.

    Computed in SciPy's order, ``((dilation + erosion) - input) - input``,
    each step in NumPy's promoted dtype and stored in the result's dtype (the
    input's, or ``output``'s): integers wrap around as in SciPy. Boolean
    input is a ``TypeError``, as in SciPy.

    Parameters
    ----------
{parameters}
    Returns
    -------
    torch.Tensor
        ``grey_dilation(input) + grey_erosion(input) - 2 * input``.

    Notes
    -----
{notes}
    ``output`` given as a dtype is honoured (SciPy ignores it here).

    See Also
    --------
    scipy.ndimage.morphological_laplace

    Examples
    --------
    >>> import torch
    >>> from morphaug.ndimage import morphological_laplace
    >>> x = torch.tensor([[[0., 0., 2., 2., 2., 0.]]])
    >>> morphological_laplace(x, size=3)
    tensor([[[ 0.,  2., -2.,  0., -2.,  2.]]])
    """
    input = check_input(input)
    output = check_output(output, input)
    dtype = _output_dtype(input, output)
    _check_arithmetic(input, dtype, "morphological_laplace", xor_bool=False)
    filt = _prepare(input, size, footprint, structure, mode, cval, origin, axes)
    dilated = _min_or_max(input, _reflected(filt), minimum=False)
    result = _min_or_max(input, filt, minimum=True).to(dtype)
    result = _ufunc(torch.add, dilated, result, dtype)
    result = _ufunc(torch.sub, result, input, dtype)
    result = _ufunc(torch.sub, result, input, dtype)
    return finish_output(result, output)


@_opaque
@_document
def white_tophat(input, size=None, footprint=None, structure=None, output=None,
                 mode="reflect", cval=0.0, origin=0, *, axes=None):
    """White top-hat: the input minus its grey opening, batched.

    As in SciPy, boolean input (with a boolean result) uses exclusive or;
    otherwise the subtraction follows NumPy's promotion and integers wrap.

    Parameters
    ----------
{parameters}
    Returns
    -------
    torch.Tensor
        ``input - grey_opening(input)``.

    Notes
    -----
{notes}
    See Also
    --------
    scipy.ndimage.white_tophat

    Examples
    --------
    >>> import torch
    >>> from morphaug.ndimage import white_tophat
    >>> x = torch.tensor([[[1., 1., 9., 1., 5., 5., 5., 1.]]])
    >>> white_tophat(x, size=3)
    tensor([[[0., 0., 8., 0., 0., 0., 0., 0.]]])
    """
    input = check_input(input)
    output = check_output(output, input)
    dtype = _output_dtype(input, output)
    _check_arithmetic(input, dtype, "white_tophat", xor_bool=True)
    filt = _prepare(input, size, footprint, structure, mode, cval, origin, axes)
    opened = _opening(input, filt).to(dtype)
    if input.dtype == torch.bool and dtype == torch.bool:
        result = input ^ opened
    else:
        result = _ufunc(torch.sub, input, opened, dtype)
    return finish_output(result, output)


@_opaque
@_document
def black_tophat(input, size=None, footprint=None, structure=None, output=None,
                 mode="reflect", cval=0.0, origin=0, *, axes=None):
    """Black top-hat: the grey closing minus the input, batched.

    As in SciPy, boolean input (with a boolean result) uses exclusive or;
    otherwise the subtraction follows NumPy's promotion and integers wrap.

    Parameters
    ----------
{parameters}
    Returns
    -------
    torch.Tensor
        ``grey_closing(input) - input``.

    Notes
    -----
{notes}
    See Also
    --------
    scipy.ndimage.black_tophat

    Examples
    --------
    >>> import torch
    >>> from morphaug.ndimage import black_tophat
    >>> x = torch.tensor([[[5., 5., 0., 5., 1., 1., 1., 5.]]])
    >>> black_tophat(x, size=3)
    tensor([[[0., 0., 5., 0., 0., 0., 0., 0.]]])
    """
    input = check_input(input)
    output = check_output(output, input)
    dtype = _output_dtype(input, output)
    _check_arithmetic(input, dtype, "black_tophat", xor_bool=True)
    filt = _prepare(input, size, footprint, structure, mode, cval, origin, axes)
    closed = _closing(input, filt).to(dtype)
    if input.dtype == torch.bool and dtype == torch.bool:
        result = closed ^ input
    else:
        result = _ufunc(torch.sub, closed, input, dtype)
    return finish_output(result, output)
