"""Tests of morphaug.transforms.

Correctness is checked against SciPy: for a fixed draw (read from
``last_params``) each sample must equal a per-sample, per-class NumPy/SciPy
reference written independently below. The common contract (keys, subclasses,
randomness, replay, validation) is checked for every transform.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.ndimage as ndi
import torch
from conftest import assert_parity
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import morphaug.footprints as footprints
from morphaug.transforms._morphology import GREY_OPS
from morphaug.transforms import (
    DistanceMap,
    FillHoles,
    KeepLargestComponents,
    LabelBoundary,
    RandBoundaryJitter,
    RandGreyMorphology,
    RandLabelMorphology,
    RandRemoveComponent,
    RemoveSmallComponents,
)

SHAPE3 = (14, 13, 12)
SHAPE2 = (24, 22)


# --------------------------------------------------------------------------- references
def ref_footprint(name: str, radius: int, ndim: int) -> np.ndarray:
    """The footprint named ``name`` of radius ``radius``: the spec of the footprint names."""
    grid = np.indices((2 * radius + 1,) * ndim) - radius
    if name == "ball":
        return (grid ** 2).sum(0) <= radius ** 2
    if name == "cube":
        return np.ones((2 * radius + 1,) * ndim, dtype=bool)
    return np.abs(grid).sum(0) <= radius


SCIPY_BINARY = {
    "dilation": ndi.binary_dilation,
    "erosion": ndi.binary_erosion,
    "opening": ndi.binary_opening,
    "closing": ndi.binary_closing,
}


def combine(label: np.ndarray, old: list, new: list, classes, fill_value) -> np.ndarray:
    """The documented precedence: losses become fill_value, then gains, highest class last."""
    out = label.copy()
    for m, n in zip(old, new):
        out[m & ~n] = fill_value
    for m, n, c in zip(old, new, classes):
        out[n & ~m] = c
    return out


def ref_label_morphology(index: np.ndarray, params: dict, transform, classes) -> np.ndarray:
    out = index.copy()
    ndim = index.ndim - 2
    for b in range(index.shape[0]):
        if not params["apply"][b]:
            continue
        label = index[b, 0]
        old, new = [], []
        for j, c in enumerate(classes):
            mask = label == c
            if params["class_apply"][b, j]:
                op = SCIPY_BINARY[transform.ops[params["op"][b, j]]]
                fp = ref_footprint(transform.footprint[params["footprint"][b, j]], params["radius"][b, j], ndim)
                changed = op(mask, structure=fp)
            else:
                changed = mask
            old.append(mask)
            new.append(changed)
        out[b, 0] = combine(label, old, new, classes, transform.fill_value)
    return out


def diagonal(shape, metric, sampling=None) -> float:
    extent = np.asarray(shape, float) * (1.0 if sampling is None else np.asarray(sampling, float))
    return {"euclidean": float(np.sqrt((extent ** 2).sum())), "taxicab": float(extent.sum()),
            "chessboard": float(extent.max())}[metric]


def distance_to_zero(x: np.ndarray, metric: str, sampling=None) -> np.ndarray:
    if metric == "euclidean":
        return ndi.distance_transform_edt(x, sampling=sampling)
    return ndi.distance_transform_cdt(x, metric=metric).astype(float)


def ref_distance(mask: np.ndarray, metric: str, signed: bool, sampling=None) -> np.ndarray:
    far = diagonal(mask.shape, metric, sampling)
    if not signed:
        return distance_to_zero(~mask, metric, sampling) if mask.any() else np.full(mask.shape, far)
    boundary = mask & ~ndi.binary_erosion(mask, ndi.generate_binary_structure(mask.ndim, 1), border_value=1)
    if not boundary.any():
        return np.full(mask.shape, -far if mask.all() else far)
    distance = distance_to_zero(~boundary, metric, sampling)
    return np.where(mask & ~boundary, -distance, distance)


def onehot(index: torch.Tensor, num_classes: int, dtype=torch.float32) -> torch.Tensor:
    return torch.nn.functional.one_hot(index[:, 0].long(), num_classes).movedim(-1, 1).to(dtype)


# --------------------------------------------------------------------------- data
def random_labels(seed: int, batch: int, shape, num_classes: int = 3) -> torch.Tensor:
    """Index labels (B, 1, *shape) int64: overlapping balls of each class, some on the border."""
    rng = np.random.default_rng(seed)
    grid = np.indices(shape)
    out = np.zeros((batch, 1, *shape), dtype=np.int64)
    for b in range(batch):
        for k in range(1, num_classes):
            for _ in range(2):
                center = rng.uniform(0, shape).reshape(-1, *([1] * len(shape)))
                radius = rng.uniform(1.5, min(shape) / 3)
                out[b, 0][((grid - center) ** 2).sum(0) <= radius ** 2] = k
    if batch > 1 and num_classes > 2:
        out[1][out[1] == num_classes - 1] = 0  # one sample lacks the last class
    return torch.from_numpy(out)


def random_image(seed: int, batch: int, shape) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.rand((batch, 1, *shape), generator=generator)


# --------------------------------------------------------------------------- RandLabelMorphology
@pytest.mark.usefixtures("backend")  # torch and native label morphology
@pytest.mark.parametrize("config", [
    dict(),
    dict(ops=("opening", "closing"), radius=(0, 3), prob_per_class=0.6),
    dict(ops="dilation", footprint="ball", radius=(1, 4), classes=(1, 2), fill_value=0),
    dict(ops=("erosion", "dilation"), footprint=("cube", "cross"), radius=2, fill_value=2),
])
def test_label_morphology_matches_scipy_3d(device, config):
    labels = random_labels(0, 4, SHAPE3).to(device)
    transform = RandLabelMorphology("label", prob=0.8, num_classes=3,
                                    generator=torch.Generator(device).manual_seed(1), **config)
    out = transform({"label": labels})["label"]
    params = {k: v.cpu().numpy() for k, v in transform.last_params.items()}
    expected = ref_label_morphology(labels.cpu().numpy(), params, transform, transform.classes or (1, 2))
    assert_parity(out.cpu().numpy(), expected, exact=True)


@pytest.mark.usefixtures("backend")  # torch and native label morphology
def test_label_morphology_onehot_2d_matches_scipy(device):
    index = random_labels(1, 5, SHAPE2, num_classes=4).to(device)
    labels = onehot(index, 4, torch.uint8)
    transform = RandLabelMorphology("seg", radius=(1, 5), prob=1.0, fill_value=1,
                                    generator=torch.Generator(device).manual_seed(3))
    out = transform({"seg": labels})["seg"]
    assert out.dtype == torch.uint8 and out.shape == labels.shape
    assert torch.equal(out.sum(1), torch.ones_like(out.sum(1)))
    params = {k: v.cpu().numpy() for k, v in transform.last_params.items()}
    expected = ref_label_morphology(index.cpu().numpy(), params, transform, (1, 2, 3))
    assert_parity(out.argmax(1, keepdim=True).cpu().numpy(), expected, exact=True)


def ref_onehot_morphology(onehot: np.ndarray, params: dict, transform) -> np.ndarray:
    """One-hot morphology: voxels that no drawn class changes keep all their channels; a changed voxel
    becomes one class, the highest class gaining it, else ``fill_value``."""
    out = onehot.copy()
    ndim = onehot.ndim - 2
    for b in range(onehot.shape[0]):
        if not params["apply"][b]:
            continue
        value = np.full(onehot.shape[2:], transform.fill_value)
        changed = np.zeros(onehot.shape[2:], bool)
        for j, c in enumerate(params["classes"][b]):
            if not params["class_apply"][b, j]:
                continue
            mask = onehot[b, c] != 0
            op = SCIPY_BINARY[transform.ops[params["op"][b, j]]]
            fp = ref_footprint(transform.footprint[params["footprint"][b, j]], params["radius"][b, j], ndim)
            new = op(mask, structure=fp)
            changed |= new != mask
            value[new & ~mask] = c  # ascending classes: the highest gaining class is written last
        out[b][:, changed] = np.eye(onehot.shape[1], dtype=onehot.dtype)[value[changed]].T
    return out


@pytest.mark.usefixtures("backend")  # torch and native label morphology
def test_label_morphology_onehot_keeps_what_no_drawn_class_changes():
    index = random_labels(12, 4, (12, 12), num_classes=4)
    labels = onehot(index, 4)
    labels[:, 1, 2:6, 2:6] = 1.0  # overlaps with the other classes
    labels[:, :, 9:, :3] = 0.0  # voxels of no class
    labels[:, 2, 0, :] = 2.0  # values other than 0 and 1
    before = labels.clone()
    assert torch.equal(RandLabelMorphology("l", prob=1.0, prob_per_class=0.0)(labels), labels)
    transform = RandLabelMorphology("l", radius=(1, 2), prob=0.8, prob_per_class=0.5,
                                    generator=torch.Generator().manual_seed(5))
    out = transform(labels)
    params = {k: v.numpy() for k, v in transform.last_params.items()}
    assert_parity(out.numpy(), ref_onehot_morphology(labels.numpy(), params, transform), exact=True)
    assert params["apply"].sum() and (~params["class_apply"]).sum()
    assert torch.equal(labels, before)


@pytest.mark.usefixtures("backend")  # torch and native label morphology
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2 ** 16), ops=st.sets(st.sampled_from(["dilation", "erosion", "opening", "closing"]),
       min_size=1), shapes=st.sets(st.sampled_from(["ball", "cube", "cross"]), min_size=1),
       low=st.integers(0, 3), extra=st.integers(0, 2), dtype=st.sampled_from([torch.uint8, torch.int32,
                                                                              torch.float32]))
def test_label_morphology_property(seed, ops, shapes, low, extra, dtype):
    labels = random_labels(seed, 3, (12, 11), num_classes=4).to(dtype)
    transform = RandLabelMorphology("l", ops=sorted(ops), footprint=sorted(shapes), radius=(low, low + extra),
                                    prob=0.9, prob_per_class=0.8, num_classes=4,
                                    generator=torch.Generator().manual_seed(seed))
    out = transform(labels)
    assert out.dtype == dtype
    params = {k: v.numpy() for k, v in transform.last_params.items()}
    expected = ref_label_morphology(labels.numpy(), params, transform, (1, 2, 3))
    assert_parity(out.numpy(), expected, exact=True)


def test_label_morphology_precedence_highest_class_wins():
    labels = torch.zeros(1, 1, 9, 9, dtype=torch.long)
    labels[0, 0, 4, 2] = 1
    labels[0, 0, 4, 6] = 2
    transform = RandLabelMorphology("l", ops="dilation", radius=2, footprint="cross", prob=1.0, num_classes=3)
    out = transform(labels)[0, 0]
    assert out[4, 4] == 2  # both classes gain it
    assert out[4, 3] == 1 and out[4, 5] == 2 and out[4, 0] == 1 and out[4, 8] == 2


@pytest.mark.usefixtures("backend")  # torch and native label morphology
def test_label_morphology_bool_labels():
    labels = random_labels(2, 2, SHAPE2, num_classes=2).bool()
    transform = RandLabelMorphology("l", ops="erosion", radius=1, prob=1.0, footprint="cube")
    out = transform(labels)
    assert out.dtype == torch.bool
    expected = np.stack([ndi.binary_erosion(m, structure=np.ones((3, 3)))
                         for m in labels[:, 0].numpy()])[:, None]
    assert_parity(out.numpy(), expected, exact=True)


# --------------------------------------------------------------------------- RandGreyMorphology
SCIPY_GREY = {
    "erosion": ndi.grey_erosion,
    "dilation": ndi.grey_dilation,
    "opening": ndi.grey_opening,
    "closing": ndi.grey_closing,
    "white_tophat": ndi.white_tophat,
    "black_tophat": ndi.black_tophat,
    "gradient": ndi.morphological_gradient,
}


@pytest.mark.parametrize("ndim", [2, 3])
@pytest.mark.parametrize("config", [dict(), dict(ops=("white_tophat", "gradient"), footprint="ball", mode="nearest")])
def test_grey_morphology_matches_scipy(device, ndim, config):
    shape = SHAPE3 if ndim == 3 else SHAPE2
    image = torch.cat([random_image(0, 6, shape), random_image(1, 6, shape) * 2], 1).to(device)
    transform = RandGreyMorphology("image", prob=0.8, generator=torch.Generator(device).manual_seed(5), **config)
    out = transform({"image": image})["image"]
    params = transform.last_params
    source = image.cpu().numpy()
    for b in range(image.shape[0]):
        shape_name = transform.footprint[params["footprint"][b]]
        radius = int(params["radius"][b])
        element = params["footprints"][b].cpu().numpy()
        margin = (np.asarray(element.shape) - (2 * radius + 1)) // 2
        inner = element[tuple(slice(m, m + 2 * radius + 1) for m in margin)]
        assert_parity(inner, ref_footprint(shape_name, radius, ndim), exact=True)
        assert not element.sum() - inner.sum()
        for c in range(image.shape[1]):
            if params["apply"][b]:
                op = SCIPY_GREY[transform.ops[params["op"][b]]]
                expected = op(source[b, c], footprint=inner, mode=transform.mode)
            else:
                expected = source[b, c]
            assert_parity(out[b, c].cpu().numpy(), expected, exact=False, rtol=0, atol=1e-6)



@pytest.mark.parametrize("whole_batch", [False, True])
@pytest.mark.parametrize("dtype", [torch.uint16, torch.uint32, torch.int8])
def test_grey_morphology_of_integer_images_matches_scipy(dtype, whole_batch, monkeypatch):
    """16- and 32-bit unsigned images (microscopy's uint16 TIFFs), whose differences wrap as NumPy's, and
    signed ones, on both paths; torch has no subtraction, bit flip or index copy for the unsigned ones
    (their signed view does it)."""
    image = torch.randint(-100 if dtype == torch.int8 else 0, 100, (10, 1, 9, 12),
                          generator=torch.Generator().manual_seed(4)).to(dtype)
    transform = RandGreyMorphology("image", radius=(1, 2), prob=1.0, generator=torch.Generator().manual_seed(6))
    out, params = transform(image), transform.last_params
    if whole_batch:
        monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)
        out = transform(image, params=params)
    assert out.dtype == dtype and len(set(params["op"].tolist())) >= 5
    for b in range(image.shape[0]):
        op = SCIPY_GREY[transform.ops[params["op"][b]]]
        expected = op(image[b, 0].numpy(), footprint=params["footprints"][b].numpy(), mode=transform.mode)
        np.testing.assert_array_equal(out[b, 0].numpy(), expected)


@pytest.mark.parametrize("mode", ["reflect", "wrap", "constant"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.uint8, torch.int8, torch.int64,
                                   torch.uint16, torch.uint64, torch.bool])
def test_grey_morphology_by_sample_groups_equals_the_whole_batch_path(dtype, mode, monkeypatch):
    """On the CPU each op runs on the samples that drew it (or an op built on it), gathered by index;
    the accelerators' path gives the same bits: two per-sample extrema of the whole batch (a dilation as
    the reversed erosion of the reversed image: -x, or ~x, unsigned and signed ones), or with a constant
    border every op on the whole batch, a where per op."""
    ops = GREY_OPS if dtype != torch.bool else tuple(op for op in GREY_OPS if op != "gradient")
    image = torch.rand(12, 2, 11, 13, generator=torch.Generator().manual_seed(1)) * 200 - 100 * (dtype == torch.int8)
    image = image > 100 if dtype == torch.bool else image.to(dtype)
    image[0, 0, 3, 4] = math.nan if dtype.is_floating_point else image[0, 0, 3, 4]  # a NaN spreads either way
    transform = RandGreyMorphology("image", ops=ops, radius=(1, 3), prob=0.9, mode=mode, cval=3.0,
                                   generator=torch.Generator().manual_seed(2))
    grouped = transform(image)
    params = transform.last_params
    assert len(set(params["op"][params["apply"]].tolist())) >= 4  # several ops, some built on others
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)  # the whole-batch path
    whole = transform(image, params=params)

    def same(a, b):  # equal values, NaN where NaN (a zero's sign may differ: ties go to another position)
        return torch.equal(a.isnan(), b.isnan()) and torch.equal(a.nan_to_num(), b.nan_to_num()) if (
            dtype.is_floating_point) else torch.equal(a, b)

    assert same(whole, grouped)
    assert not same(grouped, image)
    if dtype.is_floating_point:
        assert grouped.isnan().sum() > 1
    # elements that are not symmetric (given as params): the dilations' reflection
    draws = torch.rand(params["footprints"].shape, generator=torch.Generator().manual_seed(3))
    lopsided = dict(params, footprints=draws < 0.4)
    whole = transform(image, params=lopsided)
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: False)
    assert same(whole, transform(image, params=lopsided))


# --------------------------------------------------------------------------- DistanceMap
@pytest.mark.usefixtures("backend")  # torch and native label morphology
@pytest.mark.parametrize("metric", ["euclidean", "taxicab", "chessboard"])
@pytest.mark.parametrize("signed", [False, True])
def test_distance_map_matches_scipy(device, metric, signed):
    labels = random_labels(3, 3, SHAPE3).to(device)
    labels[2] = 1  # a full class 1 and empty classes 0 and 2
    out = DistanceMap("label", metric=metric, signed=signed, num_classes=3)({"label": labels})["label"]
    assert out.dtype == torch.float32 and out.shape == (3, 3, *SHAPE3)
    assert torch.isfinite(out).all()
    source = labels.cpu().numpy()
    for b in range(3):
        for c in range(3):
            expected = ref_distance(source[b, 0] == c, metric, signed)
            assert_parity(out[b, c].cpu().numpy(), expected,
                          exact=False, rtol=1e-6, atol=1e-6, where=f"sample {b}, class {c}")


@pytest.mark.parametrize("normalize", [None, "max", "diagonal"])
def test_distance_map_sampling_clip_normalize(device, normalize):
    labels = onehot(random_labels(4, 2, SHAPE2).to(device), 3)
    sampling = (0.7, 1.9)
    clip = (-3.0, 5.0)
    transform = DistanceMap("label", output_keys="sdf", signed=True, sampling=sampling, clip=clip,
                            normalize=normalize, classes=(1, 2))
    data = {"label": labels}
    out = transform(data)
    assert out["label"] is labels
    source = labels.cpu().numpy()
    for b in range(2):
        for j, c in enumerate((1, 2)):
            expected = np.clip(ref_distance(source[b, c] != 0, "euclidean", True, sampling), *clip)
            if normalize == "diagonal":
                expected = expected / diagonal(SHAPE2, "euclidean", sampling)
            elif normalize == "max":
                expected = expected / np.abs(expected).max()
            assert_parity(out["sdf"][b, j].cpu().numpy(), expected, exact=False, rtol=1e-5, atol=1e-6)


def test_distance_map_signed_convention():
    labels = torch.zeros(1, 1, 7, 7, dtype=torch.long)
    labels[0, 0, 1:6, 1:6] = 1
    sdf = DistanceMap("l", signed=True, classes=1)(labels)[0, 0]
    assert sdf[3, 3] == -2 and sdf[2, 3] == -1 and sdf[1, 3] == 0 and sdf[0, 3] == 1
    assert sdf[0, 0] == pytest.approx(math.sqrt(2))
    assert not torch.signbit(sdf[1, 1])  # +0 on the boundary, never -0


@pytest.mark.parametrize("shape", [SHAPE3, (1, 9, 7), (6,)])
def test_index_label_boundary_is_each_class_boundary(device, shape):
    from morphaug.transforms._distances import boundary_voxels, label_boundary

    labels = torch.randint(0, 4, (3, 1, *shape), generator=torch.Generator().manual_seed(6)).to(device)
    labels[0] = random_labels(6, 1, shape, num_classes=4) if min(shape) > 4 else 2  # blobs / one class
    masks = labels == torch.arange(4, device=device).view(1, 4, *([1] * len(shape)))
    assert torch.equal(masks & label_boundary(labels), boundary_voxels(masks))


def test_boundary_voxels_erode_by_a_host_cross(monkeypatch):
    """A host element, read on the host: on an accelerator only its 2n + 1 true positions
    are visited (an element on the device would take every position of its 3^n box)."""
    from morphaug.ndimage import _label_distances

    seen = []
    real = _label_distances.binary_erosion
    monkeypatch.setattr(_label_distances, "binary_erosion",
                        lambda x, structure, **kwargs: seen.append(structure) or real(x, structure, **kwargs))
    _label_distances.boundary_voxels(torch.zeros(1, 1, 4, 4, 4, dtype=torch.bool, device="meta"))
    assert seen[0].device.type == "cpu" and int(seen[0].sum()) == 7


# --------------------------------------------------------------------------- LabelBoundary
@pytest.mark.usefixtures("backend")  # torch and native label morphology
@pytest.mark.parametrize("side", ["inner", "outer", "both"])
@pytest.mark.parametrize("footprint", ["ball", "cube", "cross"])
def test_label_boundary_matches_scipy(device, side, footprint):
    labels = random_labels(5, 4, SHAPE3).to(torch.uint8).to(device)
    labels[3] = 2  # full and empty classes
    transform = LabelBoundary("label", output_keys="edge", thickness=(1, 3), side=side, footprint=footprint,
                              prob=0.75, num_classes=3, generator=torch.Generator(device).manual_seed(2))
    out = transform({"label": labels})["edge"]
    assert out.dtype == torch.uint8 and out.shape == (4, 3, *SHAPE3)
    params = transform.last_params
    source = labels.cpu().numpy()
    for b in range(4):
        fp = ref_footprint(footprint, int(params["thickness"][b]), 3)
        for c in range(3):
            mask = source[b, 0] == c
            inner = mask & ~ndi.binary_erosion(mask, fp, border_value=1)
            outer = ndi.binary_dilation(mask, fp) & ~mask
            expected = {"inner": inner, "outer": outer, "both": inner | outer}[side] & bool(params["apply"][b])
            assert_parity(out[b, c].cpu().numpy(), expected, exact=True, where=f"sample {b}, class {c}")


# --------------------------------------------------------------------------- FillHoles
def ref_fill_holes(label: np.ndarray, classes, structure) -> np.ndarray:
    """Background voxels in a class's holes take that class; nested holes go to the smallest filled region."""
    filled = {c: ndi.binary_fill_holes(label == c, structure) for c in classes}
    expected = label.copy()
    for c in sorted(classes, key=lambda c: (-filled[c].sum(), -c)):  # the innermost class is written last
        expected[filled[c] & (label == 0)] = c
    return expected


