"""``morphaug.losses``' skeleton losses: ``SoftclDiceLoss`` and ``SoftDiceclDiceLoss`` against MONAI 1.6.1 (values
and gradients on random 2-D and 3-D batches, every option, inputs with ties), ``SkeletonRecallLoss`` against a NumPy
reference written from the authors' ``SoftSkeletonRecallLoss`` and by gradcheck; argument checks; device discipline.
"""

from __future__ import annotations

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

SHAPES = [(2, 3, 14, 13), (1, 1, 9, 10), (3, 2, 17, 6), (2, 3, 7, 8, 9), (1, 2, 5, 11, 6)]
CLDICE = ["SoftclDiceLoss", "SoftDiceclDiceLoss"]


def batch(seed: int, shape):
    """Logits, a one-hot target of blobs and its labels; sample 0 lacks class 1, class 0 fills the last sample."""
    rng = np.random.default_rng(seed)
    spatial = (0, 0) + (1.5,) * (len(shape) - 2)
    field = ndi.gaussian_filter(rng.standard_normal(shape), spatial)
    labels = torch.from_numpy(field.argmax(1))
    labels[0][labels[0] == 1] = 0
    labels[-1] = 0
    target = torch.nn.functional.one_hot(labels, shape[1]).movedim(-1, 1).float()
    logits = torch.from_numpy(3 * field + rng.standard_normal(shape)).float()
    return logits, target, labels[:, None]


OPTIONS = [
    {},
    {"sigmoid": True, "reduction": "sum"},
    {"softmax": True, "reduction": "none"},
    {"softmax": True, "to_onehot_y": True, "include_background": False},
    {"other_act": torch.tanh, "iter_": 0, "smooth_nr": 1e-5, "smooth_dr": 1e-5},
    {"sigmoid": True, "iter_": 6, "smooth": 1e-2, "include_background": False, "reduction": "none"},
]


def _values_and_gradients(module, name, options, x, target):
    x = x.clone().requires_grad_()
    value = getattr(module, name)(**options)(x, target)
    value.sum().backward()
    return value, x.grad


@needs_monai
@pytest.mark.parametrize("shape", SHAPES, ids=["x".join(map(str, s)) for s in SHAPES])
@pytest.mark.parametrize("options", OPTIONS, ids=[",".join(o) or "defaults" for o in OPTIONS])
@pytest.mark.parametrize("name", CLDICE)
def test_values_and_gradients_match_monai(name, options, shape):
    if shape[1] == 1 and (options.get("softmax") or "include_background" in options):
        pytest.skip("single channel: MONAI ignores the option with a warning (test_single_channel_warnings)")
    extra = [{"alpha": 0.3}, {"alpha": 1.0}] if name == "SoftDiceclDiceLoss" else [{}]
    for seed, more in enumerate(extra):
        logits, target, labels = batch(seed, shape)
        given = labels if options.get("to_onehot_y") else target
        for x in (logits, logits.double()) if options == {} else (logits,):
            found = _values_and_gradients(losses, name, {**options, **more}, x, given)
            expected = _values_and_gradients(monai_losses, name, {**options, **more}, x, given)
            for ours, theirs in zip(found, expected):
                assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
                assert_parity(ours, theirs, exact=False, rtol=1e-5, atol=1e-7, dtype="expected")


@needs_monai
@pytest.mark.parametrize("ties", ["masks", "quantised", "saturated"])
@pytest.mark.parametrize("name", CLDICE)
def test_gradients_match_monai_on_ties(name, ties):
    """Equal neighbours make the pooling's subgradients choose: ours choose as MONAI's do."""
    logits, target, _ = batch(3, SHAPES[3])
    x = {"masks": target.roll(1, -1), "quantised": (torch.sigmoid(logits) * 4).round() / 4,
         "saturated": torch.sigmoid(8 * logits.double())}[ties]
    found = _values_and_gradients(losses, name, {}, x, target)
    expected = _values_and_gradients(monai_losses, name, {}, x, target)
    for ours, theirs in zip(found, expected):
        assert_parity(ours, theirs, exact=False, rtol=1e-5, atol=1e-7, dtype="expected")


@needs_monai
@pytest.mark.parametrize("name", CLDICE)
def test_single_channel_warnings(name):
    logits, target, _ = batch(5, SHAPES[0])
    for options in ({"softmax": True}, {"include_background": False}, {"to_onehot_y": True}):
        with pytest.warns(UserWarning, match="single channel prediction") as ours:
            value = getattr(losses, name)(**options)(logits[:, :1], target[:, :1])
        with pytest.warns(UserWarning, match="single channel prediction") as theirs:
            expected = getattr(monai_losses, name)(**options)(logits[:, :1], target[:, :1])
        assert {str(w.message) for w in ours} == {str(w.message) for w in theirs}
        torch.testing.assert_close(value, expected, rtol=1e-5, atol=1e-7)


