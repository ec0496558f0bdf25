"""Binary morphology: SciPy's ``binary_*`` functions on ``(B, C, *spatial)`` tensors.

Options shared by the binary functions
--------------------------------------
input
    A tensor ``(B, C, *spatial)`` of any real dtype; nonzero (NaN included,
    as in SciPy) is true. It is never modified.
structure
    Boolean element (nonzero is true) with ``len(axes)`` dimensions, shared
    ``(*k)``, per sample ``(B, *k)`` or per sample and channel ``(B, C, *k)``.
    ``None`` is ``generate_binary_structure(len(axes), 1)`` (the cross).
    Every axis of it may have any length; an all-false element erodes to all
    true and dilates to all false.
origin
    Shift of the element, an int or one per filtered axis, in
    ``[-(k // 2), (k - 1) // 2]`` for an element of length ``k`` (SciPy does
    not check this range and fails or misbehaves outside it; here it is a
    ``ValueError``).
iterations
    An int. The operation is repeated ``iterations`` times; below 1 it is
    repeated until the result stops changing.
mask
    Optional, of the input's shape or its spatial shape (nonzero is true):
    only the voxels where it is true are changed; elsewhere the output equals
    the input, in every iteration.
border_value
    An int: value of the voxels outside the input (nonzero is 1).
output
    ``None`` (a new ``torch.bool`` tensor), a ``torch.dtype`` (a new tensor
    of that dtype; SciPy ignores a dtype and returns ``bool``) or a tensor of
    the input's shape and device, of any real dtype, that receives the
    result and is returned (SciPy's ``output`` array).
brute_force
    Accepted and ignored: there is one algorithm, whose results are SciPy's
    ``brute_force=True`` ones (see "SciPy parity").
axes
    Spatial axes to filter (``0 .. S-1``, negatives from the end); the
    others are processed independently, slice by slice. As in SciPy, the
    element's dimensions belong to the filtered axes in increasing order,
    whatever the order of ``axes``, while ``origin[i]`` belongs to
    ``axes[i]`` when ``axes`` leaves some spatial axis out. With unsorted
    ``axes`` SciPy's dilation can move the origin off the element (it pairs
    the even-length correction with dimension ``i`` of the element, not with
    the axis of ``origin[i]``), where its result is undefined: a ``ValueError``.

Batching
--------
Every ``(b, c)`` slice is processed as SciPy processes that slice alone, with
its own element (per-sample elements) and mask, in one vectorised pass over
the batch: no Python loop over samples.

SciPy parity
------------
Results are identical to SciPy's (bool), including ``border_value``,
``mask``, ``origin`` and even-length elements. SciPy's default
``brute_force=False`` algorithm for ``iterations != 1`` (used when the
element's centre is true) disagrees with its own definition, and with
``brute_force=True``, when ``origin`` is not zero, and can crash there (as it
can when the element is longer than the input along an axis); the results
here are the ``brute_force=True`` ones. Both agree for ``origin=0``, so
``binary_propagation`` and ``binary_fill_holes`` match SciPy exactly there.
When ``iterations < 1`` and the repeated operation never settles (possible
only when the element's centre is false, e.g. ``[1, 0, 1]``), SciPy loops
forever; here a ``RuntimeError`` is raised once the cycle is detected.

Host syncs
----------
One operation (``iterations=1``) never syncs. Repeated operations run on the
device in chunks of steps (4 steps first, then twice as many each time, up to
64) and read back one flag per chunk, to stop at a fixpoint: one host sync per
chunk, none when ``1 <= iterations <= 4``. For ``iterations < 1`` (so
``binary_propagation`` and ``binary_fill_holes``) with an element, read on the
host, whose centre every sample holds, the torch backend labels the connected
components that the element's two-way offsets (``d`` and ``-d`` both in it:
all of them for any ``generate_binary_structure``, ball or box of odd size
with ``origin=0``) make of the mask, which settles in about 5 to 8 rounds
whatever the length of the paths, with a host sync after round 4 and then
every 2 rounds; the other offsets, if any, are followed from the voxels
reached last, in chunks of steps with one sync each (the native CUDA kernel:
one sync per two rounds of sweeps over the axes). An element whose centre
some sample lacks iterates plain steps, as SciPy does; so does an element
given as an accelerator tensor, which is never read back.

Peak memory
-----------
The native kernels use a few bytes per voxel. The torch backend's fixpoint
(``iterations < 1``, ``binary_propagation``, ``binary_fill_holes``) takes 4
bytes per voxel for its labels (8 beyond ``2**31 - 2`` voxels in the batch)
beyond its input, mask and result, plus about 15 MB of buffers, and up to 4
bools per voxel more for an element with one-way offsets
(``benchmarks/memory.py`` measures it).

Backends
--------
Each public function normalises its arguments and then calls
:func:`_binary_erosion`, SciPy's private worker on normalised arguments; it is
the one place where a backend is chosen: propagation to a fixpoint (``iterations < 1``,
binary_propagation, binary_fill_holes) with an element that holds its centre runs
on the native propagation kernel where it is built and each slice, padded by the
element's reach, has fewer than ``2**31`` voxels (its int32 offsets; CPU: one
flood fill per slice, or for ``binary_fill_holes`` with one element within
``(3,) * S`` for the batch, the background labelled by ``label``'s run scan;
CUDA: sweeps along the axes until one changes nothing, a host sync every two
rounds over the axes); a centred Euclidean ball (one step),
cross or box (any ``iterations >= 1``) with ``border_value=0`` and no mask on the
native ball kernel (``_ops.kernels.ball_morphology``, int64 indices: no such
limit); everything else on the torch backend
(``morphaug.ndimage._torch.binary``, whose docstring gives its algorithms and their cost).
The ball kernel writes a bool ``output`` (contiguous, sharing no memory with
the input) itself (its ``.out`` variant; the last step of an opening or
closing); any other ``output`` receives a copy of the result.
"""

