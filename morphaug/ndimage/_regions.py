"""The regions of the measurements and their tables: which column of a ``(B * C, slots)`` table
each voxel goes to (SciPy's rules for ``labels`` and ``index``), and the tables of a call.

:func:`_rule` decides the columns from ``labels`` and ``index`` without a pass over the voxels;
:func:`_tables` fills every table a measurement needs: in one pass (two with positions or
centred squares) by the native segmented reduction ``region_stats`` where it takes the call,
else by torch scatters over a flat ``(b, c, column)`` key per voxel (:func:`_regions`), which
the measurements that sort (median, histogram) use too.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

from .. import _ops, _sync
from . import _unsigned
from ._normalize import host_tensor

_UNSIGNED = (torch.uint8, torch.uint16, torch.uint32, torch.uint64)
_LABEL_DTYPES = (torch.bool, torch.int8, torch.int16, torch.int32, torch.int64) + _UNSIGNED
_INT64_MAX = 2**63 - 1


# ---------------------------------------------------------------- labels as keys
def _comparable(t: torch.Tensor) -> torch.Tensor:
    """``t`` in a dtype torch sorts, searches and reduces, order and equality kept (wide unsigned
    through :func:`_unsigned.ordered`, bool as uint8)."""
    if t.dtype in _unsigned.SIGNED:
        return _unsigned.ordered(t)
    return t.view(torch.uint8) if t.dtype == torch.bool else t


def _comparable_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype of :func:`_comparable` of a tensor of ``dtype``."""
    return _unsigned.SIGNED.get(dtype, torch.uint8 if dtype == torch.bool else dtype)


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


# ---------------------------------------------------------------- rules
class _Rule(NamedTuple):
    """Which column of its slice's row of a ``(B * C, slots)`` table each voxel goes to, by the
    :func:`_comparable` key of its label: ``mode`` 0 column 0 (the whole slice, or no label to
    measure), 1 the key clamped to ``[low, high]`` less ``first``, 2 the first entry of the sorted
    keys ``table`` equal to the key, else column ``table.numel()``. ``pick`` (on the device) names
    the column of each result, of ``shape`` ``(B, C, *index.shape)``."""

    labels: torch.Tensor | None
    mode: int
    low: int
    high: int
    first: int
    table: torch.Tensor | None
    slots: int
    pick: torch.Tensor
    shape: tuple[int, ...]

    @property
    def scalar(self) -> bool:
        """Whether SciPy returns one value per slice (no index sequence)."""
        return len(self.shape) == 2

    @property
    def kernel_args(self) -> tuple:
        """``(labels, table, (mode, low, high, first), slots)``, as the region kernels take them
        (:func:`morphaug._ops.kernels.region_stats`)."""
        table = None if self.table is None else self.table.long()
        return self.labels, table, (self.mode, self.low, self.high, self.first), self.slots


def _kernel_takes(input: torch.Tensor, rule: _Rule) -> bool:
    """Whether the region kernels take the call: labels of the input's spatial shape (B and C or 1)."""
    return rule.labels is None or rule.labels.shape[2:] == input.shape[2:]


#: The case of the region kernels' dispatch tables.
_KERNEL_CASE = "labels of the input's spatial shape (B and C or 1)"


