"""MONAI 1.6's distance-transform losses with their distance maps made on the device, for the whole batch.

MONAI computes the maps with a loop over samples (and channels), a host
check per slice (``mask.any()``, ``mask.all()``) and SciPy on the CPU (or
cuCIM). Here one ``morphaug.ndimage.distance_transform_edt`` call takes the
masks and their complements of every slice, and the slices without an
interface (empty or full) are zeroed with a mask, as MONAI skips them.
"""

from __future__ import annotations

import math
import numbers
import warnings

import torch

from .. import ndimage

__all__ = ["BoundaryLoss", "HausdorffDTLoss", "LogHausdorffDTLoss"]

REDUCTIONS = ("none", "mean", "sum")


def _inside_outside(mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """For a bool ``(B, C, *spatial)`` mask: the distance of every voxel inside to the outside, of
    every voxel outside to the inside (one EDT call for both), and whether each slice has both."""
    inside, outside = ndimage.distance_transform_edt(torch.cat([mask, ~mask])).chunk(2)
    flat = mask.flatten(2)
    interface = flat.any(-1) & ~flat.all(-1)
    return inside, outside, interface.reshape(interface.shape + (1,) * (mask.ndim - 2))


def check_options(flags: dict, sigmoid, softmax, act_name: str, act, reduction) -> str:
    """A loss's options checked as MONAI's losses check them: ``flags`` (and ``sigmoid``, ``softmax``)
    True or False, at most one activation (``act_name``: the callable's argument), a known reduction,
    returned by its name."""
    for name, value in {**flags, "sigmoid": sigmoid, "softmax": softmax}.items():
        if not isinstance(value, bool):
            raise TypeError(f"{name} must be True or False, got {value!r}")
    if act is not None and not callable(act):
        raise TypeError(f"{act_name} must be None or callable but is {type(act).__name__}.")
    if int(sigmoid) + int(softmax) + int(act is not None) > 1:
        raise ValueError(f"Incompatible values: more than 1 of [sigmoid=True, softmax=True, {act_name} is not None].")
    reduction = getattr(reduction, "value", reduction)  # monai.utils.LossReduction
    if reduction not in REDUCTIONS:
        raise ValueError(f"reduction must be one of {REDUCTIONS}, got {reduction!r}")
    return reduction


def reduced(loss: torch.Tensor, reduction: str) -> torch.Tensor:
    """``loss`` reduced by ``reduction`` (``"mean"``, ``"sum"`` or ``"none"``)."""
    if reduction == "mean":
        return loss.mean()
    return loss.sum() if reduction == "sum" else loss


class _DistanceLoss(torch.nn.Module):
    """What both losses take from MONAI's: argument checks, activations, one-hot targets, background."""

    def __init__(self, include_background, to_onehot_y, sigmoid, softmax, other_act, reduction, batch):
        super().__init__()
        flags = {"include_background": include_background, "to_onehot_y": to_onehot_y, "batch": batch}
        reduction = check_options(flags, sigmoid, softmax, "other_act", other_act, reduction)
        self.include_background, self.to_onehot_y, self.batch = include_background, to_onehot_y, batch
        self.sigmoid, self.softmax, self.other_act, self.reduction = sigmoid, softmax, other_act, reduction

    @staticmethod
    def _check(input, target) -> None:
        if not isinstance(input, torch.Tensor) or not input.is_floating_point():
            raise TypeError(f"input must be a floating-point torch.Tensor, got {getattr(input, 'dtype', type(input))}")
        if input.ndim < 3:
            raise ValueError(f"input must have shape (B, C, *spatial), got {tuple(input.shape)}")
        if not isinstance(target, torch.Tensor):
            raise TypeError(f"target must be a torch.Tensor, got {type(target).__name__}")

    def _activated(self, input: torch.Tensor) -> torch.Tensor:
        if self.sigmoid:
            input = torch.sigmoid(input)
        if self.softmax:
            if input.shape[1] == 1:
                warnings.warn("single channel prediction, `softmax=True` ignored.", stacklevel=3)
            else:
                input = torch.softmax(input, 1)
        if self.other_act is not None:
            input = self.other_act(input)
        return input

    def _one_hot(self, target: torch.Tensor, channels: int) -> torch.Tensor:
        """``target (B, 1, *spatial)`` of class indices as float one-hot ``(B, channels, *spatial)``
        (``monai.networks.one_hot``)."""
        if channels == 1:
            warnings.warn("single channel prediction, `to_onehot_y=True` ignored.", stacklevel=3)
            return target
        if target.ndim < 2 or target.shape[1] != 1:
            raise ValueError(f"target must have one channel of class indices with to_onehot_y=True, "
                             f"got shape {tuple(target.shape)}")
        shape = (target.shape[0], channels) + target.shape[2:]
        return torch.zeros(shape, device=target.device).scatter_(1, target.long(), 1)

    def _foreground(self, input, target):
        if input.shape[1] == 1:
            warnings.warn("single channel prediction, `include_background=False` ignored.", stacklevel=3)
            return input, target
        return input[:, 1:], target[:, 1:]

    @staticmethod
    def _same_shape(input, target) -> None:
        if target.shape != input.shape:
            raise ValueError(f"target must have the shape of input {tuple(input.shape)}, got {tuple(target.shape)}")

    def _reduced(self, loss: torch.Tensor) -> torch.Tensor:
        return reduced(loss, self.reduction)


class HausdorffDTLoss(_DistanceLoss):
    r"""Hausdorff loss by distance transforms (Karimi & Salcudean, 2019): MONAI's ``HausdorffDTLoss``.

    Per slice, ``mean((p - y)^2 * (d_p^alpha + d_y^alpha))`` over space, with
    ``p`` the (activated) prediction, ``y`` the target and ``d_p``, ``d_y``
    the distance of every voxel to the boundary of ``p > 0.5`` and of
    ``y > 0.5`` (the EDT of the mask plus that of its complement; 0 for a
    slice that is empty or full). Differentiable in ``input``: the distance
    maps are constants (no grad), made for the whole batch in one call on
    the input's device.

    Parameters
    ----------
    alpha : float, optional
        Exponent of the distances (finite, ``>= 0``).
    include_background, to_onehot_y, sigmoid, softmax, other_act, reduction, batch
        As in MONAI 1.6's ``monai.losses.HausdorffDTLoss``: drop channel 0;
        one-hot encode a ``(B, 1, *spatial)`` target of class indices; the
        activation (at most one); ``"mean"`` / ``"sum"`` over batch and
        channels or ``"none"`` (``(B, C, 1, ...)``); average over the batch
        too before reducing.

    Notes
    -----
    Parity with MONAI 1.6: the same values and gradients (the distances are
    SciPy's, rounded to float32 as MONAI rounds them). Differs: any number
    of spatial axes (MONAI: 2 or 3), a ``ValueError`` rather than an
    ``AssertionError`` when shapes differ, and arguments are type-checked.

    See Also
    --------
    monai.losses.HausdorffDTLoss

    Examples
    --------
    >>> import torch
    >>> from morphaug.losses import HausdorffDTLoss
    >>> target = torch.zeros(2, 2, 16, 16)
    >>> target[:, 1, 4:12, 4:12] = 1
    >>> target[:, 0] = 1 - target[:, 1]
    >>> logits = torch.zeros(2, 2, 16, 16, requires_grad=True)
    >>> loss = HausdorffDTLoss(softmax=True)(logits, target)
    >>> loss.backward()
    >>> round(loss.item(), 4), logits.grad.shape
    (2.1484, torch.Size([2, 2, 16, 16]))
    """

    def __init__(self, alpha=2.0, include_background=False, to_onehot_y=False, sigmoid=False, softmax=False,
                 other_act=None, reduction="mean", batch=False):
        super().__init__(include_background, to_onehot_y, sigmoid, softmax, other_act, reduction, batch)
        if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not 0 <= alpha < math.inf:
            raise ValueError(f"alpha must be a finite number >= 0, got {alpha!r}")
        self.alpha = float(alpha)

    def _field(self, mask: torch.Tensor) -> torch.Tensor:
        """MONAI's ``distance_field``: the distance of every voxel to the mask's boundary, from either side."""
        inside, outside, interface = _inside_outside(mask)
        return torch.where(interface, inside + outside, 0.0)

    def forward(self, input: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """``input`` ``(B, C, *spatial)`` logits or probabilities, ``target`` of the same shape (or
        ``(B, 1, *spatial)`` class indices with ``to_onehot_y``); the loss, reduced."""
        self._check(input, target)
        input = self._activated(input)
        if self.to_onehot_y:
            target = self._one_hot(target, input.shape[1])
        if not self.include_background:
            input, target = self._foreground(input, target)
        self._same_shape(input, target)
        distance = self._field(input.detach() > 0.5) ** self.alpha + self._field(target > 0.5) ** self.alpha
        axes = tuple(range(2, input.ndim))
        return self._reduced(((input - target) ** 2 * distance).mean((0, *axes) if self.batch else axes, keepdim=True))


class LogHausdorffDTLoss(HausdorffDTLoss):
    r"""The logarithm of the Hausdorff loss, ``log(HausdorffDTLoss + 1)``: MONAI's ``LogHausdorffDTLoss``.

    The arguments, parity notes and differences are :class:`HausdorffDTLoss`'s.

    See Also
    --------
    monai.losses.LogHausdorffDTLoss

    Examples
    --------
    >>> import torch
    >>> from morphaug.losses import LogHausdorffDTLoss
    >>> target = torch.zeros(2, 2, 16, 16)
    >>> target[:, 1, 4:12, 4:12] = 1
    >>> target[:, 0] = 1 - target[:, 1]
    >>> round(LogHausdorffDTLoss(softmax=True)(torch.zeros(2, 2, 16, 16), target).item(), 4)
    1.1469
    """

    def forward(self, input: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """As :meth:`HausdorffDTLoss.forward`, then ``log(loss + 1)`` (MONAI's form, not ``log1p``)."""
        return torch.log(super().forward(input, target) + 1)


class BoundaryLoss(_DistanceLoss):
    r"""Boundary loss (Kervadec et al., 2019): MONAI's ``BoundaryLoss``.

    Per slice, ``sum(p * phi) / N`` over the ``N`` voxels, with ``p`` the
    (activated) prediction and ``phi`` the signed distance map of the target
    ``y > 0.5``: ``1 - d`` inside (``d``: the distance to the outside, so 0
    on the inner boundary), the distance to the inside outside, 0 for a
    slice that is empty or full (MONAI's convention). Differentiable in
    ``input``; the maps are made for the whole batch in one call on the
    input's device.

    Parameters
    ----------
    include_background, to_onehot_y, sigmoid, softmax, other_act, reduction, batch
        As in MONAI 1.6's ``monai.losses.BoundaryLoss`` (``to_onehot_y``
        takes ``(B, 1, *spatial)`` or ``(B, *spatial)`` class indices;
        ``"none"`` gives ``(B, C)``, or ``(C,)`` with ``batch``, which
        averages over the batch first).

    Notes
    -----
    Parity with MONAI 1.6: the same values and gradients. Differs: any
    number of spatial axes (MONAI: 2 or 3), a ``ValueError`` rather than an
    ``AssertionError`` when shapes differ, and arguments are type-checked.

    See Also
    --------
    monai.losses.BoundaryLoss

    Examples
    --------
    >>> import torch
    >>> from morphaug.losses import BoundaryLoss
    >>> target = torch.zeros(1, 1, 8, 8)
    >>> target[..., 2:6, 2:6] = 1
    >>> BoundaryLoss()(target, target).item()  # inside: 0 on the boundary, -1 one voxel in
    -0.0625
    """

    def __init__(self, include_background=True, to_onehot_y=False, sigmoid=False, softmax=False, other_act=None,
                 reduction="mean", batch=False):
        super().__init__(include_background, to_onehot_y, sigmoid, softmax, other_act, reduction, batch)

    def forward(self, input: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """``input`` ``(B, C, *spatial)`` logits or probabilities, ``target`` of the same shape (or class
        indices with ``to_onehot_y``); the loss, reduced."""
        self._check(input, target)
        input = self._activated(input)
        if self.to_onehot_y:
            target = self._one_hot(target[:, None] if target.ndim == input.ndim - 1 else target, input.shape[1])
        self._same_shape(input, target)
        if not self.include_background:
            input, target = self._foreground(input, target)
        mask = target > 0.5
        inside, outside, interface = _inside_outside(mask)
        signed = torch.where(interface, torch.where(mask, 1 - inside, outside), 0.0)
        loss = (input * signed).sum(tuple(range(2, input.ndim))) / math.prod(input.shape[2:])
        return self._reduced(loss.mean(0) if self.batch else loss)