from __future__ import annotations

import math

import torch

from .. import _ops, _sync
from .._checks import check_int
from ._docs import BINARY, filler
from ._elements import Element
from ._normalize import (
    check_input,
    check_output,
    finish_output,
    written_in_place,
    foreground,
    normalize_axes,
    normalize_iterations,
    normalize_mask,
    normalize_origin,
)
from ._torch import binary as _torch_binary

__all__ = [
    "binary_erosion",
    "binary_dilation",
    "binary_opening",
    "binary_closing",
    "binary_hit_or_miss",
    "binary_propagation",
    "binary_fill_holes",
]


def _border(border_value) -> bool:
    """``border_value`` as SciPy reads it: an int (nonzero is 1) or a bool; never a tensor,
    whose value would be read back from its device."""
    if isinstance(border_value, torch.Tensor):
        raise TypeError(f"border_value must be an int, got a tensor {border_value!r}")
    return border_value if isinstance(border_value, bool) else bool(check_int(border_value, "border_value"))


def _arguments(input, structure, iterations, mask, output, border_value, origin, axes):
    """Normalised arguments shared by erosion, dilation, opening and closing."""
    input = check_input(input)
    axes = normalize_axes(axes, input.ndim - 2)
    element = Element.from_argument(structure, input, axes, origin)
    iterations = normalize_iterations(iterations)
    mask = normalize_mask(mask, input)
    output = check_output(output, input)
    return foreground(input), element, iterations, mask, _border(border_value), output


# --------------------------------------------------------------------------
# Workers on normalised arguments (bool tensors and an Element).
# --------------------------------------------------------------------------

def _binary_erosion(x, element, iterations, mask, border, invert, into=None):
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


def _iterated_ball(x, element, iterations, mask, border) -> tuple[str, int] | None:
    """``(metric, radius)`` of the ball that ``iterations`` steps of ``element`` make, when the
    native ball kernel takes the call (border 0, no mask; radii up to 127 on CPU), else None."""
    if mask is not None or border or iterations < 1 or element.ball is None:
        return None
    metric, radius = element.ball
    if metric == "euclidean" and iterations > 1:
        return None  # an iterated Euclidean ball is no Euclidean ball
    radius *= iterations  # iterated L1 / L-infinity balls add their radii
    if radius > _ops.kernels.BALL_MAX_RADIUS and x.device.type == "cpu":
        return None
    return metric, radius


def _propagate_case(x, element, iterations, mask, border, invert, into):
    if not invert:  # erosion = complement of the dilation of the complement
        return ~_propagate_native(~x, element, mask, not border)
    return _propagate_native(x, element, mask, border)


def _ball_case(x, element, iterations, mask, border, invert, into):
    metric, radius = _iterated_ball(x, element, iterations, mask, border)
    return _ball_native(x, metric, radius, erode=not invert, into=into)


def _torch_case(x, element, iterations, mask, border, invert, into):
    return _torch_binary.erosion(x, element, iterations, mask, border, invert)


