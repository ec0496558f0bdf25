"""MONAI's surface distances on whole batches: every ``(b, c)`` slice at once, no loop over slices.

MONAI (``monai.metrics.utils.get_edge_surface_distance``) takes, per slice,
the surface voxels of the prediction and of the reference
(``mask ^ binary_erosion(mask)``: SciPy's cross, border 0) and lists the
distance from each surface voxel of one to the nearest surface voxel of the
other (a float64 KD-tree on the CPU, a distance transform on CUDA, or a
chamfer transform), then reduces the lists. Here one erosion takes both
masks of the batch, one distance transform the surfaces of every slice
(``morphaug.ndimage``), and the reductions run along the flattened spatial
axes, masked to the voxels MONAI lists (:class:`_Surfaces`); each metric is
one reduction of those, so :func:`surface_distance_metrics` computes all
three from one erosion and one distance transform.

Cropping (CPU tensors, where reading their values costs nothing): every
slice is first cut to a window that holds the bounding box of its
``pred | ref``, of one size for the batch (the largest box's), as MONAI
crops each slice to that box grown by one voxel. Exact: outside the box
both masks are empty, so the erosion (border 0) finds the same surfaces,
and the nearest surface voxels lie in the box. On an accelerator the
window's size would be a host read: nothing is cropped.
"""

from __future__ import annotations

import math
import numbers
from typing import NamedTuple

import numpy as np
import torch

from .. import _ops, ndimage

__all__ = ["DISTANCE_METRICS", "SurfaceDistanceResult", "average_surface_distance", "hausdorff_distance",
           "normalized_surface_dice", "surface_distance_metrics"]

#: The distance metrics, as MONAI names them (``distance_metric=``).
DISTANCE_METRICS = ("euclidean", "chessboard", "taxicab")

_INF, _NAN = float("inf"), float("nan")


# ------------------------------------------------------------------ arguments
def _foreground(x, name: str) -> torch.Tensor:
    """``x`` as a bool mask. ``x`` must be binary (bool, or 0 and 1 only): checked at once on the
    CPU, by a device-side assert elsewhere (``torch._assert_async``: no host sync)."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of shape (B, C, *spatial), got {type(x).__name__}")
    if x.ndim < 3 or 0 in x.shape[2:]:
        raise ValueError(f"{name} must have shape (B, C, *spatial) with at least one spatial axis, none "
                         f"empty, got shape {tuple(x.shape)}")
    if x.is_complex():
        raise TypeError(f"{name} must be real, got {x.dtype}")
    if x.dtype == torch.bool:
        return x
    mask = x == 1
    binary = (mask | (x == 0)).all()
    message = f"{name} must be binary (bool, or 0 and 1 only): threshold or one-hot encode it first"
    if x.device.type == "cpu":
        if not binary:
            raise ValueError(message)
    else:
        torch._assert_async(binary, message)
    return mask


def _masks(pred, ref) -> tuple[torch.Tensor, torch.Tensor]:
    pred, ref = _foreground(pred, "pred"), _foreground(ref, "ref")
    if pred.shape != ref.shape:
        raise ValueError(f"pred and ref must have the same shape, got {tuple(pred.shape)} and {tuple(ref.shape)}")
    if pred.device != ref.device:
        raise ValueError(f"pred and ref must be on the same device, got {pred.device} and {ref.device}")
    return pred, ref


def _checked(pred, ref, sampling, distance_metric):
    """``(pred, ref, sampling, distance_metric)`` checked and normalised: what every metric takes."""
    pred, ref = _masks(pred, ref)
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
    return torch.tensor(values.tolist(), dtype=torch.float32, device=device)[:, None]


def _flag(value, name: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return value


# ------------------------------------------------------------------ surfaces and distances
def _reads_are_free(x: torch.Tensor) -> bool:
    """Whether reading values of ``x`` back costs nothing (a CPU tensor): then the slices are cropped to
    their masks and the percentile sorts only the distances it needs."""
    return x.device.type == "cpu"


def _occupied(x: torch.Tensor) -> list[torch.Tensor]:
    """Per spatial axis of ``x`` (bool ``(B, C, *spatial)``), whether each position along it holds a
    true voxel: ``(B, C, n)`` per axis, from two reductions of the volume."""
    if x.ndim == 3:
        return [x]
    return _occupied(x.any(-1)) + [x.flatten(2, -2).any(2)]


def _cropped(pred: torch.Tensor, ref: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Each slice of ``pred`` and ``ref`` cut to a window holding the bounding box of its ``pred | ref``,
    one window size for the batch: the largest box's, along each axis (module docstring). Reads the
    boxes' sizes: CPU tensors only."""
    if pred.numel() == 0:
        return pred, ref
    batch, channels = pred.shape[:2]
    rank = pred.ndim - 2
    sizes, starts = [], []
    for occupied in _occupied(pred | ref):
        n = occupied.shape[-1]
        first = occupied.to(torch.uint8).argmax(-1)  # (B, C); 0 in an empty slice
        length = torch.where(occupied.any(-1), n - occupied.flip(-1).to(torch.uint8).argmax(-1) - first, 0)
        sizes.append(max(1, int(length.max())))
        starts.append(first.clamp(max=n - sizes[-1]))
    if tuple(sizes) == tuple(pred.shape[2:]):
        return pred, ref
    index = [torch.arange(batch).view(-1, *[1] * (rank + 1)), torch.arange(channels).view(-1, *[1] * rank)]
    for axis, (size, start) in enumerate(zip(sizes, starts)):
        along = [1] * rank
        along[axis] = size
        index.append(start.view(batch, channels, *[1] * rank) + torch.arange(size).view(along))
    return pred[tuple(index)], ref[tuple(index)]


