"""Region statistics beyond the sums and extrema: SciPy's ``sum``, ``variance``,
``standard_deviation``, ``median``, ``histogram`` and ``labeled_comprehension``.

They take ``labels`` and ``index`` as the measurements of ``_measurements``
do and reduce every region of every ``(b, c)`` slice at once: the tables of
``_regions`` (variance: SciPy's two passes, the mean first, then the
centred squares), each region's middle values selected (median: the native
``region_median``, a counting sort and selections on the CPU, a radix select
on CUDA; else one sort of the whole batch by region and value), one pass
counting each voxel's ``(region, bin)`` (histogram: the native
``region_histogram``, else a torch scatter). No loop over samples or labels.
"""

from __future__ import annotations

import builtins
import math
import numbers

import numpy as np
import torch

from .. import _ops, _sync
from .._checks import check_int
from . import _unsigned
from ._docs import filler
from ._measurements import _TEXTS, _sum, maximum, mean, minimum, sum_labels
from ._regions import (_KERNEL_CASE, _comparable, _decode, _from_comparable, _kernel_takes, _pick, _Regions,
                       _regions_of, _rule, _Rule, _tables)
from ._normalize import _SUPPORTED_DTYPES, check_input

__all__ = ["sum", "variance", "standard_deviation", "median", "histogram", "labeled_comprehension"]

_HALF = (torch.float16, torch.bfloat16)


def _float64(input: torch.Tensor) -> torch.Tensor:
    return input.to(torch.float64)


# ---------------------------------------------------------------- sum, variance
@filler(_TEXTS)
def sum(input, labels=None, index=None):  # noqa: A001 - SciPy's name
    """Sum of the values of each labelled region: :func:`sum_labels` under its older name.

    Parameters
    ----------
{input}
{labels}
{index}

    Returns
    -------
    torch.Tensor
        As :func:`sum_labels`.

    See Also
    --------
    scipy.ndimage.sum : the reference (an alias of ``sum_labels`` there too).

    Examples
    --------
    >>> import torch
    >>> from morphaug import ndimage
    >>> ndimage.sum(torch.tensor([[[1, 2, 3, 4]]]), torch.tensor([[[1, 1, 0, 2]]]), [1, 2])
    tensor([[[3., 4.]]], dtype=torch.float64)
    """
    return sum_labels(input, labels, index)


def _variance(input: torch.Tensor, rule: _Rule) -> torch.Tensor:
    """SciPy's two passes in float64: the mean of each region, then the sum of the squares of the
    values less their region's mean, over the count (NaN for an empty region)."""
    found = _tables(input, rule, "squares")
    return _pick(rule, found["squares"] / found["count"])


@filler(_TEXTS)
def variance(input, labels=None, index=None):
    """Variance of the values of each labelled region.

    Parameters
    ----------
{input}
{labels}
{index}

    Returns
    -------
    torch.Tensor
        float64 ``(B, C, *index.shape)``: the mean of the squared
        deviations from the region's mean (``ddof=0``); NaN for a region
        without voxels.

    Notes
    -----
    Computed as SciPy computes an index sequence: the mean first, then the
    centred squares, in float64 (large offsets cost no precision). For one
    region of a float32 or float16 input SciPy works in that dtype: results
    agree to its rounding.

    See Also
    --------
    scipy.ndimage.variance : the reference, applied to each ``(b, c)`` slice.

    Examples
    --------
    >>> import torch
    >>> from morphaug.ndimage import variance
    >>> variance(torch.tensor([[[1, 3, 8, 10, 8]]]), torch.tensor([[[2, 2, 3, 3, 4]]]), [2, 3, 4, 7])
    tensor([[[1., 1., 0., nan]]], dtype=torch.float64)
    """
    input = check_input(input)
    return _variance(input, _rule(input, labels, index))