def _table(op: str) -> _ops.Table:
    """binary_erosion's or binary_dilation's dispatch table (and so every binary op's)."""
    return _ops.Table(op, [
        _ops.Case("iterations < 1 with an element read on the host that holds its centre, each padded "
                  "slice under 2^31 voxels", "propagate",
                  lambda x, element, iterations, mask, border, invert, into: (
                      iterations < 1 and element.used_by_all(element.centre) and _flood_fits(x, element)),
                  _propagate_case),
        _ops.Case("a centred ball, cross or box over every axis read on the host (iterated: cross or box), "
                  "border_value 0, no mask", "ball_morphology",
                  lambda x, element, iterations, mask, border, invert, into: _iterated_ball(
                      x, element, iterations, mask, border) is not None,
                  _ball_case),
    ], _torch_case)


def _ball_native(x, metric, radius, erode, into=None):
    """``_ops.kernels.ball_morphology`` with one radius, metric and op for every slice (into
    ``into``, if given)."""
    lead = dict(size=x.shape[:2], device=x.device)
    code = _ops.kernels.BALL_METRIC_CODES[metric]
    return _ops.kernels.ball_morphology(x, torch.full(fill_value=radius, dtype=torch.long, **lead),
                                        torch.full(fill_value=code, dtype=torch.long, **lead),
                                        torch.full(fill_value=erode, dtype=torch.bool, **lead), out=into)


def _propagate_native(x, element, mask, border):
    """The propagation kernel of ``morphaug._C`` (``_ops.kernels.propagate``) for an element that holds
    its centre."""
    return _ops.kernels.propagate(x, mask, *_flood_element(element, x), border)


def _flood_element(element, x):
    """``(weights, offsets)`` of an element for ``_ops.kernels.propagate`` / ``fill_holes``."""
    weights = element.tensor.flatten(2).index_select(2, _sync.to_device(element.used, element.tensor.device))
    return weights.expand(x.shape[0], x.shape[1], len(element.used)), element.offsets.tolist()


def _flood_fits(x, element) -> bool:
    """Whether the native propagation kernels take ``x`` with ``element``: each slice, padded
    on every spatial axis by the element's reach on both sides, must fit their int32 offsets."""
    reach = element.offsets.abs().amax(0).tolist() if len(element.used) else [0] * (x.ndim - 2)
    return math.prod(n + 2 * r for n, r in zip(x.shape[2:], reach)) < 2 ** 31


_TABLES = {False: _table("binary_erosion"), True: _table("binary_dilation")}


# --------------------------------------------------------------------------
# Public functions: normalise, then call _binary_erosion.
# --------------------------------------------------------------------------

_document = filler(BINARY)
_opaque = _ops.opaque_under_compile(_ops.one_result("input", lambda kw: torch.bool))


@_opaque
@_document
def binary_erosion(input, structure=None, iterations=1, mask=None, output=None,
                   border_value=0, origin=0, brute_force=False, *, axes=None):
    """Multidimensional binary erosion with a given structuring element.

    A voxel stays true when every position of the element, centred on it,
    falls on a true voxel (outside the input: ``border_value``).

    Parameters
    ----------
{input}
    structure : array_like, optional
        Element ``(*k)``, ``(B, *k)`` or ``(B, C, *k)``; default: the cross
        ``generate_binary_structure(len(axes), 1)``.
{steps}
    axes : int or sequence of int, optional
        Spatial axes to erode along (default: all).

    Returns
    -------
{returns}

    Notes
    -----
    Batching, SciPy parity (exact; ``brute_force=True`` semantics), host
    syncs of repeated operations and every option in detail: see the module
    docstring of ``morphaug.ndimage._binary``.

    See Also
    --------
    scipy.ndimage.binary_erosion : the reference, applied to each ``(b, c)`` slice.

    Examples
    --------
    >>> import torch
    >>> from morphaug.ndimage import binary_erosion
    >>> x = torch.zeros(1, 1, 5, 5, dtype=torch.bool)
    >>> x[..., 1:4, 1:4] = True
    >>> binary_erosion(x)[0, 0].int()
    tensor([[0, 0, 0, 0, 0],
            [0, 0, 0, 0, 0],
            [0, 0, 1, 0, 0],
            [0, 0, 0, 0, 0],
            [0, 0, 0, 0, 0]], dtype=torch.int32)
    """
    x, element, iterations, mask, border, output = _arguments(
        input, structure, iterations, mask, output, border_value, origin, axes)
    result = _binary_erosion(x, element, iterations, mask, border, False, written_in_place(output, x))
    return finish_output(result, output)