def _rule(input: torch.Tensor, labels, index, span: int | None = None) -> _Rule:
    """SciPy's regions: the whole slice (``labels`` None), the positive labels (``index`` None), or
    one per value of ``index``. The table of an index has columns for the other labels and one that
    nothing reaches, picked by the values that labels cannot hold. It spans the index's range when
    :func:`_span` allows, with at most ``span`` values (default: a slice's voxels) (SciPy's
    ``np.bincount`` of small labels), else a column per index value, found by a binary search
    (SciPy's ``np.unique`` path)."""
    batch = tuple(input.shape[:2])
    column = torch.zeros(1, dtype=torch.int64, device=input.device)
    if labels is None:
        return _Rule(None, 0, 0, 0, 0, None, 1, column, batch)
    labels = _check_labels(labels, input)
    if index is None:  # columns: labels <= 0, > 0
        zero = _key_of(0, labels.dtype)
        return _Rule(labels, 1, zero, zero + 1, zero, None, 2, column + 1, batch)
    values, found = _index_keys(index, labels.dtype, input.device)
    shape = batch + tuple(values.shape)
    span = _span(values, found, math.prod(input.shape[2:]) if span is None else span)
    values, found = _sync.to_device(values.flatten(), input.device), _sync.to_device(found.flatten(), input.device)
    if span is not None:  # columns: the labels below, low .. high, above, none
        low, high = span
        bits = torch.iinfo(_comparable_dtype(labels.dtype))  # a bound beyond the dtype: no label lies there
        pick = (values.long() - (low - 1)).masked_fill_(~found, high - low + 3)
        return _Rule(labels, 1, max(low - 1, bits.min), min(high + 1, bits.max), low - 1, None, high - low + 4,
                     pick, shape)
    table = values.sort().values
    k = table.numel()
    if k == 0:  # no label to measure: the one-column table, picked by no result
        return _Rule(None, 0, 0, 0, 0, None, 1, column[:0], shape)
    pick = torch.searchsorted(table, values).masked_fill_(~found, k + 1)
    return _Rule(labels, 2, 0, 0, 0, table, k + 2, pick, shape)


class _Regions(NamedTuple):
    """A rule applied to every voxel: ``key`` (flat, one entry per voxel of the input) indexes the
    flat ``(B * C, slots)`` table; None: one column per slice, the whole slice."""

    key: torch.Tensor | None
    slots: int
    pick: torch.Tensor
    shape: tuple[int, ...]


def _regions_of(input: torch.Tensor, rule: _Rule) -> _Regions:
    """The key of each voxel under ``rule``."""
    if rule.mode == 0:
        return _Regions(None, rule.slots, rule.pick, rule.shape)
    keys = _comparable(rule.labels)
    if rule.mode == 1:  # in int64, where the clamped keys less `first` lie in [0, slots)
        slot = keys.long().clamp(rule.low, rule.high) - rule.first
    else:
        k = rule.table.numel()
        slot = torch.searchsorted(rule.table, keys.contiguous())  # duplicates share a first entry
        slot.masked_fill_(rule.table[slot.clamp_max(k - 1)] != keys, k)
    b, c = input.shape[:2]
    rows = torch.arange(0, b * c * rule.slots, rule.slots, device=input.device)
    key = slot.expand(input.shape) + rows.view(b, c, *[1] * (input.ndim - 2))
    return _Regions(key.reshape(-1), rule.slots, rule.pick, rule.shape)


def _regions(input: torch.Tensor, labels, index) -> _Regions:
    """The key of each voxel under :func:`_rule` of ``labels`` and ``index``."""
    return _regions_of(input, _rule(input, labels, index))


# ---------------------------------------------------------------- torch tables
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


def _pick(regions, table: torch.Tensor) -> torch.Tensor:
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


