"""Metrics suite: HD95 + ASSD + NSD with morphaug's MONAI metric classes against MONAI's own.

Both sides get the same one-hot float tensors (B x 3 classes, on the device,
background excluded as MONAI's default), the same anisotropic ``spacing``
and the same arguments: ``HausdorffDistanceMetric(percentile=95)``,
``SurfaceDistanceMetric(symmetric=True)`` and ``SurfaceDiceMetric([1.5, 1.5])``
from ``morphaug.adapters.monai`` and from ``monai.metrics``. The note column
says whether the values agree (float32 rounding: relative 1e-6).
"""

from __future__ import annotations

import warnings

import numpy as np
import torch

from _timing import Row, timeit

try:
    from monai import metrics as monai_metrics

    from morphaug.adapters import monai as adapters
except ImportError:  # the reference is optional
    monai_metrics = adapters = None

CLASSES = 3
SPACING = (1.5, 0.8, 0.8)
ARGUMENTS = [("HausdorffDistanceMetric", {"percentile": 95}), ("SurfaceDistanceMetric", {"symmetric": True}),
             ("SurfaceDiceMetric", {"class_thresholds": [1.5, 1.5]})]


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


def _all(classes: dict, pred, ref) -> list[torch.Tensor]:
    with warnings.catch_warnings():  # MONAI warns about empty classes
        warnings.simplefilter("ignore")
        return [metric(y_pred=pred, y=ref, spacing=SPACING) for metric in classes.values()]


def run(device: torch.device, quick: bool) -> list[Row]:
    if adapters is None:
        return [Row("HD95 + ASSD + NSD", "-", device.type, float("nan"), "monai.metrics classes", float("nan"),
                    "monai not installed")]
    batch, size = (2, 32) if quick else (8, 96)
    repeat = 1 if quick else 3
    pred, ref = _one_hot(batch, size, device)
    ours = {name: getattr(adapters, name)(**kwargs) for name, kwargs in ARGUMENTS}
    theirs = {name: getattr(monai_metrics, name)(**kwargs) for name, kwargs in ARGUMENTS}
    ours_s = timeit(lambda: _all(ours, pred, ref), device, repeat=repeat)
    reference_s = timeit(lambda: _all(theirs, pred, ref), device, repeat=repeat, warmup=0)
    pairs = list(zip(_all(ours, pred, ref), _all(theirs, pred, ref)))
    differences = [float(((a - b).abs() / b.abs().clamp(min=1e-12)).nan_to_num(0.0).max()) for a, b in pairs]
    agree = all(torch.equal(a.isnan(), b.isnan()) for a, b in pairs)
    note = (f"equal to MONAI's (max relative diff {max(differences):.1e})" if agree and max(differences) < 1e-6
            else "OUTPUTS DIFFER")
    shape = f"{batch}x{CLASSES}x{size}^3 one-hot float32, spacing {SPACING}"
    return [Row("HD95 + ASSD + NSD (morphaug.adapters.monai)", shape, device.type, ours_s,
                "monai.metrics HausdorffDistanceMetric + SurfaceDistanceMetric + SurfaceDiceMetric", reference_s, note)]
