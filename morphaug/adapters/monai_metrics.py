"""MONAI's surface-distance and panoptic-quality metrics, computed by :mod:`morphaug.metrics`.

``HausdorffDistanceMetric``, ``SurfaceDistanceMetric`` and
``SurfaceDiceMetric`` subclass MONAI's classes of the same names (each a
``monai.metrics.CumulativeIterationMetric``): the signatures, buffers,
``aggregate()``, ``reset()``, ``get_not_nans`` and list inputs are MONAI's,
and only the per-batch computation (``_compute_tensor``) is replaced by one
batched call of :mod:`morphaug.metrics` on the batch's device. They drop into
MONAI evaluation loops (``metric(y_pred=..., y=..., spacing=...)`` then
``metric.aggregate()``, ignite handlers) in place of MONAI's.

Kept from MONAI
    ``include_background=False`` drops the first channel (when there are
    several); ``ignore_index`` masks ``y_pred`` and ``y`` with MONAI's
    ``create_ignore_mask`` (and gives nan for that class in HD); ``spacing``
    at call time is a number, one per spatial axis, or one per sample
    (samples that share a spacing are computed in one call); the chamfer
    metrics ignore it; HD's ``percentile=0`` is the maximum (MONAI tests
    ``if not percentile``); the values (see :mod:`morphaug.metrics`); a
    ``y`` that is no tensor (e.g. a NumPy array) raises ``SurfaceDiceMetric``'s
    ``ValueError`` ("y_pred and y must be PyTorch Tensor.") in all three.
Differs
    No warning per empty class (it would read the data back). Inputs that are
    not binary raise a ``ValueError`` (MONAI reads the value 1 as the class
    and anything else as background). ``SurfaceDiceMetric(use_subvoxels=True)``
    (surfaces weighted by their areas from a neighbour-code table) runs
    :func:`morphaug.metrics.surfel_distances` with the Euclidean distance, and
    MONAI's own computation, slice by slice, with the chamfer ones.

``PanopticQualityMetric`` and ``compute_panoptic_quality`` match the instances
of every slice and class at once (:func:`morphaug.metrics.panoptic_quality`)
with MONAI's signatures, checks, messages and values; ``remap`` changes
nothing (ids are compared, never used as positions).

Example:
    >>> import torch
    >>> from morphaug.adapters.monai import HausdorffDistanceMetric
    >>> ref = torch.zeros(2, 2, 8, 8)
    >>> ref[:, 1, 2:6, 2:6] = 1
    >>> ref[:, 0] = 1 - ref[:, 1]
    >>> metric = HausdorffDistanceMetric(percentile=95)
    >>> metric(ref.roll(1, -1), ref).tolist()
    [[1.0], [1.0]]
    >>> metric.aggregate().item()
    1.0
"""

from __future__ import annotations

import functools

import numpy as np
import torch

try:
    from monai import metrics as _monai
    from monai.metrics.utils import create_ignore_mask, ignore_background, prepare_spacing
except ImportError as error:  # pragma: no cover - exercised without MONAI
    raise ImportError("morphaug.adapters.monai_metrics needs MONAI: pip install monai") from error

from .. import metrics
from ..metrics._panoptic import panoptic_from_confusion, panoptic_metric_name
from .._sync import to_device

__all__ = ["HausdorffDistanceMetric", "SurfaceDiceMetric", "SurfaceDistanceMetric", "PanopticQualityMetric",
           "compute_hausdorff_distance", "compute_average_surface_distance", "compute_surface_dice",
           "compute_panoptic_quality"]


def _axes(spacing, rank: int) -> tuple[float, ...] | None:
    """One sample's spacing (after MONAI's ``prepare_spacing``) as one value per spatial axis."""
    if spacing is None:
        return None
    values = np.broadcast_to(np.asarray(spacing, dtype=np.float64), (rank,))
    if not np.all(np.isfinite(values) & (values > 0)):
        raise ValueError(f"spacing must be positive and finite, got {spacing!r}")
    return tuple(values.tolist())


