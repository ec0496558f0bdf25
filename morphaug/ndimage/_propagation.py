"""Binary propagation and hole filling: SciPy's ``binary_propagation`` and ``binary_fill_holes``,
binary dilations to a fixpoint on ``(B, C, *spatial)`` tensors.

The options they share with the other binary functions, batching, SciPy
parity and host syncs: see ``morphaug.ndimage._binary``. Both run on the
native propagation kernels where they take the call (an element that holds
its centre: ``_binary_backends``).
"""

from __future__ import annotations

import torch

from .. import _ops
from ._binary import binary_dilation
from ._binary_backends import flood_element, flood_sizes, holds_its_centre
from ._docs import BINARY, filler
from ._elements import Element
from ._normalize import check_input, check_output, finish_output, foreground, normalize_axes

__all__ = ["binary_propagation", "binary_fill_holes"]

_document = filler(BINARY)
_opaque = _ops.opaque_under_compile(_ops.one_result("input", lambda kw: torch.bool))

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
    ``brute_force=True`` result, see the *Binary morphology*
    notes, docs/parity.md). With an element that holds its centre (as
    the default; symmetric or not), the native propagation kernel runs where
    it is built (CPU: one flood fill per slice; CUDA: the components of
    ``input | mask`` labelled, for an element within ``(3,) * S`` that is
    centrosymmetric in every sample, no host sync), unless it does not fit
    the slices padded by the element's reach (its int32 offsets).
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
    kernel runs where it is built and fits the slices padded by the
    element's reach (its int32 offsets; on CUDA: an element within
    ``(3,) * S``, centrosymmetric in every sample, whose background it
    labels with no host sync), else the torch backend labels the
    connected components of the background, as ``binary_propagation`` does:
    peak extra memory 4 bytes per voxel for the labels and 2 bools per voxel
    (the background, and the result before its complement), about 15 MB of
    buffers, up to 4 bools per voxel more for an asymmetric element. See the
    *Binary morphology* notes (docs/parity.md) for host syncs.

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
    _ops.Case("an element read on the host that holds its centre", "fill_holes",
              lambda x, element, structure, origin, axes: holds_its_centre(element),
              lambda x, element, structure, origin, axes: _ops.kernels.fill_holes(x, *flood_element(element, x)),
              sizes=lambda x, element, structure, origin, axes: flood_sizes(x, element)),
], _fill_holes_torch)
