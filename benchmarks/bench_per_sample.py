"""Per-sample calls: one 1x1x64^3 or 1x1x32^3 volume at a time, as a DataLoader worker makes them.

The demo's ops (``make demo``) and a box erosion, each timed on the demo's
phantom (one sample) against SciPy on the same volume. Small inputs are where
a parallel region costs more than it saves, and where a busy core hurts
most: ``benchmarks/run.py --busy N`` runs this suite again beside N busy
processes (see ``run.py``). Times are the median of 15 calls after a warm-up.
"""

from __future__ import annotations

import numpy as np
import scipy.ndimage as ndi
import torch

import morphaug.ndimage as mnd
from morphaug.demo import make_phantom
from morphaug.footprints import ball
from _timing import Row, timeit

SCIPY = "scipy.ndimage"


def _cases(labels: torch.Tensor, image: torch.Tensor):
    """``(name, morphaug call, SciPy call)`` for one sample's volumes."""
    element, element_np = ball(1), ball(1).numpy()
    mask = labels == 1
    mask_np, labels_np, image_np = mask[0, 0].numpy(), labels[0, 0].numpy(), image[0, 0].numpy()
    return [
        ("binary_fill_holes", lambda: mnd.binary_fill_holes(mask), lambda: ndi.binary_fill_holes(mask_np)),
        ("binary_opening, ball r=1", lambda: mnd.binary_opening(mask, element),
         lambda: ndi.binary_opening(mask_np, element_np)),
        ("binary_closing, ball r=1", lambda: mnd.binary_closing(mask, element),
         lambda: ndi.binary_closing(mask_np, element_np)),
        ("distance_transform_edt", lambda: mnd.distance_transform_edt(mask),
         lambda: ndi.distance_transform_edt(mask_np)),
        ("distance_transform_cdt chessboard", lambda: mnd.distance_transform_cdt(mask),
         lambda: ndi.distance_transform_cdt(mask_np)),
        ("morphological_gradient on labels, size=3", lambda: mnd.morphological_gradient(labels, size=3),
         lambda: ndi.morphological_gradient(labels_np, size=3)),
        ("grey_opening of image, ball r=1", lambda: mnd.grey_opening(image, footprint=element),
         lambda: ndi.grey_opening(image_np, footprint=element_np)),
        ("grey_erosion of image, size=3", lambda: mnd.grey_erosion(image, size=3),
         lambda: ndi.grey_erosion(image_np, size=3)),
    ]


def run(device: torch.device, quick: bool) -> list[Row]:
    if device.type != "cpu":
        return []  # per-sample calls on the host, where DataLoader workers make them
    rows = []
    for size in (8, 12) if quick else (64, 32):
        labels, image = make_phantom(1, size, seed=size)
        shape = f"1x1x{size}^3"
        for name, ours, theirs in _cases(labels, image):
            diff = np.abs(np.asarray(ours(), dtype=np.float64)[0, 0] - np.asarray(theirs(), dtype=np.float64)).max()
            repeat = 1 if quick else 51  # medians of sub-millisecond calls need many
            rows.append(Row(f"{name} (per sample)", shape, device.type, timeit(ours, device, repeat=repeat),
                            SCIPY, timeit(theirs, device, repeat=repeat), f"max abs diff {diff:.3g}"))
    return rows
