"""Lesion-wise Dice and HD95 of the BraTS 2023 challenges on whole batches: every ``(b, c)`` slice and
every lesion at once (:func:`lesion_wise_metrics`)."""

from __future__ import annotations

import math
import numbers
import sys
from typing import NamedTuple

import numpy as np
import torch

from .. import _sync, ndimage
from ._arguments import _sampling, foreground, volumes
from ._counts import true_counts
from ._lists import _reads_are_free
from ._surfels import surfel_distances

__all__ = ["BRATS_2023", "LesionWiseResult", "lesion_wise_metrics"]

#: ``(dilation_factor, volume_threshold)`` of each BraTS 2023 challenge (``get_LesionWiseResults``).
BRATS_2023 = {"BraTS-GLI": (3, 50), "BraTS-SSA": (3, 50), "BraTS-MEN": (1, 50), "BraTS-PED": (3, 50),
              "BraTS-MET": (1, 2)}

_FULL = np.ones((3, 3, 3), dtype=bool)  # 26-connectivity, as cc3d's connectivity=26


class LesionWiseResult(NamedTuple):
    """What :func:`lesion_wise_metrics` returns, on the input's device.

    Per slice, ``(B, C)``: ``dice`` and ``hd95`` (the lesion-wise scores,
    float64), ``num_tp``, ``num_fp``, ``num_fn`` (int64 lesion counts),
    ``legacy_dice``, ``legacy_hd95`` (the whole masks' scores),
    ``sensitivity``, ``specificity`` and ``gt_volume`` (float64).

    Per lesion of the reference, ``(N,)`` for the ``N`` lesions of the batch,
    slice by slice, in the raster order of each lesion's dilated region:
    ``lesion_slice`` (the flat index ``b * C + c`` of its slice),
    ``lesion_volume`` (its volume), ``lesion_matched`` (whether a predicted
    lesion touches it), ``lesion_dice`` and ``lesion_hd95`` (``missing_hd95``
    where unmatched). Lesions at or below the volume threshold are listed
    too (the challenge's CSV lists them) but left out of the scores.
    """

    dice: torch.Tensor
    hd95: torch.Tensor
    num_tp: torch.Tensor
    num_fp: torch.Tensor
    num_fn: torch.Tensor
    legacy_dice: torch.Tensor
    legacy_hd95: torch.Tensor
    sensitivity: torch.Tensor
    specificity: torch.Tensor
    gt_volume: torch.Tensor
    lesion_slice: torch.Tensor
    lesion_volume: torch.Tensor
    lesion_matched: torch.Tensor
    lesion_dice: torch.Tensor
    lesion_hd95: torch.Tensor


class _Components(NamedTuple):
    """The components of every slice of a mask: ``labels (B, C, *spatial)`` numbered per slice (0
    outside), ``counts`` and the number across the batch of each slice's first component ``first``
    (``(B*C,)``): the component of label ``l`` in slice ``s`` is number ``first[s] + l - 1``."""

    labels: torch.Tensor
    counts: torch.Tensor
    first: torch.Tensor


def _components(mask: torch.Tensor, structure) -> _Components:
    labels, counts = ndimage.label(mask, structure=structure)
    counts = counts.flatten()
    return _Components(labels, counts, counts.cumsum(0) - counts)


def _numbered(labels: torch.Tensor, first: torch.Tensor) -> torch.Tensor:
    """Per-slice ``labels`` as numbers across the batch, -1 outside (``first`` of their slices,
    broadcast against them)."""
    labels = labels.long()
    return torch.where(labels > 0, labels + first - 1, -1)


def _matched(both: torch.Tensor, comp: _Components, lesion: _Components, comps: int, lesions: int) -> torch.Tensor:
    """``(comps, lesions)`` bool: which predicted lesions touch which dilated regions, from the voxels of
    ``both`` (``pred & dilated``, ``(B*C, V)``), where both labels are positive. On the CPU only those
    voxels are read (finding them is free there), elsewhere every voxel."""
    comp_labels, lesion_labels = (c.labels.flatten(2).flatten(0, 1) for c in (comp, lesion))

    def key(c, l, comp_first, lesion_first):
        return (c.long() + comp_first - 1) * lesions + (l.long() + lesion_first - 1)

    if _reads_are_free(both):
        rows, columns = both.nonzero(as_tuple=True)
        keys = key(comp_labels[rows, columns], lesion_labels[rows, columns], comp.first[rows], lesion.first[rows])
    else:
        keys = torch.where(both, key(comp_labels, lesion_labels, comp.first[:, None], lesion.first[:, None]),
                           comps * lesions)
    matched = torch.zeros(comps * lesions + 1, dtype=torch.bool, device=both.device)
    return matched.index_fill_(0, keys.flatten(), True)[:-1].view(comps, lesions)


