"""Metrics suite: HD95 + ASSD + NSD, and panoptic quality, with morphaug against MONAI's metric classes on the
same tensors.

Both sides get the same one-hot float tensors (B x 3 classes, on the device),
the same anisotropic spacing and the same definitions: background excluded
(MONAI's default), HD at the 95th percentile, symmetric ASD, NSD at 1.5 mm
for each class. The reference is MONAI's ``HausdorffDistanceMetric``,
``SurfaceDistanceMetric`` and ``SurfaceDiceMetric``, one call each per
batch, timed once for two rows: morphaug's fused
``morphaug.metrics.surface_distance_metrics`` (one erosion and one set of
distances for the three), and the same three classes from
``morphaug.adapters.monai`` (each its own). The note column says whether
the values agree (float32 rounding: relative 1e-6). Without MONAI (the GPU
machine) the reference is morphaug's three functions, ``hausdorff_distance``,
``average_surface_distance`` and ``normalized_surface_dice`` (what the fused
call saves).

BraTS 2023 lesion-wise and legacy Dice and HD95 (``morphaug.metrics.lesion_wise_metrics``, every sample, tissue and
lesion in one call) against the challenge's own rule per sample and tissue (its ``get_LesionWiseScores``
loop over lesions, on cc3d, SciPy and DeepMind's ``surface_distance``, when those are installed), on
volumes of several lesions each (ellipsoids, the prediction's moved, some missed, some made up).

Panoptic quality: ``PanopticQualityMetric`` (3 classes) of 2-D nuclei-like instance maps (discs, the
prediction's moved, resized, some missed and some made up), morphaug's adapter (every sample and class
in one call) against MONAI's (a loop over samples, classes and instances).
"""

from __future__ import annotations

import warnings

import numpy as np
import torch

from _timing import Row, timeit
from morphaug import metrics

try:
    from monai import metrics as monai_metrics

    from morphaug.adapters import monai as adapters
except ImportError:  # the reference is optional
    monai_metrics = adapters = None

CLASSES = 3
SPACING = (1.5, 0.8, 0.8)
TOLERANCE = [1.5] * (CLASSES - 1)
ARGUMENTS = [("HausdorffDistanceMetric", {"percentile": 95}), ("SurfaceDistanceMetric", {"symmetric": True}),
             ("SurfaceDiceMetric", {"class_thresholds": TOLERANCE})]
FUSED = "HD95 + ASSD + NSD fused (morphaug.metrics.surface_distance_metrics)"