@pytest.mark.parametrize("connectivity", [1, 2])
def test_fill_holes_matches_scipy(device, connectivity):
    labels = random_labels(6, 3, SHAPE2, num_classes=4)
    labels[0] = 0
    labels[0, 0, 1:22, 1:20] = 2  # class 2 encloses class 1, which encloses background and a class-3 island
    labels[0, 0, 2:21, 2:19] = 0
    labels[0, 0, 4:14, 4:14] = 1
    labels[0, 0, 6:12, 6:12] = 0
    labels[0, 0, 8, 8] = 3
    labels = labels.to(device)
    out = FillHoles("label", num_classes=4, connectivity=connectivity)(labels)
    structure = ndi.generate_binary_structure(2, connectivity)
    source = labels.cpu().numpy()
    for b in range(3):
        expected = ref_fill_holes(source[b, 0], (1, 2, 3), structure)
        assert_parity(out[b, 0].cpu().numpy(), expected, exact=True)
    assert out[0, 0, 8, 8] == 3 and out[0, 0, 7, 7] == 1 and out[0, 0, 3, 3] == 2 and out[0, 0, 0, 0] == 0


def test_fill_holes_onehot_3d():
    index = torch.zeros(2, 1, 7, 7, 7, dtype=torch.long)
    index[:, :, 1:6, 1:6, 1:6] = 2
    index[:, :, 3, 3, 3] = 0
    labels = onehot(index, 3)
    out = FillHoles("l")(labels)
    assert out.dtype == labels.dtype and out[:, 2, 3, 3, 3].tolist() == [1.0, 1.0]
    assert torch.equal(out.sum(1), torch.ones_like(out[:, 0]))