class _Batched:
    """MONAI's preparation of a batch (ignore mask, background), then :meth:`_compute` on each group
    of samples that share a spacing: one group, one call, in the usual case."""

    def _compute_tensor(self, y_pred: torch.Tensor, y: torch.Tensor, **kwargs) -> torch.Tensor:
        # MONAI's call passes y=None for a y that is no tensor (e.g. a NumPy array): compute_surface_dice's message
        if not isinstance(y_pred, torch.Tensor) or not isinstance(y, torch.Tensor):
            raise ValueError("y_pred and y must be PyTorch Tensor.")
        self._check_shapes(y_pred, y)
        y_pred, y = y_pred.as_subclass(torch.Tensor), y.as_subclass(torch.Tensor)  # MetaTensors: no metadata
        mask = create_ignore_mask(y, self.ignore_index)
        if mask is not None:
            y_pred, y = y_pred * mask, y * mask
        if not self.include_background:
            y_pred, y = ignore_background(y_pred, y)
        spacing = kwargs.get("spacing") if self.distance_metric == "euclidean" else None
        if spacing is None:
            return self._compute(y_pred, y, None)
        rank = y_pred.ndim - 2
        per_sample = [_axes(s, rank) for s in prepare_spacing(spacing, y_pred.shape[0], rank)]
        groups = list(dict.fromkeys(per_sample))
        if len(groups) == 1:
            return self._compute(y_pred, y, groups[0])
        out = torch.empty(y_pred.shape[:2], device=y_pred.device)
        for sampling in groups:  # one call per distinct spacing
            index = to_device(torch.tensor([b for b, s in enumerate(per_sample) if s == sampling]), y_pred.device)
            out[index] = self._compute(y_pred[index], y[index], sampling)
        return out

    @staticmethod
    def _check_shapes(y_pred: torch.Tensor, y: torch.Tensor) -> None:
        """MONAI's checks and messages (those of ``HausdorffDistanceMetric`` and ``SurfaceDistanceMetric``)."""
        if y_pred.ndim < 3:
            raise ValueError("y_pred should have at least three dimensions.")
        if y.shape != y_pred.shape:
            raise ValueError(f"y_pred and y should have same shapes, got {y_pred.shape} and {y.shape}.")


class HausdorffDistanceMetric(_Batched, _monai.HausdorffDistanceMetric):
    """MONAI's ``HausdorffDistanceMetric`` by :func:`morphaug.metrics.hausdorff_distance`.

    What is kept from MONAI and what differs: :mod:`morphaug.adapters.monai_metrics`.
    """

    def _compute_tensor(self, y_pred, y, **kwargs):
        hd = super()._compute_tensor(y_pred, y, **kwargs)
        if self.ignore_index is not None:  # MONAI: nan for the ignored class
            ignored = self.ignore_index - (0 if self.include_background else 1)
            if 0 <= ignored < hd.shape[1]:
                hd[:, ignored].fill_(float("nan"))
        return hd

    def _compute(self, y_pred, y, sampling):
        return metrics.hausdorff_distance(y_pred, y, self.percentile or None, self.directed, sampling,
                                          self.distance_metric)


class SurfaceDistanceMetric(_Batched, _monai.SurfaceDistanceMetric):
    """MONAI's ``SurfaceDistanceMetric`` by :func:`morphaug.metrics.average_surface_distance`.

    What is kept from MONAI and what differs: :mod:`morphaug.adapters.monai_metrics`.
    """

    def _compute(self, y_pred, y, sampling):
        return metrics.average_surface_distance(y_pred, y, self.symmetric, sampling, self.distance_metric)


class SurfaceDiceMetric(_Batched, _monai.SurfaceDiceMetric):
    """MONAI's ``SurfaceDiceMetric`` by :func:`morphaug.metrics.normalized_surface_dice`.

    ``use_subvoxels=True`` runs :func:`morphaug.metrics.surfel_distances`
    (MONAI's own computation with a chamfer ``distance_metric``). What is kept
    from MONAI and what differs: :mod:`morphaug.adapters.monai_metrics`.
    """

    @functools.wraps(_monai.SurfaceDiceMetric.__init__)
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        try:
            thresholds = np.asarray(self.class_thresholds, dtype=np.float64)
        except (TypeError, ValueError):
            thresholds = np.full(1, np.nan)
        if thresholds.ndim != 1:
            raise ValueError(f"class_thresholds must be a list of numbers, got {self.class_thresholds!r}")
        if not np.all(np.isfinite(thresholds)):  # MONAI's messages (MONAI checks them at the first call)
            raise ValueError("All class thresholds need to be finite.")
        if np.any(thresholds < 0):
            raise ValueError("All class thresholds need to be >= 0.")

    @staticmethod
    def _check_shapes(y_pred: torch.Tensor, y: torch.Tensor) -> None:
        """MONAI's checks and messages (``compute_surface_dice``'s; any spatial rank here)."""
        if y_pred.ndim < 3 or y.ndim != y_pred.ndim:
            raise ValueError("y_pred and y should be one-hot encoded: [B,C,H,W] or [B,C,H,W,D].")
        if y_pred.shape != y.shape:
            raise ValueError(f"y_pred and y should have same shape, but instead, shapes are {y_pred.shape} (y_pred) "
                             f"and {y.shape} (y).")

    def _compute_tensor(self, y_pred, y, **kwargs):
        if self.use_subvoxels and self.distance_metric != "euclidean":
            return _monai.SurfaceDiceMetric._compute_tensor(self, y_pred, y, **kwargs)
        return super()._compute_tensor(y_pred, y, **kwargs)

    def _compute(self, y_pred, y, sampling):
        if len(self.class_thresholds) != y_pred.shape[1]:  # MONAI's message
            raise ValueError(f"number of classes ({y_pred.shape[1]}) does not match number of class thresholds "
                             f"({len(self.class_thresholds)}).")
        if self.use_subvoxels:  # MONAI's float32 result
            surfels = metrics.surfel_distances(y_pred, y, sampling)
            return surfels.surface_dice_at_tolerance(self.class_thresholds).float()
        return metrics.normalized_surface_dice(y_pred, y, self.class_thresholds, sampling, self.distance_metric)


