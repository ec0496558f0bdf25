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
                    "average_surface_distance + normalized_surface_dice", separate_s, note)]
    ours, theirs = _classes(adapters), _classes(monai_metrics)
    classes_s = timeit(lambda: _called(ours, pred, ref), device, repeat=repeat)
    reference_s = timeit(lambda: _called(theirs, pred, ref), device, repeat=repeat, warmup=0)
    expected = _called(theirs, pred, ref)
    reference = "monai.metrics HausdorffDistanceMetric + SurfaceDistanceMetric + SurfaceDiceMetric"
    return [Row(FUSED, shape, device.type, fused_s, reference, reference_s,
                _agreement(fused(pred, ref), expected, "MONAI's")),
            Row("HD95 + ASSD + NSD (morphaug.adapters.monai classes)", shape, device.type, classes_s, reference,
                reference_s, _agreement(_called(ours, pred, ref), expected, "MONAI's")),
            panoptic(device, quick)]