# --------------------------------------------------------------------------- RandBoundaryJitter
def test_boundary_jitter_matches_reference(device):
    labels = random_labels(7, 3, SHAPE3).to(torch.int16).to(device)
    transform = RandBoundaryJitter("label", magnitude=(0.5, 3.0), smoothness=2.0, prob=0.7, num_classes=3,
                                   generator=torch.Generator(device).manual_seed(4))
    out = transform(labels)
    assert out.dtype == torch.int16
    params = {k: v.cpu().numpy().astype(np.float64) for k, v in transform.last_params.items()}
    source = labels.cpu().numpy()
    changed = 0
    for b in range(3):
        label = source[b, 0]
        if not params["apply"][b]:
            assert_parity(out[b, 0].cpu().numpy(), label, exact=True)
            continue
        sdf = np.stack([ref_distance(label == c, "euclidean", True) for c in range(3)])
        score = -sdf + math.sqrt(2) * params["magnitude"][b] * params["field"][b]
        expected = score.argmax(0)
        got = out[b, 0].cpu().numpy()
        top2 = np.sort(score, axis=0)[-2:]
        ties = (top2[1] - top2[0]) < 1e-4
        assert_parity(got[~ties], expected[~ties], exact=True)
        # a voxel only moves when the fields can overcome its distance to the boundary
        reach = math.sqrt(2) * params["magnitude"][b] * np.ptp(params["field"][b]) + 1
        own = np.take_along_axis(sdf, label[None].astype(np.int64), 0)[0]
        assert np.all(np.abs(own[got != label]) <= reach)
        changed += int((got != label).sum())
    assert changed > 0