@_opaque
@_document
def binary_dilation(input, structure=None, iterations=1, mask=None, output=None,
                    border_value=0, origin=0, brute_force=False, *, axes=None):
    """Multidimensional binary dilation with a given structuring element.

    A voxel becomes true when some position of the reflected element,
    centred on it, falls on a true voxel (outside the input:
    ``border_value``).

    Parameters
    ----------
{input}
{structure}
{steps}
    axes : int or sequence of int, optional
        Spatial axes to dilate along (default: all).

    Returns
    -------
{returns}

    Notes
    -----
    As in SciPy the element is reflected and ``origin`` negated, minus 1
    along even-length axes, so that dilation is the dual of erosion. See
    the module docstring of ``morphaug.ndimage._binary`` for batching,
    SciPy parity (exact) and host syncs.

    See Also
    --------
    scipy.ndimage.binary_dilation : the reference, applied to each ``(b, c)`` slice.

    Examples
    --------
    >>> import torch
    >>> from morphaug.ndimage import binary_dilation
    >>> x = torch.zeros(2, 1, 7, dtype=torch.bool)
    >>> x[:, :, 3] = True
    >>> structures = torch.tensor([[1, 1, 1], [1, 1, 0]])  # one per sample
    >>> binary_dilation(x, structures)[:, 0].int()
    tensor([[0, 0, 1, 1, 1, 0, 0],
            [0, 0, 1, 1, 0, 0, 0]], dtype=torch.int32)
    """
    x, element, iterations, mask, border, output = _arguments(
        input, structure, iterations, mask, output, border_value, origin, axes)
    result = _binary_erosion(x, element.reflected(), iterations, mask, border, True,
                             written_in_place(output, x))
    return finish_output(result, output)


@_opaque
@_document
def binary_opening(input, structure=None, iterations=1, output=None, origin=0,
                   mask=None, border_value=0, brute_force=False, *, axes=None):
    """Multidimensional binary opening: erosion, then dilation, by one element.

    Removes the parts of the foreground the element does not fit in.

    Parameters
    ----------
{input}
{structure}
    iterations : int, optional
        The erosion, then the dilation, are each repeated this many times
        (below 1: until they stop changing).
{output}
{origin}
{mask_twice}
{border_value_twice}
{brute_force}
    axes : int or sequence of int, optional
        Spatial axes to filter (default: all).

    Returns
    -------
{returns}

    Notes
    -----
    ``binary_dilation(binary_erosion(x, ...), ...)`` with the same arguments,
    as in SciPy; exact parity. See the module docstring of
    ``morphaug.ndimage._binary`` for batching and host syncs.

    See Also
    --------
    scipy.ndimage.binary_opening : the reference, applied to each ``(b, c)`` slice.

    Examples
    --------
    >>> import torch
    >>> from morphaug.ndimage import binary_opening
    >>> x = torch.tensor([[[0, 1, 0, 1, 1, 1, 0]]])
    >>> binary_opening(x).int()
    tensor([[[0, 0, 0, 1, 1, 1, 0]]], dtype=torch.int32)
    """
    x, element, iterations, mask, border, output = _arguments(
        input, structure, iterations, mask, output, border_value, origin, axes)
    eroded = _binary_erosion(x, element, iterations, mask, border, invert=False)
    result = _binary_erosion(eroded, element.reflected(), iterations, mask, border, True,
                             written_in_place(output, x))
    return finish_output(result, output)


@_opaque
@_document
def binary_closing(input, structure=None, iterations=1, output=None, origin=0,
                   mask=None, border_value=0, brute_force=False, *, axes=None):
    """Multidimensional binary closing: dilation, then erosion, by one element.

    Fills the gaps of the foreground the element does not fit in.

    Parameters
    ----------
{input}
{structure}
    iterations : int, optional
        The dilation, then the erosion, are each repeated this many times
        (below 1: until they stop changing).
{output}
{origin}
{mask_twice}
{border_value_twice}
{brute_force}
    axes : int or sequence of int, optional
        Spatial axes to filter (default: all).

    Returns
    -------
{returns}

    Notes
    -----
    ``binary_erosion(binary_dilation(x, ...), ...)`` with the same arguments,
    as in SciPy (so with the default ``border_value=0`` the foreground
    touching the border is eroded back); exact parity. See the module
    docstring of ``morphaug.ndimage._binary`` for batching and host syncs.

    See Also
    --------
    scipy.ndimage.binary_closing : the reference, applied to each ``(b, c)`` slice.

    Examples
    --------
    >>> import torch
    >>> from morphaug.ndimage import binary_closing
    >>> x = torch.tensor([[[0, 1, 1, 0, 1, 1, 0]]])
    >>> binary_closing(x).int()
    tensor([[[0, 1, 1, 1, 1, 1, 0]]], dtype=torch.int32)
    """
    x, element, iterations, mask, border, output = _arguments(
        input, structure, iterations, mask, output, border_value, origin, axes)
    dilated = _binary_erosion(x, element.reflected(), iterations, mask, border,
                              invert=True)
    result = _binary_erosion(dilated, element, iterations, mask, border, False,
                             written_in_place(output, x))
    return finish_output(result, output)


