"""``find_boundaries``: the voxels (or the half-voxels) between labelled regions, batched."""

from __future__ import annotations

import itertools

import numpy as np
import torch

from .. import _ops
from .._checks import check_host_int, check_label_image
from ..measure._label import overlap, where_value
from ..ndimage import generate_binary_structure, grey_dilation, grey_erosion
from ..ndimage._unsigned import SIGNED, from_wrapping, ordered, ordered_value, wrapping

__all__ = ["find_boundaries"]

MODES = ("thick", "inner", "outer", "subpixel")


def _scipy_rounded(x: torch.Tensor) -> torch.Tensor:
    """``x`` through float64 and back, as SciPy's grey filters store 64-bit integers: int64 values round
    to a double (beyond ``2**53``) and those reaching ``2**63`` come back as the smallest int64; uint64's
    largest value comes back as 0 (its other values beyond ``2**53`` are kept: no label gets there)."""
    if x.dtype == torch.int64:
        wide = x.to(torch.float64)
        top = wide >= 2.0**63
        return wide.clamp(max=2.0**63 - 1024).to(torch.int64).masked_fill_(top, torch.iinfo(torch.int64).min)
    if x.dtype == torch.uint64:
        bits = x.view(torch.int64)  # the largest uint64 is -1 there
        return bits.masked_fill(bits == -1, 0).view(torch.uint64)
    return x


def _grey(op, x: torch.Tensor, connectivity: int) -> torch.Tensor:
    """skimage's ``dilation`` / ``erosion`` of ``x`` by the connectivity's element, SciPy's rounding of
    64-bit integers included: a full box runs as one 3-voxel pass per axis in turn (SciPy's separable
    filter), each pass stored through float64; any other element runs as one pass."""
    rank = x.ndim - 2
    if connectivity < rank or x.dtype not in (torch.int64, torch.uint64):
        return _scipy_rounded(op(x, footprint=generate_binary_structure(rank, connectivity)))
    for axis in range(rank):
        x = _scipy_rounded(op(x, size=[3 if k == axis else 1 for k in range(rank)]))
    return x


def _differs(x: torch.Tensor, other: torch.Tensor, connectivity: int) -> torch.Tensor:
    """skimage's ``dilation(x) != erosion(other)`` by the connectivity's element."""
    return _grey(grey_dilation, x, connectivity) != _grey(grey_erosion, other, connectivity)


def _exact_in_float64(x: torch.Tensor) -> bool:
    """Whether SciPy's grey filters keep ``x``'s values (up to ``2**53`` in magnitude) where knowing it
    is free: not 64-bit integers, or 64-bit ones on the CPU (read there), outside ``torch.compile``."""
    if x.dtype not in (torch.int64, torch.uint64):
        return True
    if x.device.type != "cpu" or torch.compiler.is_compiling() or x.numel() == 0:
        return x.numel() == 0
    low, high = (int(v) for v in torch.aminmax(x.view(torch.int64)))  # uint64: beyond 2**63 reads negative
    return (0 if x.dtype == torch.uint64 else -(2**53)) <= low and high <= 2**53


def _thick(x: torch.Tensor, connectivity: int) -> torch.Tensor:
    """skimage's ``dilation(x) != erosion(x)``: where a neighbour holds another value. The neighbourhood
    holds the voxel itself, and SciPy's ``reflect`` border only repeats voxels of it, so one comparison
    per pair of neighbours inside the slice gives it, where SciPy's float64 keeps the values (else
    SciPy's rounding and overflow are not monotone: then as skimage runs it)."""
    if not _exact_in_float64(x):
        return _differs(x, x, connectivity)
    rank = x.ndim - 2
    out = torch.zeros(x.shape, dtype=torch.bool, device=x.device)
    structure = generate_binary_structure(rank, connectivity).numpy()
    for step in (tuple(int(j) for j in p) for p in np.argwhere(structure) - 1):
        if step > (0,) * rank and all(j == 0 or n > 1 for j, n in zip(step, x.shape[2:])):
            differ = overlap(x, step, 0) != overlap(x, step, 1)
            overlap(out, step, 0).logical_or_(differ)
            overlap(out, step, 1).logical_or_(differ)
    return out


def _subpixel(x: torch.Tensor) -> torch.Tensor:
    """skimage's ``_find_boundaries_subpixel`` on every slice: a map of ``2 n - 1`` voxels per axis, true
    between voxels whose block holds two values or more other than the dtype's largest (skimage marks
    the interstitial voxels with that value and counts the distinct values of each 3^S window)."""
    largest = torch.iinfo(x.dtype).max
    if x.dtype in SIGNED:  # order on a signed image of the same values
        x, largest = ordered(x), ordered_value(largest, x.dtype)
    smallest = torch.iinfo(x.dtype).min
    spatial = x.shape[2:]
    out = torch.zeros((*x.shape[:2], *(max(2 * n - 1, 0) for n in spatial)), dtype=torch.bool, device=x.device)
    for between in itertools.product((False, True), repeat=len(spatial)):
        if not any(between):
            continue  # the voxels themselves are never boundaries
        low, high = x, x.masked_fill(x == largest, smallest)
        for dim, pair in enumerate(between, start=2):  # the 2^k voxels around the point, per axis
            if pair:
                n = low.shape[dim]
                low = torch.minimum(low.narrow(dim, 0, n - 1), low.narrow(dim, 1, n - 1))
                high = torch.maximum(high.narrow(dim, 0, n - 1), high.narrow(dim, 1, n - 1))
        # two distinct values other than `largest`: the smallest is not `largest`, the largest other differs
        where = tuple(slice(1, None, 2) if pair else slice(0, None, 2) for pair in between)
        out[(..., *where)] = (low != largest) & (high != low)
    return out