def test_boundary_jitter_field_is_smooth_unit_normal():
    transform = RandBoundaryJitter("l", smoothness=3.0, num_classes=2, generator=torch.Generator().manual_seed(0))
    field = transform.make_params(torch.zeros(4, 1, 40, 40, dtype=torch.long))["field"]
    assert field.shape == (4, 2, 40, 40)
    assert abs(float(field.mean())) < 0.3 and 0.6 < float(field.std()) < 1.4
    step = (field[..., 1:] - field[..., :-1]).std()
    assert step < 0.4  # neighbours are strongly correlated (white noise would give sqrt(2))


def test_boundary_jitter_zero_magnitude_is_identity():
    labels = onehot(random_labels(8, 2, SHAPE2), 3)
    out = RandBoundaryJitter("l", magnitude=0.0, prob=1.0)(labels)
    assert torch.equal(out, labels)


def test_boundary_jitter_frozen_classes():
    labels = random_labels(9, 2, SHAPE2, num_classes=4)
    transform = RandBoundaryJitter("l", magnitude=4.0, prob=1.0, classes=(1,), num_classes=4,
                                   generator=torch.Generator().manual_seed(0))
    out = transform(labels)
    for c in (2, 3):  # frozen: kept and never gained
        assert torch.equal(out == c, labels == c)
    assert not torch.equal(out, labels)
    assert transform.last_params["field"].shape == (2, 2, *SHAPE2)  # background and class 1


