"""Kornia adapters inside AugmentationSequential (data_keys input + mask), 2-D and 3-D, replayed on the core."""

from __future__ import annotations

import pytest
import torch

K = pytest.importorskip("kornia.augmentation")

from morphaug.adapters.kornia import (  # noqa: E402
    DistanceMap2D,
    DistanceMap3D,
    FillHoles2D,
    FillHoles3D,
    KeepLargestComponents2D,
    KeepLargestComponents3D,
    LabelBoundary2D,
    RandBoundaryJitter2D,
    RandBoundaryJitter3D,
    RandGreyMorphology2D,
    RandGreyMorphology3D,
    RandLabelMorphology2D,
    RandLabelMorphology3D,
    RandRemoveComponent2D,
    RandRemoveComponent3D,
    RemoveSmallComponents2D,
)


def make_data(batch, spatial, device, dtype=torch.float32):
    g = torch.Generator().manual_seed(0)
    image = torch.rand(batch, 2, *spatial, generator=g).to(device)
    mask = torch.zeros(batch, 1, *spatial, dtype=dtype, device=device)
    inner = tuple(slice(n // 5, n - n // 5) for n in spatial)
    mask[(slice(None), slice(None), *inner)] = 1
    mask[(slice(None), slice(None), *(slice(n // 2 - 2, n // 2 + 1) for n in spatial))] = 2
    mask[(slice(None), 0, *(n // 3 for n in spatial))] = 0  # a hole of class 1
    return image, mask


def params_of(seq, module):
    """The ParamItem data that ``seq`` drew for ``module`` on its last call."""
    names = [name for name, child in seq.named_children() if child is module]
    return next(item.data for item in seq._params if item.name == names[0])


def test_sequential_2d_matches_affine_then_core(device):
    torch.manual_seed(0)  # p=0.6 on 6 samples: some, not all, are transformed
    image, mask = make_data(6, (24, 20), device, dtype=torch.long)
    affine = K.RandomAffine(degrees=20.0, translate=(0.1, 0.1), p=1.0)
    label_t = RandLabelMorphology2D(num_classes=3, radius=(1, 2), p=0.6)
    grey_t = RandGreyMorphology2D(p=0.6)
    seq = K.AugmentationSequential(affine, label_t, grey_t, data_keys=["input", "mask"])
    out_image, out_mask = seq(image, mask)
    assert out_mask.dtype == torch.long and out_mask.shape == mask.shape and out_image.shape == image.shape
    assert out_image.device == image.device and out_mask.device == mask.device
    # replay the affine step alone, then the core with the drawn parameters
    only_affine = K.AugmentationSequential(affine, data_keys=["input", "mask"])
    aff_image, aff_mask = only_affine(image, mask, params=[seq._params[0]])
    label_params = label_t.core_params(params_of(seq, label_t))
    grey_params = grey_t.core_params(params_of(seq, grey_t))
    expected_mask = label_t.core(aff_mask.float(), params=label_params).long()
    expected_image = grey_t.core(aff_image, params=grey_params)
    assert torch.equal(out_mask, expected_mask) and not torch.equal(expected_mask, aff_mask)
    torch.testing.assert_close(out_image, expected_image, rtol=0, atol=0)
    gate = params_of(seq, grey_t)["batch_prob"] > 0.5
    assert torch.equal(grey_params["apply"].cpu(), gate) and 0 < int(gate.sum()) < 6
    assert torch.equal(out_image[~gate.to(device)], aff_image[~gate.to(device)])
    assert set(out_mask.unique().tolist()) <= {0, 1, 2}
    # the whole sequence replays
    again_image, again_mask = seq(image, mask, params=seq._params)
    assert torch.equal(again_mask, out_mask) and torch.equal(again_image, out_image)


def test_torch_manual_seed_reproduces_and_same_on_batch():
    image, mask = make_data(4, (16, 16), "cpu")
    t = RandLabelMorphology2D(num_classes=3, radius=(1, 3), p=1.0)
    seq = K.AugmentationSequential(t, data_keys=["input", "mask"])
    torch.manual_seed(0)
    first = seq(image, mask)[1]
    torch.manual_seed(0)
    assert torch.equal(seq(image, mask)[1], first)
    same = RandLabelMorphology2D(num_classes=3, radius=(1, 3), p=1.0, same_on_batch=True)
    out = K.AugmentationSequential(same, data_keys=["input", "mask"])(image, mask)[1]
    for name in ("op", "footprint", "radius", "class_apply"):
        value = same._params[name]
        assert value.shape[0] == 4 and torch.equal(value, value[:1].expand_as(value)), name
    assert all(torch.equal(out[0], out[i]) for i in range(4))


def test_p_zero_and_fill_holes_blend():
    image, mask = make_data(4, (16, 16), "cpu")
    out_image, out_mask = K.AugmentationSequential(
        RandLabelMorphology2D(num_classes=3, p=0.0), RandGreyMorphology2D(p=0.0), data_keys=["input", "mask"]
    )(image, mask)
    assert torch.equal(out_mask, mask) and torch.equal(out_image, image)
    filled = K.AugmentationSequential(FillHoles2D(num_classes=3), data_keys=["input", "mask"])(image, mask)[1]
    assert (mask[:, 0, 5, 5] == 0).all() and (filled[:, 0, 5, 5] == 1).all()
    torch.manual_seed(1)
    fill_t = FillHoles2D(num_classes=3, p=0.5)
    half = K.AugmentationSequential(fill_t, data_keys=["input", "mask"])(image, mask)[1]
    gate = fill_t._params["batch_prob"] > 0.5
    assert torch.equal(half[gate], filled[gate]) and torch.equal(half[~gate], mask[~gate])


def test_targets_change_the_mask_channels():
    image, mask = make_data(3, (16, 16), "cpu")
    sdf_t = DistanceMap2D(signed=True, classes=[1, 2])
    _, sdf = K.AugmentationSequential(K.RandomHorizontalFlip(p=1.0), sdf_t, data_keys=["input", "mask"])(image, mask)
    assert sdf.shape == (3, 2, 16, 16) and sdf.dtype == torch.float32
    assert torch.equal(sdf, sdf_t.core(mask.flip(-1)))
    torch.manual_seed(3)
    edge_t = LabelBoundary2D(classes=[1, 2], thickness=(1, 2), p=0.5)
    _, edges = K.AugmentationSequential(edge_t, data_keys=["input", "mask"])(image, mask)
    params = edge_t.core_params(edge_t._params)
    assert edges.shape == (3, 2, 16, 16) and torch.equal(edges, edge_t.core(mask, params=params))
    with pytest.raises(TypeError, match="'p'"):  # a deterministic map: no probability
        DistanceMap2D(p=0.5)


def test_one_hot_masks_and_errors():
    image, mask = make_data(2, (16, 16), "cpu")
    onehot = torch.nn.functional.one_hot(mask[:, 0].long(), 3).movedim(-1, 1).float()
    t = RandBoundaryJitter2D(num_classes=3, label_format="onehot", magnitude=2.0, smoothness=2.0, p=1.0)
    out = K.AugmentationSequential(t, data_keys=["input", "mask"])(image, onehot)[1]
    assert out.shape == onehot.shape and torch.equal(out.sum(1), torch.ones_like(out[:, 0]))
    assert torch.equal(out, t.core(onehot, params=t.core_params(t._params)))
    with pytest.raises(ValueError, match="num_classes"):
        K.AugmentationSequential(RandLabelMorphology2D(label_format="onehot", p=1.0),
                                 data_keys=["input", "mask"])(image, onehot)
    # Kornia draws before it hands the mask over: a per-class draw cannot infer the classes of index masks
    for t in (RandLabelMorphology2D(p=1.0), RandBoundaryJitter2D(p=1.0)):
        with pytest.raises(ValueError, match="num_classes"):
            K.AugmentationSequential(t, data_keys=["input", "mask"])(image, mask)
    # the others infer them from the mask
    inferred = K.AugmentationSequential(FillHoles2D(), data_keys=["input", "mask"])(image, mask)[1]
    assert torch.equal(inferred, K.AugmentationSequential(FillHoles2D(num_classes=3), data_keys=["input", "mask"])(
        image, mask)[1])
    for name in ("prob", "generator", "keys", "allow_missing_keys"):
        with pytest.raises(TypeError, match=name):
            RandGreyMorphology2D(**{name: None})
    # the core's keys are Kornia's data keys, with their roles
    assert t.core.roles == {"input": "image", "mask": "label"} and t.core.changed_keys == ("mask",)


def test_sequential_3d(device):
    image, mask = make_data(2, (12, 12, 12), device)
    affine = K.RandomAffine3D(degrees=10.0, p=1.0)
    grey_t = RandGreyMorphology3D(p=1.0, radius=1)
    seq = K.AugmentationSequential(affine, grey_t, data_keys=["input"])
    out = seq(image)
    expected = grey_t.core(affine(image, params=seq._params[0].data), params=grey_t.core_params(seq._params[1].data))
    assert out.device == image.device and torch.equal(out, expected)
    # masks through the 3-D morphaug classes (Kornia 0.9 has no 3-D geometric mask support)
    label_t = RandLabelMorphology3D(num_classes=3, radius=1, p=1.0)
    jitter_t = RandBoundaryJitter3D(num_classes=3, magnitude=1.0, smoothness=1.5, p=1.0)
    fill_t, sdf_t = FillHoles3D(num_classes=3), DistanceMap3D(classes=[1, 2])
    seq = K.AugmentationSequential(fill_t, label_t, jitter_t, grey_t, sdf_t, data_keys=["input", "mask"])
    out_image, out_sdf = seq(image, mask)
    filled = fill_t.core(mask)
    morphed = label_t.core(filled, params=label_t.core_params(params_of(seq, label_t)))
    jittered = jitter_t.core(morphed, params=jitter_t.core_params(params_of(seq, jitter_t)))
    assert not torch.equal(morphed, filled) and not torch.equal(jittered, morphed)
    assert torch.equal(out_sdf, sdf_t.core(jittered)) and out_sdf.shape == (2, 2, 12, 12, 12)
    assert torch.equal(out_image, grey_t.core(image, params=grey_t.core_params(params_of(seq, grey_t))))
    with pytest.raises(NotImplementedError):  # documented Kornia limitation; fails loudly if Kornia adds it
        K.AugmentationSequential(affine, label_t, data_keys=["input", "mask"])(image, mask)

def test_component_transforms_in_sequential(device):
    image, mask = make_data(6, (16, 18), device, dtype=torch.long)
    mask[:, 0, 0, 0] = 2  # a stray voxel of class 2
    mask[:, 0, 15, 10:12] = 1  # a stray pair of class 1
    keep, remove = KeepLargestComponents2D(classes=[2], connectivity=1), RemoveSmallComponents2D(min_size=3)
    rand = RandRemoveComponent2D(num_classes=3, max_fraction=0.5, p=0.5)
    seq = K.AugmentationSequential(keep, remove, rand, data_keys=["input", "mask"])
    torch.manual_seed(0)
    out_image, out_mask = seq(image, mask)
    assert out_mask.dtype == torch.long and torch.equal(out_image, image)
    expected = remove.core(keep.core(mask.float()))
    assert expected[:, 0, 0, 0].eq(0).all() and expected[:, 0, 15, 10].eq(0).all()
    expected = rand.core(expected, params=rand.core_params(params_of(seq, rand))).long()
    assert torch.equal(out_mask, expected)
    assert 0 < int(rand.core_params(params_of(seq, rand))["apply"].sum()) < 6
    assert torch.equal(seq(image, mask, params=seq._params)[1], out_mask)
    # 3-D
    volume, labels = make_data(2, (10, 11, 12), device)
    labels[:, 0, 0, 0, 0] = 1
    seq3d = K.AugmentationSequential(KeepLargestComponents3D(), RandRemoveComponent3D(num_classes=3, p=1.0),
                                     data_keys=["input", "mask"])
    out = seq3d(volume, labels)[1]
    assert out.shape == labels.shape and set(out.unique().tolist()) <= {0.0, 1.0, 2.0}
    assert (out[:, 0, 0, 0, 0] == 0).all()  # the stray voxel


# ---------------------------------------------------------------------------------------------
# morphaug.adapters.kornia.morphology / .contrib: Kornia 0.9's functions, against installed Kornia

import itertools  # noqa: E402

import numpy as np  # noqa: E402
import scipy.ndimage  # noqa: E402
from kornia import contrib as KC  # noqa: E402
from kornia import morphology as KM  # noqa: E402
from kornia.core.exceptions import BaseError, TypeCheckError  # noqa: E402

from morphaug.adapters.kornia import contrib as MC  # noqa: E402
from morphaug.adapters.kornia import morphology as MM  # noqa: E402

OPS = [name for name in MM.__all__ if name != "reconstruction"]
BORDERS = ["geodesic", "constant", "reflect", "replicate", "circular"]
SHAPES = [(3, 3), (2, 4), (5, 1), (1, 1), (4, 5), (3, 2)]  # odd, even, one-cell and thin kernels


def _case(seed, kernel_shape, dtype, structured, ties=False, batch=(2, 3), spatial=(7, 6)):
    """A random image, kernel (some cells off), structuring element or None, and kernel cell."""
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(*batch, *spatial, generator=g, dtype=torch.float64)
    if ties:
        x = (x * 3).floor()
    kernel = (torch.rand(kernel_shape, generator=g) > 0.3).float()
    kernel.view(-1)[int(torch.randint(kernel.numel(), (), generator=g))] = 2.0  # magnitude is ignored
    se = None
    if structured:
        se = torch.randint(0, 2, kernel_shape, generator=g).double() if ties else torch.randn(kernel_shape, generator=g,
                                                                                              dtype=torch.float64)
        se = se.to(dtype)
    origin = [int(torch.randint(k, (), generator=g)) for k in kernel_shape]
    return x.to(dtype), kernel, se, origin


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_morphology_equals_kornia(backend, dtype):
    """Every op, border type, kernel shape (even, one-cell, with holes), flat or not, default or
    given origin: Kornia 0.9's values and dtype, exactly."""
    count = 0
    for seed, (name, border, structured) in enumerate(itertools.product(OPS, BORDERS, [False, True])):
        shape = SHAPES[seed % len(SHAPES)]
        x, kernel, se, origin = _case(seed, shape, dtype, structured, ties=seed % 3 == 0)
        for o in (None, origin):
            expected = getattr(KM, name)(x, kernel, se, o, border, 0.3)
            actual = getattr(MM, name)(x, kernel, se, o, border, 0.3)
            assert actual.dtype == expected.dtype and torch.equal(actual, expected), (name, border, shape, o)
            count += 1
    assert count == 7 * 5 * 2 * 2


def test_morphology_dtypes_shapes_and_special_values(backend):
    """A float64 kernel widens the result as in Kornia, an integer or bool kernel does not; an empty
    kernel gives the identity; NaN and infinities propagate as in Kornia; empty and one-pixel batches."""
    x, kernel, se, _ = _case(0, (3, 3), torch.float32, False)
    x[0, 0, 2, 2], x[1, 2, 0, 0], x[0, 1, 3, 3] = float("nan"), float("inf"), -float("inf")
    for k in (kernel.double(), kernel.bool(), kernel.long(), torch.zeros(3, 3), torch.ones(3, 3)):
        for name, border in itertools.product(OPS, BORDERS):
            expected = getattr(KM, name)(x, k, border_type=border)
            actual = getattr(MM, name)(x, k, border_type=border)
            assert actual.dtype == expected.dtype
            torch.testing.assert_close(actual, expected, rtol=0, atol=0, equal_nan=True)
    for shape in [(0, 3, 5, 5), (2, 0, 5, 5), (1, 1, 1, 1), (1, 2, 1, 9)]:
        x = torch.rand(shape)
        for name in OPS:
            expected = getattr(KM, name)(x, torch.ones(3, 3), border_type="geodesic")
            assert torch.equal(getattr(MM, name)(x, torch.ones(3, 3)), expected)


@pytest.mark.parametrize("engine", ["auto", "unfold", "convolution"])
def test_morphology_gradients_equal_kornia(engine):
    """Gradients w.r.t. the input and the structuring element, ties included (integer values), for
    every op and border: Kornia's (its unfold engine's routing; the convolution engine's for
    engine="convolution")."""
    for seed, (name, border, ties) in enumerate(itertools.product(OPS, BORDERS, [False, True, "nan"])):
        shape = SHAPES[seed % len(SHAPES)]
        x0, kernel, se0, origin = _case(seed, shape, torch.float64, seed % 4 < 2, ties, spatial=(6, 5))
        if seed % 3 == 0:  # a full kernel: routed one axis at a time, flat or not
            kernel = torch.ones(shape)
        if ties == "nan":
            x0[0, 1, 2, 2], x0[1, 0, 0, 3] = float("nan"), float("nan")
        g = torch.randn(x0.shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
        results = []
        for module in (KM, MM):
            x = x0.clone().requires_grad_()
            se = None if se0 is None else se0.clone().requires_grad_()
            out = getattr(module, name)(x, kernel, se, origin, border, 0.3, engine=engine)
            out.backward(g)
            results.append((out.detach(), x.grad, None if se is None else se.grad))
        (expected, ex, ese), (actual, ax, ase) = results
        torch.testing.assert_close(actual, expected, rtol=0, atol=0, equal_nan=True)
        torch.testing.assert_close(ax, ex, rtol=0, atol=1e-12, equal_nan=True)
        if se0 is not None:
            torch.testing.assert_close(ase, ese, rtol=1e-12, atol=1e-9, equal_nan=True)


def test_morphology_gradcheck_any_rank():
    g = torch.Generator().manual_seed(3)
    for spatial, kernel in [((3, 4, 4), torch.ones(3, 2, 3)), ((9,), torch.tensor([1.0, 0.0, 1.0, 1.0]))]:
        x = torch.rand(1, 2, *spatial, generator=g, dtype=torch.float64, requires_grad=True)
        se = torch.rand(kernel.shape, generator=g, dtype=torch.float64, requires_grad=True)
        for name, border in [("dilation", "geodesic"), ("erosion", "reflect"), ("top_hat", "circular")]:
            assert torch.autograd.gradcheck(lambda a, b: getattr(MM, name)(a, kernel, b, border_type=border), (x, se),
                                            fast_mode=True)


def test_morphology_any_rank_is_kornia_on_each_plane_and_scipy(backend):
    """N-D is the same definition: a kernel of depth 1 gives Kornia's 2-D result on each plane, and a
    3-D geodesic dilation / erosion is SciPy's with an infinite cval (origin k // 2 -> 0)."""
    g = torch.Generator().manual_seed(4)
    x = torch.rand(2, 2, 3, 7, 6, generator=g)
    kernel = (torch.rand(3, 4, generator=g) > 0.3).float()
    for name, border in itertools.product(OPS, BORDERS):
        expected = getattr(KM, name)(x.flatten(1, 2), kernel, border_type=border, origin=[2, 1]).view(x.shape)
        actual = getattr(MM, name)(x, kernel[None], border_type=border, origin=[0, 2, 1])
        assert torch.equal(actual, expected), (name, border)
    kernel = (torch.rand(3, 2, 3, generator=g) > 0.4)
    kernel[1, 1, 1] = True
    se = torch.rand(3, 2, 3, generator=g)
    for b, c in itertools.product(range(2), range(2)):
        volume = x[b, c].numpy()
        dilated = scipy.ndimage.grey_dilation(volume, footprint=kernel.numpy(), structure=se.numpy(), mode="constant",
                                              cval=-np.inf)
        eroded = scipy.ndimage.grey_erosion(volume, footprint=kernel.numpy(), structure=se.numpy(), mode="constant",
                                            cval=np.inf)
        np.testing.assert_array_equal(MM.dilation(x, kernel, se)[b, c].numpy(), dilated)
        np.testing.assert_array_equal(MM.erosion(x, kernel, se)[b, c].numpy(), eroded)


def test_drop_in_signatures_are_kornias():
    import inspect

    def parameters(function):
        return [(p.name, p.default, p.kind) for p in inspect.signature(function).parameters.values()]
    for ours, theirs in [(MM, KM), (MC, KC)]:
        for name in ours.__all__:
            assert parameters(getattr(ours, name)) == parameters(getattr(theirs, name)), name


def test_morphology_errors_are_kornias_and_inputs_unchanged():
    x, kernel = torch.rand(1, 1, 4, 5), torch.ones(3, 3)
    se = torch.zeros(3, 3, requires_grad=True)
    before = x.clone(), kernel.clone(), se.detach().clone()
    for name in OPS:
        op = getattr(MM, name)
        op(x, kernel, se, [0, 2], "reflect")
        with pytest.raises(TypeError, match="Input type is not a torch.Tensor"):
            op([0.0], kernel)
        with pytest.raises(TypeError, match="floating-point"):
            op(x.long(), kernel)
        with pytest.raises(TypeError, match="Kernel type"):
            op(x, [0.0])
        with pytest.raises(ValueError, match="Kernel size must have 2 dimensions"):
            op(x, torch.ones(3))
        with pytest.raises(ValueError, match="Input size"):
            op(torch.ones(4, 5), kernel)
        with pytest.raises(ValueError, match="structuring_element"):
            op(x, kernel, torch.zeros(2, 2))
        with pytest.raises(ValueError, match="border_type"):
            op(x, kernel, border_type="mirror")
        with pytest.raises(NotImplementedError, match="unknown"):
            op(x, kernel, engine="fast")
        with pytest.raises(ValueError, match="origin"):
            op(x, kernel, origin=[3, 0])
        with pytest.raises(RuntimeError, match="border_type='reflect'"):
            op(x, torch.ones(9, 1), border_type="reflect")
        with pytest.raises(RuntimeError):  # Kornia: torch's pad error
            getattr(KM, name)(x, torch.ones(9, 1), border_type="reflect")
    assert all(torch.equal(a, b) for a, b in zip(before, (x, kernel, se.detach())))


def test_reconstruction_equals_kornia():
    """Values and gradients w.r.t. seed and mask of Kornia's loop, by dilation and by erosion, to
    convergence and for a fixed count; its errors."""
    g = torch.Generator().manual_seed(8)
    for seed, (method, iters, kernel) in enumerate(itertools.product(
            ["dilation", "erosion"], [None, 0, 3], [None, torch.tensor([[0., 1, 0], [1, 0, 1], [0, 1, 0]]),
                                                    torch.ones(5, 3)])):
        mask = torch.rand(2, 3, 11, 9, generator=g, dtype=torch.float64)
        start = mask + (-1 if method == "dilation" else 1) * torch.rand(mask.shape, generator=g, dtype=torch.float64)
        results = []
        for module in (KM, MM):
            s, m = start.clone().requires_grad_(), mask.clone().requires_grad_()
            out = module.reconstruction(s, m, kernel, method, iters)
            out.backward(torch.ones_like(out))
            results.append((out.detach(), s.grad, m.grad))
        for ours, theirs in zip(*results[::-1]):
            assert torch.equal(ours, theirs), (method, iters, kernel)
    for args, kwargs in [(([0.0], mask), {}), ((mask, mask[0]), {}), ((mask.long(), mask.long()), {}),
                         ((mask, mask), {"method": "open"}), ((mask, mask), {"engine": "convolution"}),
                         ((mask, mask), {"num_iters": -1}), ((mask, mask), {"check_every": 0}),
                         ((mask, mask, torch.ones(2, 3)), {})]:
        with pytest.raises(BaseError) as theirs:
            KM.reconstruction(*args, **kwargs)
        with pytest.raises(type(theirs.value)):
            MM.reconstruction(*args, **kwargs)


def test_connected_components_equal_kornias_converged_labels():
    g = torch.Generator().manual_seed(5)
    for shape, p in itertools.product([(1, 1, 6, 6), (3, 1, 9, 7), (2, 4, 1, 5, 8), (1, 1, 1, 1), (5, 1, 13, 1)],
                                      [0.0, 0.3, 0.6, 1.0]):
        image = (torch.rand(shape, generator=g) < p).float()
        image[image == 0] = torch.tensor([0.0, 0.5, 2.0])[torch.randint(3, (), generator=g)]  # only 1 is foreground
        expected = KC.connected_components(image, num_iterations=200)
        actual = MC.connected_components(image, 3)
        assert actual.dtype == torch.int64 and torch.equal(actual, expected), (shape, p)
    assert MC.connected_components(torch.zeros(2, 1, 0, 4)).shape == (2, 1, 0, 4)
    with pytest.raises(TypeError, match="num_iterations"):
        MC.connected_components(image, 0)
    with pytest.raises(TypeError, match="imagetype"):
        MC.connected_components("image")
    with pytest.raises(ValueError, match=r"\(\*,1,H,W\)"):
        MC.connected_components(torch.ones(1, 2, 3, 4))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
def test_distance_transform_is_the_exact_edt(backend, dtype):
    g = torch.Generator().manual_seed(6)
    for shape in [(2, 3, 9, 11), (1, 2, 5, 6, 7)]:
        image = (torch.rand(shape, generator=g) < 0.1).to(dtype) * torch.rand(shape, generator=g).to(dtype)
        image[0, 0] = 0  # no source: 0 everywhere, as Kornia
        image[-1, -1] = -1.0
        image[-1, -1].view(-1)[3] = 0.25  # any positive value is a source
        actual = MC.distance_transform(image, 5, 0.2)
        assert actual.dtype == dtype and actual.shape == image.shape
        for b, c in itertools.product(range(shape[0]), range(shape[1])):
            plane = image[b, c].float().numpy()
            expected = scipy.ndimage.distance_transform_edt(plane <= 0) if (plane > 0).any() else np.zeros_like(plane)
            np.testing.assert_allclose(actual[b, c].double().numpy(), expected, rtol=1e-3 if dtype == torch.float16
                                       else 1e-6)
        assert torch.equal(MC.DistanceTransform(5, 0.2)(image), actual)
    x = torch.zeros(1, 1, 4, 4, dtype=dtype)
    x[..., 1, 1] = 1  # the case Kornia's test_value_2d checks; Kornia's own cascade is exact here too
    torch.testing.assert_close(MC.distance_transform(x, 7), KC.distance_transform(x, 7))


def test_distance_transform_errors_are_kornias():
    image = torch.rand(1, 1, 8, 8)
    for args, error in [((None,), TypeCheckError), ((image.long(),), BaseError), ((image[0],), BaseError),
                        ((image, 4), BaseError), ((image, 1), BaseError), ((image, 3, 0.0), BaseError),
                        ((image, 3.0), TypeCheckError)]:
        with pytest.raises(error):
            MC.distance_transform(*args)
        with pytest.raises(error):
            KC.distance_transform(*args)


def test_drop_ins_on_device(device):
    x, kernel, se, origin = _case(7, (3, 4), torch.float32, True)
    x, kernel, se = x.to(device), kernel.to(device), se.to(device).requires_grad_()
    for name, border in itertools.product(OPS, BORDERS):
        out = getattr(MM, name)(x, kernel, se, origin, border)
        expected = getattr(KM, name)(x.cpu(), kernel.cpu(), se.detach().cpu(), origin, border)
        assert out.device == x.device and torch.equal(out.detach().cpu(), expected)
        out.sum().backward()
    mask = (x[:, :1] > 0.5).float()
    assert torch.equal(MC.connected_components(mask).cpu(), KC.connected_components(mask.cpu(), 100))
    assert MC.distance_transform(mask).device == x.device
