"""Measurements: SciPy's region statistics and bounding boxes on ``(B, C, *spatial)`` tensors.

``sum_labels``, ``mean``, ``minimum``, ``maximum`` and ``center_of_mass``
measure labelled regions of every ``(b, c)`` slice as SciPy measures that
slice alone; ``find_objects`` gives their bounding boxes. Every region of
every slice is reduced at once, in one pass over the voxels (``_regions``):
no loop over samples or labels.

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
Each voxel gets a column of a ``(B * C, columns)`` table by its label, and
the native kernel ``region_stats`` (CPU and CUDA) fills every table a call
needs in one pass over the voxels and labels: counts, sums, extrema, the
moments of ``center_of_mass``, the bounds of ``find_objects`` (a second pass
for the positions of the extrema and the centred squares of ``variance``).
Labels broadcast along a spatial axis, and the torch backend, take one
``scatter_add_`` or ``scatter_reduce_`` over a flat key per voxel per
statistic (per axis for the moments and bounds) instead. An index on the host
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

import torch

from .. import _sync
from .._checks import check_int
from ._docs import filler
from ._normalize import check_input
from ._regions import _LABEL_DTYPES, _UNSIGNED, _comparable, _key_of, _pick, _rule, _Rule, _tables

__all__ = ["sum_labels", "mean", "minimum", "maximum", "center_of_mass", "find_objects"]

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


# ---------------------------------------------------------------- statistics
def _sum_dtype(dtype: torch.dtype, scalar: bool) -> torch.dtype:
    """SciPy's: NumPy's sum dtype for one region per slice, float64 (``np.bincount``'s) otherwise."""
    if not scalar:
        return torch.float64
    if dtype.is_floating_point:
        return dtype
    return torch.uint64 if dtype in _UNSIGNED else torch.int64


def _sum(input: torch.Tensor, rule: _Rule, scalar: bool | None = None, found: dict | None = None) -> torch.Tensor:
    """SciPy's sums; ``scalar``: in NumPy's sum dtype as for one region (default: where SciPy
    returns a scalar); ``found``: tables of :func:`_tables` holding them, else computed."""
    dtype = _sum_dtype(input.dtype, rule.scalar if scalar is None else scalar)
    name = "sum" if dtype.is_floating_point else "whole"  # integer sums wrap modulo 2**64, as NumPy's
    table = (found if found is not None and name in found else _tables(input, rule, name))[name]
    return _pick(rule, table.to(dtype) if dtype.is_floating_point else table.view(dtype))


def _sum_name(input: torch.Tensor, rule: _Rule) -> str:
    """The table of :func:`_sum`'s sums."""
    return "sum" if _sum_dtype(input.dtype, rule.scalar).is_floating_point else "whole"


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
    return _sum(input, _rule(input, labels, index))


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
    rule = _rule(input, labels, index)
    found = _tables(input, rule, _sum_name(input, rule))
    return _sum(input, rule, found=found).to(torch.float64) / _pick(rule, found["count"])


def _extremum(input, labels, index, name: str) -> torch.Tensor:
    input = check_input(input)
    rule = _rule(input, labels, index)
    return _pick(rule, _tables(input, rule, name)[name])


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
    return _extremum(input, labels, index, "low")


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
    return _extremum(input, labels, index, "high")


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
    rule = _rule(input, labels, index)
    found = _tables(input, rule, "moments", _sum_name(input, rule))
    return _pick(rule, found["moments"]) / _sum(input, rule, found=found).to(torch.float64).unsqueeze(-1)


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
    rule = _rule(input, input, list(range(1, max_label + 1)))
    found = _tables(input, rule, "bounds")
    stops = _pick(rule, found["upper"]) + 1
    return torch.stack([_pick(rule, found["lower"]), stops], -2), stops[..., 0] > 0