# --------------------------------------------------------------------------- the common contract
def label_batch(device, batch=4):
    return random_labels(11, batch, SHAPE3).to(torch.uint8).to(device)


CASES = {
    "RandLabelMorphology": (lambda keys="label", **kw: RandLabelMorphology(keys, num_classes=3, **kw), "label"),
    "RandGreyMorphology": (lambda keys="image", **kw: RandGreyMorphology(keys, **kw), "image"),
    "DistanceMap": (lambda keys="label", **kw: DistanceMap(keys, signed=True, num_classes=3, **kw), "label"),
    "LabelBoundary": (lambda keys="label", **kw: LabelBoundary(keys, thickness=(1, 3), side="both", num_classes=3,
                                                               **kw), "label"),
    "FillHoles": (lambda keys="label", **kw: FillHoles(keys, num_classes=3, **kw), "label"),
    "RandBoundaryJitter": (lambda keys="label", **kw: RandBoundaryJitter(keys, num_classes=3, **kw), "label"),
    "KeepLargestComponents": (lambda keys="label", **kw: KeepLargestComponents(keys, num_classes=3, **kw), "label"),
    "RemoveSmallComponents": (lambda keys="label", **kw: RemoveSmallComponents(keys, min_size=30, num_classes=3,
                                                                               **kw), "label"),
    "RandRemoveComponent": (lambda keys="label", **kw: RandRemoveComponent(keys, num_classes=3, **kw), "label"),
}
RANDOM = ["RandLabelMorphology", "RandGreyMorphology", "LabelBoundary", "RandBoundaryJitter", "RandRemoveComponent"]
LABEL_OUT = ["RandLabelMorphology", "FillHoles", "RandBoundaryJitter", "KeepLargestComponents",
             "RemoveSmallComponents", "RandRemoveComponent"]