def _batch_order(first: torch.Tensor, of_slice: torch.Tensor, most: int) -> torch.Tensor:
    """Where each of the components numbered across the batch (``of_slice``: their slices; ``first``:
    the number of each slice's first) lies in per-slice tables of ``max(most, 1)`` labels flattened
    ``(B*C * most)``: the index that puts those tables in the batch's numbering."""
    return of_slice * max(most, 1) + torch.arange(of_slice.numel(), device=of_slice.device) - first[of_slice]


def _tally(masks: torch.Tensor, components: _Components, of_slice: torch.Tensor, most: int) -> torch.Tensor:
    """For each of the ``N`` components numbered across the batch (``of_slice``: their slices; at most
    ``most`` in a slice), the voxels of each bool mask of ``masks`` (``(M, B, C, *spatial)``) in it,
    ``(M, N)`` float64: one :func:`~morphaug.ndimage.sum_labels` of every slice of every mask by the
    slice's labels."""
    labels = components.labels.flatten(0, 1)
    sums = ndimage.sum_labels(masks.flatten(1, 2), labels[None], range(1, max(most, 1) + 1)).flatten(1)
    return sums[:, _batch_order(components.first, of_slice, most)]


def _boxes(labels: torch.Tensor, first: torch.Tensor, of_slice: torch.Tensor, most: int) -> torch.Tensor:
    """``(2, N, S)``: the first and last coordinates of each of the ``N`` components numbered across the
    batch (``of_slice``: their slices) of the per-slice ``labels`` (at most ``most`` per slice)."""
    boxes, _ = ndimage.find_objects(labels, max_label=max(most, 1))
    found = boxes.flatten(0, 2)[_batch_order(first, of_slice, most)]
    return torch.stack([found[:, 0], found[:, 1] - 1])


def _crops(volume: torch.Tensor, slices: torch.Tensor, low: torch.Tensor, size) -> torch.Tensor:
    """The box of ``size`` voxels from ``low (N, S)`` of slice ``slices (N,)`` of ``volume (B*C, *spatial)``
    for each of the N boxes, ``(N, *size)``; indices past the volume read its last voxel (masked by the
    caller)."""
    index = [slices.view(-1, 1, 1, 1)]
    for axis, (n, extent) in enumerate(zip(volume.shape[1:], size)):
        shape = [-1, 1, 1, 1]
        shape[axis + 1] = extent
        index.append((low[:, axis:axis + 1] + torch.arange(extent, device=low.device)).clamp(max=n - 1).view(shape))
    return volume[tuple(index)]


def _lesion_hd95(ref, pred, lesion: _Components, comp: _Components, matched, of_slice, most, sampling):
    """The HD95 of each lesion against the predicted lesions it matches, ``(N,)`` (inf where none):
    each pair cut to its bounding box, the boxes grouped by size class (the next power of 2 along each
    axis) and each group (padded to its largest box) measured by one :func:`surfel_distances`.
    ``of_slice``: the slice of each lesion and of each predicted lesion; ``most``: the most of either in
    a slice."""
    spatial = ref.shape[2:]
    gt_box = _boxes(torch.where(ref, lesion.labels, 0), lesion.first, of_slice[0], most[0])
    comp_box = _boxes(comp.labels, comp.first, of_slice[1], most[1])
    big = max(spatial)
    low = torch.minimum(gt_box[0], torch.where(matched[..., None], comp_box[0, :, None], big).amin(0))
    high = torch.maximum(gt_box[1], torch.where(matched[..., None], comp_box[1, :, None], -1).amax(0))
    extents = np.asarray(_sync.host_read(high - low + 1, "lesion-wise sizes"), dtype=np.int64).reshape(-1, 3)
    classes, group = np.unique(np.ceil(np.log2(extents)), axis=0, return_inverse=True)
    hd95 = torch.empty(extents.shape[0], dtype=torch.float64, device=ref.device)
    volume = (-1, *spatial)
    for g in range(classes.shape[0]):  # a few size classes: log2 of the box sides
        members = np.flatnonzero(group.reshape(-1) == g)
        size = extents[members].max(0).tolist()
        index = _sync.to_device(torch.from_numpy(members), ref.device)
        start, slices = low[index], of_slice[0][index]
        inside = math.prod(torch.arange(n, device=ref.device).view([-1 if a == axis else 1 for a in range(3)])
                           <= (high[index] - start)[:, axis].view(-1, 1, 1, 1) for axis, n in enumerate(size))
        ids, first = index.view(-1, 1, 1, 1), lesion.first[slices].view(-1, 1, 1, 1)
        gt = inside & (_crops(lesion.labels.view(volume), slices, start, size) == ids - first + 1) & _crops(
            ref.view(volume), slices, start, size)
        comps = _numbered(_crops(comp.labels.view(volume), slices, start, size), comp.first[slices].view(-1, 1, 1, 1))
        predicted = inside & (comps >= 0) & matched[comps.clamp(min=0), ids]
        hd95[index] = surfel_distances(predicted.unsqueeze(1), gt.unsqueeze(1), sampling).robust_hausdorff(95)[:, 0]
    return hd95


