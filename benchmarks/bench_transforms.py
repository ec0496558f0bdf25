"""Transforms suite: morphaug batch transforms against the per-sample SciPy loops they replace.

* RandLabelMorphology (4 classes, ball radius 1..5, the four ops) against the
  batchgenerators / nnU-Net way: per sample, per class, a scipy.ndimage
  binary op with a ball of the drawn radius, then the same class precedence.
* DistanceMap(signed=True) against a per-sample, per-class SciPy loop
  computing the same map (boundary erosion + one EDT per class).

Both sides compute the same draw (replayed from ``last_params``) and the
note column says whether their outputs are equal.
"""

from __future__ import annotations

import numpy as np
import torch

from _timing import Row, timeit
from morphaug.transforms import DistanceMap, RandLabelMorphology

try:
    import scipy.ndimage as ndi
except ImportError:  # the reference is optional
    ndi = None

NUM_CLASSES = 4


def _labels(batch: int, size: int, device) -> torch.Tensor:
    """(B, 1, size^3) uint8 labels: overlapping balls of classes 1..3."""
    rng = np.random.default_rng(0)
    grid = np.indices((size,) * 3)
    out = np.zeros((batch, 1) + (size,) * 3, dtype=np.uint8)
    for b in range(batch):
        for k in range(1, NUM_CLASSES):
            for _ in range(3):
                center = rng.uniform(0.2 * size, 0.8 * size, 3).reshape(3, 1, 1, 1)
                radius = rng.uniform(0.1 * size, 0.25 * size)
                out[b, 0][((grid - center) ** 2).sum(0) <= radius ** 2] = k
    return torch.from_numpy(out).to(device)


def _ball(radius: int) -> np.ndarray:
    grid = np.indices((2 * radius + 1,) * 3) - radius
    return (grid ** 2).sum(0) <= radius ** 2


def scipy_label_morphology(labels: np.ndarray, params: dict, ops, fill_value: int = 0) -> np.ndarray:
    """Per sample, per class: the drawn scipy binary op with a ball; then the precedence rule."""
    binary = {"dilation": ndi.binary_dilation, "erosion": ndi.binary_erosion,
              "opening": ndi.binary_opening, "closing": ndi.binary_closing}
    out = labels.copy()
    for b in range(labels.shape[0]):
        if not params["apply"][b]:
            continue
        label = labels[b, 0]
        old, new = [], []
        for j, c in enumerate(range(1, NUM_CLASSES)):
            mask = label == c
            if params["class_apply"][b, j]:
                changed = binary[ops[params["op"][b, j]]](mask, structure=_ball(int(params["radius"][b, j])))
            else:
                changed = mask
            old.append(mask)
            new.append(changed)
        result = label.copy()
        for m, n in zip(old, new):
            result[m & ~n] = fill_value
        for m, n, c in zip(old, new, range(1, NUM_CLASSES)):
            result[n & ~m] = c
        out[b, 0] = result
    return out


def scipy_signed_distance(labels: np.ndarray) -> np.ndarray:
    """Per sample, per class: morphaug's signed distance convention with scipy.ndimage."""
    cross = ndi.generate_binary_structure(3, 1)
    shape = labels.shape[2:]
    far = float(np.sqrt((np.asarray(shape, float) ** 2).sum()))
    out = np.empty((labels.shape[0], NUM_CLASSES) + shape, dtype=np.float32)
    for b in range(labels.shape[0]):
        for c in range(NUM_CLASSES):
            mask = labels[b, 0] == c
            boundary = mask & ~ndi.binary_erosion(mask, cross, border_value=1)
            if boundary.any():
                distance = ndi.distance_transform_edt(~boundary)
                out[b, c] = np.where(mask & ~boundary, -distance, distance)
            else:
                out[b, c] = -far if mask.all() else far
    return out


def run(device: torch.device, quick: bool) -> list[Row]:
    batch, size = (2, 32) if quick else (8, 96)
    repeat = 1 if quick else 3
    labels = _labels(batch, size, device)
    shape = f"{batch}x1x{size}^3 uint8, {NUM_CLASSES} classes"
    data = {"label": labels}
    rows = []

    generator = torch.Generator(device).manual_seed(0)
    morph = RandLabelMorphology("label", radius=(1, 5), footprint="ball", prob=1.0, num_classes=NUM_CLASSES,
                                generator=generator)
    ours = morph(data)["label"]
    params = morph.last_params
    ours_s = timeit(lambda: morph(data, params=params), device, repeat=repeat)
    reference_s, note = float("nan"), "scipy not installed"
    if ndi is not None:
        host = {k: v.cpu().numpy() for k, v in params.items()}
        source = labels.cpu().numpy()
        expected = scipy_label_morphology(source, host, morph.ops)
        reference_s = timeit(lambda: scipy_label_morphology(source, host, morph.ops), "cpu",
                             repeat=repeat, warmup=0)
        note = "identical" if np.array_equal(ours.cpu().numpy(), expected) else "OUTPUTS DIFFER"
    rows.append(Row("RandLabelMorphology ball r=1..5", shape, device.type, ours_s,
                    "scipy.ndimage binary op loop (batchgenerators)", reference_s, note))

    sdf = DistanceMap("label", signed=True, num_classes=NUM_CLASSES)
    ours = sdf(data)["label"]
    ours_s = timeit(lambda: sdf(data), device, repeat=repeat)
    reference_s, note = float("nan"), "scipy not installed"
    if ndi is not None:
        source = labels.cpu().numpy()
        expected = scipy_signed_distance(source)
        reference_s = timeit(lambda: scipy_signed_distance(source), "cpu", repeat=repeat, warmup=0)
        error = float(np.abs(ours.cpu().numpy() - expected).max())
        note = f"max abs diff {error:.1e}"
    rows.append(Row("DistanceMap signed euclidean", shape, device.type, ours_s,
                    "scipy.ndimage EDT loop per sample and class", reference_s, note))
    return rows