def make_data(device, batch=4):
    return {"label": label_batch(device, batch), "image": random_image(0, batch, SHAPE3).to(device),
            "name": ["a"] * batch}


@pytest.mark.parametrize("name", RANDOM)
def test_same_seed_same_output(name, device):
    factory, key = CASES[name]
    data = make_data(device)
    a = factory(prob=0.5, generator=torch.Generator(device).manual_seed(7))(data)[key]
    b = factory(prob=0.5, generator=torch.Generator(device).manual_seed(7))(data)[key]
    assert torch.equal(a, b)
    transform = factory(prob=0.5)
    torch.manual_seed(3)
    c = transform(data)[key]
    params = transform.last_params
    torch.manual_seed(3)
    d = transform(data)[key]
    assert torch.equal(c, d)
    torch.manual_seed(4)
    transform(data)
    assert any(not torch.equal(params[k], transform.last_params[k]) for k in params)


@pytest.mark.parametrize("name", RANDOM)
def test_samples_get_different_draws(name, device):
    factory, key = CASES[name]
    data = make_data(device, batch=6)
    data[key] = data[key][:1].expand_as(data[key]).clone()  # six copies of one sample
    out = factory(prob=1.0, generator=torch.Generator(device).manual_seed(0))(data)[key]
    assert any(not torch.equal(out[0], out[i]) for i in range(1, 6))


@pytest.mark.parametrize("name", RANDOM)
def test_prob_zero_is_identity_and_prob_one_always_applies(name, device):
    factory, key = CASES[name]
    data = make_data(device)
    transform = factory(prob=0.0)
    out = transform(data)[key]
    assert not transform.last_params["apply"].any()
    if name == "LabelBoundary":
        assert not out.any()  # a skipped sample has no boundary
    else:
        assert torch.equal(out, data[key])
    transform = factory(prob=1.0, generator=torch.Generator(device).manual_seed(1))
    for _ in range(3):
        transform(data)
        assert transform.last_params["apply"].all()


@pytest.mark.parametrize("name, config", [
    ("RandLabelMorphology", dict(ops=("dilation", "erosion"))),
    ("RandGreyMorphology", dict(ops=("dilation", "white_tophat"))),
    ("LabelBoundary", dict()),
    ("RandBoundaryJitter", dict(magnitude=(2.0, 3.0))),
    ("RandRemoveComponent", dict()),
])
def test_prob_one_changes_every_sample(device, name, config):
    factory, key = CASES[name]
    data = make_data(device)
    out = factory(prob=1.0, **config)(data)[key]
    if name == "LabelBoundary":
        assert all(out[i].any() for i in range(4))
    else:
        assert all(not torch.equal(out[i], data[key][i]) for i in range(4))


@pytest.mark.parametrize("name", list(CASES))
def test_keys_map_to_roles(name, device):
    factory, key = CASES[name]
    other = "image" if key == "label" else "label"
    data = make_data(device)
    data["copy"] = data[key].clone()
    data[other] = "not looked at"  # a key of a role the transform does not change passes through untouched
    kwargs = {"prob": 1.0} if name in RANDOM else {}
    transform = factory(keys={other: other, key: key, "copy": key}, **kwargs)
    assert transform.keys == (other, key, "copy") and transform.changed_keys == (key, "copy")
    assert f"keys={{'{other}': '{other}', '{key}': '{key}', 'copy': '{key}'}}" in repr(transform)
    out = transform(data)
    assert out[other] is data[other]
    # all keys of a sample get the same draw: the same as a bare tensor with that draw
    expected = factory(**kwargs)(data[key], params=transform.last_params)
    assert torch.equal(out[key], expected) and torch.equal(out["copy"], expected)
    del data[other]
    with pytest.raises(KeyError, match=repr(other)):
        transform(data)


@pytest.mark.parametrize("name", list(CASES))
def test_input_untouched_and_passthrough(name, device):
    factory, key = CASES[name]
    data = make_data(device)
    before = {k: v.clone() for k, v in data.items() if isinstance(v, torch.Tensor)}
    versions = {k: v._version for k, v in data.items() if isinstance(v, torch.Tensor)}
    out = factory()(data)
    for k, v in before.items():
        assert torch.equal(data[k], v) and data[k]._version == versions[k]
    assert out is not data and out["name"] is data["name"]
    other = "image" if key == "label" else "label"
    assert out[other] is data[other]


