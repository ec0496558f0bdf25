"""MONAI's surface distances on whole batches: every ``(b, c)`` slice at once, no loop over slices.

MONAI (``monai.metrics.utils.get_edge_surface_distance``) takes, per slice,
the surface voxels of the prediction and of the reference
(``mask ^ binary_erosion(mask)``: SciPy's cross, border 0) and lists the
distance from each surface voxel of one to the nearest surface voxel of the
other (a float64 KD-tree on the CPU, a distance transform on CUDA, or a
chamfer transform), then reduces the lists. Here one erosion takes both
masks of the batch and each metric is one reduction of the lists
(:class:`_Lists`), so :func:`surface_distance_metrics` computes all three
from one erosion and one set of lists.

On an accelerator the lists stay masks over every voxel of the volume
(:class:`_Dense`), from one distance transform of the surfaces of every
slice (``morphaug.ndimage``): nothing is read back. On the CPU, where
reading values costs nothing, the surface voxels are listed, each with its
distance to the other surface (:data:`_SURFACE_LISTS`: the native kernel
takes the surfaces from bit-packed lines and searches the lines near each
voxel; the torch backend cuts the slices to their bounding boxes, in
groups of similar box size, and reads distance transforms), and the
distances are packed one list after the other (:class:`_Packed`). Exact:
the search gives the float32 distance transform's values bit for bit, and
outside its box a slice is empty, so the erosion (border 0) of a window
finds the same surfaces (MONAI crops each slice to its box grown by one
voxel) and the nearest surface voxels lie in the box.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from typing import NamedTuple

import numpy as np
import torch

from .. import _ops, ndimage
from .._sync import to_device

__all__ = ["DISTANCE_METRICS", "SurfaceDistanceResult", "average_surface_distance", "hausdorff_distance",
           "normalized_surface_dice", "surface_distance_metrics"]

#: The distance metrics, as MONAI names them (``distance_metric=``).
DISTANCE_METRICS = ("euclidean", "chessboard", "taxicab")

_INF, _NAN = float("inf"), float("nan")


# ------------------------------------------------------------------ arguments
def _volume(x, name: str) -> torch.Tensor:
    """``x`` checked as a real ``(B, C, *spatial)`` tensor (its values: :func:`_foreground`)."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of shape (B, C, *spatial), got {type(x).__name__}")
    if x.ndim < 3 or 0 in x.shape[2:]:
        raise ValueError(f"{name} must have shape (B, C, *spatial) with at least one spatial axis, none "
                         f"empty, got shape {tuple(x.shape)}")
    if x.is_complex():
        raise TypeError(f"{name} must be real, got {x.dtype}")
    return x


