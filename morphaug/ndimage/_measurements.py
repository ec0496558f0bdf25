"""Measurements: SciPy's region statistics and bounding boxes on ``(B, C, *spatial)`` tensors.

``sum_labels``, ``mean``, ``minimum``, ``maximum`` and ``center_of_mass``
measure labelled regions of every ``(b, c)`` slice as SciPy measures that
slice alone; ``find_objects`` gives their bounding boxes. Every region of
every slice is reduced at once, by one scatter over a flat
``(b, c, region)`` key per voxel: no loop over samples or labels.

Arguments shared by the measurements
------------------------------------
labels
    An integer or bool tensor of the input's shape, on its device; an axis
    of size 1 is shared (``(B, 1, *spatial)``: one label map per sample for
    all channels; SciPy broadcasts ``labels`` against ``input`` the same
    way within a slice, but never enlarges ``input`` here). Every value is a
    label, negative ones included, as in SciPy. ``None``: the whole slice is
    one region and ``index`` is ignored, as in SciPy. Float labels are a
    ``TypeError`` (SciPy documents integer labels; it also compares floats).
index
    The labels to measure, shared by all slices: ``None`` (all positive
    labels together, as SciPy's ``labels > 0``), an int or 0-d tensor (one
    label), or a sequence, NumPy array or integer tensor of any shape
    (usually ``K`` labels; duplicates allowed). Values must fit in int64;
    floats, bools and uint64 tensors are a ``TypeError`` (SciPy also
    compares floats and bools).
Results
    Tensors on the input's device of shape ``(B, C, *index.shape)``:
    ``(B, C)`` where SciPy returns a scalar (``index`` None or an int, or
    ``labels`` None), ``(B, C, K)`` where it returns an array;
    ``center_of_mass`` adds a last axis of ``S`` coordinates.
Absent labels
    A label of ``index`` without any voxel in a slice gets SciPy's values
    for it: sum 0, minimum and maximum 0, mean and center of mass NaN (0 / 0).
    Where SciPy raises instead (``minimum``/``maximum`` of an empty region
    with ``index`` None or an int), the result is 0 as for a sequence.

SciPy parity
------------
* Dtypes are SciPy's: ``sum_labels`` returns NumPy's sum dtype where SciPy
  returns a scalar (int64 for bool and signed inputs, uint64 for unsigned
  ones, wrapping as NumPy does; floats keep their dtype) and float64 for an
  index sequence (SciPy's ``np.bincount``); ``mean`` and ``center_of_mass``
  float64; ``minimum`` and ``maximum`` the input's dtype. ``find_objects``
  boxes are int64.
* Integer, bool, minimum and maximum results are identical to SciPy's, and
  float sums agree to rounding: floats are summed in float64 in another
  order than SciPy's (NumPy's pairwise sum in the input's dtype for one
  region, ``np.bincount`` for a sequence), within 1e-12 relative of the sum
  of magnitudes for float64 and within the dtype's rounding for a float32
  or float16 result. ``center_of_mass`` divides float64 moments by
  ``sum_labels``, as SciPy does.
* NaN propagates through ``minimum`` and ``maximum`` (NumPy's and SciPy's
  one-region results); SciPy's index-sequence path skips NaN in ``minimum``
  only (an artefact of its sort), which is not reproduced.

Algorithm and cost
------------------
Each voxel gets a column of a ``(B * C, columns)`` table, and one
``scatter_add_`` (sums) or ``scatter_reduce_`` (``amin``/``amax``) over the
flat keys fills it: one pass per statistic, per axis for the moments of
``center_of_mass`` and the bounds of ``find_objects``. An index on the host
(ints, sequences, arrays, CPU tensors) whose values span no more labels
than a slice has voxels gets a column per label of its span, found by a
clamp (SciPy's ``np.bincount`` path); any other index (on an accelerator, a
wider span, or traced by Dynamo) a column per value, found by
``torch.searchsorted``. Both give the same results.

Host reads
----------
None, except ``find_objects`` without ``max_label`` on an accelerator (the
largest label sizes its result; ``morphaug._sync``). The functions are torch
ops throughout: ``torch.compile(fullgraph=True)`` traces them
(``find_objects`` with ``max_label`` given).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

from .. import _sync
from .._checks import check_int
from . import _unsigned
from ._docs import filler
from ._normalize import check_input, host_tensor

__all__ = ["sum_labels", "mean", "minimum", "maximum", "center_of_mass", "find_objects"]

_UNSIGNED = (torch.uint8, torch.uint16, torch.uint32, torch.uint64)
_LABEL_DTYPES = (torch.bool, torch.int8, torch.int16, torch.int32, torch.int64) + _UNSIGNED
_INT64_MAX = 2**63 - 1

_TEXTS = {
    "input": """\
    input : torch.Tensor
        ``(B, C, *spatial)`` values: bool, any integer dtype or floating.""",
    "labels": """\
    labels : torch.Tensor, optional
        Integer or bool label map of the input's shape (size-1 axes shared,
        e.g. ``(B, 1, *spatial)``); ``None``: each slice is one region.""",
    "index": """\
    index : int, sequence of int or torch.Tensor, optional
        Labels to measure, shared by all slices; ``None``: all positive
        labels together.""",
    "see": """\
    A label of ``index`` without any voxel in a slice gets SciPy's values:
    sum, minimum and maximum 0 (SciPy raises for the minimum or maximum of
    one empty region), mean and center of mass NaN. Integer, bool, minimum and maximum
    results are identical to SciPy's; float sums agree to rounding (summed
    in float64, in another order). Labels, index and result dtypes: the
    Measurements convention of :mod:`morphaug.ndimage`.""",
}


# ---------------------------------------------------------------- labels as keys
def _comparable(t: torch.Tensor) -> torch.Tensor:
    """``t`` in a dtype torch sorts, searches and reduces, order and equality kept (wide unsigned
    through :func:`_unsigned.ordered`, bool as uint8)."""
    if t.dtype in _unsigned.SIGNED:
        return _unsigned.ordered(t)
    return t.view(torch.uint8) if t.dtype == torch.bool else t


def _from_comparable(t: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The inverse of :func:`_comparable`."""
    if dtype in _unsigned.SIGNED:
        return _unsigned.from_ordered(t, dtype)
    return t.view(torch.bool) if dtype == torch.bool else t