def test_soft_cldice_is_zero_on_equal_masks_and_grows_with_missed_centrelines():
    target = torch.zeros(2, 1, 21, 21)
    target[:, :, 10, 2:19] = 1
    target[1, :, 2:19, 10] = 1  # a cross
    loss = losses.SoftclDiceLoss(reduction="none")
    assert loss(target, target).abs().max() < 1e-3
    missed = target.clone()
    missed[1, :, 2:19, 10] = 0  # the vertical bar missed
    values = loss(missed, target)
    assert values[0] < 1e-3 < values[1]


@pytest.mark.parametrize("name", CLDICE)
def test_cldice_gradcheck(name):
    generator = torch.Generator().manual_seed(0)
    probabilities = torch.rand(2, 2, 7, 6, dtype=torch.float64, generator=generator)
    target = (torch.rand(2, 2, 7, 6, generator=generator) < 0.5).double()
    loss = getattr(losses, name)(iter_=2)
    assert torch.autograd.gradcheck(lambda p: loss(p, target), probabilities.requires_grad_(), fast_mode=True)


# --------------------------------------------------------------------------- Skeleton Recall
def reference_recall(x, y, do_bg=False, batch_dice=False, smooth=1.0, loss_mask=None, reduction="mean"):
    """The authors' ``SoftSkeletonRecallLoss.forward`` (nnunetv2/training/loss/dice.py) in NumPy, on activated
    ``x``; ``do_bg=True`` keeps channel 0 (the authors refuse it)."""
    x, y = np.asarray(x, np.float64), np.asarray(y)
    if y.ndim != x.ndim:
        y = y.reshape((y.shape[0], 1, *y.shape[1:]))
    if y.shape == x.shape:
        onehot = y.astype(np.float64)
    else:
        onehot = np.zeros(x.shape)
        np.put_along_axis(onehot, y.astype(np.int64), 1, axis=1)
    if not do_bg:
        x, onehot = x[:, 1:], onehot[:, 1:]
    mask = 1.0 if loss_mask is None else np.asarray(loss_mask, np.float64)
    axes = tuple(range(2, x.ndim))
    sum_gt, inter = (onehot * mask).sum(axes), (x * onehot * mask).sum(axes)
    if batch_dice:
        sum_gt, inter = sum_gt.sum(0), inter.sum(0)
    recall = -(inter + smooth) / np.clip(sum_gt + smooth, 1e-8, None)
    return {"mean": recall.mean(), "sum": recall.sum(), "none": recall}[reduction]


def skeleton_batch(seed: int, shape):
    """Logits and a skeleton label map: thin random lines per class, one sample without skeleton."""
    rng = np.random.default_rng(seed)
    labels = np.zeros((shape[0], 1, *shape[2:]), np.int64)
    for b in range(shape[0] - 1):
        for c in range(1, shape[1]):
            axis = rng.integers(len(shape) - 2)
            index = [slice(None)] * (len(shape) - 2)
            index[axis] = rng.integers(shape[2 + axis])
            labels[(b, 0, *index)] = c
    logits = torch.from_numpy(rng.standard_normal(shape)).float()
    return logits, torch.from_numpy(labels)


RECALL_OPTIONS = [
    {"softmax": True},
    {"softmax": True, "smooth": 1e-5, "batch_dice": True},
    {"apply_nonlin": lambda x: torch.softmax(x, 1), "reduction": "none"},
    {"sigmoid": True, "do_bg": True, "reduction": "sum"},
    {"smooth": 0.0, "batch_dice": True, "reduction": "none"},
]


@pytest.mark.parametrize("form", ["index", "index without channel", "one-hot", "masked"])
@pytest.mark.parametrize("shape", [(3, 3, 12, 11), (2, 2, 6, 7, 5), (2, 4, 9, 8)], ids=["2d", "3d", "4 classes"])
@pytest.mark.parametrize("options", RECALL_OPTIONS, ids=[",".join(o) for o in RECALL_OPTIONS])
def test_skeleton_recall_matches_the_authors_code(options, shape, form):
    logits, labels = skeleton_batch(sum(shape), shape)
    target = {"index": labels, "index without channel": labels[:, 0], "masked": labels,
              "one-hot": torch.nn.functional.one_hot(labels[:, 0], shape[1]).movedim(-1, 1)}[form]
    mask = (torch.rand(labels.shape, generator=torch.Generator().manual_seed(1)) < 0.7) if form == "masked" else None
    loss = losses.SkeletonRecallLoss(**options)
    value = loss(logits, target) if mask is None else loss(logits, target, mask)
    activated = torch.sigmoid(logits) if options.get("sigmoid") else torch.softmax(logits, 1)
    if len(options.keys() & {"sigmoid", "softmax", "apply_nonlin"}) == 0:
        activated = logits  # probabilities as given (here: not in [0, 1], which the loss does not check)
    expected = reference_recall(activated.numpy(), target.numpy(), options.get("do_bg", False),
                                options.get("batch_dice", False), options.get("smooth", 1.0),
                                None if mask is None else mask.numpy(), options.get("reduction", "mean"))
    assert value.dtype == torch.float32 and value.shape == np.shape(expected)
    np.testing.assert_allclose(value.numpy(), expected, rtol=1e-5, atol=1e-7)