def _binary_by_comparisons(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The torch backend of :data:`_BINARY_VALUES`: ``x == 1``, and whether every non-zero value is a
    1. The non-zero values are counted on a mask of them, like ``x == 1``: count_nonzero of a
    non-contiguous x (a channels-last y_pred[:, 1:]) is 4x slower."""
    mask = torch.eq(x, 1, out=torch.empty(x.shape, dtype=torch.bool, device=x.device))
    return mask, torch.count_nonzero(torch.ne(x, 0, out=torch.empty_like(mask))) == torch.count_nonzero(mask)


def _binary_in_one_pass(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    mask, others = _ops.kernels.binary_values(x)
    return mask, others == 0


#: ``x == 1`` of a real ``(B, C, *spatial)`` tensor, and whether ``x`` is binary (a bool tensor).
_BINARY_VALUES = _ops.Table("binary masks (morphaug.metrics)", [
    _ops.Case("every real dtype", "binary_values", lambda x: True, _binary_in_one_pass),
], _binary_by_comparisons)


def _foreground(x, name: str) -> torch.Tensor:
    """``x`` as a bool mask. ``x`` must be binary (bool, or 0 and 1 only): checked at once on the CPU,
    by a device-side assert elsewhere (``torch._assert_async``: no host sync)."""
    if x.dtype == torch.bool:
        return x
    mask, binary = _BINARY_VALUES(x, x)
    message = f"{name} must be binary (bool, or 0 and 1 only): threshold or one-hot encode it first"
    if x.device.type == "cpu":
        if not binary:
            raise ValueError(message)
    else:
        torch._assert_async(binary, message)
    return mask


def _volumes(pred, ref) -> tuple[torch.Tensor, torch.Tensor]:
    pred, ref = _volume(pred, "pred"), _volume(ref, "ref")
    if pred.shape != ref.shape:
        raise ValueError(f"pred and ref must have the same shape, got {tuple(pred.shape)} and {tuple(ref.shape)}")
    if pred.device != ref.device:
        raise ValueError(f"pred and ref must be on the same device, got {pred.device} and {ref.device}")
    return pred, ref


def _checked(pred, ref, sampling, distance_metric):
    """``(pred, ref, sampling, distance_metric)`` checked and normalised: what every metric takes (the
    values of ``pred`` and ``ref`` are checked by :func:`_lists`, which makes them masks)."""
    pred, ref = _volumes(pred, ref)
    distance_metric = _distance_metric(distance_metric)
    return pred, ref, _sampling(sampling, pred.ndim - 2, distance_metric), distance_metric


def _numbers(value, name: str, what: str) -> np.ndarray:
    """``value`` (a number, or a sequence / array / CPU tensor of numbers) as float64 values."""
    try:
        values = np.asarray(value)
    except (TypeError, ValueError, RuntimeError):
        values = None
    if values is None or values.dtype.kind not in "iuf":  # bools, strings and objects are not numbers
        raise TypeError(f"{name} must be {what}, got {value!r}")
    return values.astype(np.float64)


def _sampling(sampling, rank: int, distance_metric: str) -> tuple[float, ...] | None:
    if sampling is None:
        return None
    if distance_metric != "euclidean":
        raise ValueError(f"sampling applies to distance_metric='euclidean' only (MONAI ignores the spacing of "
                         f"the chamfer metrics), got distance_metric={distance_metric!r}")
    values = _numbers(sampling, "sampling", f"a number or a sequence of {rank} numbers")
    if values.ndim == 0:
        values = np.full(rank, values)
    if values.shape != (rank,):
        raise ValueError(f"sampling must have one value per spatial axis ({rank}), got {sampling!r}")
    if not np.all(np.isfinite(values) & (values > 0)):
        raise ValueError(f"sampling must be positive and finite, got {sampling!r}")
    return tuple(values.tolist())


def _distance_metric(distance_metric) -> str:
    if distance_metric not in DISTANCE_METRICS:
        raise ValueError(f"distance_metric must be one of {DISTANCE_METRICS}, got {distance_metric!r}")
    return distance_metric


def _check_percentile(percentile) -> None:
    if percentile is None:
        return
    if isinstance(percentile, bool) or not isinstance(percentile, numbers.Real):
        raise TypeError(f"percentile must be None or a number in [0, 100], got {percentile!r}")
    if not 0 <= percentile <= 100:
        raise ValueError(f"percentile must be in [0, 100], got {percentile!r}")


def _tolerance(tolerance, channels: int, device) -> float | torch.Tensor:
    values = _numbers(tolerance, "tolerance", f"a number or a sequence of {channels} numbers (one per channel)")
    if values.ndim > 1 or (values.ndim == 1 and values.shape != (channels,)):
        raise ValueError(f"tolerance must be a number or one per channel ({channels}), got {tolerance!r}")
    if not np.all(np.isfinite(values) & (values >= 0)):
        raise ValueError(f"tolerance must be finite and >= 0, got {tolerance!r}")
    if values.ndim == 0:
        return float(values)
    return to_device(torch.tensor(values.tolist(), dtype=torch.float32), device)[:, None]


def _flag(value, name: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return value


# ------------------------------------------------------------------ MONAI's distance lists
@dataclasses.dataclass(frozen=True)
class _Lists:
    """MONAI's distance lists, one per row: direction ``d`` (pred -> ref, then ref -> pred when
    symmetric) and slice ``(b, c)``. ``n_source`` / ``n_target (D, B, C)``: the voxel counts of
    the row's source and target surfaces. :class:`_Dense` and :class:`_Packed` hold the
    distances and reduce each list."""

    n_source: torch.Tensor
    n_target: torch.Tensor

    def listed(self) -> torch.Tensor:
        """How many distances MONAI lists: one per source voxel or, when the source surface is
        empty, one inf per target voxel (``get_surface_distance``)."""
        return torch.where(self.n_source > 0, self.n_source, self.n_target)

    def infinite(self) -> torch.Tensor:
        """Whether MONAI lists infinities only: exactly one of the two surfaces is empty."""
        return (self.n_source == 0) != (self.n_target == 0)

    def finite(self) -> torch.Tensor:
        return (self.n_source > 0) & (self.n_target > 0)


def _ranked(ascending, start, count, q: float) -> torch.Tensor:
    """``torch.quantile`` of each list, as MONAI computes it (linear interpolation,
    ``numpy.percentile``'s default, with torch's arithmetic: the rank ``float32(q) * (count - 1)``
    in float64), from each row's ``count`` values in ascending order at ``ascending[start:]``
    (flat); arbitrary where ``count`` is 0."""
    rank = float(np.float32(q)) * (count - 1).clamp(min=0).double()
    below, above = rank.floor(), rank.ceil()
    return torch.lerp(ascending[start + below.long()], ascending[start + above.long()], (rank - below).float())


@dataclasses.dataclass(frozen=True)
class _Dense(_Lists):
    """The lists as masks over each row's voxels (accelerators): ``source (D, B, C, N)`` the source
    surface, ``distance`` the distance of every voxel to the target surface (arbitrary where that
    surface is empty)."""

    source: torch.Tensor
    distance: torch.Tensor

    def _at_source(self) -> torch.Tensor:
        return torch.where(self.source, self.distance, 0.0)

    def largest(self) -> torch.Tensor:
        return self._at_source().amax(-1)

    def total(self) -> torch.Tensor:
        return self._at_source().sum(-1)

    def within(self, tolerance) -> torch.Tensor:
        return ((self.distance <= tolerance) & self.source).sum(-1, dtype=torch.int32)

    def quantile(self, q: float) -> torch.Tensor:
        ascending = torch.where(self.source, self.distance, _INF).sort(-1).values
        rows, voxels = self.n_source.numel(), self.source.shape[-1]
        start = torch.arange(rows, device=ascending.device).view(self.n_source.shape) * voxels
        return _ranked(ascending.flatten(), start, self.n_source, q)


@dataclasses.dataclass(frozen=True)
class _Packed(_Lists):
    """The lists one after the other (CPU): ``values`` each row's distances in ascending order, rows
    in order, then one 0 (so that every index below is valid); ``rows`` the row of each value (flat
    index of ``(D, B, C)``); ``start (D, B, C)`` where each row's list begins."""

    values: torch.Tensor
    rows: torch.Tensor
    start: torch.Tensor

    def largest(self) -> torch.Tensor:
        return self.values[(self.start + self.n_source - 1).clamp(min=0)]

    def total(self) -> torch.Tensor:
        sums = torch.zeros(self.n_source.numel(), dtype=torch.float64)
        return sums.index_add_(0, self.rows, self.values[:-1].double()).float().view(self.n_source.shape)

    def within(self, tolerance) -> torch.Tensor:
        per_row = torch.as_tensor(tolerance, dtype=torch.float32).reshape(-1).expand(self.n_source.shape)
        counts = torch.zeros(self.n_source.numel(), dtype=torch.int64)
        hits = (self.values[:-1] <= per_row.flatten()[self.rows]).long()
        return counts.index_add_(0, self.rows, hits).view(self.n_source.shape)

    def quantile(self, q: float) -> torch.Tensor:
        return _ranked(self.values, self.start, self.n_source, q)


