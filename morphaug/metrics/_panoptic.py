"""Panoptic quality of instance maps on ``(B, C, *spatial)`` batches (``monai.metrics.compute_panoptic_quality``).

Every slice's instances are matched at once (``morphaug.measure._matching``): no loop runs over slices or
instances and, for ``match_iou_threshold >= 0.5``, nothing is read back.
"""

from __future__ import annotations

import numbers

import numpy as np
import torch

from .._opaque import Results, opaque_under_compile
from ..measure._matching import panoptic_confusion
from ._arguments import volumes

__all__ = ["PANOPTIC_METRICS", "panoptic_quality", "panoptic_metric_name", "panoptic_from_confusion"]

#: The metric names ``panoptic_quality`` takes, as MONAI spells them, and what each means.
PANOPTIC_METRICS = {"pq": "pq", "panoptic_quality": "pq", "sq": "sq", "segmentation_quality": "sq",
                    "rq": "rq", "recognition_quality": "rq"}


def panoptic_metric_name(metric_name) -> str:
    """``'pq'``, ``'sq'`` or ``'rq'`` for a name MONAI takes (spaces for underscores, any case)."""
    name = metric_name.replace(" ", "_").lower() if isinstance(metric_name, str) else None
    if name not in PANOPTIC_METRICS:
        raise ValueError(f"metric name: {metric_name} is wrong, please use 'pq', 'sq' or 'rq'.")
    return PANOPTIC_METRICS[name]


def _instances(pred, ref) -> tuple[torch.Tensor, torch.Tensor]:
    pred, ref = volumes(pred, ref)
    for x, name in ((pred, "pred"), (ref, "ref")):
        if x.is_floating_point():
            raise TypeError(f"{name} must hold integer instance ids (any integer dtype or bool), got {x.dtype}")
    return pred, ref


def _result(kw) -> list[tuple[tuple[int, ...], torch.dtype]]:
    """What a compiled call returns: ``(B, C)`` float32, ``(B, C, 4)`` with the confusion matrix."""
    extra = (4,) if kw.get("output_confusion_matrix", False) else ()
    return [(tuple(kw["pred"].shape[:2]) + extra, torch.float32)]


@opaque_under_compile(Results(("pred", "ref"), _result, lambda kw, tensors: tensors[0]))
def panoptic_quality(pred, ref, *, metric_name="pq", match_iou_threshold=0.5, smooth_numerator=1e-6,
                     output_confusion_matrix=False):
    """Panoptic quality of every ``(b, c)`` slice of instance maps (``monai.metrics.compute_panoptic_quality``).

    Instances are the nonzero ids of each slice. A predicted and a reference
    instance match when their IoU exceeds ``match_iou_threshold``; PQ is the
    sum of the matched IoUs over ``tp + fp / 2 + fn / 2`` (Kirillov et al.,
    CVPR 2019), SQ the mean matched IoU, RQ the F1 score of the matching.

    Parameters
    ----------
    pred, ref : torch.Tensor
        ``(B, C, *spatial)`` instance maps of the same shape and device, of an
        integer dtype (or bool), 0 the background. Never modified.
    metric_name : str
        ``'pq'``, ``'sq'`` or ``'rq'`` (or MONAI's long names).
    match_iou_threshold : float
        In ``(0, 1]``. From 0.5 up, a pair matches when its IoU exceeds the
        threshold (such pairs are unique). Below 0.5, MONAI's Munkres
        assignment: SciPy's ``linear_sum_assignment`` maximises the matched
        IoU per slice, on the host (the documented "panoptic assignment"
        read), then pairs above the threshold are kept.
    smooth_numerator : float
        Added to the denominators (MONAI's name).
    output_confusion_matrix : bool
        Return ``[tp, fp, fn, iou_sum]`` per slice instead of the metric.

    Returns
    -------
    torch.Tensor
        ``(B, C)`` float32 on the input's device, or ``(B, C, 4)`` with
        ``output_confusion_matrix``.

    Notes
    -----
    Parity: each slice equals ``monai.metrics.compute_panoptic_quality`` of
    that slice (MONAI 1.6, ``remap=True``): the same pairs and counts, the
    IoUs in float32 as MONAI computes them, their sum to float32 rounding.
    MONAI's ``PanopticQualityMetric`` (an instance and a class channel) is
    :class:`morphaug.adapters.monai.PanopticQualityMetric`.

    Examples
    --------
    >>> import torch
    >>> from morphaug.metrics import panoptic_quality
    >>> ref = torch.zeros(1, 1, 6, 6, dtype=torch.int64)
    >>> ref[0, 0, :3, :3], ref[0, 0, 3:, 3:] = 1, 2
    >>> pred = ref.clone()
    >>> pred[0, 0, 0, :3] = 0
    >>> panoptic_quality(pred, ref, output_confusion_matrix=True)
    tensor([[[2.0000, 0.0000, 0.0000, 1.6667]]])
    """
    pred, ref = _instances(pred, ref)
    name = panoptic_metric_name(metric_name)
    if isinstance(match_iou_threshold, bool) or not isinstance(match_iou_threshold, numbers.Real) \
            or not 0.0 < match_iou_threshold <= 1.0:
        raise ValueError(f"'match_iou_threshold' should be within (0, 1], got: {match_iou_threshold}.")
    if isinstance(smooth_numerator, bool) or not isinstance(smooth_numerator, numbers.Real) \
            or not np.isfinite(smooth_numerator):
        raise ValueError(f"smooth_numerator must be a finite number, got {smooth_numerator!r}")
    confusion = panoptic_confusion(pred, ref, float(match_iou_threshold))
    if output_confusion_matrix:
        return confusion
    return panoptic_from_confusion(confusion, name, smooth_numerator)


def panoptic_from_confusion(confusion: torch.Tensor, name: str, smooth_numerator: float) -> torch.Tensor:
    """MONAI's PQ, SQ or RQ (``name``) from ``[..., 4]`` confusion values ``[tp, fp, fn, iou_sum]``."""
    tp, fp, fn, iou_sum = confusion.unbind(-1)
    if name == "sq":
        return iou_sum / (tp + smooth_numerator)
    numerator = tp if name == "rq" else iou_sum
    return numerator / (tp + 0.5 * fp + 0.5 * fn + smooth_numerator)
