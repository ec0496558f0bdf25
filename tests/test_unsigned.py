"""uint16, uint32 and uint64 inputs (label maps and CT / microscopy images read through NumPy):
every function takes them, as SciPy does, with SciPy's results.

Grey ops run on the native flat kernels as they are, else on signed views of the same bits
(``morphaug.ndimage._unsigned``);
the references are SciPy's results, except for uint64 values beyond 2**53,
which SciPy rounds through float64: those are checked against NumPy's exact
sliding-window extrema.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.ndimage as sn
import torch
from conftest import assert_parity
from numpy.lib.stride_tricks import sliding_window_view

from morphaug import ndimage

pytestmark = pytest.mark.usefixtures("backend")

UNSIGNED = [np.uint16, np.uint32, np.uint64]
GREY = ["grey_erosion", "grey_dilation", "grey_opening", "grey_closing", "morphological_gradient",
        "morphological_laplace", "white_tophat", "black_tophat"]
ELEMENTS = {
    "size": dict(size=(3, 2)),
    "footprint": dict(footprint=[[1, 0, 1], [1, 1, 0]]),
    "constant": dict(size=3, mode="constant", cval=7),
    "structure": dict(structure=np.array([[1.0, 2.0, 0.0], [0.0, 5.0, 1.0], [3.0, 0.0, 0.0]])),
}


def _image(dtype, high, seed=0) -> np.ndarray:
    """Values in [10, high - 10], so that no structure pushes a result out of range (where
    SciPy wraps around and morphaug saturates, as documented), with both ends present."""
    a = np.random.default_rng(seed).integers(10, high - 10, size=(9, 11), dtype=dtype, endpoint=True)
    a[0, :2] = [10, high - 10]
    return a


def _batched(a: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.stack([a, a[::-1].copy()]))[:, None]


@pytest.mark.parametrize("dtype", UNSIGNED)
@pytest.mark.parametrize("element", list(ELEMENTS))
@pytest.mark.parametrize("name", GREY)
def test_grey_ops_match_scipy(name, element, dtype):
    """Every grey op, element kind and dtype; uint64 with a non-flat structure is refused."""
    if dtype == np.uint64 and element == "structure":
        with pytest.raises(TypeError, match="structure.*uint64"):
            getattr(ndimage, name)(_batched(_image(dtype, 1000)), **ELEMENTS[element])
        return
    a = _image(dtype, min(np.iinfo(dtype).max, 2**53))  # SciPy is exact below 2**53
    out = getattr(ndimage, name)(_batched(a), **ELEMENTS[element])
    assert out.dtype == torch.from_numpy(a).dtype
    for b, slice_ in enumerate((a, a[::-1].copy())):
        assert_parity(out[b, 0].numpy(), getattr(sn, name)(slice_, **ELEMENTS[element]), exact=True)


@pytest.mark.parametrize("dtype", UNSIGNED)
def test_grey_extrema_are_exact_over_the_whole_range(dtype):
    a = _image(dtype, np.iinfo(dtype).max)
    a[1, :4] = [0, 1, np.iinfo(dtype).max, np.iinfo(dtype).max - 1]
    windows = sliding_window_view(np.pad(a, 1, mode="symmetric"), (3, 3))
    x = torch.from_numpy(a)[None, None]
    assert_parity(ndimage.grey_erosion(x, size=3)[0, 0].numpy(), windows.min(axis=(-2, -1)), exact=True)
    assert_parity(ndimage.grey_dilation(x, size=3)[0, 0].numpy(), windows.max(axis=(-2, -1)), exact=True)
    # differences wrap around modulo 2**N, as NumPy's
    gradient = windows.max(axis=(-2, -1)) - windows.min(axis=(-2, -1))
    assert_parity(ndimage.morphological_gradient(x, size=3)[0, 0].numpy(), gradient, exact=True)
    assert_parity(ndimage.white_tophat(x, size=1)[0, 0].numpy(), np.zeros_like(a), exact=True)


@pytest.mark.parametrize("dtype", UNSIGNED)
def test_output_dtypes_follow_numpy(dtype):
    a = _image(dtype, 60000)
    x = _batched(a)
    outputs = [torch.float64, torch.from_numpy(np.zeros(0, dtype)).dtype]
    if dtype != np.uint64:  # NumPy: uint64 - int64 is float64, which int64 cannot hold (same_kind)
        outputs.append(torch.int64)
    for output in outputs:
        out = ndimage.morphological_gradient(x, size=3, output=output)
        assert out.dtype == output
        expected = sn.grey_dilation(a, size=3).astype(np.float64) - sn.grey_erosion(a, size=3)
        wrap = 2.0 ** (8 * a.itemsize)
        assert_parity(out[0, 0].numpy().astype(np.float64) % wrap, expected % wrap, exact=True)


@pytest.mark.parametrize("dtype", UNSIGNED)
@pytest.mark.parametrize("name", ["binary_erosion", "binary_dilation", "binary_opening", "binary_closing",
                                  "binary_hit_or_miss", "binary_propagation", "binary_fill_holes"])
def test_binary_ops_read_nonzero(name, dtype):
    a = (_image(dtype, 1000) > 500).astype(dtype) * np.iinfo(dtype).max
    out = getattr(ndimage, name)(_batched(a))
    assert_parity(out[0, 0].numpy(), getattr(sn, name)(a), exact=True)


@pytest.mark.parametrize("dtype", [np.uint16, np.uint32])
def test_structure_steps_saturate_to_the_unsigned_range(dtype):
    """uint16 / uint32 with a structure run on a wider signed dtype (on the native structure
    kernel where it is built), and each step of a chain saturates to the input's range: the
    erosion of an opening clamps at 0 before its dilation, as a lone erosion does."""
    a = _image(dtype, 1000)
    a[2:5, 3:6] = 2
    structure = np.full((3, 3), 50.0)
    x = _batched(a)
    eroded = ndimage.grey_erosion(x, structure=structure)
    assert eroded.dtype == x.dtype and (eroded[:, :, 3, 4] == 0).all()
    opened = ndimage.grey_opening(x, structure=structure)
    torch.testing.assert_close(opened, ndimage.grey_dilation(eroded, structure=structure), rtol=0, atol=0)


@pytest.mark.parametrize("dtype", UNSIGNED)
@pytest.mark.parametrize("name", ["distance_transform_edt", "distance_transform_cdt", "distance_transform_bf"])
def test_distance_transforms_read_nonzero(name, dtype):
    a = (_image(dtype, 1000) > 300).astype(dtype) * np.iinfo(dtype).max
    out = getattr(ndimage, name)(_batched(a))
    assert_parity(out[0, 0].numpy(), getattr(sn, name)(a), exact=False, rtol=1e-6, atol=0)


@pytest.mark.parametrize("dtype", [torch.uint16, torch.uint32, torch.uint64])
def test_outputs_of_wide_unsigned_dtypes(dtype):
    x = torch.rand(1, 1, 6, 7, generator=torch.Generator().manual_seed(0)) > 0.5
    out = torch.empty(x.shape, dtype=dtype)
    assert ndimage.binary_dilation(x, output=out) is out
    assert_parity(out[0, 0].numpy(), sn.binary_dilation(x[0, 0].numpy()).astype(out.numpy().dtype), exact=True)


@pytest.mark.parametrize("dtype", [torch.int64, torch.uint64])
def test_large_integer_cval_is_exact(dtype):
    """A cval beyond 2**53 reaches the border exactly (it used to go through a float)."""
    cval = 2**62 + 1
    x = torch.full((1, 1, 3, 4), 2**62 + 3, dtype=torch.int64).to(dtype)
    out = ndimage.grey_erosion(x, size=3, mode="constant", cval=cval)
    assert out[0, 0, 0, 0].item() == cval and out[0, 0, 1, 1].item() == 2**62 + 3
