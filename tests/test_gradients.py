"""Gradients: grey ops are differentiable on every backend and element kind, with ``max_pool``'s
subgradient; binary ops, distance transforms and labels say plainly that they are not.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from morphaug import ndimage

pytestmark = pytest.mark.usefixtures("backend")

GREY = ["grey_erosion", "grey_dilation", "grey_opening", "grey_closing", "morphological_gradient",
        "morphological_laplace", "white_tophat", "black_tophat"]
_g = torch.Generator().manual_seed(0)
ELEMENTS = {
    "size": dict(size=(3, 2)),
    "size constant": dict(size=3, mode="constant", cval=0.5),
    "size wrap, origin": dict(size=(2, 3), mode="wrap", origin=(0, -1)),
    "size wider than the image": dict(size=(9, 11), mode="mirror"),
    "footprint": dict(footprint=[[1, 0, 1], [1, 1, 0]], mode="mirror"),
    "footprint per sample": dict(footprint=torch.rand(2, 3, 3, generator=_g) > 0.4, mode="nearest"),
    "structure": dict(structure=torch.rand(3, 3, generator=_g, dtype=torch.float64)),
    "structure and footprint": dict(structure=torch.rand(2, 2, generator=_g, dtype=torch.float64),
                                    footprint=[[1, 1], [0, 1]]),
}


def _tie_free(*shape) -> torch.Tensor:
    """Distinct values at least 1e-3 apart, so that gradcheck's steps change no extremum."""
    values = torch.randperm(int(np.prod(shape)), generator=torch.Generator().manual_seed(1))
    return (values.to(torch.float64) * 1e-3).reshape(shape).requires_grad_()


@pytest.mark.parametrize("element", list(ELEMENTS))
@pytest.mark.parametrize("name", GREY)
def test_gradcheck(name, element):
    x = _tie_free(2, 1, 6, 7)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "autograd kernel was not registered"
        torch.autograd.gradcheck(lambda x: getattr(ndimage, name)(x, **ELEMENTS[element]), (x,), fast_mode=True)


def test_the_subgradient_is_max_pools():
    x = torch.rand(2, 3, 9, 8, generator=_g, dtype=torch.float64).requires_grad_()
    weights = torch.rand(2, 3, 9, 8, generator=_g, dtype=torch.float64)
    ours = torch.autograd.grad((ndimage.grey_dilation(x, size=3, mode="constant", cval=-np.inf) * weights).sum(), x)
    pooled = F.max_pool2d(F.pad(x, (1, 1, 1, 1), value=-np.inf), 3, stride=1)
    theirs = torch.autograd.grad((pooled * weights).sum(), x)
    torch.testing.assert_close(ours, theirs)  # to rounding: the sums run in another order


def test_ties_route_each_gradient_to_one_voxel():
    x = torch.zeros(1, 1, 5, 6, dtype=torch.float64, requires_grad=True)  # every window is one tie
    weights = torch.rand(1, 1, 5, 6, generator=_g, dtype=torch.float64)
    (grad,) = torch.autograd.grad((ndimage.grey_erosion(x, size=3) * weights).sum(), x)
    torch.testing.assert_close(grad.sum(), weights.sum())  # reflect borders: no gradient is lost
    assert set(np.unique(grad.numpy() != 0)) <= {True, False}


@pytest.mark.parametrize("name", ["binary_erosion", "binary_dilation", "binary_opening", "binary_closing",
                                  "binary_hit_or_miss", "binary_propagation", "binary_fill_holes",
                                  "distance_transform_edt", "distance_transform_cdt", "distance_transform_bf"])
def test_binary_and_distance_outputs_are_not_differentiable(name):
    x = torch.rand(2, 1, 6, 7, generator=_g, dtype=torch.float64).requires_grad_()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = getattr(ndimage, name)(x > 0.5 if "distance" in name else x)
    assert not out.requires_grad and out.grad_fn is None
