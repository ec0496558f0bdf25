"""Transforms suite: morphaug batch transforms against the per-sample SciPy loops they replace.

* RandLabelMorphology (4 classes, ball radius 1..5, the four ops) against the
  batchgenerators / nnU-Net way: per sample, per class, a scipy.ndimage
  binary op with a ball of the drawn radius, then the same class precedence.
* DistanceMap(signed=True) against a per-sample, per-class SciPy loop
  computing the same map (boundary erosion + one EDT per class).
* KeepLargestComponents (3 foreground classes) against MONAI's
  KeepLargestConnectedComponent looped over the samples (skimage labelling).
* RemoveSmallComponents on one-hot labels against MONAI's RemoveSmallObjects
  looped over the samples (skimage's remove_small_objects).
* RandGreyMorphology (the seven grey ops, ball / cube / cross of radius 1..2
  per sample) against a per-sample scipy.ndimage loop with the drawn op and
  footprint.
* RandRemoveComponent (nnU-Net's cascade augmentation, with moves to other
  classes) against batchgeneratorsv2's way: per sample, per class, skimage's
  ``label``, the sizes, one eligible component drawn and reassigned.

Both sides compute the same draw (replayed from ``last_params``) and the
note column says whether their outputs are equal.
"""

from __future__ import annotations

import warnings

import numpy as np
import torch

from _timing import Row, timeit
from morphaug.transforms import (DistanceMap, KeepLargestComponents, RandGreyMorphology, RandLabelMorphology,
                                 RandRemoveComponent, RemoveSmallComponents)

try:
    import scipy.ndimage as ndi
except ImportError:  # the reference is optional
    ndi = None
try:
    from monai.transforms import KeepLargestConnectedComponent, RemoveSmallObjects
    import skimage  # noqa: F401  (MONAI's component transforms need it)
except ImportError:
    KeepLargestConnectedComponent = RemoveSmallObjects = None
try:
    from skimage.measure import label as skimage_label
except ImportError:
    skimage_label = None

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


def _reference(installed: bool, missing: str, call, note, repeat: int) -> tuple[float, str]:
    """The reference's median seconds for ``call()`` on the CPU and ``note(expected)`` (its result checked
    against morphaug's); nan and ``missing`` when it is not installed."""
    if not installed:
        return float("nan"), missing
    expected = call()
    return timeit(call, "cpu", repeat=repeat, warmup=0), note(expected)


def _same(ours: torch.Tensor):
    """A note function: whether the reference's result equals ``ours``."""
    return lambda expected: "identical" if np.array_equal(ours.cpu().numpy(), expected) else "OUTPUTS DIFFER"


def _max_diff(ours: torch.Tensor):
    """A note function: the largest absolute difference between ``ours`` and the reference's result."""
    return lambda expected: f"max abs diff {float(np.abs(ours.cpu().numpy() - expected).max()):.1e}"


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


def _monai_per_sample(transform, labels: torch.Tensor) -> torch.Tensor:
    """A MONAI array transform on each sample of a CPU batch (on a copy: MONAI may write into its input)."""
    with warnings.catch_warnings():  # skimage 0.26 deprecates the min_size MONAI passes
        warnings.simplefilter("ignore", FutureWarning)
        return torch.stack([torch.as_tensor(transform(sample.clone())).as_subclass(torch.Tensor)
                            for sample in labels])


def _monai_min_size(smallest_kept: int) -> int:
    """MONAI's min_size that removes the components of fewer than ``smallest_kept`` voxels: MONAI passes
    min_size positionally to skimage, whose 0.26 forwards it to the inclusive max_size."""
    probe = torch.zeros(1, 1, 4, 4)
    probe[0, 0, 0, :3] = 1
    inclusive = _monai_per_sample(RemoveSmallObjects(min_size=3), probe).sum() == 0
    return smallest_kept - 1 if inclusive else smallest_kept


#: scipy.ndimage's function for each op of RandGreyMorphology.
SCIPY_GREY = {"erosion": "grey_erosion", "dilation": "grey_dilation", "opening": "grey_opening",
              "closing": "grey_closing", "white_tophat": "white_tophat", "black_tophat": "black_tophat",
              "gradient": "morphological_gradient"}


def scipy_grey_morphology(images: np.ndarray, params: dict, ops) -> np.ndarray:
    """Per sample and channel, the drawn scipy.ndimage op with the sample's footprint."""
    out = images.copy()
    for b in range(images.shape[0]):
        if params["apply"][b]:
            op = getattr(ndi, SCIPY_GREY[ops[params["op"][b]]])
            for c in range(images.shape[1]):
                out[b, c] = op(images[b, c], footprint=params["footprints"][b])
    return out


def _grey_morphology_row(device: torch.device, batch: int, size: int, repeat: int) -> Row:
    images = torch.rand(batch, 1, size, size, size, generator=torch.Generator().manual_seed(0)).to(device)
    transform = RandGreyMorphology("image", radius=(1, 2), prob=1.0, generator=torch.Generator(device).manual_seed(0))
    ours = transform(images)
    params = transform.last_params
    ours_s = timeit(lambda: transform(images, params=params), device, repeat=repeat)
    host = {k: v.cpu().numpy() for k, v in params.items()}
    source = images.cpu().numpy()
    reference_s, note = _reference(ndi is not None, "scipy not installed",
                                   lambda: scipy_grey_morphology(source, host, transform.ops), _max_diff(ours), repeat)
    return Row("RandGreyMorphology 7 ops, r=1..2", f"{batch}x1x{size}^3 float32", device.type, ours_s,
               "scipy.ndimage grey op loop per sample", reference_s, note)