def _key_of(value: int, dtype: torch.dtype) -> int:
    """:func:`_comparable` of one value of ``dtype``."""
    return _unsigned.ordered_value(value, dtype) if dtype in _unsigned.SIGNED else value


def _range(dtype: torch.dtype) -> tuple[int, int]:
    """The values of ``dtype`` that an int64 can hold."""
    if dtype == torch.bool:
        return 0, 1
    return torch.iinfo(dtype).min, min(torch.iinfo(dtype).max, _INT64_MAX)


# ---------------------------------------------------------------- arguments
def _check_labels(labels, input: torch.Tensor) -> torch.Tensor:
    if not isinstance(labels, torch.Tensor):
        raise TypeError(f"labels must be None or a torch.Tensor, got {type(labels).__name__}")
    if labels.dtype not in _LABEL_DTYPES:
        raise TypeError(f"labels must have an integer or bool dtype, got {labels.dtype}")
    if labels.ndim != input.ndim or any(m not in (1, n) for m, n in zip(labels.shape, input.shape)):
        raise ValueError(f"labels has shape {tuple(labels.shape)}, expected the input's shape "
                         f"{tuple(input.shape)} (an axis of size 1 is shared)")
    if labels.device != input.device:
        raise ValueError(f"labels is on {labels.device}, expected the input's device {input.device}")
    return labels