@filler(_TEXTS)
def standard_deviation(input, labels=None, index=None):
    """Standard deviation of the values of each labelled region.

    Parameters
    ----------
{input}
{labels}
{index}

    Returns
    -------
    torch.Tensor
        float64 ``(B, C, *index.shape)``: ``sqrt(variance)``; NaN for a
        region without voxels.

    See Also
    --------
    scipy.ndimage.standard_deviation : the reference, applied to each ``(b, c)`` slice.
    variance : how it is computed.

    Examples
    --------
    >>> import torch
    >>> from morphaug.ndimage import standard_deviation
    >>> standard_deviation(torch.tensor([[[1.0, 3.0, 8.0]]]), torch.tensor([[[2, 2, 3]]]), 2)
    tensor([[1.]], dtype=torch.float64)
    """
    return variance(input, labels, index).sqrt()


# ---------------------------------------------------------------- median
def _median_dtype(dtype: torch.dtype) -> torch.dtype:
    return dtype if dtype.is_floating_point else torch.float64


def _halfsum(low: torch.Tensor, high: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``(low + high) / 2`` of values of ``dtype`` as SciPy computes it: in float64 for integers and
    bools, in the float dtype otherwise (float16 and bfloat16 through float32, as NumPy's mean)."""
    low, high = _from_comparable(low, dtype), _from_comparable(high, dtype)
    if not dtype.is_floating_point:
        return (_float64(low) + _float64(high)) / 2
    work = torch.float32 if dtype in _HALF else dtype
    return ((low.to(work) + high.to(work)) / 2).to(dtype)


def _middles_torch(input: torch.Tensor, rule: _Rule):
    """The whole batch sorted by value (NaN last; equal values in any order), then stably by region
    column: each column's count and its lower and upper middle values (:func:`_comparable`'s), and the
    least value of each slice's least label (index sequences only; else None)."""
    keys = _comparable(input)
    rows, voxels = input.shape[0] * input.shape[1], input[0, 0].numel()
    regions = _regions_of(input, rule)
    if regions.key is None:  # one region per slice: the middle of each sorted row
        ordered = keys.reshape(rows, -1).sort(-1).values
        count = torch.full((rows, 1), voxels, dtype=torch.int64, device=input.device)
        return count, ordered[:, (voxels - 1) // 2, None], ordered[:, voxels // 2, None], None
    by_value, order = keys.reshape(-1).sort()
    columns, by_column = regions.key.gather(0, order).sort(stable=True)  # gather: faster than indexing
    values = by_value.gather(0, by_column)
    counts = torch.zeros(rows * regions.slots, dtype=torch.int64, device=input.device)
    counts.scatter_add_(0, columns, torch.ones_like(columns))
    starts = counts.cumsum(0) - counts
    last = values.numel() - 1
    low = values[(starts + (counts - 1).clamp_min(0) // 2).clamp_max(last)]
    high = values[(starts + counts // 2).clamp_max(last)]
    view = (rows, regions.slots)
    if rule.scalar:
        return counts.view(view), low.view(view), high.view(view), None
    label_keys = _comparable(rule.labels).expand(input.shape).reshape(rows, -1)
    least = (label_keys == label_keys.amin(-1, keepdim=True)).reshape(-1).gather(0, order)
    rank = torch.arange(order.numel(), device=input.device)
    first = torch.full((rows,), last, dtype=torch.int64, device=input.device)
    first.scatter_reduce_(0, order // voxels, rank.masked_fill(~least, last), "amin")
    return counts.view(view), low.view(view), high.view(view), by_value[first]


def _middles_native(input: torch.Tensor, rule: _Rule):
    count, low, high, least = _ops.kernels.region_median(input, *rule.kernel_args)
    def values(keys):  # region_stats' keys as _comparable's values
        return _comparable(_decode(keys, input.dtype))
    return count, values(low), values(high), None if rule.scalar or rule.labels is None else values(least)


_MIDDLES = _ops.Table("median", [
    _ops.Case(_KERNEL_CASE, "region_median", _kernel_takes, _middles_native,
              sizes=lambda input, rule: {"slots": rule.slots}),
], _middles_torch)


def _median(input: torch.Tensor, rule: _Rule) -> torch.Tensor:
    if input[0, 0].numel() == 0:
        return torch.full(rule.shape, float("nan"), dtype=_median_dtype(input.dtype), device=input.device)
    count, low, high, least = _MIDDLES(input, input, rule)
    found = _pick(rule, count) > 0
    result = _halfsum(_pick(rule, low), _pick(rule, high), input.dtype)
    if least is None:  # one value per slice (no index sequence), or no labels (every region found)
        return result.masked_fill(~found, float("nan"))
    # SciPy's index sequence gives an absent label the first value of its sort of the slice by
    # (label, value): the least value of the slice's least label
    stand_in = _halfsum(least, least, input.dtype).view(*rule.shape[:2], *[1] * (len(rule.shape) - 2))
    return torch.where(found, result, stand_in)


@filler(_TEXTS)
def median(input, labels=None, index=None):
    """Median of the values of each labelled region.

    Parameters
    ----------
{input}
{labels}
{index}

    Returns
    -------
    torch.Tensor
        ``(B, C, *index.shape)``: float64 for integer and bool inputs, the
        input's dtype for floats (SciPy's dtypes). An even count averages
        the two middle values, as NumPy's median.

    Notes
    -----
    Exact: each region's middle values are selected from its voxels (the
    native ``region_median``: on the CPU a counting sort of each slice by
    region, then a selection per region; on CUDA a radix select of every
    region's middles at once, 8 bits per pass over the voxels; on the torch
    backend, and on CUDA for more regions than 4 bytes of digit counts per
    voxel hold, the whole batch sorted once by region and value). A region
    without voxels gets SciPy's value: NaN where SciPy returns a scalar
    (``index`` None or an int), and for an index sequence what SciPy's sort
    puts there, the least value of the slice's least label. NaN sorts last,
    as in NumPy.

    See Also
    --------
    scipy.ndimage.median : the reference, applied to each ``(b, c)`` slice.

    Examples
    --------
    >>> import torch
    >>> from morphaug.ndimage import median
    >>> x = torch.tensor([[[1, 2, 0, 1, 5, 3, 0, 4]]])
    >>> median(x, torch.tensor([[[1, 1, 0, 2, 1, 1, 0, 2]]]), [1, 2])
    tensor([[[2.5000, 2.5000]]], dtype=torch.float64)
    >>> median(x)
    tensor([[1.5000]], dtype=torch.float64)
    """
    input = check_input(input)
    return _median(input, _rule(input, labels, index))


# ---------------------------------------------------------------- histogram
def _edges(min, max, bins) -> list[float]:  # noqa: A002 - SciPy's names
    """``np.linspace(min, max, bins + 1)``, computed as NumPy computes it, in Python floats (the
    same IEEE operations, and nothing for Dynamo to trace)."""
    for name, value in (("min", min), ("max", max)):
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
            raise TypeError(f"{name} must be a finite real number, got {value!r}")
    bins = check_int(bins, "bins", minimum=1)
    if min > max:  # SciPy: "`bins` must increase monotonically"
        raise ValueError(f"min must be <= max, got min={min!r} and max={max!r}")
    start, stop = float(min), float(max)
    step = (stop - start) / bins
    edges = [i * step + start for i in range(bins)] if step != 0 else [start] * bins
    return edges + [stop]


def _compact(regions: _Regions, input: torch.Tensor) -> tuple[torch.Tensor, int, torch.Tensor]:
    """A table of only the picked columns, plus one for all others (results then take no more
    memory than they hold): each voxel's column in it (the input's shape), its width and the
    column of each result."""
    rows = input.shape[0] * input.shape[1]
    if regions.key is None:  # one column per slice
        return torch.arange(rows, device=input.device).view(*input.shape[:2], *[1] * (input.ndim - 2)), 1, \
            regions.pick
    picked = regions.pick.numel()
    remap = torch.full((regions.slots,), picked, dtype=torch.int64, device=input.device)
    remap[regions.pick] = torch.arange(picked, device=input.device)  # a repeated label: one of its columns
    row, column = regions.key // regions.slots, regions.key % regions.slots
    return (row * (picked + 1) + remap[column]).view(input.shape), picked + 1, remap[regions.pick]


@filler(_TEXTS)
def histogram(input, min, max, bins, labels=None, index=None):  # noqa: A002 - SciPy's names
    """Histogram of the values of each labelled region.

    Parameters
    ----------
{input}
    min, max : float
        The range of the bins (SciPy: ``np.linspace(min, max, bins + 1)``
        edges; a value equal to ``max`` falls in the last bin, values
        outside the range and NaN in none).
    bins : int
        Number of bins, ``>= 1``.
{labels}
{index}
        SciPy refuses ``index`` without ``labels``: so does this.

    Returns
    -------
    torch.Tensor
        int64 ``(B, C, *index.shape, bins)`` counts; zeros for a label
        without voxels (SciPy: ``None`` in its object array).

    Notes
    -----
    Bins are found by comparing float64 values with NumPy's own edges, as
    ``np.histogram`` does: counts equal SciPy's. One pass counts every
    ``(region, bin)`` of the batch (the native ``region_histogram``; the
    torch backend: a search of the edges and a scatter). ``min > max``, ``bins < 1``
    and non-finite bounds are errors. An index value that the labels'
    dtype cannot hold is an absent label, as for the other measurements
    (SciPy casts the index to that dtype: an error, or ``-1`` wrapped to
    the largest ``uint64`` label).

    See Also
    --------
    scipy.ndimage.histogram : the reference, applied to each ``(b, c)`` slice.

    Examples
    --------
    >>> import torch
    >>> from morphaug.ndimage import histogram
    >>> x = torch.tensor([[[1, 1, 3, 4, 3, 5, 3, 3]]])
    >>> histogram(x, 0, 4, 5, torch.tensor([[[1, 0, 1, 1, 2, 2, 2, 2]]]), [1, 2])
    tensor([[[[0, 1, 0, 1, 1],
              [0, 0, 0, 3, 0]]]])
    """
    input = check_input(input)
    edges = _edges(min, max, bins)
    if labels is None and index is not None:
        raise ValueError("index must be None when labels is None (SciPy: index without defined labels)")
    # a span of the index only where its (columns, bins) table stays within the slice's voxels
    rule = _rule(input, labels, index, span=math.prod(input.shape[2:]) // len(edges))
    return _HISTOGRAM(input, input, rule, edges)


def _histogram_torch(input: torch.Tensor, rule: _Rule, edges: list[float]) -> torch.Tensor:
    """Each voxel's bin found by a search of the edges, counted by a scatter over ``(region, bin)``."""
    regions = _regions_of(input, rule)
    bins = len(edges) - 1
    rows = input.shape[0] * input.shape[1]
    values = _float64(input)
    bounds = _sync.to_device(torch.tensor(edges, dtype=torch.float64), input.device)
    place = torch.searchsorted(bounds, values.contiguous(), right=True) - 1
    place = place.masked_fill_(values == bounds[-1], bins - 1).clamp_(0, bins - 1)
    inside = ((values >= bounds[0]) & (values <= bounds[-1])).long()
    columns, width, picked = _compact(regions, input)
    table = torch.zeros(rows * width * bins, dtype=torch.int64, device=input.device)
    table.scatter_add_(0, (columns.expand(input.shape) * bins + place).reshape(-1), inside.reshape(-1))
    return table.view(rows, width, bins)[:, picked].view(regions.shape + (bins,))


def _histogram_native(input: torch.Tensor, rule: _Rule, edges: list[float]) -> torch.Tensor:
    return _pick(rule, _ops.kernels.region_histogram(input, *rule.kernel_args, edges))


_HISTOGRAM = _ops.Table("histogram", [
    _ops.Case(_KERNEL_CASE, "region_histogram", lambda input, rule, edges: _kernel_takes(input, rule),
              _histogram_native),
], _histogram_torch)


# ---------------------------------------------------------------- labeled_comprehension
def _count(input, rule):
    return _pick(rule, _tables(input, rule)["count"])


def _count_nonzero(input, rule):
    return _pick(rule, _tables(input != 0, rule, "whole")["whole"])


def _ptp(input, rule):
    if input.dtype == torch.bool:  # NumPy's ptp subtracts: a TypeError for bools
        raise TypeError("input must not be bool for np.ptp (NumPy cannot subtract bools)")
    found = _tables(input, rule, "low", "high")
    high, low = _unsigned.wrapping(_pick(rule, found["high"])), _unsigned.wrapping(_pick(rule, found["low"]))
    return _unsigned.from_wrapping(high - low, input.dtype)


def _extreme_of(input, rule, name):
    return _pick(rule, _tables(input, rule, name)[name])


def _mean(input, rule):
    found = _tables(input, rule, "sum")
    return _sum(input, rule, scalar=False, found=found) / _pick(rule, found["count"])


#: What labeled_comprehension computes for each function it recognises, by name.
_REDUCTIONS = {
    "sum": lambda input, labels, rule: _sum(input, rule, scalar=True),
    "mean": lambda input, labels, rule: _mean(input, rule),
    "variance": lambda input, labels, rule: _variance(input, rule),
    "standard_deviation": lambda input, labels, rule: _variance(input, rule).sqrt(),
    "median": lambda input, labels, rule: _median(input, rule),
    "minimum": lambda input, labels, rule: _extreme_of(input, rule, "low"),
    "maximum": lambda input, labels, rule: _extreme_of(input, rule, "high"),
    "ptp": lambda input, labels, rule: _ptp(input, rule),
    "count": lambda input, labels, rule: _count(input, rule),
    "count_nonzero": lambda input, labels, rule: _count_nonzero(input, rule),
}


def _recognised() -> dict:
    """The callables labeled_comprehension recognises, by identity, and their reduction."""
    import scipy.ndimage  # the reference's own functions are recognised too, where installed

    pairs = {
        "sum": [np.sum, builtins.sum, torch.sum, sum, sum_labels, scipy.ndimage.sum, scipy.ndimage.sum_labels],
        "mean": [np.mean, torch.mean, mean, scipy.ndimage.mean],
        "variance": [np.var, variance, scipy.ndimage.variance],
        "standard_deviation": [np.std, standard_deviation, scipy.ndimage.standard_deviation],
        "median": [np.median, median, scipy.ndimage.median],
        "minimum": [np.min, np.amin, builtins.min, torch.min, torch.amin, minimum, scipy.ndimage.minimum],
        "maximum": [np.max, np.amax, builtins.max, torch.max, torch.amax, maximum, scipy.ndimage.maximum],
        "ptp": [np.ptp],
        "count": [len, np.size, torch.numel],
        "count_nonzero": [np.count_nonzero, torch.count_nonzero],
    }
    return {id(function): name for name, functions in pairs.items() for function in functions}


def _reduction(func) -> str:
    try:
        found = _recognised()
    except ImportError:  # no SciPy: its functions cannot be passed either
        found = {}
    if id(func) not in found:
        raise TypeError(f"func must be one of the reductions labeled_comprehension recognises (see its "
                        f"docstring): calling a Python function per label is not supported, got {func!r}")
    return found[id(func)]


def _out_dtype(out_dtype) -> torch.dtype:
    try:
        if isinstance(out_dtype, torch.dtype):
            dtype = out_dtype
        else:
            numpy_dtype = np.dtype(out_dtype)
            dtype = torch.from_numpy(np.empty(0, numpy_dtype)).dtype if numpy_dtype.kind in "biuf" else None
        if dtype not in _SUPPORTED_DTYPES:
            raise TypeError
    except TypeError as error:
        raise TypeError(f"out_dtype must be a bool, integer or float dtype (torch or NumPy) or type, "
                        f"got {out_dtype!r}") from error
    return dtype


def labeled_comprehension(input, labels, index, func, out_dtype, default, pass_positions=False):
    """A recognised reduction ``func`` of the values of each labelled region.

    Parameters
    ----------
    input : torch.Tensor
        ``(B, C, *spatial)`` values: bool, any integer dtype or floating.
    labels : torch.Tensor or None
        Integer or bool label map of the input's shape (size-1 axes
        shared); ``None``: ``func`` of each whole slice.
    index : int, sequence of int or torch.Tensor, or None
        Labels to reduce, shared by all slices; ``None``: all positive
        labels together. Must be None when ``labels`` is None (as in SciPy).
    func : callable
        One of the reductions recognised by identity: ``np.sum``, ``sum``,
        ``torch.sum``; ``np.mean``, ``torch.mean``; ``np.var``;
        ``np.std``; ``np.median``; ``np.min``/``np.amin``, ``min``,
        ``torch.min``, ``torch.amin``; ``np.max``/``np.amax``, ``max``,
        ``torch.max``, ``torch.amax``; ``np.ptp``; ``len``, ``np.size``,
        ``torch.numel`` (the voxel count); ``np.count_nonzero``,
        ``torch.count_nonzero``; and the ``sum``, ``sum_labels``,
        ``mean``, ``variance``, ``standard_deviation``, ``median``,
        ``minimum`` and ``maximum`` of ``scipy.ndimage`` and of this
        module. Each means NumPy's semantics (``ddof=0``, the average of
        the two middle values). Any other callable is a ``TypeError``:
        a Python call per label is not supported.
    out_dtype : torch.dtype, NumPy dtype or type
        The result's dtype where ``index`` is given (bool, integer or float).
    default : number or None
        The result for a label without voxels (None: NaN, float ``out_dtype`` only).
    pass_positions : bool, optional
        Must be False: positions are only for Python functions.

    Returns
    -------
    torch.Tensor
        ``(B, C, *index.shape)`` of ``out_dtype`` where ``index`` is given
        (``(B, C)`` for an int); with ``index`` or ``labels`` None, what the
        matching function of this module returns, as SciPy returns
        ``func``'s own result there.

    See Also
    --------
    scipy.ndimage.labeled_comprehension : the reference, applied to each ``(b, c)`` slice.

    Examples
    --------
    >>> import numpy as np, torch
    >>> from morphaug.ndimage import labeled_comprehension
    >>> x = torch.tensor([[[1, 2, 0, 0, 5, 3, 0, 4]]])
    >>> labels = torch.tensor([[[1, 1, 0, 0, 1, 1, 0, 2]]])
    >>> labeled_comprehension(x, labels, [1, 2, 3], np.mean, float, -1)
    tensor([[[ 2.7500,  4.0000, -1.0000]]], dtype=torch.float64)
    """
    input = check_input(input)
    name = _reduction(func)
    if pass_positions is not False:
        raise ValueError(f"pass_positions must be False (positions are passed to Python functions, "
                         f"which labeled_comprehension does not call), got {pass_positions!r}")
    if labels is None and index is not None:
        raise ValueError("index must be None when labels is None (SciPy: index without defined labels)")
    if labels is None or index is None:
        return _REDUCTIONS[name](input, labels, _rule(input, labels, None))
    dtype = _out_dtype(out_dtype)
    if default is None:
        if not dtype.is_floating_point:
            raise TypeError(f"default must be a number for the integer or bool out_dtype {dtype}, got None")
        default = float("nan")
    elif isinstance(default, bool) or not isinstance(default, numbers.Number) or isinstance(default, complex):
        raise TypeError(f"default must be a real number or None, got {default!r}")
    scalar = isinstance(index, numbers.Integral) or (isinstance(index, torch.Tensor) and index.ndim == 0)
    if scalar:  # SciPy's np.atleast_1d: an int is a sequence of one, then unwrapped
        index = index.reshape(1) if isinstance(index, torch.Tensor) else [index]
    rule = _rule(input, labels, index)
    result = _REDUCTIONS[name](input, labels, rule).to(dtype)
    result = result.masked_fill(_count(input, rule) == 0, default)
    return result[..., 0] if scalar else result