@_opaque
@_document
def binary_hit_or_miss(input, structure1=None, structure2=None, output=None,
                       origin1=0, origin2=None, *, axes=None):
    """Multidimensional binary hit-or-miss transform.

    A voxel is true when ``structure1``, placed on it, fits in the
    foreground and ``structure2`` fits in the background.

    Parameters
    ----------
{input}
    structure1 : array_like, optional
        Element to fit in the foreground, ``(*k)``, ``(B, *k)`` or
        ``(B, C, *k)``; default: the cross. Outside the input is background.
    structure2 : array_like, optional
        Element to fit in the background (outside the input counts as
        background); default: the complement of ``structure1`` (per sample,
        for per-sample elements).
{output}
    origin1 : int or sequence of int, optional
        Placement of ``structure1``, per filtered axis.
    origin2 : int or sequence of int, optional
        Placement of ``structure2``; default: ``origin1``.
    axes : int or sequence of int, optional
        Spatial axes to filter (default: all).

    Returns
    -------
{returns}

    Notes
    -----
    ``binary_erosion(x, structure1, origin=origin1)`` AND the absence of
    true voxels under ``structure2`` (not reflected) at ``origin2``, as in
    SciPy; exact parity. See the module docstring of
    ``morphaug.ndimage._binary`` for batching and the shared options.

    See Also
    --------
    scipy.ndimage.binary_hit_or_miss : the reference, applied to each ``(b, c)`` slice.

    Examples
    --------
    >>> import torch
    >>> from morphaug.ndimage import binary_hit_or_miss
    >>> x = torch.tensor([[[0, 1, 0, 0, 1, 1, 0]]])
    >>> binary_hit_or_miss(x, [0, 1, 0]).int()  # isolated true voxels
    tensor([[[0, 1, 0, 0, 0, 0, 0]]], dtype=torch.int32)
    """
    input = check_input(input)
    axes = normalize_axes(axes, input.ndim - 2)
    output = check_output(output, input)
    hit = Element.from_argument(structure1, input, axes, origin1, "structure1", "origin1")
    origin2_name = "origin2"
    if origin2 is None:  # as in SciPy
        origin2, origin2_name = origin1, "origin2 (not given, so origin1)"
    if structure2 is None:
        miss = hit.complement(normalize_origin(origin2, len(axes), origin2_name), origin2_name)
    else:
        miss = Element.from_argument(structure2, input, axes, origin2, "structure2", origin2_name)
    x = foreground(input)
    fits = _binary_erosion(x, hit, 1, None, False, invert=False)
    touches = _binary_erosion(x, miss, 1, None, False, invert=True)
    return finish_output(fits & ~touches, output)