def _index_keys(index, dtype: torch.dtype, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """``index`` as :func:`_comparable` keys of labels of ``dtype``, and whether each value is one
    that such labels can hold (the others are absent); on the host or on ``device``, where the
    index is."""
    try:
        values = index if isinstance(index, torch.Tensor) else host_tensor(index)
    except (TypeError, ValueError, RuntimeError) as error:
        raise TypeError(f"index must be None, an int, a sequence of ints or an integer tensor "
                        f"(values within int64), got {index!r}") from error
    if values.numel() and (values.is_floating_point() or values.is_complex()
                           or values.dtype in (torch.bool, torch.uint64)):
        raise TypeError(f"index must contain ints (a tensor: an integer dtype other than uint64), "
                        f"got {values.dtype}")
    if values.device.type != "cpu" and values.device != device:
        raise ValueError(f"index is on {values.device}, expected the input's device {device} or the CPU")
    values = values.to(torch.int64)
    low, high = _range(dtype)
    found = (values >= low) & (values <= high)
    return _comparable(values.clamp(low, high).to(dtype)), found


def _span(keys: torch.Tensor, found: torch.Tensor, voxels: int) -> tuple[int, int] | None:
    """The lowest and highest index key that labels can hold, when the index is on the host (read
    for free) and spans at most ``voxels`` values, so that a table over the span is no larger than
    the input, within ``2**62`` of 0 (the table's offsets stay within int64: not uint64 labels);
    None otherwise and while Dynamo traces (a binary search then finds the labels)."""
    if keys.device.type != "cpu" or torch.compiler.is_compiling():
        return None
    held = keys[found].tolist()
    if not held:
        return None
    low, high = min(held), max(held)
    return (low, high) if high - low < voxels and -2**62 < low and high < 2**62 else None


# ---------------------------------------------------------------- regions
class _Regions(NamedTuple):
    """Where each voxel's value goes: ``key`` (flat, one entry per voxel of the input) indexes a
    flat ``(B * C, slots)`` table, and ``pick`` (on the device) names the table column of each
    result, of ``shape`` ``(B, C, *index.shape)``. ``key`` None: one region per slice, the whole
    slice (a table of one column)."""

    key: torch.Tensor | None
    slots: int
    pick: torch.Tensor
    shape: tuple[int, ...]

    @property
    def scalar(self) -> bool:
        """Whether SciPy returns one value per slice (no index sequence)."""
        return len(self.shape) == 2


def _keyed(slot: torch.Tensor, input: torch.Tensor, slots: int, pick: torch.Tensor, shape,
           first: int = 0) -> _Regions:
    """The regions of the ``slot`` of each voxel (labels' shape, broadcast to the input's), the
    table's first column being slot ``first``."""
    b, c = input.shape[:2]
    rows = torch.arange(-first, b * c * slots - first, slots, device=input.device)
    key = slot.expand(input.shape) + rows.view(b, c, *[1] * (input.ndim - 2))
    return _Regions(key.reshape(-1), slots, pick, tuple(shape))


def _regions(input: torch.Tensor, labels, index) -> _Regions:
    """SciPy's regions: the whole slice (``labels`` None), the positive labels (``index`` None), or
    one per value of ``index``. The table of an index has columns for the other labels and one that
    nothing reaches, picked by the values that labels cannot hold. It spans the index's range when
    :func:`_span` allows (SciPy's ``np.bincount`` of small labels), else a column per index value,
    found by a binary search (SciPy's ``np.unique`` path)."""
    batch = tuple(input.shape[:2])
    first = torch.zeros(1, dtype=torch.int64, device=input.device)
    if labels is None:
        return _Regions(None, 1, first, batch)
    labels = _check_labels(labels, input)
    keys = _comparable(labels)
    if index is None:
        outside = (keys <= _key_of(0, labels.dtype)).long()
        return _keyed(outside, input, 2, first, batch)
    values, found = _index_keys(index, labels.dtype, input.device)
    shape = batch + tuple(values.shape)
    span = _span(values, found, math.prod(input.shape[2:]))
    values, found = _sync.to_device(values.flatten(), input.device), _sync.to_device(found.flatten(), input.device)
    if span is not None:  # columns: the labels below, low .. high, above, none
        low, high = span
        bits = torch.iinfo(keys.dtype)  # a bound beyond the dtype: no label lies there
        slot = keys.clamp(max(low - 1, bits.min), min(high + 1, bits.max))
        pick = (values.long() - (low - 1)).masked_fill_(~found, high - low + 3)
        return _keyed(slot, input, high - low + 4, pick, shape, first=low - 1)
    table = values.sort().values
    k = table.numel()
    if k == 0:  # no label to measure: the one-region table, picked by no result
        return _Regions(None, 1, first[:0], shape)
    slot = torch.searchsorted(table, keys.contiguous())  # a value's first entry: duplicates share it
    slot.masked_fill_(table[slot.clamp_max(k - 1)] != keys, k)
    pick = torch.searchsorted(table, values).masked_fill_(~found, k + 1)
    return _keyed(slot, input, k + 2, pick, shape)


_DENSE = {"sum": torch.sum, "amin": torch.amin, "amax": torch.amax}


def _table(regions: _Regions, values: torch.Tensor, reduce: str, empty=0) -> torch.Tensor:
    """``reduce`` ("sum", "amin" or "amax") of ``values`` (the input's shape) over every column of
    the regions' ``(B * C, slots)`` table; ``empty`` where a column has no voxel."""
    rows = values.shape[0] * values.shape[1]
    if regions.key is None:
        return _DENSE[reduce](values.reshape(rows, -1), -1, keepdim=True)
    table = torch.full((rows * regions.slots,), empty, dtype=values.dtype, device=values.device)
    if reduce == "sum":  # the same sums as scatter_reduce_, several times faster
        table.scatter_add_(0, regions.key, values.reshape(-1))
    else:
        table.scatter_reduce_(0, regions.key, values.reshape(-1), reduce, include_self=False)
    return table.view(rows, regions.slots)


def _pick(regions: _Regions, table: torch.Tensor) -> torch.Tensor:
    """The results of a ``(B * C, slots, ...)`` table: ``regions.shape`` plus its trailing axes."""
    return table[:, regions.pick].view(regions.shape + tuple(table.shape[2:]))


def _spread(regions: _Regions, table: torch.Tensor, shape) -> torch.Tensor:
    """Each voxel's entry of a ``(B * C, slots)`` table, as a tensor of the input's ``shape``."""
    if regions.key is None:
        return table.view(*shape[:2], *[1] * (len(shape) - 2)).expand(shape)
    return table.reshape(-1).gather(0, regions.key).view(shape)


def _measure(regions: _Regions, values: torch.Tensor, reduce: str, empty=0) -> torch.Tensor:
    """``reduce`` ("sum", "amin" or "amax") of ``values`` (the input's shape) over each region, of
    ``regions.shape``; ``empty`` where a region has no voxel."""
    return _pick(regions, _table(regions, values, reduce, empty))


# ---------------------------------------------------------------- statistics
def _sum_dtype(dtype: torch.dtype, scalar: bool) -> torch.dtype:
    """SciPy's: NumPy's sum dtype for one region per slice, float64 (``np.bincount``'s) otherwise."""
    if not scalar:
        return torch.float64
    if dtype.is_floating_point:
        return dtype
    return torch.uint64 if dtype in _UNSIGNED else torch.int64


def _sum(input: torch.Tensor, regions: _Regions, scalar: bool | None = None) -> torch.Tensor:
    """SciPy's sums; ``scalar``: in NumPy's sum dtype as for one region (default: where SciPy
    returns a scalar)."""
    dtype = _sum_dtype(input.dtype, regions.scalar if scalar is None else scalar)
    if dtype.is_floating_point:
        return _measure(regions, input.to(torch.float64), "sum").to(dtype)
    # int64 sums wrap modulo 2**64, as NumPy's do; uint64 through its int64 view
    values = input.view(torch.int64) if input.dtype == torch.uint64 else input.to(torch.int64)
    return _measure(regions, values, "sum").view(dtype)


@filler(_TEXTS)
def sum_labels(input, labels=None, index=None):
    """Sum of the values of each labelled region.

    Parameters
    ----------
{input}
{labels}
{index}

    Returns
    -------
    torch.Tensor
        ``(B, C, *index.shape)``: int64/uint64 or the input's float dtype
        where SciPy returns a scalar, float64 for an index sequence.

    Notes
    -----
{see}

    See Also
    --------
    scipy.ndimage.sum_labels : the reference, applied to each ``(b, c)`` slice.

    Examples
    --------
    >>> import torch
    >>> from morphaug.ndimage import sum_labels
    >>> x = torch.tensor([[[1, 2, 3, 4]]])
    >>> labels = torch.tensor([[[1, 1, 0, 2]]])
    >>> sum_labels(x, labels, [1, 2, 5])
    tensor([[[3., 4., 0.]]], dtype=torch.float64)
    >>> sum_labels(x, labels)
    tensor([[7]])
    """
    input = check_input(input)
    return _sum(input, _regions(input, labels, index))


@filler(_TEXTS)
def mean(input, labels=None, index=None):
    """Mean of the values of each labelled region.

    Parameters
    ----------
{input}
{labels}
{index}

    Returns
    -------
    torch.Tensor
        float64 ``(B, C, *index.shape)``: ``sum_labels / count`` as in
        SciPy; NaN for a region without voxels.

    Notes
    -----
{see}

    See Also
    --------
    scipy.ndimage.mean : the reference, applied to each ``(b, c)`` slice.

    Examples
    --------
    >>> import torch
    >>> from morphaug.ndimage import mean
    >>> x = torch.tensor([[[1.0, 2.0, 3.0, 4.0]]])
    >>> mean(x, torch.tensor([[[1, 1, 0, 2]]]), [1, 2, 5])
    tensor([[[1.5000, 4.0000,    nan]]], dtype=torch.float64)
    """
    input = check_input(input)
    regions = _regions(input, labels, index)
    counts = _measure(regions, torch.ones(input.shape, dtype=torch.float64, device=input.device), "sum")
    return _sum(input, regions).to(torch.float64) / counts


def _extremum(input, labels, index, reduce: str) -> torch.Tensor:
    input = check_input(input)
    regions = _regions(input, labels, index)
    found = _measure(regions, _comparable(input), reduce, empty=_key_of(0, input.dtype))
    return _from_comparable(found, input.dtype)


@filler(_TEXTS)
def minimum(input, labels=None, index=None):
    """Minimum of the values of each labelled region.

    Parameters
    ----------
{input}
{labels}
{index}

    Returns
    -------
    torch.Tensor
        ``(B, C, *index.shape)`` of the input's dtype; 0 for a region
        without voxels (SciPy: 0 in an index sequence, an error otherwise).

    Notes
    -----
{see}

    See Also
    --------
    scipy.ndimage.minimum : the reference, applied to each ``(b, c)`` slice.

    Examples
    --------
    >>> import torch
    >>> from morphaug.ndimage import minimum
    >>> x = torch.tensor([[[5, 2, 3, 4]]])
    >>> minimum(x, torch.tensor([[[1, 1, 0, 2]]]), [1, 2, 5])
    tensor([[[2, 4, 0]]])
    """
    return _extremum(input, labels, index, "amin")


@filler(_TEXTS)
def maximum(input, labels=None, index=None):
    """Maximum of the values of each labelled region.

    Parameters
    ----------
{input}
{labels}
{index}

    Returns
    -------
    torch.Tensor
        ``(B, C, *index.shape)`` of the input's dtype; 0 for a region
        without voxels (SciPy: 0 in an index sequence, an error otherwise).

    Notes
    -----
{see}

    See Also
    --------
    scipy.ndimage.maximum : the reference, applied to each ``(b, c)`` slice.

    Examples
    --------
    >>> import torch
    >>> from morphaug.ndimage import maximum
    >>> x = torch.tensor([[[5, 2, 3, 4]]])
    >>> maximum(x, torch.tensor([[[1, 1, 0, 2]]]))
    tensor([[5]])
    """
    return _extremum(input, labels, index, "amax")


@filler(_TEXTS)
def center_of_mass(input, labels=None, index=None):
    """Center of mass of the values of each labelled region.

    Parameters
    ----------
{input}
{labels}
{index}

    Returns
    -------
    torch.Tensor
        float64 ``(B, C, *index.shape, S)``: the coordinates along the
        spatial axes (SciPy: a tuple, or a list of tuples). The moments
        ``sum(input * coordinate)`` are divided by ``sum_labels``, as in
        SciPy: NaN (or inf) where that sum is 0.

    Notes
    -----
{see}

    See Also
    --------
    scipy.ndimage.center_of_mass : the reference, applied to each ``(b, c)`` slice.

    Examples
    --------
    >>> import torch
    >>> from morphaug.ndimage import center_of_mass
    >>> x = torch.tensor([[[[0, 1, 1, 0], [0, 1, 0, 0], [0, 0, 0, 1]]]])
    >>> center_of_mass(x)
    tensor([[[0.7500, 1.7500]]], dtype=torch.float64)
    >>> center_of_mass(x, x, [1, 2])
    tensor([[[[0.7500, 1.7500],
              [   nan,    nan]]]], dtype=torch.float64)
    """
    input = check_input(input)
    regions = _regions(input, labels, index)
    values = input.to(torch.float64)
    spatial = input.shape[2:]
    moments = [_measure(regions, values * torch.arange(n, dtype=torch.float64, device=input.device).view(
        n, *[1] * (len(spatial) - 1 - axis)), "sum") for axis, n in enumerate(spatial)]
    return torch.stack(moments, -1) / _sum(input, regions).to(torch.float64).unsqueeze(-1)


# ---------------------------------------------------------------- bounding boxes
def _largest(keys: torch.Tensor, dtype: torch.dtype) -> int:
    """The largest label of ``keys`` (:func:`_comparable` of labels of ``dtype``): read on the host."""
    top = keys.amax()
    top = int(top) if top.device.type == "cpu" else _sync.host_read(top, "find_objects max_label")
    return top - _key_of(0, dtype)


def find_objects(input, max_label=0):
    """Bounding boxes of the labels 1 to ``max_label`` of every slice.

    Parameters
    ----------
    input : torch.Tensor
        ``(B, C, *spatial)`` integer or bool label map; labels ``<= 0`` and
        ``> max_label`` are ignored, as in SciPy.
    max_label : int, optional
        Number of labels to search for. ``< 1`` (default): the largest label
        of the whole batch, read on the host (free on the CPU, a host read
        on an accelerator: give ``max_label`` to avoid it, and under
        ``torch.compile(fullgraph=True)``).

    Returns
    -------
    boxes : torch.Tensor
        int64 ``(B, C, max_label, 2, S)``: ``boxes[b, c, l - 1, 0]`` are the
        starts and ``boxes[b, c, l - 1, 1]`` the stops of SciPy's slices
        for label ``l`` (``stop`` is one past the last voxel); 0 where the
        label is absent.
    present : torch.Tensor
        bool ``(B, C, max_label)``: whether each label occurs in the slice
        (SciPy's ``None`` where not).

    Notes
    -----
    SciPy returns a list of tuples of Python ``slice`` objects, one list per
    array. Slices cannot be batched on a device, so the same bounds come
    back as tensors; the example shows how to build SciPy's list for one
    slice on the host. With ``max_label < 1`` every slice gets the length of
    the batch's largest label, where SciPy sizes each slice's list by that
    slice's own largest label: the extra entries are absent. Bool input
    means label 1 (SciPy needs ``max_label`` then).

    See Also
    --------
    scipy.ndimage.find_objects : the reference, applied to each ``(b, c)`` slice.

    Examples
    --------
    >>> import torch
    >>> from morphaug.ndimage import find_objects
    >>> labels = torch.tensor([[[[0, 2, 2], [0, 0, 0], [3, 0, 0]]]])
    >>> boxes, present = find_objects(labels)
    >>> boxes[0, 0, 1]
    tensor([[0, 1],
            [1, 3]])
    >>> present
    tensor([[[False,  True,  True]]])
    >>> [tuple(map(slice, *box)) if found else None
    ...  for box, found in zip(boxes[0, 0].tolist(), present[0, 0].tolist())]
    [None, (slice(0, 1, None), slice(1, 3, None)), (slice(2, 3, None), slice(0, 1, None))]
    """
    input = check_input(input)
    if input.dtype not in _LABEL_DTYPES:
        raise TypeError(f"input must be an integer or bool label map, got {input.dtype}")
    max_label = check_int(max_label, "max_label")
    if max_label < 1:
        max_label = max(0, _largest(_comparable(input), input.dtype))
    regions = _regions(input, input, list(range(1, max_label + 1)))
    starts, stops = [], []
    for axis, n in enumerate(input.shape[2:]):
        coordinate = torch.arange(n, device=input.device).view(n, *[1] * (input.ndim - 3 - axis))
        coordinate = coordinate.expand(input.shape)
        starts.append(_measure(regions, coordinate, "amin"))
        stops.append(_measure(regions, coordinate, "amax", empty=-1) + 1)
    boxes = torch.stack([torch.stack(starts, -1), torch.stack(stops, -1)], -2)
    return boxes, stops[0] > 0
