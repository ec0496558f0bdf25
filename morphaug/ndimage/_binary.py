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
reached last, in chunks of steps with one sync each (the native CUDA kernel,
for an element within ``(3,) * S`` that is symmetric in every sample, labels
the mask by union-find and keeps the seeded components: no sync). An element whose centre
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
Each public function normalises its arguments, then calls SciPy's private
worker on them, which chooses the backend: see ``morphaug.ndimage._binary_backends``.
"""

from __future__ import annotations

import torch

from .. import _ops
from .._checks import check_host_int
from ._binary_backends import arguments, binary_erosion_worker, hit_or_miss_worker
from ._docs import BINARY, filler
from ._elements import Element
from ._normalize import (
    check_dense,
    check_input,
    check_output,
    finish_output,
    foreground,
    host_tensor,
    normalize_axes,
    normalize_origin,
    written_in_place,
)

__all__ = [
    "binary_erosion",
    "binary_dilation",
    "binary_opening",
    "binary_closing",
    "binary_hit_or_miss",
    "iterate_structure",
]


# --------------------------------------------------------------------------
# Public functions: normalise, then call binary_erosion_worker.
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
    syncs of repeated operations and every option in detail: see the
    *Binary morphology* notes (docs/parity.md).

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
    x, element, iterations, mask, border, output = arguments(
        input, structure, iterations, mask, output, border_value, origin, axes)
    result = binary_erosion_worker(x, element, iterations, mask, border, False, written_in_place(output, x))
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
    the *Binary morphology* notes (docs/parity.md) for batching,
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
    x, element, iterations, mask, border, output = arguments(
        input, structure, iterations, mask, output, border_value, origin, axes)
    result = binary_erosion_worker(x, element.reflected(), iterations, mask, border, True,
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
    as in SciPy; exact parity. See the *Binary morphology*
    notes (docs/parity.md) for batching and host syncs.

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
    x, element, iterations, mask, border, output = arguments(
        input, structure, iterations, mask, output, border_value, origin, axes)
    eroded = binary_erosion_worker(x, element, iterations, mask, border, invert=False)
    result = binary_erosion_worker(eroded, element.reflected(), iterations, mask, border, True,
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
    touching the border is eroded back); exact parity. See the
    *Binary morphology* notes (docs/parity.md) for batching and host syncs.

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
    x, element, iterations, mask, border, output = arguments(
        input, structure, iterations, mask, output, border_value, origin, axes)
    dilated = binary_erosion_worker(x, element.reflected(), iterations, mask, border,
                              invert=True)
    result = binary_erosion_worker(dilated, element, iterations, mask, border, False,
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
    SciPy; exact parity. See the *Binary morphology*
    notes (docs/parity.md) for batching and the shared options.

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
    return finish_output(hit_or_miss_worker(foreground(input), hit, miss), output)


def iterate_structure(structure, iterations, origin=None):
    """Iterate a structuring element by dilating it with itself.

    The result is the element a single dilation would need to match
    ``iterations`` dilations by ``structure``.

    Parameters
    ----------
    structure : array_like
        The element (a tensor, NumPy array or nested list; nonzero is true),
        of any rank. Not batched.
    iterations : int
        Number of dilations the result stands for.
    origin : int or sequence of int, optional
        Origin of ``structure`` (one per axis, or one for all). When given
        and ``iterations >= 2``, the origin of the result is returned too.

    Returns
    -------
    torch.Tensor or (torch.Tensor, list of int)
        The iterated element as ``torch.bool``, of shape
        ``k + (iterations - 1) * (k - 1)`` per axis, on the device of a
        ``structure`` tensor (else the CPU); with ``origin``, also the
        origin ``iterations * origin`` per axis.

    Notes
    -----
    SciPy parity: identical values and shapes, and the same quirk that the
    ``(structure, origin)`` pair is returned only when ``origin`` is given
    and ``iterations >= 2``: for ``iterations < 2`` only the (copied)
    element comes back. Here it is always ``torch.bool`` (SciPy returns the
    input's dtype unchanged when ``iterations < 2``). ``iterations`` must be
    an int.

    See Also
    --------
    scipy.ndimage.iterate_structure : the reference.

    Examples
    --------
    >>> from morphaug.ndimage import generate_binary_structure, iterate_structure
    >>> iterate_structure(generate_binary_structure(2, 1), 2).int()
    tensor([[0, 0, 1, 0, 0],
            [0, 1, 1, 1, 0],
            [1, 1, 1, 1, 1],
            [0, 1, 1, 1, 0],
            [0, 0, 1, 0, 0]], dtype=torch.int32)
    """
    if isinstance(structure, torch.Tensor):
        element = check_dense(structure, "structure")
    else:
        try:
            element = host_tensor(structure)
        except (TypeError, ValueError, RuntimeError) as error:
            raise TypeError(
                f"structure must be array-like, got {type(structure).__name__}"
            ) from error
    if element.is_complex():
        raise TypeError(f"structure must be real, got complex dtype {element.dtype}")
    if element.numel() == 0:
        raise ValueError(f"structure must not be empty, got shape {tuple(element.shape)}")
    iterations = check_host_int(iterations, "iterations")
    element = element != 0
    if iterations < 2:
        return element
    if element.ndim == 0:
        out = element
    else:
        grow = iterations - 1
        shape = [k + grow * (k - 1) for k in element.shape]
        out = element.new_zeros(shape)
        centre = tuple(slice(grow * (k // 2), grow * (k // 2) + k) for k in element.shape)
        out[centre] = element
        out = binary_dilation(out[None, None], element, iterations=grow)[0, 0]
    if origin is None:
        return out
    origin = normalize_origin(origin, element.ndim)
    return out, [iterations * o for o in origin]
