"""``morphaug.losses`` against MONAI 1.6's ``HausdorffDTLoss``, ``LogHausdorffDTLoss`` and ``BoundaryLoss``: values and gradients
on random 2-D and 3-D batches with empty and full slices, every option; gradcheck; argument checks;
device discipline."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.ndimage as ndi
import torch
from conftest import assert_parity
from test_device_discipline import DeviceRun, On

from morphaug import losses

try:
    import monai.losses as monai_losses
except ImportError:  # the tests that compare with MONAI are skipped
    monai_losses = None
needs_monai = pytest.mark.skipif(monai_losses is None, reason="MONAI is not installed")

SHAPES = [(3, 3, 14, 13), (2, 3, 7, 8, 9)]
NAMES = ["HausdorffDTLoss", "LogHausdorffDTLoss", "BoundaryLoss"]


def batch(seed: int, shape):
    """Logits and a one-hot target of blobs; sample 0 lacks class 1 and class 2 fills sample 1."""
    rng = np.random.default_rng(seed)
    spatial = (0, 0) + (1.5,) * (len(shape) - 2)
    field = ndi.gaussian_filter(rng.standard_normal(shape), spatial)
    labels = torch.from_numpy(field.argmax(1))
    labels[0][labels[0] == 1] = 0
    labels[1] = 2
    target = torch.nn.functional.one_hot(labels, shape[1]).movedim(-1, 1).float()
    logits = torch.from_numpy(3 * field + rng.standard_normal(shape)).float()
    return logits, target, labels[:, None]


OPTIONS = [
    {},
    {"include_background": True, "reduction": "sum"},
    {"softmax": True, "reduction": "none"},
    {"sigmoid": True, "batch": True},
    {"softmax": True, "to_onehot_y": True, "batch": True, "reduction": "none"},
    {"other_act": torch.tanh, "include_background": False, "reduction": "sum"},
]


@needs_monai
@pytest.mark.parametrize("shape", SHAPES, ids=["2d", "3d"])
@pytest.mark.parametrize("options", OPTIONS, ids=[",".join(o) or "defaults" for o in OPTIONS])
@pytest.mark.parametrize("name", NAMES)
def test_values_and_gradients_match_monai(name, options, shape):
    extra = [{"alpha": 1.0}, {"alpha": 2.5}] if "Hausdorff" in name else [{}]
    for seed, more in enumerate(extra):
        logits, target, labels = batch(seed, shape)
        given = labels if options.get("to_onehot_y") else target
        found, expected = [], []
        for module, into in ((losses, found), (monai_losses, expected)):
            x = logits.clone().requires_grad_()
            value = getattr(module, name)(**options, **more)(x, given)
            value.sum().backward()
            into += [value, x.grad]
        for ours, theirs in zip(found, expected):
            assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
            assert_parity(ours, theirs, exact=False, rtol=1e-5, atol=1e-7, dtype="expected")


@needs_monai
def test_boundary_loss_takes_labels_without_a_channel_axis():
    logits, _, labels = batch(4, SHAPES[0])
    options = {"softmax": True, "to_onehot_y": True}
    torch.testing.assert_close(losses.BoundaryLoss(**options)(logits, labels[:, 0]),
                               monai_losses.BoundaryLoss(**options)(logits, labels[:, 0]))


@needs_monai
@pytest.mark.parametrize("name", NAMES)
def test_single_channel_warnings_are_monai_s(name):
    logits, target, _ = batch(5, SHAPES[0])
    options = {"softmax": True, "include_background": False}
    with pytest.warns(UserWarning, match="single channel prediction") as ours:
        getattr(losses, name)(**options)(logits[:, :1], target[:, :1])
    with pytest.warns(UserWarning, match="single channel prediction") as theirs:
        getattr(monai_losses, name)(**options)(logits[:, :1], target[:, :1])
    assert sorted(str(w.message) for w in ours) == sorted(str(w.message) for w in theirs)


@pytest.mark.parametrize("name", NAMES)
def test_gradcheck(name):
    generator = torch.Generator().manual_seed(0)
    # probabilities away from 0.5, so that the steps of gradcheck never move the thresholded prediction
    away = torch.rand(2, 2, 6, 5, dtype=torch.float64, generator=generator) * 0.4 + 0.05
    probabilities = torch.where(torch.rand(away.shape, generator=generator) < 0.5, away, 1 - away)
    target = (torch.rand(2, 2, 6, 5, generator=generator) < 0.5).double()
    loss = getattr(losses, name)(include_background=True)
    assert torch.autograd.gradcheck(lambda p: loss(p, target), probabilities.requires_grad_())


@pytest.mark.parametrize("name", NAMES)
def test_inputs_are_not_modified_and_maps_carry_no_grad(name):
    logits, target, _ = batch(6, SHAPES[1])
    x = logits.clone().requires_grad_()
    before = x.detach().clone(), target.clone(), x._version, target._version
    getattr(losses, name)(softmax=True)(x, target).backward()
    assert torch.equal(x.detach(), before[0]) and torch.equal(target, before[1])
    assert (x._version, target._version) == before[2:]


BAD = [
    (lambda: losses.HausdorffDTLoss(alpha=-1.0), ValueError, "^alpha must be a finite number >= 0"),
    (lambda: losses.HausdorffDTLoss(alpha="2"), ValueError, "^alpha must be a finite number >= 0"),
    (lambda: losses.BoundaryLoss(softmax=1), TypeError, "^softmax must be True or False"),
    (lambda: losses.HausdorffDTLoss(batch=None), TypeError, "^batch must be True or False"),
    (lambda: losses.BoundaryLoss(reduction="median"), ValueError, "^reduction must be one of"),
    (lambda: losses.BoundaryLoss(other_act="tanh"), TypeError, "^other_act must be None or callable"),
    (lambda: losses.HausdorffDTLoss(sigmoid=True, softmax=True), ValueError, "^Incompatible values"),
]


@pytest.mark.parametrize("make, error, message", BAD, ids=[m.strip("^")[:30] for _, _, m in BAD])
def test_bad_arguments_raise_naming_them(make, error, message):
    with pytest.raises(error, match=message):
        make()


@pytest.mark.parametrize("name", NAMES)
def test_bad_inputs_raise_naming_them(name):
    logits, target, labels = batch(7, SHAPES[0])
    loss = getattr(losses, name)()
    with pytest.raises(ValueError, match="^target must have the shape of input"):
        loss(logits, target[:, :2])
    with pytest.raises(TypeError, match="^input must be a floating-point torch.Tensor"):
        loss(labels, target)
    with pytest.raises(TypeError, match="^target must be a torch.Tensor"):
        loss(logits, target.numpy())
    with pytest.raises(ValueError, match=r"^input must have shape \(B, C, \*spatial\)"):
        loss(logits[0, 0], target[0, 0])
    with pytest.raises(ValueError, match="^target must have one channel of class indices"):
        getattr(losses, name)(to_onehot_y=True)(logits, target)


@needs_monai
def test_reduction_accepts_monai_s_enum():
    from monai.utils import LossReduction

    logits, target, _ = batch(8, SHAPES[0])
    assert losses.BoundaryLoss(reduction=LossReduction.SUM)(logits, target).shape == ()


@pytest.mark.parametrize("kind", ["meta", "cuda"])
@pytest.mark.parametrize("name", NAMES)
def test_no_host_read_and_results_stay_on_the_device(name, kind, monkeypatch):
    """The rules of ``tests/test_device_discipline.py`` on meta and FakeTensor cuda inputs."""
    logits, target, _ = batch(9, (2, 3, 6, 7))
    run = DeviceRun(kind, monkeypatch)
    out = run(getattr(losses, name)(softmax=True, reduction="none"), On(logits), On(target))
    assert out.device == run.device and run.reads == []


@pytest.mark.parametrize("name", NAMES)
def test_backward_stays_on_the_device(name, monkeypatch):
    logits, target, _ = batch(10, (2, 3, 6, 7))

    def loss_and_gradient(x, y):
        value = getattr(losses, name)(softmax=True)(x, y)
        value.backward()
        return value, x.grad

    run = DeviceRun("meta", monkeypatch)
    value, gradient = run(loss_and_gradient, On(logits, requires_grad=True), On(target))
    assert gradient.device == value.device == run.device and run.reads == []


@pytest.mark.cuda
@pytest.mark.parametrize("name, options", list(itertools.product(NAMES, OPTIONS[:3])))
def test_cuda_gives_the_cpu_result(name, options):
    logits, target, _ = batch(11, SHAPES[1])
    loss = getattr(losses, name)(**options)
    torch.testing.assert_close(loss(logits.cuda(), target.cuda()).cpu(), loss(logits, target), rtol=1e-5, atol=1e-6)