def _tensor(x):
    """MONAI's functions take NumPy arrays too (``compute_surface_dice`` excepted)."""
    return torch.as_tensor(x) if isinstance(x, np.ndarray) else x


def compute_hausdorff_distance(y_pred, y, include_background=False, distance_metric="euclidean", percentile=None,
                               directed=False, spacing=None, ignore_index=None):
    """MONAI's ``compute_hausdorff_distance``: :class:`HausdorffDistanceMetric`'s batch computation, ``(B, C)``."""
    metric = HausdorffDistanceMetric(include_background, distance_metric, percentile, directed,
                                     ignore_index=ignore_index)
    return metric._compute_tensor(_tensor(y_pred), _tensor(y), spacing=spacing)


def compute_average_surface_distance(y_pred, y, include_background=False, symmetric=False,
                                     distance_metric="euclidean", spacing=None, ignore_index=None):
    """MONAI's ``compute_average_surface_distance``: :class:`SurfaceDistanceMetric`'s batch computation."""
    metric = SurfaceDistanceMetric(include_background, symmetric, distance_metric, ignore_index=ignore_index)
    return metric._compute_tensor(_tensor(y_pred), _tensor(y), spacing=spacing)


def compute_surface_dice(y_pred, y, class_thresholds, include_background=False, distance_metric="euclidean",
                         spacing=None, use_subvoxels=False, ignore_index=None):
    """MONAI's ``compute_surface_dice``: :class:`SurfaceDiceMetric`'s batch computation, ``(B, C)``."""
    metric = SurfaceDiceMetric(class_thresholds, include_background, distance_metric, use_subvoxels=use_subvoxels,
                               ignore_index=ignore_index)
    return metric._compute_tensor(y_pred, y, spacing=spacing)


class PanopticQualityMetric(_monai.PanopticQualityMetric):
    """MONAI's ``PanopticQualityMetric`` by :func:`morphaug.metrics.panoptic_quality`: every sample and
    class of the batch in one call (MONAI loops over both); buffers and ``aggregate()`` are MONAI's."""

    def _compute_tensor(self, y_pred, y):
        if y_pred.shape != y.shape:  # MONAI's checks and messages
            raise ValueError(f"y_pred and y should have same shapes, got {y_pred.shape} and {y.shape}.")
        if y_pred.shape[1] != 2:
            raise ValueError(f"for panoptic quality calculation, only 2 channels input is supported, got "
                             f"{y_pred.shape[1]}.")
        if y_pred.ndimension() not in (4, 5):
            raise ValueError(f"y_pred should have 4 dimensions (batch, 2, h, w) or 5 dimensions (batch, 2, h, w, d), "
                             f"got {y_pred.ndimension()}.")
        classes = torch.arange(1, self.num_classes + 1, device=y_pred.device).view(1, -1, *[1] * (y.ndim - 2))

        def per_class(x):  # (B, num_classes, *spatial): each class's instances, as MONAI's loop makes them
            return ((x[:, 1:] == classes) * x[:, :1]).as_subclass(torch.Tensor).int()

        return metrics.panoptic_quality(per_class(y_pred), per_class(y), match_iou_threshold=self.match_iou_threshold,
                                        output_confusion_matrix=True)


def compute_panoptic_quality(pred, gt, metric_name="pq", remap=True, match_iou_threshold=0.5, smooth_numerator=1e-6,
                             output_confusion_matrix=False):
    """MONAI's ``compute_panoptic_quality`` of one ``HW`` or ``HWD`` pair of instance maps (``remap`` is moot)."""
    if gt.shape != pred.shape:
        raise ValueError(f"pred and gt should have same shapes, got {pred.shape} and {gt.shape}.")
    if match_iou_threshold <= 0.0 or match_iou_threshold > 1.0:
        raise ValueError(f"'match_iou_threshold' should be within (0, 1], got: {match_iou_threshold}.")
    confusion = metrics.panoptic_quality(_tensor(pred).int()[None, None], _tensor(gt).int()[None, None],
                                         match_iou_threshold=match_iou_threshold, output_confusion_matrix=True)[0, 0]
    if output_confusion_matrix:
        return confusion
    return panoptic_from_confusion(confusion, panoptic_metric_name(metric_name), smooth_numerator)