@pytest.mark.parametrize("name", LABEL_OUT)
def test_labels_stay_valid(name, device):
    factory, key = CASES[name]
    index = label_batch(device)
    for labels, check in [
        (index, lambda out: set(out.unique().tolist()) <= {0, 1, 2}),
        (onehot(index, 3), lambda out: torch.equal(out.sum(1), torch.ones_like(out[:, 0]))
         and set(out.unique().tolist()) <= {0.0, 1.0}),
        (index.float(), lambda out: set(out.unique().tolist()) <= {0.0, 1.0, 2.0}),
    ]:
        kwargs = {"prob": 1.0} if name in RANDOM else {}
        out = factory(**kwargs)(labels)
        assert out.dtype == labels.dtype and out.shape == labels.shape and check(out)


@pytest.mark.parametrize("name", list(CASES))
def test_replay_params(name, device):
    factory, key = CASES[name]
    data = make_data(device)
    transform = factory()
    first = transform(data)[key]
    params = transform.last_params
    assert all(v.device == data[key].device for v in params.values())
    again = factory()(data, params=params)[key]
    assert torch.equal(first, again)


@pytest.mark.parametrize("name", list(CASES))
def test_subclasses_keep_type_and_metadata(name):
    monai_data = pytest.importorskip("monai.data")
    tv_tensors = pytest.importorskip("torchvision.tv_tensors")
    factory, key = CASES[name]
    data = make_data("cpu")
    affine = torch.diag(torch.tensor([0.5, 0.7, 2.0, 1.0], dtype=torch.float64))
    meta_tensor = monai_data.MetaTensor(data[key], affine=affine, meta={"filename": "case1.nii.gz"})
    out = factory()({**data, key: meta_tensor})[key]
    assert type(out) is monai_data.MetaTensor
    assert torch.equal(out.affine, affine) and out.meta["filename"] == "case1.nii.gz"
    assert out.meta is not meta_tensor.meta
    wrapper = tv_tensors.Image if key == "image" else tv_tensors.Mask
    out = factory()(wrapper(data[key]))
    assert type(out) is wrapper


@pytest.mark.parametrize("name", list(CASES))
def test_missing_keys(name):
    factory, key = CASES[name]
    data = make_data("cpu")
    del data[key]
    with pytest.raises(KeyError, match=repr(key)):
        factory()(data)
    transform = factory(allow_missing_keys=True)
    out = transform(data)
    assert out == data and out is not data


def test_tensor_input_and_repr():
    labels = label_batch("cpu")
    transform = RandLabelMorphology("label", radius=(1, 5), num_classes=3, prob=1.0)
    assert transform(labels).shape == labels.shape
    text = repr(transform)
    assert "RandLabelMorphology(keys=('label',)" in text and "radius=(1, 5)" in text and "num_classes=3" in text
    assert "output_keys=('sdf',)" in repr(DistanceMap("label", output_keys="sdf", classes=1))
    assert "metric='taxicab'" in repr(DistanceMap("label", metric="taxicab", classes=1))


def test_footprint_names_match_morphaug_footprints():
    for name in ("ball", "cube", "cross"):
        for radius in (1, 2, 3):
            for ndim in (2, 3):
                element = footprints.random_footprints(
                    2, (name,), (radius, radius), ndim, generator=torch.Generator().manual_seed(0),
                    device=torch.device("cpu"))[0]
                assert_parity(element[0].numpy(), ref_footprint(name, radius, ndim),
                              exact=True, where=f"{name} radius {radius} {ndim}-D")


