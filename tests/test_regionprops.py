"""``morphaug.measure.regionprops_table`` against ``skimage.measure.regionprops_table`` slice by slice."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import skimage.measure
import torch

from morphaug.measure import PROPERTIES, regionprops_table

SHAPES = [(6, 7), (5, 4, 6), (12, 9), (1, 8), (2, 2, 2)]
PLAIN = ("label", "num_pixels", "area", "bbox", "area_bbox", "extent", "centroid", "equivalent_diameter_area")
ALL = tuple(PROPERTIES)


def _batch(shape, seed, labels=6, dtype=np.int64):
    rng = np.random.default_rng(seed)
    coarse = rng.integers(0, labels, (3, 2) + tuple((s + 1) // 2 for s in shape))
    for axis, side in enumerate(shape):
        coarse = coarse.repeat(2, axis=2 + axis).take(range(side), axis=2 + axis)
    coarse[0, 0] = 0  # an empty slice
    coarse[1, 1] = labels - 1  # a full one
    return coarse.astype(dtype), rng.random((3, 2) + shape) + 0.25


def _check(out, label, image, properties, rtol=1e-12, **kwargs):
    """Each slice's rows of ``out`` (the present labels) equal scikit-image's table of that slice (``rtol``:
    scikit-image sums float32 intensities in float32, morphaug in float64)."""
    for b in range(label.shape[0]):
        for c in range(label.shape[1]):
            with warnings.catch_warnings():  # scikit-image warns on slices without a label
                warnings.simplefilter("ignore")
                want = skimage.measure.regionprops_table(label[b, c], image[b, c], properties, **kwargs)
            present = (out["label"][b, c] > 0).numpy()
            assert set(out) == set(want)
            for key, values in want.items():
                got = out[key][b, c].numpy()[present]
                np.testing.assert_allclose(got, values, rtol=rtol, err_msg=key)
                assert got.dtype == values.dtype or key.startswith("intensity"), key


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("seed", range(3))
def test_matches_skimage(shape, seed):
    label, image = _batch(shape, seed)
    spacing = [None, 2.0, tuple(np.random.default_rng(seed).uniform(0.5, 2, len(shape)))][seed]
    kwargs = {} if spacing is None else {"spacing": spacing}
    x, intensity = torch.from_numpy(label), torch.from_numpy(image)
    before = x.clone(), intensity.clone()
    out = regionprops_table(x, intensity, ALL, **kwargs)
    _check(out, label, image, ALL, **kwargs)
    assert all(v.shape == (3, 2, label.max()) for v in out.values())
    assert torch.equal(x, before[0]) and torch.equal(intensity, before[1])


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.int32, np.int64, bool])
def test_label_dtypes(dtype):
    label, image = _batch((9, 8), 4, labels=2 if dtype is bool else 5)
    out = regionprops_table(torch.from_numpy(label.astype(dtype)), properties=PLAIN)
    _check(out, label.astype(dtype).astype(np.int64), image, PLAIN)  # scikit-image refuses bool: True is label 1


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int32, torch.float32, torch.float64])
def test_intensity_dtypes(dtype):
    label, image = _batch((7, 9), 5)
    values = (torch.from_numpy(image) * 50).to(dtype)
    out = regionprops_table(torch.from_numpy(label), values, ("label", "intensity_min", "intensity_max",
                                                              "intensity_mean", "centroid_weighted"))
    _check(out, label, values.numpy(), ("label", "intensity_min", "intensity_max", "intensity_mean",
                                        "centroid_weighted"), rtol=1e-6 if dtype == torch.float32 else 1e-12)
    assert out["intensity_min"].dtype == (dtype if dtype.is_floating_point else torch.float64)


def test_absent_labels_and_max_label():
    x = torch.zeros(1, 1, 4, 6, dtype=torch.int64)
    x[0, 0, 1:3, 1:3], x[0, 0, 3, 5] = 2, 7
    out = regionprops_table(x, properties=("label", "area", "bbox", "centroid"))
    assert out["label"].tolist() == [[[0, 2, 0, 0, 0, 0, 7]]]
    assert out["bbox-0"][0, 0, 0] == -1 and out["centroid-1"][0, 0, 0].isnan() and out["area"][0, 0, 0] == 0
    few = regionprops_table(x, properties=("label", "area"), max_label=3)
    assert few["label"].tolist() == [[[0, 2, 0]]] and few["area"].tolist() == [[[0.0, 4.0, 0.0]]]
    empty = regionprops_table(torch.zeros(2, 1, 3, 3, dtype=torch.int64), properties=("area",))
    assert empty["area"].shape == (2, 1, 0)


def test_any_rank():
    x = torch.zeros(1, 1, 3, 4, 5, 6, dtype=torch.int64)
    x[0, 0, 1:3, 0:2, 2:5, 1:2] = 1
    out = regionprops_table(x, properties=("area", "bbox", "centroid", "equivalent_diameter_area"))
    assert out["area"].item() == 12 and [out[f"bbox-{i}"].item() for i in range(8)] == [1, 0, 2, 1, 3, 2, 5, 2]
    assert [out[f"centroid-{i}"].item() for i in range(4)] == [1.5, 0.5, 3.0, 1.0]
    # the 4-ball of volume 12: pi^2 r^4 / 2 = 12
    assert out["equivalent_diameter_area"].item() == pytest.approx(2 * (24 / np.pi**2) ** 0.25)


@pytest.mark.parametrize("kwargs, error, match", [
    ({"label_image": torch.zeros(1, 1, 3, 3)}, TypeError, "label_image must hold integer"),
    ({"label_image": -torch.ones(1, 1, 3, 3, dtype=torch.int64)}, ValueError, "negative"),
    ({"intensity_image": torch.zeros(1, 1, 3, 4)}, ValueError, "intensity_image must have"),
    ({"intensity_image": np.zeros((1, 1, 3, 3))}, TypeError, "intensity_image must be"),
    ({"properties": ("perimeter",)}, ValueError, "not offered"),
    ({"properties": ("intensity_mean",)}, ValueError, "need an intensity_image"),
    ({"spacing": (1.0, -1.0)}, ValueError, "spacing"),
    ({"max_label": -1}, ValueError, "max_label"),
    ({"separator": 1}, TypeError, "separator"),
    ({"extra_properties": [len]}, NotImplementedError, "extra_properties"),
])
def test_bad_arguments(kwargs, error, match):
    arguments = {"label_image": torch.ones(1, 1, 3, 3, dtype=torch.int64), **kwargs}
    with pytest.raises(error, match=match):
        regionprops_table(**arguments)
