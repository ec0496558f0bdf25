"""MONAI drop-ins suite: ``morphaug.adapters.monai``'s classes under MONAI's names against MONAI's own.

Each MONAI post-processing transform that morphaug replaces, with the same arguments, on the same
label maps (balls of classes 1..3, ``(1, size^3)`` per sample, float32 as a network's argmax leaves
them): per sample, as a MONAI ``Compose`` in a DataLoader worker calls it (both sides loop over the
samples of the batch), and batched (morphaug's ``batched=True`` on the collated ``(B, 1, *spatial)``
batch, one call) against MONAI's per-sample loop. The note says whether the outputs are identical.
Without MONAI there is nothing to compare: the suite returns no rows.
"""

from __future__ import annotations

import warnings

import numpy as np
import torch

from _timing import Row, measure

try:
    import monai.transforms as theirs

    from morphaug.adapters import monai as ours
except ImportError:  # the reference is optional
    theirs = ours = None

#: ``(name, arguments, what the input is)``: each transform as a MONAI pipeline configures it.
CASES = [
    ("KeepLargestConnectedComponent", {"applied_labels": [1, 2, 3]}, "labels"),
    ("RemoveSmallObjects", {"min_size": 200}, "mask"),
    ("FillHoles", {"applied_labels": [1, 2, 3]}, "labels"),
    ("LabelFilter", {"applied_labels": [1, 3]}, "labels"),
    ("LabelToContour", {}, "mask"),
    ("DistanceTransformEDT", {}, "mask"),
]


def _labels(batch: int, size: int) -> torch.Tensor:
    """``(B, 1, size^3)`` float32 labels: overlapping balls of classes 1..3 with a few holes."""
    rng = np.random.default_rng(2)
    grid = np.indices((size,) * 3)
    out = np.zeros((batch, 1) + (size,) * 3, dtype=np.float32)
    for b in range(batch):
        for k in (1, 2, 3):
            for _ in range(3):
                centre = rng.uniform(0.2 * size, 0.8 * size, 3).reshape(3, 1, 1, 1)
                radius = rng.uniform(0.08 * size, 0.2 * size)
                out[b, 0][((grid - centre) ** 2).sum(0) <= radius ** 2] = k
        out[b, 0][rng.random((size,) * 3) < 0.002] = 0  # holes and specks
        out[b, 0][rng.random((size,) * 3) < 0.0005] = 1
    return torch.from_numpy(out)


def _each(transform, batch: torch.Tensor) -> torch.Tensor:
    """``transform`` on each sample in turn (on a copy: MONAI may write into its input)."""
    with warnings.catch_warnings():  # skimage 0.26 deprecates the min_size MONAI passes
        warnings.simplefilter("ignore", FutureWarning)
        return torch.stack([torch.as_tensor(transform(sample.clone())).as_subclass(torch.Tensor)
                            for sample in batch])


def run(device: torch.device, quick: bool) -> list[Row]:
    if ours is None or device.type != "cpu":  # MONAI's classes run on the host here
        return []
    batch, size = (2, 24) if quick else (8, 96)
    labels = _labels(batch, size)
    inputs = {"labels": labels, "mask": (labels > 0).float()}
    rows = []
    for name, arguments, kind in CASES:
        x = inputs[kind]
        shape = f"{batch}x1x{size}^3 float32 {kind}"
        reference = getattr(theirs, name)(**arguments)
        expected, reference_s = measure(lambda: _each(reference, x), device, quick)
        per_sample = getattr(ours, name)(**arguments)
        got, ours_s = measure(lambda: _each(per_sample, x), device, quick)
        same = "identical" if torch.equal(got, expected) else "OUTPUTS DIFFER"
        rows.append(Row(f"{name} per sample", shape, device.type, ours_s, f"monai {name} per sample",
                        reference_s, same))
        batched = getattr(ours, name)(**arguments, batched=True)
        got, batched_s = measure(lambda: torch.as_tensor(batched(x)).as_subclass(torch.Tensor), device, quick)
        same = "identical" if torch.equal(got, expected) else "OUTPUTS DIFFER"
        rows.append(Row(f"{name} batched=True", shape, device.type, batched_s, f"monai {name} per sample",
                        reference_s, same))
    return rows
