"""Panoptic quality of instance maps on ``(B, C, *spatial)`` batches (``monai.metrics.compute_panoptic_quality``).

Every slice's instances are matched at once: each row of voxels is sorted, once by instance id (the
areas and counts) and once by the pair of ids a voxel lies in (the intersections: runs of equal pairs),
so no loop runs over slices or instances and, for ``match_iou_threshold >= 0.5``, nothing is read back.
"""

from __future__ import annotations

import numbers

import numpy as np
import torch

from .. import _sync
from .._opaque import Results, opaque_under_compile
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


def _compact(ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per row of ``ids`` (``(S, N)`` int64): each instance voxel's rank among the row's distinct nonzero
    values (0 for the smallest; ``N`` for the background), and how many such values the row holds."""
    values, order = ids.sort(dim=1)
    new = values != 0
    new[:, 1:] &= values[:, 1:] != values[:, :-1]
    rank = (new.cumsum(1) - 1).masked_fill_(values == 0, ids.shape[1])
    return torch.empty_like(order).scatter_(1, order, rank), new.sum(1)


def _confusion(pred: torch.Tensor, ref: torch.Tensor, threshold: float) -> torch.Tensor:
    """``(S, 4)`` float32 ``[tp, fp, fn, iou_sum]`` of the rows of ``pred`` and ``ref`` (``(S, N)``)."""
    rows, n = pred.shape
    pred_rank, n_pred = _compact(pred)
    ref_rank, n_ref = _compact(ref)
    # the area of each instance: a table of N + 1 columns per row (the last one the background's)
    offsets = torch.arange(rows, device=pred.device).unsqueeze(1) * (n + 1)
    ones = torch.ones(rows * n, dtype=torch.int64, device=pred.device)
    pred_area = torch.zeros(rows * (n + 1), dtype=torch.int64, device=pred.device)
    pred_area.scatter_add_(0, (pred_rank + offsets).flatten(), ones)
    ref_area = torch.zeros_like(pred_area).scatter_add_(0, (ref_rank + offsets).flatten(), ones)
    # the intersections: runs of equal (ref rank, pred rank) pairs in each sorted row, non-pairs last
    pair = torch.where((pred != 0) & (ref != 0), ref_rank * n + pred_rank, n * n).sort(dim=1).values
    start = torch.ones_like(pair, dtype=torch.bool)
    start[:, 1:] = pair[:, 1:] != pair[:, :-1]
    run = start.cumsum(1) - 1
    inter = torch.zeros_like(pair).scatter_add_(1, run, torch.ones_like(pair)).gather(1, run)
    valid = start & (pair < n * n)
    pair_ref, pair_pred = pair.clamp_max(n * n - 1).div(n, rounding_mode="floor"), pair % n
    union = ref_area[pair_ref + offsets] + pred_area[pair_pred + offsets] - inter
    iou = inter / union  # float32, as MONAI divides its int64 sums
    if threshold >= 0.5:  # an instance overlaps at most one other by more than half
        matched = valid & (iou > threshold)
    else:
        matched = _assigned(valid, pair_ref, pair_pred, iou, n_ref, n_pred, threshold)
    tp = matched.sum(1)
    iou_sum = torch.where(matched, iou, 0).sum(1)
    return torch.stack([tp.float(), (n_pred - tp).float(), (n_ref - tp).float(), iou_sum], 1)


def _assigned(valid, ref_rank, pred_rank, iou, n_ref, n_pred, threshold) -> torch.Tensor:
    """The matched pairs of MONAI's Munkres assignment (``match_iou_threshold < 0.5``): SciPy's
    ``linear_sum_assignment`` of each row's IoU matrix (a row per reference instance, a column per
    predicted one, in the order of their ids, as MONAI's), on the host, then the pairs above the threshold."""
    from scipy.optimize import linear_sum_assignment

    rows, n = valid.shape
    table = torch.cat([torch.stack([valid, ref_rank, pred_rank, iou]).double().flatten(),
                       torch.stack([n_ref, n_pred], 1).double().flatten()])
    table = np.asarray(_sync.host_read(table, "panoptic assignment"))
    flags, refs, preds, ious = table[:4 * rows * n].reshape(4, rows, n)
    refs, preds, ious = refs.astype(np.int64), preds.astype(np.int64), ious.astype(np.float32)
    sizes = table[4 * rows * n:].astype(np.int64).reshape(rows, 2)
    matched = np.zeros(flags.shape, bool)
    for row, (n_r, n_p) in enumerate(sizes):
        where = np.flatnonzero(flags[row])
        if where.size == 0:
            continue
        matrix = np.zeros((n_r, n_p), np.float32)
        matrix[refs[row, where], preds[row, where]] = ious[row, where]
        chosen = np.zeros_like(matrix, dtype=bool)
        chosen[linear_sum_assignment(-matrix)] = True
        chosen &= matrix > threshold
        matched[row, where] = chosen[refs[row, where], preds[row, where]]
    return _sync.to_device(torch.from_numpy(matched), iou.device)


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
    batch = pred.shape[:2]
    confusion = _confusion(pred.reshape(batch.numel(), -1).long(), ref.reshape(batch.numel(), -1).long(),
                           float(match_iou_threshold)).view(*batch, 4)
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
