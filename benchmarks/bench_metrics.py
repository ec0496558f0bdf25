"""Metrics suite: HD95 + ASSD + NSD with morphaug against MONAI's metric classes on the same tensors.

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
                reference_s, _agreement(_called(ours, pred, ref), expected, "MONAI's"))]