def _voxels(mask: torch.Tensor) -> torch.Tensor:
    """``(B, C)``: the voxels of each slice of ``mask``."""
    return true_counts(mask.flatten(2))


def _legacy(pred, ref, sampling, missing_hd95):
    """The whole masks' Dice and HD95 (1 and 0 where both are empty), sensitivity and specificity."""
    both, n_pred, n_ref = (_voxels(x).double() for x in (pred & ref, pred, ref))
    empty = (n_pred == 0) & (n_ref == 0)
    dice = torch.where(empty, 1.0, 2 * both / (n_pred + n_ref))
    hd95 = surfel_distances(pred, ref, sampling).robust_hausdorff(95)
    hd95 = torch.where(empty, 0.0, hd95.nan_to_num(posinf=missing_hd95))
    negatives = pred[0, 0].numel() - (n_pred + n_ref - both)
    sensitivity = torch.where(empty, 1.0, both / (n_ref + sys.float_info.min))
    specificity = negatives / (negatives + n_pred - both + sys.float_info.min)
    return dice, hd95, sensitivity, specificity


def _check_options(dilation_factor, volume_threshold, missing_hd95) -> None:
    if isinstance(dilation_factor, bool) or not isinstance(dilation_factor, numbers.Integral) or dilation_factor < 1:
        raise ValueError(f"dilation_factor must be an integer >= 1, got {dilation_factor!r}")
    for name, value in (("volume_threshold", volume_threshold), ("missing_hd95", missing_hd95)):
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
            raise ValueError(f"{name} must be a finite number, got {value!r}")


