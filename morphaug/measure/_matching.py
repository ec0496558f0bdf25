"""The instance matching behind panoptic quality (``monai.metrics.compute_panoptic_quality``), per
``(b, c)`` slice of two instance maps: ``[tp, fp, fn, iou_sum]``.

For ``match_iou_threshold >= 0.5`` the ``panoptic_confusion`` kernel counts each slice's areas and
overlaps in hash tables. The torch backend sorts each row of voxels, once by instance id (the areas and
counts) and once by the pair of ids a voxel lies in (the intersections: runs of equal pairs), so no
loop runs over slices or instances and, for ``match_iou_threshold >= 0.5``, nothing is read back.
"""

from __future__ import annotations

import numpy as np
import torch

from .. import _ops, _sync

__all__ = ["panoptic_confusion"]


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


def _confusion_batch(pred: torch.Tensor, ref: torch.Tensor, threshold: float) -> torch.Tensor:
    """The torch backend: the rows of :func:`_confusion`, one per ``(b, c)`` slice."""
    batch = pred.shape[:2]
    return _confusion(pred.reshape(batch.numel(), -1).long(), ref.reshape(batch.numel(), -1).long(),
                      threshold).view(*batch, 4)


_TABLE = _ops.Table("metrics.panoptic_quality", [
    _ops.Case("match_iou_threshold >= 0.5", "panoptic_confusion", lambda pred, ref, threshold: threshold >= 0.5,
              lambda pred, ref, threshold: _ops.kernels.panoptic_confusion(pred, ref, threshold)),
], _confusion_batch)


def panoptic_confusion(pred: torch.Tensor, ref: torch.Tensor, threshold: float) -> torch.Tensor:
    """``(B, C, 4)`` float32 ``[tp, fp, fn, iou_sum]`` of each slice of the instance maps ``pred`` and ``ref``
    (``(B, C, *spatial)``, integer or bool, validated by the caller), pairs matched above ``threshold``
    (in ``(0, 1]``) as ``monai.metrics.compute_panoptic_quality`` matches them."""
    if pred.dtype != ref.dtype:
        pred, ref = pred.long(), ref.long()
    return _TABLE(pred, pred, ref, float(threshold))