def batchgenerators_remove_component(labels: np.ndarray, params: dict, max_fraction: float) -> np.ndarray:
    """batchgeneratorsv2's RemoveRandomConnectedComponentFromOneHotEncodingTransform per sample and
    class on index labels, with the draws of ``params`` (each class labelled in the input)."""
    out = labels.copy()
    for b in range(labels.shape[0]):
        if not params["apply"][b]:
            continue
        classes = params["classes"][b]
        for j, value in enumerate(classes):
            workon = labels[b, 0] == value
            if not params["class_apply"][b, j] or not workon.any():
                continue
            lab = skimage_label(workon, connectivity=workon.ndim)
            sizes = np.bincount(lab.ravel())
            valid = np.flatnonzero(sizes < workon.size * max_fraction)
            valid = valid[valid > 0]
            if not len(valid):
                continue
            pick = valid[min(int(float(params["component"][b, j]) * len(valid)), len(valid) - 1)]
            other = params["other"][b, j]
            moved = params["to_other"][b, j] and other != j
            out[b, 0][lab == pick] = classes[other] if moved else 0
    return out


def _remove_component_row(labels: torch.Tensor, device: torch.device, repeat: int) -> Row:
    batch, _, size = labels.shape[:3]
    transform = RandRemoveComponent("label", prob=1.0, max_fraction=0.15, prob_other_class=0.25,
                                    num_classes=NUM_CLASSES, generator=torch.Generator(device).manual_seed(0))
    ours = transform(labels)
    params = transform.last_params
    ours_s = timeit(lambda: transform(labels, params=params), device, repeat=repeat)
    host = {k: v.cpu().numpy() for k, v in params.items()}
    source = labels.cpu().numpy()
    reference_s, note = _reference(
        skimage_label is not None, "scikit-image not installed",
        lambda: batchgenerators_remove_component(source, host, transform.max_fraction), _same(ours), repeat)
    return Row("RandRemoveComponent max_fraction=0.15, moves p=0.25", f"{batch}x1x{size}^3 uint8, "
               f"{NUM_CLASSES - 1} foreground classes", device.type, ours_s,
               "skimage label loop (batchgeneratorsv2)", reference_s, note)


def _component_rows(labels: torch.Tensor, device: torch.device, repeat: int) -> list[Row]:
    rows = []
    batch, _, size = labels.shape[:3]
    shape = f"{batch}x1x{size}^3 uint8, {NUM_CLASSES - 1} foreground classes"
    keep = KeepLargestComponents("label", num_classes=NUM_CLASSES)
    ours = keep(labels)
    ours_s = timeit(lambda: keep(labels), device, repeat=repeat)
    reference_s, note = float("nan"), "monai / scikit-image not installed"
    if KeepLargestConnectedComponent is not None:
        reference = KeepLargestConnectedComponent(applied_labels=list(range(1, NUM_CLASSES)))
        source = labels.cpu()
        expected = _monai_per_sample(reference, source)
        reference_s = timeit(lambda: _monai_per_sample(reference, source), "cpu", repeat=repeat, warmup=0)
        note = "identical" if torch.equal(ours.cpu(), expected) else "OUTPUTS DIFFER"
    rows.append(Row("KeepLargestComponents", shape, device.type, ours_s,
                    "monai KeepLargestConnectedComponent loop", reference_s, note))

    onehot = torch.nn.functional.one_hot(labels[:, 0].long(), NUM_CLASSES).movedim(-1, 1).to(torch.uint8)
    remove = RemoveSmallComponents("label", min_size=200)
    ours = remove(onehot)
    ours_s = timeit(lambda: remove(onehot), device, repeat=repeat)
    reference_s, note = float("nan"), "monai / scikit-image not installed"
    if RemoveSmallObjects is not None:
        reference = RemoveSmallObjects(min_size=_monai_min_size(200), connectivity=1)
        source = onehot.cpu()
        expected = _monai_per_sample(reference, source)
        reference_s = timeit(lambda: _monai_per_sample(reference, source), "cpu", repeat=repeat, warmup=0)
        same = torch.equal(ours.cpu()[:, 1:], expected[:, 1:])
        note = "foreground channels identical" if same else "OUTPUTS DIFFER"
    rows.append(Row("RemoveSmallComponents min_size=200", f"{batch}x{NUM_CLASSES}x{size}^3 one-hot uint8",
                    device.type, ours_s, "monai RemoveSmallObjects loop", reference_s, note))
    return rows


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
    host = {k: v.cpu().numpy() for k, v in params.items()}
    source = labels.cpu().numpy()
    reference_s, note = _reference(ndi is not None, "scipy not installed",
                                   lambda: scipy_label_morphology(source, host, morph.ops), _same(ours), repeat)
    rows.append(Row("RandLabelMorphology ball r=1..5", shape, device.type, ours_s,
                    "scipy.ndimage binary op loop (batchgenerators)", reference_s, note))

    sdf = DistanceMap("label", signed=True, num_classes=NUM_CLASSES)
    ours = sdf(data)["label"]
    ours_s = timeit(lambda: sdf(data), device, repeat=repeat)
    reference_s, note = _reference(ndi is not None, "scipy not installed",
                                   lambda: scipy_signed_distance(source), _max_diff(ours), repeat)
    rows.append(Row("DistanceMap signed euclidean", shape, device.type, ours_s,
                    "scipy.ndimage EDT loop per sample and class", reference_s, note))
    return (rows + [_grey_morphology_row(device, batch, size, repeat)] + _component_rows(labels, device, repeat)
            + [_remove_component_row(labels, device, repeat)])