def lesion_wise_metrics(pred, ref, sampling=None, dilation_factor=3, volume_threshold=50, missing_hd95=374.0):
    """Lesion-wise Dice and HD95 with the BraTS 2023 matching rule, for every slice of a batch.

    The reference is the challenges' ``metrics.py``
    (github.com/rachitsaluja/BraTS-2023-Metrics: ``get_LesionWiseScores``,
    ``get_LesionWiseResults``), per slice ``(b, c)`` of one tissue (WT, TC,
    ET: one channel each):

    1. The lesions of ``ref`` are its 26-connected components, those
       whose dilations meet merged into one: ``ref`` dilated
       ``dilation_factor`` times by ``generate_binary_structure(3, 2)``, the
       dilation's 26-connected components taken as regions, and each lesion
       is ``ref`` inside one region.
    2. The predicted lesions are the 26-connected components of ``pred``. A
       predicted lesion matches every lesion whose dilated region it
       touches (true positives); a lesion's prediction is the union of the
       predicted lesions that match it.
    3. Each lesion scores the Dice and the HD95 (DeepMind's surfel-weighted
       ``compute_robust_hausdorff(.., 95)``, :func:`surfel_distances`)
       between itself and its prediction: Dice 0 and HD95 ``missing_hd95``
       where nothing matches it (a false negative).
    4. Lesions of volume ``<= volume_threshold`` (voxels times the voxel
       volume) are left out. Every predicted lesion that matches no lesion
       is a false positive scored Dice 0 and HD95 ``missing_hd95``. The
       lesion-wise Dice / HD95 is the mean over the lesions kept and the
       false positives (1 / 0 when there are none).
    5. The legacy scores are the Dice and HD95 of the whole masks (1 / 0 when
       both are empty, HD95 ``missing_hd95`` when one is); sensitivity and
       specificity as GaNDLF's.

    :data:`BRATS_2023` holds each challenge's ``(dilation_factor,
    volume_threshold)`` (GLI, SSA, PED: 3 and 50; MEN: 1 and 50; MET: 1 and 2).

    Parameters
    ----------
    pred, ref : torch.Tensor
        ``(B, C, D, H, W)`` masks of one shape and device: bool, or 0 and 1
        only. The rule is defined on 3-D volumes only.
    sampling : float or sequence of 3 floats, optional
        The voxel spacing (the NIfTI zooms): it scales the volumes and the
        HD95, not the dilation (in voxels). Default 1 (BraTS' 1 mm).
    dilation_factor : int >= 1, optional
        The number of dilations that merge nearby lesions and catch
        predictions near them.
    volume_threshold : float, optional
        Lesions of this volume or less are left out of the scores and counts.
    missing_hd95 : float, optional
        The HD95 of a missed or false lesion (and any infinite HD95): 374.

    Returns
    -------
    LesionWiseResult
        Per slice and per lesion, as its docstring says. ``num_tp`` counts
        the lesions kept that a prediction matches, ``num_fn`` those kept that
        none matches, ``num_fp`` the false positive predicted lesions (not
        thresholded, as the challenge's).

    Notes
    -----
    No loop over slices or lesions: one dilation and two labellings of the
    whole batch, the matches one ``(predicted lesions, lesions)`` table
    scattered from the voxels both masks hold (on the CPU only those voxels
    are read), the volumes and intersections two
    :func:`~morphaug.ndimage.sum_labels` of every slice by its labels;
    the HD95 of the lesions comes from their pairs cut to bounding boxes, each
    box holding one lesion and its prediction alone, one
    :func:`surfel_distances` per size class of box (the next power of 2 along
    each axis; padded to the largest box of its class). Host
    reads (free on the CPU): the numbers of lesions, then the box of each,
    once per call. Memory: the table (predicted lesions x lesions of the
    batch) and the boxes (at most 8 times their voxels).

    Examples
    --------
    >>> import torch
    >>> from morphaug.metrics import lesion_wise_metrics
    >>> ref = torch.zeros(1, 1, 8, 16, 16, dtype=torch.bool)
    >>> ref[0, 0, 2:6, 2:6, 2:6] = True
    >>> pred = ref.clone()
    >>> pred[0, 0, 2:4, 12:14, 12:14] = True  # a false positive lesion
    >>> r = lesion_wise_metrics(pred, ref, volume_threshold=0)
    >>> r.dice.tolist(), r.hd95.tolist(), r.num_tp.tolist(), r.num_fp.tolist()
    ([[0.5]], [[187.0]], [[1]], [[1]])
    """
    pred, ref = volumes(pred, ref)
    if pred.ndim != 5:
        raise ValueError(f"lesion_wise_metrics takes 3-D volumes (B, C, D, H, W), got shape {tuple(pred.shape)}")
    _check_options(dilation_factor, volume_threshold, missing_hd95)
    sampling = _sampling(1.0 if sampling is None else sampling, 3, "euclidean")
    pred, ref = foreground(pred, "pred"), foreground(ref, "ref")
    slices = pred.shape[:2]

    dilated = ndimage.binary_dilation(ref, ndimage.generate_binary_structure(3, 2), iterations=dilation_factor)
    lesion, comp = _components(dilated, _FULL), _components(pred, _FULL)
    counts = torch.stack([lesion.counts, comp.counts])
    lesions, comps, *most = _sync.host_read(torch.cat([counts.sum(1), counts.amax(1)]), "lesion-wise sizes")
    matched = _matched((pred & dilated).flatten(2).flatten(0, 1), comp, lesion, comps, lesions)
    slice_ids = torch.arange(math.prod(slices), device=pred.device)
    lesion_slice = slice_ids.repeat_interleave(lesion.counts, output_size=lesions)
    comp_slice = slice_ids.repeat_interleave(comp.counts, output_size=comps)
    comp_size = _tally(pred[None], comp, comp_slice, most[1])[0]
    gt_count, both = _tally(torch.stack([ref, ref & pred]), lesion, lesion_slice, most[0])
    dice = 2 * both / (gt_count + matched.double().T @ comp_size)
    hd95 = (_lesion_hd95(ref, pred, lesion, comp, matched, (lesion_slice, comp_slice), most, sampling) if lesions
            else dice.new_zeros(0)).nan_to_num(posinf=missing_hd95)
    lesion_matched = matched.any(0)

    volume = gt_count.double() * sampling[0] * sampling[1] * sampling[2]
    kept = volume > volume_threshold
    per_slice = math.prod(slices)

    def slice_sum(values):
        return torch.zeros(per_slice, dtype=values.dtype, device=pred.device).index_add_(0, lesion_slice, values)

    num_fp = torch.zeros(per_slice, dtype=torch.int64, device=pred.device).index_add_(
        0, comp_slice, (~matched.any(1)).long())
    scored = slice_sum(kept.long()) + num_fp
    lesion_dice = torch.where(scored > 0, slice_sum(torch.where(kept, dice, 0.0)) / scored, 1.0)
    lesion_hd95 = torch.where(scored > 0, (slice_sum(torch.where(kept, hd95, 0.0)) + missing_hd95 * num_fp)
                              / scored, 0.0)
    legacy_dice, legacy_hd95, sensitivity, specificity = _legacy(pred, ref, sampling, missing_hd95)
    gt_volume = _voxels(ref).double() * sampling[0] * sampling[1] * sampling[2]
    return LesionWiseResult(
        lesion_dice.view(slices), lesion_hd95.view(slices), slice_sum((kept & lesion_matched).long()).view(slices),
        num_fp.view(slices), slice_sum((kept & ~lesion_matched).long()).view(slices), legacy_dice, legacy_hd95,
        sensitivity, specificity, gt_volume, lesion_slice, volume, lesion_matched, dice, hd95)