BAD_ARGUMENTS = [
    (lambda: RandLabelMorphology("l", ops=(), num_classes=3), ValueError, "ops must not be empty"),
    (lambda: RandLabelMorphology("l", ops=("dilate",), num_classes=3), ValueError, "unknown name 'dilate'"),
    (lambda: RandLabelMorphology("l", radius=(3, 1), num_classes=3), ValueError, "low must not exceed high"),
    (lambda: RandLabelMorphology("l", radius=(-1, 1), num_classes=3), ValueError, ">= 0"),
    (lambda: RandLabelMorphology("l", radius=1.5, num_classes=3), TypeError, "radius must be an int"),
    (lambda: RandLabelMorphology("l", prob=1.5, num_classes=3), ValueError, r"prob must be a probability"),
    (lambda: RandLabelMorphology("l", prob_per_class=-0.1, num_classes=3), ValueError, "prob_per_class"),
    (lambda: RandLabelMorphology("l", footprint="disk", num_classes=3), ValueError, "unknown name 'disk'"),
    (lambda: RandLabelMorphology("l", classes=(1, 1)), ValueError, "must not repeat"),
    (lambda: RandLabelMorphology("l", classes=(-1,)), ValueError, "non-negative"),
    (lambda: RandLabelMorphology("l", fill_value=-1, num_classes=3), ValueError, "fill_value"),
    (lambda: RandLabelMorphology("l", num_classes=1), ValueError, "num_classes"),
    (lambda: RandLabelMorphology("l", label_format="dense", num_classes=3), ValueError, "label_format"),
    (lambda: RandLabelMorphology((), num_classes=3), ValueError, "keys must name"),
    (lambda: RandLabelMorphology({}, num_classes=3), ValueError, "keys must name"),
    (lambda: RandLabelMorphology({"l": "mask"}, num_classes=3), ValueError,
     r"keys: the role of key 'l' must be one of \('label', 'image'\), got 'mask'"),
    (lambda: RandLabelMorphology("l", num_classes=3, generator=0), TypeError, "generator"),
    (lambda: RandGreyMorphology("i", ops=("tophat",)), ValueError, "unknown name 'tophat'"),
    (lambda: RandGreyMorphology("i", radius=0), ValueError, ">= 1"),
    (lambda: RandGreyMorphology("i", mode="edge"), ValueError, "mode must be one of"),
    (lambda: DistanceMap("l", metric="cityblock"), ValueError, "metric must be one of"),
    (lambda: DistanceMap("l", normalize="minmax"), ValueError, "normalize"),
    (lambda: DistanceMap("l", clip=0), ValueError, "clip must be positive"),
    (lambda: DistanceMap("l", clip=(2, 1)), ValueError, "low must not exceed high"),
    (lambda: DistanceMap("l", sampling=(1, 0)), ValueError, "sampling"),
    (lambda: DistanceMap("l", metric="taxicab", sampling=2.0), ValueError, "only supported with metric='euclidean'"),
    (lambda: DistanceMap(("a", "b"), output_keys="c"), ValueError, "one entry per key"),
    (lambda: LabelBoundary("l", thickness=0), ValueError, ">= 1"),
    (lambda: LabelBoundary("l", side="middle"), ValueError, "side"),
    (lambda: LabelBoundary("l", footprint="disk"), ValueError, "footprint"),
    (lambda: FillHoles("l", connectivity=0), ValueError, "connectivity"),
    (lambda: FillHoles("l", connectivity=1.5), TypeError, "connectivity must be an int"),
    (lambda: RandBoundaryJitter("l", magnitude=(2.0, 1.0)), ValueError, "low must not exceed high"),
    (lambda: RandBoundaryJitter("l", magnitude=-1.0), ValueError, ">= 0"),
    (lambda: RandBoundaryJitter("l", smoothness=-1.0), ValueError, "smoothness"),
]


@pytest.mark.parametrize("build, error, match", BAD_ARGUMENTS)
def test_bad_arguments_fail_at_construction(build, error, match):
    with pytest.raises(error, match=match):
        build()


def test_bad_data_fails_clearly():
    labels = label_batch("cpu")
    with pytest.raises(ValueError, match="one channel"):
        RandLabelMorphology("l", label_format="index", num_classes=3)(onehot(labels, 3))
    with pytest.raises(ValueError, match=r"classes \(1, 5\) do not exist"):
        DistanceMap("l", classes=(1, 5))(onehot(labels, 3))
    with pytest.raises(ValueError, match="2 or more spatial axes"):
        DistanceMap("l", classes=1)(labels[:, :, 0, 0])
    with pytest.raises(ValueError, match="batch size"):
        RandLabelMorphology(("a", "b"), num_classes=3)({"a": labels, "b": labels[:2]})
    transform = RandLabelMorphology("l", num_classes=3)
    transform(labels)
    with pytest.raises(ValueError, match=r"params\['classes'\] must have shape \(4, 3\)"):
        RandLabelMorphology("l", num_classes=4)(labels, params=transform.last_params)
    with pytest.raises(ValueError, match=r"params\['apply'\] must have shape \(2,\) \(batch size 2"):
        transform(labels[:2], params=transform.last_params)
    with pytest.raises(ValueError, match="connectivity=3 exceeds"):
        FillHoles("l", num_classes=3, connectivity=3)(labels[..., 0])
    with pytest.raises(TypeError, match="expects a tensor"):
        FillHoles("l", num_classes=3)([labels])


@pytest.mark.parametrize("table", [[[1, 2, 3]], [[0, 2]], [[3, 1]], [[1, 5]], [[-1, 2]], [[1, 2], [2, 3]], [[]]])
def test_class_masks_of_one_hot_labels(table, monkeypatch):
    """One-hot class masks: channel ``class`` non-zero, nowhere for a class that is no channel; on the CPU a
    shared table of channels is read (a view of consecutive channels, else an index), contiguous as the
    kernels take it; the accelerators' gather gives the same masks."""
    from morphaug.transforms._labels import class_masks

    x = (torch.rand(2, 4, 5, 6, generator=torch.Generator().manual_seed(0)) * 3).to(torch.uint8)
    classes = torch.tensor(table, dtype=torch.int64).view(len(table), -1)
    expected = torch.zeros(2, classes.shape[1], 5, 6, dtype=torch.bool)
    for b in range(2):
        for k, c in enumerate(classes[b % len(table)].tolist()):
            if 0 <= c < 4:
                expected[b, k] = x[b, c] != 0
    got = class_masks(x, "onehot", classes)
    assert got.is_contiguous() and torch.equal(got, expected)
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)  # the path that reads nothing
    assert torch.equal(class_masks(x, "onehot", classes), expected)


# --------------------------------------------------------------------------- CUDA specifics
@pytest.mark.cuda
def test_cuda_draws_stay_on_device_and_cpu_generator_works():
    data = make_data("cuda")
    transform = RandLabelMorphology("label", num_classes=3, prob=1.0, generator=torch.Generator().manual_seed(0))
    out = transform(data)["label"]
    assert out.device.type == "cuda" and all(v.device.type == "cuda" for v in transform.last_params.values())
    cpu = RandLabelMorphology("label", num_classes=3, prob=1.0, generator=torch.Generator().manual_seed(0))(
        make_data("cpu"))["label"]
    assert torch.equal(out.cpu(), cpu)
    grey = RandGreyMorphology("image", prob=1.0, generator=torch.Generator().manual_seed(0))
    assert grey(data)["image"].device.type == "cuda"