def test_skeleton_recall_takes_probabilities_and_ignores_labels_outside_the_classes():
    logits, labels = skeleton_batch(2, (2, 3, 10, 10))
    probabilities = torch.softmax(logits, 1)
    loss = losses.SkeletonRecallLoss(reduction="none")
    expected = reference_recall(probabilities.numpy(), labels.numpy(), reduction="none")
    np.testing.assert_allclose(loss(probabilities, labels).numpy(), expected, rtol=1e-6)
    outside = torch.where(labels == 0, torch.tensor([-1, 3])[torch.arange(2) % 2].reshape(2, 1, 1, 1), labels)
    torch.testing.assert_close(loss(probabilities, outside), loss(probabilities, labels))


@pytest.mark.parametrize("options", [{"batch_dice": True}, {"do_bg": True, "reduction": "none"}, {"smooth": 1e-5}])
def test_skeleton_recall_gradcheck(options):
    logits, labels = skeleton_batch(3, (2, 3, 6, 5))
    mask = torch.rand(labels.shape, generator=torch.Generator().manual_seed(2)) < 0.8
    loss = losses.SkeletonRecallLoss(softmax=True, **options)
    assert torch.autograd.gradcheck(lambda x: loss(x, labels, mask), logits.double().requires_grad_())


# --------------------------------------------------------------------------- errors and discipline
BAD = [
    (lambda: losses.SoftclDiceLoss(iter_=3.0), TypeError, "^iter_ must be an integer but got float"),
    (lambda: losses.SoftclDiceLoss(iter_=-1), ValueError, "^iter_ must be a non-negative integer but got -1"),
    (lambda: losses.SoftclDiceLoss(smooth=0.0), ValueError, "^smooth must be a positive value but got 0.0"),
    (lambda: losses.SoftclDiceLoss(smooth=float("inf")), ValueError, "^smooth must be a finite number > 0"),
    (lambda: losses.SoftclDiceLoss(smooth_nr=-1.0), ValueError, "^smooth_nr must be a finite number >= 0"),
    (lambda: losses.SoftDiceclDiceLoss(smooth_dr="1"), ValueError, "^smooth_dr must be a finite number >= 0"),
    (lambda: losses.SoftDiceclDiceLoss(alpha=1.5), ValueError, r"^alpha must be in \[0, 1\] but got 1.5"),
    (lambda: losses.SoftDiceclDiceLoss(reduction="median"), ValueError, "^reduction must be one of"),
    (lambda: losses.SoftclDiceLoss(sigmoid=True, softmax=True), ValueError, "^Incompatible values"),
    (lambda: losses.SoftclDiceLoss(other_act="tanh"), TypeError, "^other_act must be None or callable"),
    (lambda: losses.SoftclDiceLoss(to_onehot_y=1), TypeError, "^to_onehot_y must be True or False"),
    (lambda: losses.SkeletonRecallLoss(smooth=-1.0), ValueError, "^smooth must be a finite number >= 0"),
    (lambda: losses.SkeletonRecallLoss(batch_dice=1), TypeError, "^batch_dice must be True or False"),
    (lambda: losses.SkeletonRecallLoss(do_bg=None), TypeError, "^do_bg must be True or False"),
    (lambda: losses.SkeletonRecallLoss(apply_nonlin="softmax"), TypeError, "^apply_nonlin must be None or callable"),
    (lambda: losses.SkeletonRecallLoss(torch.sigmoid, softmax=True), ValueError, "^Incompatible values"),
    (lambda: losses.SkeletonRecallLoss(reduction="max"), ValueError, "^reduction must be one of"),
]


@pytest.mark.parametrize("make, error, message", BAD, ids=[m.strip("^")[:30] for _, _, m in BAD])
def test_bad_arguments_raise_naming_them(make, error, message):
    with pytest.raises(error, match=message):
        make()


