"""Skeletons suite: ``morphaug.morphology`` against a per-volume scikit-image loop on the same masks.

3-D: ``skeletonize`` of 4x1x128^3 tubes (thin dilated segments, about 0.6 % of the volume) and blobs
(thresholded smooth noise, 30 %) against ``skimage.morphology.skeletonize`` (Lee) volume by volume:
``method="lee"`` (native CPU kernel, bit for bit) and ``method="parallel"`` (topology-preserving, any
device; not equal to Lee's, the note says by how many voxels). 2-D: ``skeletonize`` (Zhang) and
``thin`` of 16x1x512^2 blobs against scikit-image's loop. Skeleton Recall targets
(``transforms.SkeletonTarget``) of 8x1x128^3 labels of 3 classes of tubes against nnU-Net's recipe sample
by sample (skimage ``skeletonize``, ``dilation`` twice, times the label). The note column says whether the
outputs agree.
"""

from __future__ import annotations

import os

import numpy as np
import scipy.ndimage as ndi
import skimage.morphology
import torch

from _timing import Row, measure
from morphaug import _ops, morphology, transforms

SKIMAGE = "skimage.morphology.{} per volume"


def _tubes(rng, shape) -> np.ndarray:
    out = np.zeros(shape, bool)
    for _ in range(12):
        start, end = rng.integers(0, shape, (2, len(shape)))
        points = np.rint(np.linspace(start, end, int(np.abs(end - start).max()) + 1)).astype(int)
        out[tuple(points.T)] = True
    return ndi.binary_dilation(out, iterations=2)


def _blobs(rng, shape) -> np.ndarray:
    field = ndi.gaussian_filter(rng.standard_normal(shape), sigma=max(shape) / 20)
    return field > np.quantile(field, 0.7)


def _batch(kind, batch: int, shape, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.stack([kind(rng, shape) for _ in range(batch)])[:, None]


def _class_tubes(rng, shape, classes: int = 3) -> np.ndarray:
    """A label map of ``classes`` classes of tubes (later classes over earlier ones)."""
    out = np.zeros(shape, np.int16)
    for k in range(1, classes + 1):
        out[_tubes(rng, shape)] = k
    return out


def _skeleton_recall(seg: np.ndarray) -> np.ndarray:
    """nnU-Net's Skeleton Recall target of one sample (``SkeletonTransform(do_tube=True)``)."""
    bin_seg = seg > 0
    out = np.zeros(seg.shape, dtype=np.int16)
    if bin_seg.sum():
        skel = (skimage.morphology.skeletonize(bin_seg) > 0).astype(np.int16)
        skel = skimage.morphology.dilation(skimage.morphology.dilation(skel))
        out = skel * seg.astype(np.int16)
    return out


def _agreement(ours: torch.Tensor, theirs: list[np.ndarray], exact: bool) -> str:
    differ = int((ours.cpu().numpy()[:, 0] != np.stack(theirs)).sum())
    if exact:
        return "identical to scikit-image" if differ == 0 else f"OUTPUTS DIFFER ({differ} voxels)"
    return f"topology-preserving; {differ} voxels differ from Lee's"


def _row(case, shape, device, call, x_np, reference, name, exact) -> Row:
    ours, ours_s = measure(call, device, False)
    theirs, theirs_s = measure(lambda: [reference(v[0]) for v in x_np], "cpu", False)
    return Row(case, shape, device.type, ours_s, SKIMAGE.format(name), theirs_s, _agreement(ours, theirs, exact))


def run(device: torch.device, quick: bool) -> list[Row]:
    rows = []
    size, batch = (24, 2) if quick else (128, 4)
    lee = (device.type == "cpu" and _ops.why_not("skeletonize_lee", "cpu") is None
           and os.environ.get("MORPHAUG_BACKEND", "").strip().lower() != "torch")  # the kernel is on
    for kind in (_tubes, _blobs):
        x_np = _batch(kind, batch, (size,) * 3)
        x = torch.from_numpy(x_np).to(device)
        shape = f"{batch}x1x{size}^3 {kind.__name__[1:]}"
        reference = skimage.morphology.skeletonize
        for method in (["lee"] if lee else []) + ["parallel"]:
            rows.append(_row(f"skeletonize method={method!r}", shape, device,
                             lambda: morphology.skeletonize(x, method=method), x_np, reference, "skeletonize",
                             exact=method == "lee"))
    size, batch = (24, 2) if quick else (128, 8)
    x_np = _batch(_class_tubes, batch, (size,) * 3)
    x = torch.from_numpy(x_np).to(device)
    for method in (["lee"] if lee else []) + ["parallel"]:
        target = transforms.SkeletonTarget("label", method=None if method == "lee" else method)
        rows.append(_row(f"SkeletonTarget method={method!r}", f"{batch}x1x{size}^3 3 classes of tubes", device,
                         lambda: target(x), x_np, _skeleton_recall, "skeletonize + dilation x2 (nnU-Net recipe)",
                         exact=method == "lee"))
    size, batch = (32, 2) if quick else (512, 16)
    x_np = _batch(_blobs, batch, (size,) * 2)
    x = torch.from_numpy(x_np).to(device)
    shape = f"{batch}x1x{size}^2 blobs"
    rows.append(_row("skeletonize (zhang)", shape, device, lambda: morphology.skeletonize(x), x_np,
                     skimage.morphology.skeletonize, "skeletonize", exact=True))
    rows.append(_row("thin", shape, device, lambda: morphology.thin(x), x_np, skimage.morphology.thin, "thin",
                     exact=True))
    return rows