def _packed(values, rows, n_source, n_target) -> _Packed:
    """:class:`_Packed` from the distances ``values`` (float32, non-negative) in any order and their
    ``rows``: one sort of ``row * 2**32 + value's bits`` (ordered as the values, being non-negative)."""
    bits = values.view(torch.int32).long()
    order = (rows * 2 ** 32 + bits).sort().indices  # by row, then by value
    counts = n_source.flatten().long()
    start = (counts.cumsum(0) - counts).view(n_source.shape)
    return _Packed(n_source, n_target, torch.cat([values[order], values.new_zeros(1)]), rows[order], start)


# ------------------------------------------------------------------ surfaces and distances
def _reads_are_free(x: torch.Tensor) -> bool:
    """Whether reading values of ``x`` back costs nothing (a CPU tensor): then the slices are cropped
    to their masks, in groups of similar size, and the lists packed (module docstring)."""
    return x.device.type == "cpu"


def _surfaces(masks: torch.Tensor) -> torch.Tensor:
    """The surface voxels of ``masks`` (bool ``(B, C, *spatial)``), as MONAI: ``mask ^ erosion``."""
    return masks & ~ndimage.binary_erosion(masks)


def _distances(targets: torch.Tensor, sampling, distance_metric) -> torch.Tensor:
    """The float32 distance of every voxel to the surface ``targets`` of its slice."""
    if distance_metric == "euclidean":
        return ndimage.distance_transform_edt(~targets, sampling=sampling)
    return ndimage.distance_transform_cdt(~targets, metric=distance_metric).float()