# ---------------------------------------------------------------- the tables of a call
def _decode(keys: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The values of ``dtype`` of region_stats's int64 keys (floats: the order-preserving image of
    their float64 bits; integers: :func:`_comparable`'s)."""
    if dtype.is_floating_point:
        return torch.where(keys >= 0, keys, keys ^ _INT64_MAX).view(torch.float64).to(dtype)
    return _from_comparable(keys.to(_comparable_dtype(dtype)), dtype)


def _native(input: torch.Tensor, rule: _Rule, names: frozenset) -> dict:
    found = _ops.kernels.region_stats(input, *rule.kernel_args, names)
    absent = found["count"] == 0
    for name in ("low", "high"):
        if name in found:
            zero = 0 if input.dtype.is_floating_point else _key_of(0, input.dtype)  # the key of 0 (+0.0)
            found[name] = _decode(found[name].masked_fill(absent, zero), input.dtype)
    for name, empty in (("low_at", 0), ("high_at", 0), ("lower", 0), ("upper", -1)):
        if name in found:
            found[name] = found[name].masked_fill(absent if found[name].ndim == 2 else absent.unsqueeze(-1), empty)
    return found


def _whole(input: torch.Tensor) -> torch.Tensor:
    """The values as int64, uint64 through its int64 view (sums wrap modulo ``2**64``, as NumPy's)."""
    return input.view(torch.int64) if input.dtype == torch.uint64 else input.to(torch.int64)


def _torch(input: torch.Tensor, rule: _Rule, names: frozenset) -> dict:
    regions = _regions_of(input, rule)
    device, spatial = input.device, input.shape[2:]
    found = {"count": _table(regions, torch.ones(input.shape, dtype=torch.int64, device=device), "sum")}
    if names & {"sum", "squares"}:
        found["sum"] = _table(regions, input.to(torch.float64), "sum")
    if "whole" in names:
        found["whole"] = _table(regions, _whole(input), "sum")
    keys, voxels = _comparable(input), math.prod(spatial)
    for name, reduce, at in (("low", "amin", "low_at"), ("high", "amax", "high_at")):
        if not names & {name, at}:
            continue
        if voxels == 0:  # no voxel: every region empty
            found[name], found[at] = torch.zeros_like(found["count"]).to(input.dtype), torch.zeros_like(found["count"])
            continue
        extreme = _table(regions, keys, reduce, empty=_key_of(0, input.dtype))
        found[name] = _from_comparable(extreme, input.dtype)
        if at in names:  # the first voxel in C order that reaches it
            reached = _spread(regions, extreme, input.shape)
            hit = keys == reached
            if input.dtype.is_floating_point:
                hit |= keys.isnan() & reached.isnan()
            raster = torch.arange(voxels, device=device).view(spatial).expand(input.shape)
            first = _table(regions, raster.masked_fill(~hit, voxels), "amin", empty=voxels)
            found[at] = first.masked_fill_(first == voxels, 0)
    coordinates = [torch.arange(n, device=device).view(n, *[1] * (len(spatial) - 1 - axis)).expand(input.shape)
                   for axis, n in enumerate(spatial)]
    if "moments" in names:
        values = input.to(torch.float64)
        found["moments"] = torch.stack([_table(regions, values * axis, "sum") for axis in coordinates], -1)
    if "bounds" in names and voxels == 0:
        found["lower"] = found["count"].new_zeros(found["count"].shape + (len(spatial),))
        found["upper"] = found["lower"] - 1
    elif "bounds" in names:
        found["lower"] = torch.stack([_table(regions, axis, "amin") for axis in coordinates], -1)
        found["upper"] = torch.stack([_table(regions, axis, "amax", empty=-1) for axis in coordinates], -1)
    if "squares" in names:  # SciPy's two passes: the centred squares about each region's mean
        centred = input.to(torch.float64) - _spread(regions, found["sum"] / found["count"], input.shape)
        found["squares"] = _table(regions, centred * centred, "sum")
    return found


_TABLES = _ops.Table("measurements", [
    _ops.Case(_KERNEL_CASE, "region_stats", lambda input, rule, names: _kernel_takes(input, rule), _native),
], _torch)


def _tables(input: torch.Tensor, rule: _Rule, *names: str) -> dict:
    """The ``(B * C, slots[, S])`` tables ``names`` of ``input``'s regions under ``rule``, and
    ``count`` (int64): ``sum`` (float64), ``whole`` (int64 sums of :func:`_whole`), ``low`` /
    ``high`` (the extrema, of the input's dtype), ``low_at`` / ``high_at`` (the flat spatial index
    of their first voxel in C order), ``moments`` (float64 sums of value times coordinate, per
    axis), ``bounds`` (``lower`` and ``upper``: the least and greatest coordinate per axis),
    ``squares`` (float64 sums of the squared differences from the region's mean). A column without
    voxels holds 0 (``upper``: -1; ``squares``: 0)."""
    return _TABLES(input, input, rule, frozenset(names))