def _torch(label_img: torch.Tensor, connectivity: int, mode: str, background: int) -> torch.Tensor:
    """Grey dilations and erosions by the connectivity's element, or block extremes (``"subpixel"``)."""
    if label_img.dtype == torch.bool:
        label_img = label_img.to(torch.uint8)
    if mode == "subpixel":
        return _subpixel(label_img)
    if label_img.numel() == 0:
        return torch.zeros(label_img.shape, dtype=torch.bool, device=label_img.device)
    boundaries = _thick(label_img, connectivity)
    if mode == "inner":
        boundaries &= ~where_value(label_img, background)
    elif mode == "outer":
        outside = where_value(label_img, background)
        largest = -1 if label_img.dtype in SIGNED else torch.iinfo(label_img.dtype).max  # as wrapping() holds it
        raised = from_wrapping(wrapping(label_img).masked_fill(outside, largest), label_img.dtype)
        boundaries &= outside | (_differs(label_img, raised, label_img.ndim - 2) & ~outside)
    return boundaries


_TABLE = _ops.Table("segmentation.find_boundaries", [
    _ops.Case("thick, inner, outer", "find_boundaries",
              lambda label_img, connectivity, mode, background: mode != "subpixel",
              lambda *args: _ops.kernels.find_boundaries(*args)),
], _torch)


def find_boundaries(label_img, connectivity=1, mode="thick", background=0):
    """Where the boundaries between the labelled regions of every slice lie.

    Parameters
    ----------
    label_img : torch.Tensor
        ``(B, C, *spatial)`` labels, bool or any integer dtype. It is never
        modified.
    connectivity : int, optional
        ``1 .. S`` for ``S`` spatial axes: a voxel's neighbours are those
        at most ``connectivity`` orthogonal hops away.
    mode : {"thick", "inner", "outer", "subpixel"}, optional
        ``"thick"``: every voxel with a neighbour of another label (2 voxels
        thick); ``"inner"``: those of them that are not background;
        ``"outer"``: background voxels next to a region, and region voxels
        that touch another region; ``"subpixel"``: a map of ``2 n - 1``
        voxels per axis, true between voxels of different labels.
    background : int, optional
        The background label of ``"inner"`` and ``"outer"``.

    Returns
    -------
    torch.Tensor
        ``torch.bool``, ``label_img``'s shape (``"subpixel"``: ``2 n - 1``
        along each spatial axis of ``n`` voxels).

    Raises
    ------
    TypeError
        ``label_img`` not a tensor, or float labels; ``connectivity`` or
        ``background`` not an int.
    ValueError
        ``label_img`` without a spatial axis; ``connectivity`` outside
        ``1 .. S``; an unknown ``mode``.

    Notes
    -----
    Batching: every ``(b, c)`` slice is processed as scikit-image processes
    that slice alone, in one pass over the batch: ``"thick"``, ``"inner"``
    and ``"outer"`` by the native ``find_boundaries`` kernel (one launch on
    CUDA; up to 8 spatial axes) where built, else grey dilations and
    erosions by the connectivity's element; ``"subpixel"`` by block minima
    and maxima.

    scikit-image parity: identical to ``skimage.segmentation.find_boundaries``
    per slice, its quirks included: ``"subpixel"`` ignores the dtype's
    largest value, which skimage uses as a marker; ``"outer"`` marks that
    value on the background and SciPy's filters store int64 and uint64
    through float64, so that for those dtypes every region voxel with a
    line of 3 background voxels nearby counts as touching another region
    (reproduced; labels beyond ``2**53`` in uint64 are not rounded). Differences: float
    labels are a ``TypeError`` (skimage takes them for ``"thick"`` and
    ``"inner"`` and fails on the others), ``connectivity`` outside ``1 ..
    S`` a ``ValueError`` (skimage treats it as the nearest of the two).

    See Also
    --------
    skimage.segmentation.find_boundaries : the reference, applied to each ``(b, c)`` slice.

    Examples
    --------
    >>> import torch
    >>> from morphaug.segmentation import find_boundaries
    >>> labels = torch.tensor([[[[0, 0, 0, 0], [0, 1, 1, 0], [0, 1, 1, 0]]]])
    >>> find_boundaries(labels, mode="inner").int()[0, 0]
    tensor([[0, 0, 0, 0],
            [0, 1, 1, 0],
            [0, 1, 1, 0]], dtype=torch.int32)
    """
    label_img = check_label_image(label_img, "label_img")
    rank = label_img.ndim - 2
    connectivity = check_host_int(connectivity, "connectivity")
    if not 1 <= connectivity <= rank:
        raise ValueError(f"connectivity must be in 1 .. {rank} for {rank} spatial axes, got {connectivity}")
    if not isinstance(mode, str) or mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    background = check_host_int(background, "background")
    return _TABLE(label_img, label_img, connectivity, mode, background)