class _Surfaces(NamedTuple):
    """MONAI's distance lists per direction ``d`` (pred -> ref, then ref -> pred when symmetric),
    each slice flattened over space: ``source (D, B, C, N)`` the source surface, ``distance``
    the distance of every voxel to the target surface (arbitrary where that surface is
    empty), ``n_source`` / ``n_target (D, B, C)`` the surfaces' voxel counts."""

    source: torch.Tensor
    distance: torch.Tensor
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

    def at_source(self) -> torch.Tensor:
        """The distances of the source voxels, 0 elsewhere."""
        return torch.where(self.source, self.distance, 0.0)


def _surfaces(pred, ref, sampling, distance_metric, symmetric: bool) -> _Surfaces:
    if _reads_are_free(pred):
        pred, ref = _cropped(pred, ref)
    batch, channels = pred.shape[:2]
    masks = torch.cat([pred, ref])
    edges = masks & ~ndimage.binary_erosion(masks)  # (2B, C, ...): the surfaces of pred, then of ref
    counts = edges.flatten(2).sum(-1, dtype=torch.int32)
    if symmetric:
        sources, targets = edges, edges.roll(batch, 0)
        n_source, n_target = counts, counts.roll(batch, 0)
    else:
        sources, targets = edges[:batch], edges[batch:]
        n_source, n_target = counts[:batch], counts[batch:]
    if distance_metric == "euclidean":
        distance = ndimage.distance_transform_edt(~targets, sampling=sampling)
    else:
        distance = ndimage.distance_transform_cdt(~targets, metric=distance_metric).float()
    directions = (2 if symmetric else 1, batch, channels)
    voxels = math.prod(pred.shape[2:])
    return _Surfaces(sources.reshape(*directions, voxels), distance.reshape(*directions, voxels),
                     n_source.reshape(directions), n_target.reshape(directions))


def _percentile(values, selected, count, q: float, partial: bool) -> torch.Tensor:
    """``torch.quantile(values[selected], q)`` along the last axis, as MONAI computes it (linear
    interpolation, ``numpy.percentile``'s default, with torch's arithmetic: the rank
    ``float32(q) * (count - 1)`` in float64); arbitrary where ``count`` is 0. ``partial``: sort
    only the largest values the ranks need, a number read from ``count`` (for CPU tensors)."""
    rank = float(np.float32(q)) * (count - 1).clamp(min=0).double()
    below, above = rank.floor(), rank.ceil()
    # the selected values in descending order: the ranks count from the largest
    top = torch.where(selected, values, -_INF)
    if partial:
        top = top.topk(max(1, int((count - below).max())) if count.numel() else 1, -1).values
    else:
        top = top.sort(-1, descending=True).values

    def at(r):
        return top.gather(-1, (count - 1 - r.long()).clamp(min=0)[..., None])[..., 0]

    return torch.lerp(at(below), at(above), (rank - below).float())


# ------------------------------------------------------------------ the metrics from the lists
def _hausdorff(s: _Surfaces, percentile) -> torch.Tensor:
    if percentile is None:
        worst = torch.where(s.infinite(), _INF, s.at_source().amax(-1))
    else:
        ranked = _percentile(s.distance, s.source, s.n_source, percentile / 100, _reads_are_free(s.distance))
        worst = torch.where(s.infinite(), _NAN, ranked)
    return torch.where(s.listed() > 0, worst, _NAN).amax(0)


def _average(s: _Surfaces) -> torch.Tensor:
    total = torch.where(s.infinite(), _INF, s.at_source().sum(-1))
    return total.sum(0) / s.listed().sum(0)


def _surface_dice(s: _Surfaces, tolerance) -> torch.Tensor:
    within = torch.where(s.finite(), ((s.distance <= tolerance) & s.source).sum(-1, dtype=torch.int32), 0)
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
    return _hausdorff(_surfaces(pred, ref, sampling, distance_metric, not _flag(directed, "directed")), percentile)


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
    Parity: as :func:`hausdorff_distance`; the sums are float32 in another
    order than MONAI's mean (a few float32 ulps).

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
    return _average(_surfaces(pred, ref, sampling, distance_metric, _flag(symmetric, "symmetric")))


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
    return _surface_dice(_surfaces(pred, ref, sampling, distance_metric, symmetric=True), tolerance)


@_ops.opaque_under_compile(_per_slice(3, SurfaceDistanceResult))
def surface_distance_metrics(pred, ref, tolerance, percentile=None, sampling=None, distance_metric="euclidean"):
    """HD (or HD95), ASSD and NSD of every slice from one set of surfaces and one distance transform.

    The three symmetric surface metrics of segmentation challenges at the
    cost of one: :func:`hausdorff_distance` (``directed=False``),
    :func:`average_surface_distance` (``symmetric=True``) and
    :func:`normalized_surface_dice`, equal to each of those (the same
    computation) and so to MONAI 1.6's ``compute_hausdorff_distance``,
    ``compute_average_surface_distance(symmetric=True)`` and
    ``compute_surface_dice`` with ``include_background=True``. Each of those
    functions erodes both masks and runs a distance transform over both
    surfaces; this one does it once for the three.

    Parameters
    ----------
    pred, ref : torch.Tensor
        As in :func:`hausdorff_distance`.
    tolerance : float or sequence of float
        NSD's tolerance, as in :func:`normalized_surface_dice`.
    percentile : float in [0, 100], optional
        HD's percentile, as in :func:`hausdorff_distance` (``95``: HD95).
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
    s = _surfaces(pred, ref, sampling, distance_metric, symmetric=True)
    return SurfaceDistanceResult(_hausdorff(s, percentile), _average(s), _surface_dice(s, tolerance))