@pytest.mark.parametrize("name", CLDICE)
def test_bad_cldice_inputs_raise_naming_them(name):
    logits, target, labels = batch(7, SHAPES[0])
    loss = getattr(losses, name)()
    with pytest.raises(ValueError, match="^target must have the shape of input"):
        loss(logits, target[:, :1].expand(-1, 3, -1, -1)[:, :, :5])
    with pytest.raises(TypeError, match="^input must be a floating-point torch.Tensor"):
        loss(labels, target)
    with pytest.raises(TypeError, match="^target must be a torch.Tensor"):
        loss(logits, target.numpy())
    with pytest.raises(ValueError, match=r"^input must have 1 to 3 spatial axes"):
        loss(logits[..., None, None], target[..., None, None])
    with pytest.raises(ValueError, match="^target must have one channel of class indices"):
        getattr(losses, name)(to_onehot_y=True)(logits, target)


@needs_monai
def test_adapters_raise_monai_s_errors():
    from morphaug.adapters import monai as adapters

    logits, target, _ = batch(8, SHAPES[0])
    calls = [("SoftclDiceLoss", (logits, target[:, :2])), ("SoftDiceclDiceLoss", (logits, target[:, :2])),
             ("SoftDiceclDiceLoss", (logits, target[:, 0])), ("SoftDiceclDiceLoss", (logits, target[:, :1, :5]))]
    for name, args in calls:
        errors = []
        for module in (adapters, monai_losses):
            with pytest.raises((AssertionError, ValueError)) as error:
                getattr(module, name)()(*args)
            errors.append((type(error.value), str(error.value)))
        assert errors[0] == errors[1]


def test_bad_skeleton_recall_inputs_raise_naming_them():
    logits, labels = skeleton_batch(4, (2, 3, 8, 8))
    loss = losses.SkeletonRecallLoss()
    with pytest.raises(ValueError, match=r"^target must be a \(B, 1, \*spatial\) or \(B, \*spatial\) label map"):
        loss(logits, labels[:, :, :4])
    with pytest.raises(ValueError, match=r"^target must be a \(B, 1, \*spatial\)"):
        loss(logits, torch.zeros(2, 2, 8, 8))
    with pytest.raises(ValueError, match=r"^loss_mask must be a \(B, 1, \*spatial\) tensor"):
        loss(logits, labels, torch.ones(2, 3, 8, 8))
    with pytest.raises(ValueError, match="^do_bg=False drops channel 0"):
        loss(logits[:, :1], labels)
    with pytest.raises(TypeError, match="^input must be a floating-point torch.Tensor"):
        loss(labels, labels)
    with pytest.raises(TypeError, match="^target must be a torch.Tensor"):
        loss(logits, labels.numpy())
    with pytest.raises(ValueError, match=r"^input must have shape \(B, C, \*spatial\)"):
        loss(logits[0, 0], labels[0, 0])


def _all_three(logits, target, labels):
    return (losses.SoftclDiceLoss(softmax=True, reduction="none")(logits, target),
            losses.SoftDiceclDiceLoss(softmax=True)(logits, target),
            losses.SkeletonRecallLoss(softmax=True, reduction="none")(logits, labels))


def test_inputs_are_not_modified():
    logits, target, labels = batch(6, SHAPES[3])
    x = logits.clone().requires_grad_()
    before = [t.detach().clone() for t in (x, target, labels)], [t._version for t in (x, target, labels)]
    sum(value.sum() for value in _all_three(x, target, labels)).backward()
    assert all(torch.equal(t.detach(), b) for t, b in zip((x, target, labels), before[0]))
    assert [t._version for t in (x, target, labels)] == before[1]


@pytest.mark.parametrize("kind", ["meta", "cuda"])
def test_no_host_read_and_results_stay_on_the_device(kind, monkeypatch):
    """The rules of ``tests/test_device_discipline.py`` on meta and FakeTensor cuda inputs, backward too."""
    logits, target, labels = batch(9, (2, 3, 6, 7))

    def values_and_gradient(x, y, z):
        values = _all_three(x, y, z)
        sum(value.sum() for value in values).backward()
        return (*values, x.grad)

    run = DeviceRun(kind, monkeypatch)
    out = run(values_and_gradient, On(logits, requires_grad=True), On(target), On(labels))
    assert all(t.device == run.device for t in out) and run.reads == []


@pytest.mark.cuda
def test_cuda_gives_the_cpu_result():
    logits, target, labels = batch(11, SHAPES[3])
    for ours, theirs in zip(_all_three(logits.cuda(), target.cuda(), labels.cuda()),
                            _all_three(logits, target, labels)):
        torch.testing.assert_close(ours.cpu(), theirs, rtol=1e-5, atol=1e-6)