def _dense(pred, ref, sampling, distance_metric, symmetric: bool) -> _Dense:
    """The lists of every slice of ``pred`` and ``ref``: one erosion, one distance transform."""
    batch, channels = pred.shape[:2]
    edges = _surfaces(torch.cat([pred, ref]))  # (2B, C, ...): the surfaces of pred, then of ref
    counts = torch.count_nonzero(edges.flatten(2), -1).int()
    if symmetric:
        sources, targets = edges, edges.roll(batch, 0)
        n_source, n_target = counts, counts.roll(batch, 0)
    else:
        sources, targets = edges[:batch], edges[batch:]
        n_source, n_target = counts[:batch], counts[batch:]
    distance = _distances(targets, sampling, distance_metric)
    directions = (2 if symmetric else 1, batch, channels)
    voxels = math.prod(pred.shape[2:])
    return _Dense(n_source.reshape(directions), n_target.reshape(directions),
                  sources.reshape(*directions, voxels), distance.reshape(*directions, voxels))


def _occupied(x: torch.Tensor) -> list[torch.Tensor]:
    """Per spatial axis of ``x`` (uint8 ``(B, C, *spatial)``, 0 or 1), whether each position along it
    holds a voxel 1: ``(B, C, n)`` per axis, from two reductions of the volume (uint8 ``amax`` is
    faster than bool ``any``)."""
    if x.ndim == 3:
        return [x]
    return [x.flatten(3).amax(-1)] + _occupied(x.amax(2))