def _one_hot(batch: int, size: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    """Reference: balls of classes 1 and 2; prediction: the same balls, moved and resized a little."""
    rng = np.random.default_rng(0)
    grid = np.indices((size,) * 3)
    labels = np.zeros((2, batch) + (size,) * 3, dtype=np.int64)
    for b in range(batch):
        for k in range(1, CLASSES):
            for _ in range(3):
                centre = rng.uniform(0.25 * size, 0.75 * size, 3)
                radius = rng.uniform(0.1 * size, 0.2 * size)
                moved = centre + rng.normal(0, 1.5, 3), radius * rng.uniform(0.85, 1.15)
                for which, (c, r) in enumerate([(centre, radius), moved]):
                    labels[which, b][((grid - c.reshape(3, 1, 1, 1)) ** 2).sum(0) <= r ** 2] = k
    onehot = torch.nn.functional.one_hot(torch.from_numpy(labels), CLASSES).movedim(-1, 2).float().to(device)
    return onehot[1], onehot[0]


def fused(pred, ref) -> list[torch.Tensor]:
    """HD95, ASSD and NSD of the foreground classes in one call."""
    return list(metrics.surface_distance_metrics(pred[:, 1:], ref[:, 1:], TOLERANCE, 95, SPACING))


def separate(pred, ref) -> list[torch.Tensor]:
    """The same three from morphaug's three functions (the reference without MONAI)."""
    pred, ref = pred[:, 1:], ref[:, 1:]
    return [metrics.hausdorff_distance(pred, ref, 95, sampling=SPACING),
            metrics.average_surface_distance(pred, ref, True, SPACING),
            metrics.normalized_surface_dice(pred, ref, TOLERANCE, SPACING)]


def _classes(module) -> list:
    return [getattr(module, name)(**kwargs) for name, kwargs in ARGUMENTS]


def _called(classes: list, pred, ref) -> list[torch.Tensor]:
    with warnings.catch_warnings():  # MONAI warns about empty classes
        warnings.simplefilter("ignore")
        return [metric(y_pred=pred, y=ref, spacing=SPACING) for metric in classes]


def _agreement(ours: list[torch.Tensor], theirs: list[torch.Tensor], reference: str) -> str:
    pairs = list(zip(ours, theirs))
    differences = [float(((a - b).abs() / b.abs().clamp(min=1e-12)).nan_to_num(0.0).max()) for a, b in pairs]
    agree = all(torch.equal(a.isnan(), b.isnan()) for a, b in pairs)
    return (f"equal to {reference} (max relative diff {max(differences):.1e})"
            if agree and max(differences) < 1e-6 else "OUTPUTS DIFFER")


def _instances(batch: int, size: int, count: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(B, 2, size, size)`` float maps, an instance and a class channel: reference discs, and the prediction's
    (moved and resized; one in ten missed, one in ten made up)."""
    rng = np.random.default_rng(1)
    grid = np.indices((size, size)).reshape(2, -1)
    maps = np.zeros((2, batch, 2, size * size))
    for b in range(batch):
        for i in range(1, count + 1):
            centre, radius, kind = rng.uniform(0, size, 2), rng.uniform(3, 8), rng.integers(1, CLASSES + 1)
            made_up, missed = rng.random() < 0.1, rng.random() < 0.1
            moved = (centre + rng.normal(0, 1, 2), radius * rng.uniform(0.8, 1.2))
            for which, (c, r) in enumerate([(centre, radius), moved]):
                if (which == 0 and made_up) or (which == 1 and missed):
                    continue
                inside = ((grid - c[:, None]) ** 2).sum(0) <= r ** 2
                maps[which, b, 0, inside], maps[which, b, 1, inside] = i, kind
    ref, pred = torch.from_numpy(maps).float().view(2, batch, 2, size, size)
    return pred, ref


def _lesions(batch: int, size: int) -> tuple[np.ndarray, np.ndarray]:
    """``(B, 3, size^3)`` masks (three tissues) of 2 to 8 ellipsoid lesions, and their predictions (moved
    and resized; one in five missed, one in five made up)."""
    rng = np.random.default_rng(2)
    grid = np.indices((size,) * 3).reshape(3, -1).T
    masks = np.zeros((2, batch, 3, size ** 3), dtype=bool)
    for b, c in np.ndindex(batch, 3):
        for _ in range(rng.integers(2, 9)):
            centre, radii = rng.uniform(0, size, 3), rng.uniform(1, 0.12 * size, 3)
            moved = centre + rng.normal(0, 1, 3), radii * rng.uniform(0.8, 1.2, 3)
            for which, (at, r) in enumerate([(centre, radii), moved]):
                if rng.random() < 0.2:
                    continue
                masks[which, b, c] |= (((grid - at) / r) ** 2).sum(1) <= 1
    ref, pred = masks.reshape(2, batch, 3, size, size, size)
    return pred, ref


def _brats_reference(pred: np.ndarray, ref: np.ndarray, dilation: int, threshold: float) -> tuple[float, float]:
    """The challenge's lesion-wise Dice and HD95 of one volume and tissue (its metrics.py, unit spacing), with
    the legacy (whole mask) Dice and HD95 it computes too."""
    import cc3d
    import scipy.ndimage as ndi
    import surface_distance

    np.Inf = np.inf  # surface_distance 0.1 predates NumPy 2
    legacy = (2 * (pred & ref).sum() / max(pred.sum() + ref.sum(), 1),
              surface_distance.compute_robust_hausdorff(surface_distance.compute_surface_distances(ref, pred, (1,) * 3),
                                                        95))
    struct = ndi.generate_binary_structure(3, 2)
    pred_cc = cc3d.connected_components(pred, connectivity=26)
    regions = cc3d.connected_components(ndi.binary_dilation(ref, struct, dilation), connectivity=26)
    kept, matched = [], set()
    for lesion in range(1, regions.max() + 1):
        gt = ref & (regions == lesion)
        hits = np.unique(pred_cc[ndi.binary_dilation(gt, struct, dilation)])
        hits = hits[hits != 0]
        matched.update(hits.tolist())
        found = np.isin(pred_cc, hits)
        hd = surface_distance.compute_robust_hausdorff(surface_distance.compute_surface_distances(gt, found, (1,) * 3),
                                                       95)
        if gt.sum() > threshold:
            kept.append((2 * (gt & found).sum() / (gt.sum() + found.sum()), min(hd, 374)))
    false = pred_cc.max() - len(matched)
    n = len(kept) + false
    scores = (sum(d for d, _ in kept) / n, (sum(h for _, h in kept) + 374 * false) / n) if n else (1.0, 0.0)
    return scores + legacy


def brats(device: torch.device, quick: bool) -> Row:
    batch, size = (1, 48) if quick else (2, 96)
    dilation, threshold = metrics.BRATS_2023["BraTS-GLI"]
    pred, ref = _lesions(batch, size)
    tp, tr = torch.from_numpy(pred).to(device), torch.from_numpy(ref).to(device)
    shape = f"{batch}x3x{size}^3 bool, 2-8 lesions per tissue"
    repeat = 1 if quick else 3
    ours_s = timeit(lambda: metrics.lesion_wise_metrics(tp, tr, None, dilation, threshold), device, repeat=repeat)
    got = metrics.lesion_wise_metrics(tp, tr, None, dilation, threshold)
    name = "BraTS 2023 lesion-wise Dice + HD95 (morphaug.metrics.lesion_wise_metrics)"
    try:
        def reference():
            return [_brats_reference(pred[b, c], ref[b, c], dilation, threshold) for b, c in np.ndindex(batch, 3)]
        reference_s = timeit(reference, device, repeat=1, warmup=0)
    except ImportError as missing:
        return Row(name, shape, device.type, ours_s, "BraTS-2023-Metrics rule per sample", float("nan"),
                   f"{missing.name} not installed")
    want = torch.tensor(reference(), dtype=torch.float64).view(batch, 3, 4).nan_to_num(posinf=374.0)
    mine = torch.stack([got.dice, got.hd95, got.legacy_dice, got.legacy_hd95], -1).cpu()
    note = ("equal to the challenge's" if torch.allclose(mine, want, rtol=1e-9, atol=1e-9) else "OUTPUTS DIFFER")
    return Row(name, shape, device.type, ours_s, "BraTS-2023-Metrics rule per sample and tissue (cc3d, scipy, "
               "surface_distance)", reference_s, note)


def panoptic(device: torch.device, quick: bool) -> Row:
    batch, size, count = (2, 64, 10) if quick else (8, 256, 60)
    pred, ref = (x.to(device) for x in _instances(batch, size, count))
    shape = f"{batch}x2x{size}^2 instance + class maps, {count} instances, {CLASSES} classes"
    ours, theirs = adapters.PanopticQualityMetric(CLASSES), monai_metrics.PanopticQualityMetric(CLASSES)
    repeat = 1 if quick else 3
    ours_s = timeit(lambda: ours(pred, ref), device, repeat=repeat)
    reference_s = timeit(lambda: theirs(pred, ref), device, repeat=repeat, warmup=0)
    got, want = ours(pred, ref), theirs(pred, ref)
    note = "equal to MONAI's" if torch.allclose(got, want, rtol=1e-6, atol=1e-6) else "OUTPUTS DIFFER"
    return Row("PanopticQualityMetric (morphaug.adapters.monai)", shape, device.type, ours_s,
               "monai.metrics.PanopticQualityMetric", reference_s, note)


def run(device: torch.device, quick: bool) -> list[Row]:
    batch, size = (2, 32) if quick else (8, 96)
    repeat = 1 if quick else 3
    pred, ref = _one_hot(batch, size, device)
    shape = f"{batch}x{CLASSES}x{size}^3 one-hot float32, spacing {SPACING}"
    fused_s = timeit(lambda: fused(pred, ref), device, repeat=repeat)
    if adapters is None:
        separate_s = timeit(lambda: separate(pred, ref), device, repeat=repeat)
        note = "monai not installed; " + _agreement(fused(pred, ref), separate(pred, ref), "the three functions'")
        return [Row(FUSED, shape, device.type, fused_s, "morphaug.metrics hausdorff_distance + "
                    "average_surface_distance + normalized_surface_dice", separate_s, note), brats(device, quick)]
    ours, theirs = _classes(adapters), _classes(monai_metrics)
    classes_s = timeit(lambda: _called(ours, pred, ref), device, repeat=repeat)
    reference_s = timeit(lambda: _called(theirs, pred, ref), device, repeat=repeat, warmup=0)
    expected = _called(theirs, pred, ref)
    reference = "monai.metrics HausdorffDistanceMetric + SurfaceDistanceMetric + SurfaceDiceMetric"
    return [Row(FUSED, shape, device.type, fused_s, reference, reference_s,
                _agreement(fused(pred, ref), expected, "MONAI's")),
            Row("HD95 + ASSD + NSD (morphaug.adapters.monai classes)", shape, device.type, classes_s, reference,
                reference_s, _agreement(_called(ours, pred, ref), expected, "MONAI's")),
            panoptic(device, quick), brats(device, quick)]
