"""``expand_labels``: grow labels into the background without overlap, batched."""

from __future__ import annotations

import math
import numbers

import torch

from .. import _ops
from .._checks import check_label_image, check_spacing
from ..ndimage import distance_transform_edt
from ..ndimage._unsigned import from_wrapping, wrapping

__all__ = ["expand_labels"]


def _check_distance(distance) -> float:
    if isinstance(distance, bool) or not isinstance(distance, numbers.Real) or not distance >= 0:
        raise ValueError(f"distance must be a number >= 0, got {distance!r}")
    return float(distance)


def _largest_square(distance: float) -> float:
    """The largest integer ``m`` with ``sqrt(m) <= distance`` in float64 (correctly rounded, as NumPy's)."""
    if distance**2 >= 2.0**62:
        return math.inf
    m = int(distance**2)
    while math.sqrt(m + 1) <= distance:
        m += 1
    while m > 0 and math.sqrt(m) > distance:
        m -= 1
    return m


def _expand_torch(label_image, distance, spacing):
    """The torch backend: the EDT's indices, SciPy's distance test from them, one gather."""
    spatial = label_image.shape[2:]
    indices = distance_transform_edt(label_image == 0, sampling=spacing, return_distances=False,
                                     return_indices=True)
    # SciPy's test from its indices: sqrt(sum_k ((i_k - p_k) s_k)^2) <= distance, in float64 and in its order;
    # on a unit grid the sum is an integer, compared with the largest integer whose root passes
    unit = all(s == 1.0 for s in spacing)
    integer = torch.int32 if sum(n * n for n in spatial) < torch.iinfo(torch.int32).max else torch.int64
    squared = flat = None
    for k, (n, s) in enumerate(zip(spatial, spacing)):
        position = torch.arange(n, device=label_image.device, dtype=torch.int32)
        step = indices[k] - position.view((n,) + (1,) * (len(spatial) - 1 - k))
        step = step.to(integer).square_() if unit else (step.to(torch.float64) * s).square_()
        squared = step if squared is None else squared.add_(step)
        flat = indices[k].to(torch.int64) if flat is None else flat.mul_(n).add_(indices[k])
    near = squared <= _largest_square(distance) if unit else squared.sqrt_() <= distance
    # no labelled voxel in a slice: SciPy points at (-1, 0, ...), whose label is 0 anyway
    source = wrapping(label_image).reshape(*label_image.shape[:2], -1)
    nearest = source.gather(2, flat.clamp_(min=0).view(source.shape)).view(label_image.shape)
    return from_wrapping(nearest.masked_fill_(~near, 0), label_image.dtype)


_TABLE = _ops.Table("segmentation.expand_labels", [
    _ops.Case("every input", "expand_labels", lambda labels, distance, spacing: True,
              lambda labels, distance, spacing: _ops.kernels.expand_labels(labels, spacing, distance)),
], _expand_torch)


def expand_labels(label_image, distance=1, spacing=1):
    """Grow the labels of every slice by up to ``distance`` into the background, without overlap.

    Each background (0) voxel within Euclidean ``distance`` of a labelled
    voxel takes the label of the nearest one.

    Parameters
    ----------
    label_image : torch.Tensor
        ``(B, C, *spatial)`` labels, bool or any integer dtype; 0 is
        background. It is never modified.
    distance : float, optional
        How far to grow, in units of ``spacing`` (``>= 0``; ``inf`` fills
        every slice that has a label).
    spacing : float or sequence of float, optional
        Voxel spacing, one number or one per spatial axis (positive).

    Returns
    -------
    torch.Tensor
        The expanded labels, ``label_image``'s shape and dtype.

    Raises
    ------
    TypeError
        ``label_image`` not a tensor, or float labels; ``spacing`` not numbers.
    ValueError
        ``distance`` negative or NaN; ``spacing`` not positive and finite, or
        not one per spatial axis.

    Notes
    -----
    Batching: every ``(b, c)`` slice is expanded as scikit-image expands that
    slice alone, in one call over the batch: natively (CPU and CUDA) the
    EDT's passes carrying one feature index per voxel, the distance test
    and the label gather fused in the last pass; on the torch backend
    :func:`morphaug.ndimage.distance_transform_edt` with indices, then one
    gather.

    scikit-image parity: identical to ``skimage.segmentation.expand_labels``
    per slice, ties included: a voxel at equal distance from two labels
    takes the one SciPy's feature transform points at (the lower index
    along each axis, axes in order), and distances are compared with
    ``distance`` in float64 as SciPy computes them. With a ``spacing`` that
    is no power of 2, the torch backend may break a tie the other way
    where two sums of squares round apart (see
    :func:`morphaug.ndimage.distance_transform_edt`); the native kernels
    do not.

    See Also
    --------
    skimage.segmentation.expand_labels : the reference, applied to each ``(b, c)`` slice.

    Examples
    --------
    >>> import torch
    >>> from morphaug.segmentation import expand_labels
    >>> expand_labels(torch.tensor([[[0, 1, 0, 0, 0, 0, 2]]]), distance=1)
    tensor([[[1, 1, 1, 0, 0, 2, 2]]])
    >>> expand_labels(torch.tensor([[[0, 1, 0, 2, 0]]]), distance=1)
    tensor([[[1, 1, 1, 2, 2]]])
    """
    label_image = check_label_image(label_image, "label_image")
    distance = _check_distance(distance)
    spatial = label_image.shape[2:]
    spacing = check_spacing(spacing, len(spatial))
    if label_image.numel() == 0:
        return label_image.clone()
    return _TABLE(label_image, label_image, distance, spacing)