def _boxes(union: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The bounding box of every slice of ``union`` (bool ``(B, C, *spatial)``): its first voxel and its
    sides, ``(B * C, rank)`` each; sides 0 (and first voxel 0) in an empty slice."""
    firsts, sides = [], []
    for occupied in _occupied(union.view(torch.uint8)):
        occupied = occupied.flatten(0, 1)
        first = occupied.argmax(-1)
        firsts.append(first)
        sides.append(torch.where(occupied.amax(-1) > 0, occupied.shape[-1] - occupied.flip(-1).argmax(-1) - first, 0))
    return torch.stack(firsts, -1), torch.stack(sides, -1)


def _window(x: torch.Tensor, members: torch.Tensor, sizes: list[int], first: torch.Tensor) -> torch.Tensor:
    """Slices ``members`` (flat indices of ``(B, C)``) of ``x`` (``(B, C, *spatial)``), each cut to the
    window of ``sizes`` from ``first`` (``(n, rank)``): ``(n, 1, *sizes)``, from one view of every
    window (no copy of ``x``)."""
    for axis, size in enumerate(sizes):
        x = x.unfold(2 + axis, size, 1)
    channels = x.shape[1]
    return x[(members // channels, members % channels, *first.unbind(-1))][:, None]


def _read_from_transforms(rows, row, voxel, sampling, distance_metric, eroded: bool = True) -> torch.Tensor:
    """The distance transform of every surface of ``rows`` (bool ``(2n, 1, *spatial)``: the surfaces or,
    unless ``eroded``, the masks) that some listed voxel ``(row, voxel)`` measures to (row ``row + n``
    or ``row - n``), read at the listed voxels."""
    pairs = rows.shape[0] // 2
    targets, slot = torch.unique((row + pairs) % (2 * pairs), return_inverse=True)
    surfaces = rows[targets] if eroded else _surfaces(rows[targets])
    return _distances(surfaces, sampling, distance_metric).flatten(1)[slot, voxel]


#: Groups of boxes per doubling of their volume: finer groups waste less of each window on the
#: smaller boxes, at one more erosion and distance transform each (3: 8x2x96^3 balls, 13% faster
#: than 1 on one thread).
_GROUPS_PER_DOUBLING = 3


def _lists_by_transforms(pred, ref, sampling, distance_metric, symmetric: bool):
    """The torch backend of :data:`_SURFACE_LISTS`: the slices go in groups whose bounding boxes are
    within a factor ``2 ** (1 / 3)`` in volume (:data:`_GROUPS_PER_DOUBLING`), each group cut to one
    window, the largest box of the group along each axis. A group's surfaces are one erosion, listed
    and counted by one ``nonzero``, and each surface voxel reads the distance transform of the
    other mask's surface."""
    batch, channels, *spatial = pred.shape
    slices = batch * channels
    firsts, sides = _boxes(pred | ref)
    size_class = (_GROUPS_PER_DOUBLING * sides.prod(-1).clamp(min=1).double().log2()).floor()
    counts = torch.zeros(2, slices, dtype=torch.int64)  # surface voxels of pred, of ref
    values, rows = [], []
    for group in size_class.unique().tolist():  # a few groups, not a loop over slices
        members = torch.nonzero(size_class == group)[:, 0]
        sizes = sides[members].amax(0).clamp(min=1)
        first = torch.minimum(firsts[members], torch.tensor(spatial) - sizes)  # windows inside the volume
        sizes = sizes.tolist()
        edges = _surfaces(torch.cat([_window(m, members, sizes, first) for m in (pred, ref)]))  # pred's, then ref's
        n = len(members)
        row, voxel = torch.nonzero(edges.view(2 * n, -1)).unbind(1)
        counts[:, members] = torch.bincount(row, minlength=2 * n).view(2, n)
        if not symmetric:  # pred's surface voxels only, ref's distances
            keep = row < n
            row, voxel = row[keep], voxel[keep]
        # a surface voxel of pred (row < n) or of ref measures to the other one's surface
        values.append(_read_from_transforms(edges, row, voxel, sampling, distance_metric))
        direction = (row >= n).long()
        rows.append(direction * slices + members[row - direction * n])
    return (torch.cat(rows) if rows else torch.zeros(0, dtype=torch.int64),
            torch.cat(values) if values else torch.zeros(0), counts)


#: Offsets (voxels, along each axis but the last) that the native search visits before it leaves
#: a voxel to the distance transform: (2 * 24 + 1) ** 2 lines at most per voxel.
_SEARCH_REACH = 24

#: Line offsets that the searches of the voxels measuring to one slice may visit in all, per voxel
#: of the slice, before the slice's distance transform takes the voxels left. An offset (up to 4
#: lines) costs about as much as 1.7 voxels of the native EDT, so the search gives up after about
#: 0.4 transforms' worth of work. The benchmark's 8x3x96^3 masks visit 0.03 per voxel; with the
#: prediction 40 planes off its reference they would visit several (1.0 s without a budget, 0.4 s
#: with one, MONAI 1.7 s).
_SEARCH_BUDGET = 0.25


def _lists_by_search(pred, ref, sampling, distance_metric, symmetric: bool):
    """The native case of :data:`_SURFACE_LISTS`: the surfaces of whole slices listed from bits, and
    each listed voxel searches the lines of the other surface near it; the voxels it leaves (nearest
    voxel maybe beyond the reach, or the slice's budget spent) read the distance transforms."""
    sources, values, counts = _ops.kernels.surface_distance_lists(pred, ref, sampling, _SEARCH_REACH,
                                                                  _SEARCH_BUDGET, symmetric)
    voxels = math.prod(pred.shape[2:])
    rows = sources.div(voxels, rounding_mode="floor")
    left = torch.nonzero(values < 0)[:, 0]
    if len(left):
        masks = torch.cat([pred, ref]).flatten(0, 1)[:, None]  # (2 * slices, 1, *spatial): the rows
        values[left] = _read_from_transforms(masks, rows[left], sources[left] - rows[left] * voxels, sampling,
                                             distance_metric, eroded=False)
    return rows, values, counts.view(2, -1)


#: MONAI's distance lists of the masks ``pred`` and ``ref`` (bool ``(B, C, *spatial)``):
#: ``(rows, distances, counts)``: the row (flat index of ``(2, B, C)``: pred's slices, then ref's)
#: of each listed surface voxel (of both, or of pred's unless symmetric), its distance to the other
#: mask's surface in the same slice, and the surface voxels of every row (``(2, B * C)``); the same
#: lists on every case, bit for bit (in another order).
_SURFACE_LISTS = _ops.Table("surface distance lists (morphaug.metrics on the CPU)", [
    _ops.Case("euclidean, at most 3 spatial axes", "surface_distance_lists",
              lambda pred, ref, sampling, distance_metric, symmetric: distance_metric == "euclidean",
              _lists_by_search),
], _lists_by_transforms)


def _host_lists(pred, ref, sampling, distance_metric, symmetric: bool) -> _Packed:
    """The lists of CPU tensors (:data:`_SURFACE_LISTS`), packed. Both inputs become masks, checked
    binary, each a contiguous tensor (whatever their layout: reductions of a channels-last one-hot
    are several times slower)."""
    batch, channels = pred.shape[:2]
    directions = 2 if symmetric else 1
    masks = [_foreground(pred, "pred").contiguous(), _foreground(ref, "ref").contiguous()]
    rows, values, counts = _SURFACE_LISTS(masks[0], *masks, sampling, distance_metric, symmetric)
    shape = (directions, batch, channels)
    return _packed(values, rows, counts[:directions].int().view(shape), counts.flip(0)[:directions].int().view(shape))


def _lists(pred, ref, sampling, distance_metric, symmetric: bool) -> _Lists:
    """MONAI's distance lists of every slice of ``pred`` and ``ref`` (checked binary): packed on the
    CPU, dense elsewhere."""
    if _reads_are_free(pred):
        return _host_lists(pred, ref, sampling, distance_metric, symmetric)
    return _dense(_foreground(pred, "pred"), _foreground(ref, "ref"), sampling, distance_metric, symmetric)


# ------------------------------------------------------------------ the metrics from the lists
def _hausdorff(s: _Lists, percentile) -> torch.Tensor:
    if percentile is None:
        worst = torch.where(s.infinite(), _INF, s.largest())
    else:
        worst = torch.where(s.infinite(), _NAN, s.quantile(percentile / 100))
    return torch.where(s.listed() > 0, worst, _NAN).amax(0)


def _average(s: _Lists) -> torch.Tensor:
    total = torch.where(s.infinite(), _INF, s.total())
    return total.sum(0) / s.listed().sum(0)


def _surface_dice(s: _Lists, tolerance) -> torch.Tensor:
    within = torch.where(s.finite(), s.within(tolerance), 0)
    return within.sum(0) / s.listed().sum(0)


# ------------------------------------------------------------------ the public functions
class SurfaceDistanceResult(NamedTuple):
    """What :func:`surface_distance_metrics` returns: ``(B, C)`` float32 tensors on the input's device.

    Attributes
    ----------
    hausdorff_distance : torch.Tensor
        Symmetric Hausdorff distance, or its ``percentile`` (HD95), as
        :func:`hausdorff_distance`.
    average_surface_distance : torch.Tensor
        Average symmetric surface distance (ASSD), as
        :func:`average_surface_distance` with ``symmetric=True``.
    normalized_surface_dice : torch.Tensor
        Normalized surface dice at the ``tolerance``, as
        :func:`normalized_surface_dice`.
    """

    hausdorff_distance: torch.Tensor
    average_surface_distance: torch.Tensor
    normalized_surface_dice: torch.Tensor


def _per_slice(count: int, rebuild) -> _ops.Results:
    """``count`` float32 ``(B, C)`` results, as a compiled call returns them (``rebuild``)."""
    return _ops.Results(("pred", "ref"), lambda kw: [(tuple(kw["pred"].shape[:2]), torch.float32)] * count,
                        lambda kw, tensors: rebuild(*tensors))


_PER_SLICE = _ops.opaque_under_compile(_per_slice(1, lambda result: result))


@_PER_SLICE
def hausdorff_distance(pred, ref, percentile=None, directed=False, sampling=None, distance_metric="euclidean"):
    """Hausdorff distance (or its ``percentile``, e.g. HD95) between the surfaces of every slice.

    The reference is MONAI 1.6's ``monai.metrics.compute_hausdorff_distance``
    with ``include_background=True``: the largest (or ``percentile``-th)
    distance from a surface voxel of ``pred`` to the surface of ``ref`` and,
    unless ``directed``, from ``ref`` to ``pred``, whichever is larger.

    Parameters
    ----------
    pred, ref : torch.Tensor
        ``(B, C, *spatial)`` prediction and reference of the same shape and
        device: bool, or integer / floating with values 0 and 1 only (e.g.
        one-hot). Every channel is measured.
    percentile : float in [0, 100], optional
        The percentile of each direction's distances instead of their maximum
        (``torch.quantile``'s linear interpolation, as ``numpy.percentile``).
    directed : bool, optional
        Only the distances from ``pred`` to ``ref``.
    sampling : float or sequence of float, optional
        Voxel spacing along each spatial axis (MONAI's ``spacing``); positive.
        Euclidean only.
    distance_metric : {"euclidean", "chessboard", "taxicab"}, optional
        Euclidean distances, or chamfer (L-infinity / L1) distances in voxels.

    Returns
    -------
    torch.Tensor
        ``(B, C)`` float32 on the input's device: nan where both surfaces are
        empty, inf where one is (nan with ``percentile``: MONAI's
        ``torch.quantile`` of infinities), as MONAI.

    Notes
    -----
    Parity: equal to MONAI to float32 rounding (Euclidean distances are
    float32 here, MONAI's float64 rounded to float32: they differ by at most
    one ulp, and not at all with unit or power-of-two spacings; chamfer
    distances are identical). ``percentile=0`` is the smallest distance here;
    MONAI's ``percentile=0`` is the largest (it tests ``if not percentile``),
    which :class:`morphaug.adapters.monai.HausdorffDistanceMetric` keeps.
    Empty surfaces and bad inputs: see :mod:`morphaug.metrics`.

    See Also
    --------
    monai.metrics.compute_hausdorff_distance, monai.metrics.HausdorffDistanceMetric

    Example
    -------
    >>> import torch
    >>> from morphaug.metrics import hausdorff_distance
    >>> ref = torch.zeros(1, 1, 8, 8, dtype=torch.bool)
    >>> ref[0, 0, 2:6, 2:6] = True
    >>> hausdorff_distance(ref.roll(1, -1), ref).tolist()
    [[1.0]]
    """
    pred, ref, sampling, distance_metric = _checked(pred, ref, sampling, distance_metric)
    _check_percentile(percentile)
    return _hausdorff(_lists(pred, ref, sampling, distance_metric, not _flag(directed, "directed")), percentile)


@_PER_SLICE
def average_surface_distance(pred, ref, symmetric=False, sampling=None, distance_metric="euclidean"):
    """Average surface distance of every slice: from ``pred`` to ``ref``, or symmetric (ASSD).

    The reference is MONAI 1.6's ``monai.metrics.compute_average_surface_distance``
    with ``include_background=True``: the mean distance from the surface
    voxels of ``pred`` to the surface of ``ref`` (MONAI's default) or, with
    ``symmetric``, the mean over the distances of both directions together.

    Parameters
    ----------
    pred, ref : torch.Tensor
        As in :func:`hausdorff_distance`.
    symmetric : bool, optional
        Average the distances of both directions (MONAI's ``symmetric``).
    sampling, distance_metric
        As in :func:`hausdorff_distance`.

    Returns
    -------
    torch.Tensor
        ``(B, C)`` float32 on the input's device: nan where both surfaces are
        empty, inf where one is, as MONAI.

    Notes
    -----
    Parity: as :func:`hausdorff_distance`; the sums run in another order
    than MONAI's mean (float64 on the CPU, float32 elsewhere): a few float32
    ulps apart.

    See Also
    --------
    monai.metrics.compute_average_surface_distance, monai.metrics.SurfaceDistanceMetric

    Example
    -------
    >>> import torch
    >>> from morphaug.metrics import average_surface_distance
    >>> ref = torch.zeros(1, 1, 8, 8, dtype=torch.bool)
    >>> ref[0, 0, 2:6, 2:6] = True
    >>> average_surface_distance(ref.roll(1, -1), ref, symmetric=True).tolist()
    [[0.5]]
    """
    pred, ref, sampling, distance_metric = _checked(pred, ref, sampling, distance_metric)
    return _average(_lists(pred, ref, sampling, distance_metric, _flag(symmetric, "symmetric")))


@_PER_SLICE
def normalized_surface_dice(pred, ref, tolerance, sampling=None, distance_metric="euclidean"):
    """Normalized surface dice (NSD) of every slice at a distance ``tolerance``.

    The reference is MONAI 1.6's ``monai.metrics.compute_surface_dice`` with
    ``include_background=True`` and its default ``use_subvoxels=False``: the
    fraction of the surface voxels of ``pred`` and ``ref`` (counted
    together) that lie within ``tolerance`` of the other surface.

    Parameters
    ----------
    pred, ref : torch.Tensor
        As in :func:`hausdorff_distance`.
    tolerance : float or sequence of float
        The largest accepted distance, in the units of the distances
        (``sampling``'s, else voxels): one for all channels or one per
        channel (MONAI's ``class_thresholds``); finite, ``>= 0``.
    sampling, distance_metric
        As in :func:`hausdorff_distance`.

    Returns
    -------
    torch.Tensor
        ``(B, C)`` float32 on the input's device in [0, 1]: nan where both
        surfaces are empty, 0 where one is, as MONAI.

    Notes
    -----
    Parity: identical to MONAI but where a Euclidean distance equals the
    tolerance and MONAI's float64 distance rounds to a float32 one ulp away
    from ours (not with unit or power-of-two spacings). Surfaces are counted
    in voxels, as MONAI's default; its ``use_subvoxels=True`` (surface areas
    from a neighbour-code table) is not computed here.

    See Also
    --------
    monai.metrics.compute_surface_dice, monai.metrics.SurfaceDiceMetric

    Example
    -------
    >>> import torch
    >>> from morphaug.metrics import normalized_surface_dice
    >>> ref = torch.zeros(1, 1, 8, 8, dtype=torch.bool)
    >>> ref[0, 0, 2:6, 2:6] = True
    >>> normalized_surface_dice(ref.roll(1, -1), ref, tolerance=0.5).tolist()
    [[0.5]]
    """
    pred, ref, sampling, distance_metric = _checked(pred, ref, sampling, distance_metric)
    tolerance = _tolerance(tolerance, pred.shape[1], pred.device)
    return _surface_dice(_lists(pred, ref, sampling, distance_metric, symmetric=True), tolerance)


@_ops.opaque_under_compile(_per_slice(3, SurfaceDistanceResult))
def surface_distance_metrics(pred, ref, tolerance, percentile=None, sampling=None, distance_metric="euclidean"):
    """HD (or HD95), ASSD and NSD of every slice from one set of surfaces and one set of distances.

    The three symmetric surface metrics of segmentation challenges at the
    cost of one: :func:`hausdorff_distance` (``directed=False``),
    :func:`average_surface_distance` (``symmetric=True``) and
    :func:`normalized_surface_dice`, equal to each of those (the same
    computation) and so to MONAI 1.6's ``compute_hausdorff_distance``,
    ``compute_average_surface_distance(symmetric=True)`` and
    ``compute_surface_dice`` with ``include_background=True``. Each of those
    functions erodes both masks and measures the distances between both
    surfaces; this one does it once for the three.

    Parameters
    ----------
    pred, ref : torch.Tensor
        As in :func:`hausdorff_distance`.
    tolerance : float or sequence of float
        NSD's tolerance, as in :func:`normalized_surface_dice`.
    percentile : float in [0, 100], optional
        HD's percentile, as in :func:`hausdorff_distance` (``95``: HD95;
        ``0``: the smallest distance, where MONAI's is the largest).
    sampling, distance_metric
        As in :func:`hausdorff_distance`.

    Returns
    -------
    SurfaceDistanceResult
        ``(hausdorff_distance, average_surface_distance,
        normalized_surface_dice)``, each ``(B, C)`` float32 on the input's
        device, with the empty-surface values of the three functions.

    See Also
    --------
    monai.metrics.HausdorffDistanceMetric, monai.metrics.SurfaceDistanceMetric, monai.metrics.SurfaceDiceMetric

    Example
    -------
    >>> import torch
    >>> from morphaug.metrics import surface_distance_metrics
    >>> ref = torch.zeros(1, 1, 8, 8, dtype=torch.bool)
    >>> ref[0, 0, 2:6, 2:6] = True
    >>> hd95, assd, nsd = surface_distance_metrics(ref.roll(1, -1), ref, tolerance=0.5, percentile=95)
    >>> hd95.tolist(), assd.tolist(), nsd.tolist()
    ([[1.0]], [[0.5]], [[0.5]])
    """
    pred, ref, sampling, distance_metric = _checked(pred, ref, sampling, distance_metric)
    _check_percentile(percentile)
    tolerance = _tolerance(tolerance, pred.shape[1], pred.device)
    s = _lists(pred, ref, sampling, distance_metric, symmetric=True)
    return SurfaceDistanceResult(_hausdorff(s, percentile), _average(s), _surface_dice(s, tolerance))