@_opaque
@_document
def binary_propagation(input, structure=None, mask=None, output=None, border_value=0,
                       origin=0, *, axes=None):
    """Multidimensional binary propagation (reconstruction by dilation) within a mask.

    Dilates ``input`` inside ``mask`` until nothing changes: the result holds
    the voxels of ``mask`` connected (by the element) to a true voxel.

    Parameters
    ----------
    input : torch.Tensor
        ``(B, C, *spatial)`` seeds, any real dtype; nonzero is true.
    structure : array_like, optional
        Connectivity element ``(*k)``, ``(B, *k)`` or ``(B, C, *k)``;
        default: the cross.
    mask : array_like, optional
        Region to propagate in (input's shape or its spatial shape); outside
        it the output equals the input. Default: everywhere.
{output}
{border_value}
{origin}
    axes : int or sequence of int, optional
        Spatial axes to propagate along (default: all).

    Returns
    -------
{returns}

    Notes
    -----
    ``binary_dilation(input, structure, -1, mask, output, border_value,
    origin)``, as in SciPy. Exact parity (for ``origin != 0`` with SciPy's
    ``brute_force=True`` result, see the module docstring of
    ``morphaug.ndimage._binary``). With an element that holds its centre (as
    the default; symmetric or not), the native propagation kernel runs where
    it is built (CPU: one flood fill per slice; CUDA: sweeps along the axes),
    unless a slice padded by the element's reach reaches ``2**31`` voxels.
    Else the torch backend labels the connected components that the
    element's two-way offsets make of the mask
    (min-label propagation with pointer jumping, a few host syncs), and
    follows its other offsets from the voxels reached last; peak extra
    memory: 4 bytes per voxel (labels), about 15 MB of buffers, and up to 4
    bools per voxel for an asymmetric element. An element whose centre is
    false, or given as an accelerator tensor, repeats masked dilation steps.

    See Also
    --------
    scipy.ndimage.binary_propagation : the reference, applied to each ``(b, c)`` slice.

    Examples
    --------
    >>> import torch
    >>> from morphaug.ndimage import binary_propagation
    >>> seed = torch.tensor([[[0, 1, 0, 0, 0, 0, 0]]])
    >>> region = torch.tensor([1, 1, 1, 0, 1, 1, 0])
    >>> binary_propagation(seed, mask=region).int()
    tensor([[[1, 1, 1, 0, 0, 0, 0]]], dtype=torch.int32)
    """
    return binary_dilation(input, structure, -1, mask, output, border_value, origin, axes=axes)


@_opaque
@_document
def binary_fill_holes(input, structure=None, output=None, origin=0, *, axes=None):
    """Fill the holes in binary objects.

    Holes are the background voxels not connected (by the element) to the
    border of the input.

    Parameters
    ----------
{input}
    structure : array_like, optional
        Connectivity element of the background, ``(*k)``, ``(B, *k)`` or
        ``(B, C, *k)``; default: the cross.
{output}
{origin}
    axes : int or sequence of int, optional
        Spatial axes to fill along (default: all; holes are then found in
        each slice along the other axes).

    Returns
    -------
{returns}

    Notes
    -----
    ``~binary_dilation(zeros, structure, -1, ~input, border_value=1,
    origin)``, as in SciPy; exact parity (for ``origin != 0`` with SciPy's
    ``brute_force=True`` result). NaN counts as foreground. With an element
    that holds its centre (as the default; symmetric or not), the native fill
    kernel runs where it is built (unless a slice padded by the element's
    reach reaches ``2**31`` voxels), else the torch backend labels the
    connected components of the background, as ``binary_propagation`` does:
    peak extra memory 4 bytes per voxel for the labels and 2 bools per voxel
    (the background, and the result before its complement), about 15 MB of
    buffers, up to 4 bools per voxel more for an asymmetric element. See the
    module docstring of ``morphaug.ndimage._binary`` for host syncs.

    See Also
    --------
    scipy.ndimage.binary_fill_holes : the reference, applied to each ``(b, c)`` slice.

    Examples
    --------
    >>> import torch
    >>> from morphaug.ndimage import binary_fill_holes
    >>> ring = torch.ones(1, 1, 4, 4)
    >>> ring[..., 1:3, 1:3] = 0
    >>> binary_fill_holes(ring).all().item()
    True
    """
    input = check_input(input)
    output = check_output(output, input)
    x = foreground(input)
    element = Element.from_argument(structure, x, normalize_axes(axes, x.ndim - 2), origin)
    element = element.reflected()  # as binary_dilation builds it
    result = x.clone() if x.numel() == 0 else _FILL_HOLES(x, x, element, structure, origin, axes)
    return finish_output(result, output)


def _fill_holes_torch(x, element, structure, origin, axes):
    """SciPy's definition: the complement of the background reached from the border."""
    seeds = torch.zeros((), dtype=torch.bool, device=x.device).expand(x.shape)  # no memory
    return ~binary_dilation(seeds, structure, -1, ~x, None, 1, origin, axes=axes)


_FILL_HOLES = _ops.Table("binary_fill_holes", [
    _ops.Case("an element read on the host that holds its centre, each padded slice under 2^31 voxels",
              "fill_holes",
              lambda x, element, structure, origin, axes: (element.used_by_all(element.centre)
                                                           and _flood_fits(x, element)),
              lambda x, element, structure, origin, axes: _ops.kernels.fill_holes(x, *_flood_element(element, x))),
], _fill_holes_torch)
