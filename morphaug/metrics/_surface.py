"""MONAI's surface distances on whole batches: every ``(b, c)`` slice at once, no loop over slices.

MONAI (``monai.metrics.utils.get_edge_surface_distance``) takes, per slice,
the surface voxels of the prediction and of the reference and lists the
distance from each surface voxel of one to the nearest surface voxel of the
other (a float64 KD-tree on the CPU, a distance transform on CUDA, or a
chamfer transform), then reduces the lists. Here one erosion takes both
masks of the batch and each metric is one reduction of the lists
(``lists``), so :func:`surface_distance_metrics` computes all three from
one erosion and one set of lists. The arguments are checked in
``_arguments``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

from .._opaque import Results, opaque_under_compile
from ._arguments import DISTANCE_METRICS, check_percentile, checked, check_flag, check_tolerance
from ._lists import Lists, lists

__all__ = ["DISTANCE_METRICS", "SurfaceDistanceResult", "average_surface_distance", "hausdorff_distance",
           "normalized_surface_dice", "surface_distance_metrics"]


# ------------------------------------------------------------------ the metrics from the lists
def _hausdorff(s: Lists, percentile) -> torch.Tensor:
    if percentile is None:
        worst = torch.where(s.infinite(), math.inf, s.largest())
    else:
        worst = torch.where(s.infinite(), math.nan, s.quantile(percentile / 100))
    return torch.where(s.listed() > 0, worst, math.nan).amax(0)


def _average(s: Lists) -> torch.Tensor:
    total = torch.where(s.infinite(), math.inf, s.total())
    return total.sum(0) / s.listed().sum(0)


def _surface_dice(s: Lists, tolerance) -> torch.Tensor:
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

    Examples
    --------
    >>> import torch
    >>> from morphaug.metrics import surface_distance_metrics
    >>> ref = torch.zeros(2, 1, 16, 16, dtype=torch.bool)
    >>> ref[:, :, 4:12, 4:12] = True
    >>> r = surface_distance_metrics(ref.roll(1, -1), ref, tolerance=1.0)
    >>> r.hausdorff_distance.tolist(), r.normalized_surface_dice.tolist()
    ([[1.0], [1.0]], [[1.0], [1.0]])
    """

    hausdorff_distance: torch.Tensor
    average_surface_distance: torch.Tensor
    normalized_surface_dice: torch.Tensor


def _per_slice(count: int, rebuild) -> Results:
    """``count`` float32 ``(B, C)`` results, as a compiled call returns them (``rebuild``)."""
    return Results(("pred", "ref"), lambda kw: [(tuple(kw["pred"].shape[:2]), torch.float32)] * count,
                        lambda kw, tensors: rebuild(*tensors))


_PER_SLICE = opaque_under_compile(_per_slice(1, lambda result: result))


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

    Examples
    --------
    >>> import torch
    >>> from morphaug.metrics import hausdorff_distance
    >>> ref = torch.zeros(1, 1, 8, 8, dtype=torch.bool)
    >>> ref[0, 0, 2:6, 2:6] = True
    >>> hausdorff_distance(ref.roll(1, -1), ref).tolist()
    [[1.0]]
    """
    pred, ref, sampling, distance_metric = checked(pred, ref, sampling, distance_metric)
    check_percentile(percentile)
    return _hausdorff(lists(pred, ref, sampling, distance_metric, not check_flag(directed, "directed")), percentile)


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

    Examples
    --------
    >>> import torch
    >>> from morphaug.metrics import average_surface_distance
    >>> ref = torch.zeros(1, 1, 8, 8, dtype=torch.bool)
    >>> ref[0, 0, 2:6, 2:6] = True
    >>> average_surface_distance(ref.roll(1, -1), ref, symmetric=True).tolist()
    [[0.5]]
    """
    pred, ref, sampling, distance_metric = checked(pred, ref, sampling, distance_metric)
    return _average(lists(pred, ref, sampling, distance_metric, check_flag(symmetric, "symmetric")))


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
    from a neighbour-code table) is
    ``surfel_distances(pred, ref, sampling).surface_dice_at_tolerance(tolerance)``
    (:func:`morphaug.metrics.surfel_distances`).

    See Also
    --------
    monai.metrics.compute_surface_dice, monai.metrics.SurfaceDiceMetric

    Examples
    --------
    >>> import torch
    >>> from morphaug.metrics import normalized_surface_dice
    >>> ref = torch.zeros(1, 1, 8, 8, dtype=torch.bool)
    >>> ref[0, 0, 2:6, 2:6] = True
    >>> normalized_surface_dice(ref.roll(1, -1), ref, tolerance=0.5).tolist()
    [[0.5]]
    """
    pred, ref, sampling, distance_metric = checked(pred, ref, sampling, distance_metric)
    tolerance = check_tolerance(tolerance, pred.shape[1], pred.device)
    return _surface_dice(lists(pred, ref, sampling, distance_metric, symmetric=True), tolerance)


@opaque_under_compile(_per_slice(3, SurfaceDistanceResult))
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

    Examples
    --------
    >>> import torch
    >>> from morphaug.metrics import surface_distance_metrics
    >>> ref = torch.zeros(1, 1, 8, 8, dtype=torch.bool)
    >>> ref[0, 0, 2:6, 2:6] = True
    >>> hd95, assd, nsd = surface_distance_metrics(ref.roll(1, -1), ref, tolerance=0.5, percentile=95)
    >>> hd95.tolist(), assd.tolist(), nsd.tolist()
    ([[1.0]], [[0.5]], [[0.5]])
    """
    pred, ref, sampling, distance_metric = checked(pred, ref, sampling, distance_metric)
    check_percentile(percentile)
    tolerance = check_tolerance(tolerance, pred.shape[1], pred.device)
    s = lists(pred, ref, sampling, distance_metric, symmetric=True)
    return SurfaceDistanceResult(_hausdorff(s, percentile), _average(s), _surface_dice(s, tolerance))
