"""Skeleton losses for thin structures: MONAI 1.6's soft clDice losses and Skeleton Recall's loss.

The soft skeleton is Shit et al.'s: iterated soft erosion (the minimum over
the axis-aligned cross, as a minimum of 1-D 3-wide min-pools) and soft
opening, with torch's pooling as MONAI computes it. morphaug's grey ops
give the same values, but their subgradient routes a tie to one voxel where
MONAI's ``torch.min`` of the 1-D pools splits it, so on inputs with equal
neighbours (saturated probabilities, masks) the gradients would differ from
MONAI's; pooling keeps them equal.
"""

from __future__ import annotations

import math
import numbers

import torch
import torch.nn.functional as F

from ._distance import _DistanceLoss, check_options, reduced

__all__ = ["SoftclDiceLoss", "SoftDiceclDiceLoss", "SkeletonRecallLoss"]

_MAX_POOLS = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}


def _soft_erode(image: torch.Tensor) -> torch.Tensor:
    """The minimum over the cross: the 3-wide minima along each axis, folded by ``torch.min``."""
    rank = image.ndim - 2
    eroded = None
    for axis in range(rank):
        window = tuple(3 if a == axis else 1 for a in range(rank))
        line = -_MAX_POOLS[rank](-image, window, 1, tuple(w // 2 for w in window))
        eroded = line if eroded is None else torch.min(eroded, line)
    return eroded


def _soft_dilate(image: torch.Tensor) -> torch.Tensor:
    """The maximum over the 3-wide box."""
    return _MAX_POOLS[image.ndim - 2](image, 3, 1, 1)


def _soft_skeleton(image: torch.Tensor, iterations: int) -> torch.Tensor:
    """Shit et al.'s soft skeleton: what each of ``iterations + 1`` erosions loses to its opening,
    merged as a fuzzy union. The erosion of one step is the image of the next, computed once."""
    eroded = _soft_erode(image)
    skeleton = F.relu(image - _soft_dilate(eroded))
    for _ in range(iterations):
        image, eroded = eroded, _soft_erode(eroded)
        delta = F.relu(image - _soft_dilate(eroded))
        skeleton = skeleton + F.relu(delta - skeleton * delta)
    return skeleton


def _check_smooth(name: str, value, positive: bool = False) -> float:
    bound = "> 0" if positive else ">= 0"
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not (
            0 < value < math.inf if positive else 0 <= value < math.inf):
        raise ValueError(f"{name} must be a finite number {bound}, got {value!r}")
    return float(value)


class _SoftSkeletonLoss(_DistanceLoss):
    """The arguments and the soft clDice term both losses share."""

    def __init__(self, iter_, smooth_nr, smooth_dr, smooth, include_background, to_onehot_y, sigmoid, softmax,
                 other_act, reduction):
        super().__init__(include_background, to_onehot_y, sigmoid, softmax, other_act, reduction, False)
        if not isinstance(iter_, int) or isinstance(iter_, bool):  # MONAI's errors and messages
            raise TypeError(f"iter_ must be an integer but got {type(iter_).__name__}.")
        if iter_ < 0:
            raise ValueError(f"iter_ must be a non-negative integer but got {iter_}.")
        if isinstance(smooth, numbers.Real) and not isinstance(smooth, bool) and smooth <= 0:
            raise ValueError(f"smooth must be a positive value but got {smooth}.")
        self.iter = iter_
        self.smooth_nr, self.smooth_dr = _check_smooth("smooth_nr", smooth_nr), _check_smooth("smooth_dr", smooth_dr)
        self.smooth = _check_smooth("smooth", smooth, positive=True)

    def _prepared(self, input: torch.Tensor, target: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """MONAI's order: activation, one-hot target, background dropped, shapes compared."""
        self._check(input, target)
        if input.ndim - 2 not in _MAX_POOLS:
            raise ValueError(f"input must have 1 to 3 spatial axes, (B, C, *spatial), got {tuple(input.shape)}")
        channels = input.shape[1]
        input = self._activated(input)
        if self.to_onehot_y:
            target = self._one_hot(target, channels)
        if not self.include_background:
            input, target = self._foreground(input, target)
        self._same_shape(input, target)
        return input, target if target.is_floating_point() else target.to(input.dtype)

    def _cl_dice(self, input: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """``1 -`` the soft clDice of every sample, over its channels and space together: ``(B,)``."""
        axes = tuple(range(1, input.ndim))
        pred_skeleton, true_skeleton = _soft_skeleton(input, self.iter), _soft_skeleton(target, self.iter)
        precision = ((pred_skeleton * target).sum(axes) + self.smooth_nr) / (pred_skeleton.sum(axes) + self.smooth_dr)
        sensitivity = ((true_skeleton * input).sum(axes) + self.smooth_nr) / (true_skeleton.sum(axes) + self.smooth_dr)
        return 1.0 - 2.0 * (precision * sensitivity) / (precision + sensitivity + self.smooth)


class SoftclDiceLoss(_SoftSkeletonLoss):
    r"""Soft clDice loss (Shit et al., CVPR 2021): MONAI's ``SoftclDiceLoss``.

    Per sample, ``1 - 2 P S / (P + S + smooth)`` with the topology precision
    ``P = (sum(S(p) y) + smooth_nr) / (sum(S(p)) + smooth_dr)`` and
    sensitivity ``S = (sum(S(y) p) + smooth_nr) / (sum(S(y)) + smooth_dr)``,
    summed over channels and space, ``p`` the (activated) prediction, ``y``
    the target and ``S`` the soft skeleton: ``iter_ + 1`` rounds of soft
    erosion (min-pooling over the cross), each adding what its soft opening
    removes. Differentiable in ``input`` (and in a float ``target``).

    The soft skeleton is a differentiable surrogate: a grey-level
    morphological skeleton that is only as deep as ``iter_`` erosions (wider
    structures keep an incomplete, several voxels thick core) and that does
    not preserve topology. The exact metric is
    :func:`morphaug.metrics.cl_dice`: per ``(b, c)`` slice, on binary masks,
    with the thin, topology-preserving skeleton of
    :func:`morphaug.morphology.skeletonize`, and no smoothing terms; use it
    to evaluate what this loss trains (``1 - cl_dice`` is the loss's exact
    counterpart per slice).

    Parameters
    ----------
    iter_ : int, optional
        Erosion rounds after the first (``>= 0``).
    smooth_nr, smooth_dr : float, optional
        Added to the numerators / denominators of ``P`` and ``S`` (finite,
        ``>= 0``).
    smooth : float, optional
        Added to the harmonic mean's denominator (finite, ``> 0``).
    include_background, to_onehot_y, sigmoid, softmax, other_act, reduction
        As in MONAI 1.6's ``monai.losses.SoftclDiceLoss``: drop channel 0;
        one-hot encode a ``(B, 1, *spatial)`` target of class indices; the
        activation (at most one); ``"mean"`` / ``"sum"`` over the batch or
        ``"none"`` (``(B,)``).

    Notes
    -----
    Parity with MONAI 1.6.1: the same values and gradients (the same pooling
    and ``torch.min`` order; one erosion per round is shared where MONAI
    computes it twice). Differs: 1 to 3 spatial axes (MONAI: 2 or 3), a
    ``ValueError`` rather than an ``AssertionError`` when shapes differ, and
    arguments are type-checked (``smooth_nr`` and ``smooth_dr`` too).

    See Also
    --------
    monai.losses.SoftclDiceLoss, morphaug.metrics.cl_dice

    Examples
    --------
    >>> import torch
    >>> from morphaug.losses import SoftclDiceLoss
    >>> target = torch.zeros(1, 1, 9, 9)
    >>> target[..., 4, 1:8] = 1  # a one-voxel line
    >>> loss = SoftclDiceLoss()
    >>> round(loss(target, target).item(), 4), round(loss(target, target.transpose(-1, -2)).item(), 4)
    (0.0, 0.7501)
    """

    def __init__(self, iter_=3, smooth_nr=1.0, smooth_dr=1.0, smooth=1e-4, include_background=True,
                 to_onehot_y=False, sigmoid=False, softmax=False, other_act=None, reduction="mean"):
        super().__init__(iter_, smooth_nr, smooth_dr, smooth, include_background, to_onehot_y, sigmoid, softmax,
                         other_act, reduction)

    def forward(self, input: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """``input`` ``(B, C, *spatial)`` logits or probabilities, ``target`` of the same shape (or
        ``(B, 1, *spatial)`` class indices with ``to_onehot_y``); the loss, reduced."""
        return self._reduced(self._cl_dice(*self._prepared(input, target)))


class SoftDiceclDiceLoss(_SoftSkeletonLoss):
    r"""Soft Dice and soft clDice: MONAI's ``SoftDiceclDiceLoss``, ``(1 - alpha) Dice + alpha clDice``.

    Dice is MONAI's ``DiceLoss`` per ``(b, c)`` slice,
    ``1 - (2 sum(p y) + smooth_nr) / (sum(y) + sum(p) + smooth_dr)``;
    clDice is :class:`SoftclDiceLoss`'s (per sample, the relation to the
    exact :func:`morphaug.metrics.cl_dice` is documented there).

    Parameters
    ----------
    iter_, smooth_nr, smooth_dr, smooth
        As in :class:`SoftclDiceLoss` (``smooth_nr`` and ``smooth_dr`` serve
        both terms).
    alpha : float, optional
        The weight of clDice, in ``[0, 1]``.
    include_background, to_onehot_y, sigmoid, softmax, other_act, reduction
        As in MONAI 1.6's ``monai.losses.SoftDiceclDiceLoss``. ``"none"``
        adds the terms as MONAI does: Dice's ``(B, C, 1, ...)`` broadcast
        against clDice's ``(B,)``.

    Notes
    -----
    Parity with MONAI 1.6.1: the same values and gradients; the activation
    runs once for both terms (MONAI: once per term, the same values).
    Differs as :class:`SoftclDiceLoss` does.

    See Also
    --------
    monai.losses.SoftDiceclDiceLoss

    Examples
    --------
    >>> import torch
    >>> from morphaug.losses import SoftDiceclDiceLoss
    >>> target = torch.zeros(1, 1, 9, 9)
    >>> target[..., 4, 1:8] = 1
    >>> round(SoftDiceclDiceLoss()(target, target.transpose(-1, -2)).item(), 4)
    0.775
    """

    def __init__(self, iter_=3, alpha=0.5, smooth_nr=1.0, smooth_dr=1.0, smooth=1e-4, include_background=True,
                 to_onehot_y=False, sigmoid=False, softmax=False, other_act=None, reduction="mean"):
        super().__init__(iter_, smooth_nr, smooth_dr, smooth, include_background, to_onehot_y, sigmoid, softmax,
                         other_act, reduction)
        if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not 0.0 <= alpha <= 1.0:
            raise ValueError(f"alpha must be in [0, 1] but got {alpha}.")
        self.alpha = float(alpha)

    def forward(self, input: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """``input`` ``(B, C, *spatial)`` logits or probabilities, ``target`` of the same shape or
        ``(B, 1, *spatial)`` (class indices with ``to_onehot_y``); the loss, reduced."""
        self._check(input, target)
        if input.ndim != target.ndim:  # MONAI's checks and messages
            raise ValueError(f"the number of dimensions for input and target should be the same, got shape "
                             f"{input.shape} and {target.shape}.")
        if target.shape[1] != 1 and target.shape[1] != input.shape[1]:
            raise ValueError(f"number of channels for target is neither 1 nor the same as input, got shape "
                             f"{input.shape} and {target.shape}.")
        input, target = self._prepared(input, target)
        axes = tuple(range(2, input.ndim))
        dice = 1.0 - (2.0 * (target * input).sum(axes) + self.smooth_nr) / (
            target.sum(axes) + input.sum(axes) + self.smooth_dr)
        if self.reduction == "none":
            dice = dice.reshape(dice.shape + (1,) * len(axes))
        return (1.0 - self.alpha) * self._reduced(dice) + self.alpha * self._reduced(self._cl_dice(input, target))


class SkeletonRecallLoss(torch.nn.Module):
    r"""The Skeleton Recall loss (Kirchhoff et al., ECCV 2024): soft recall of the target's skeleton.

    Per ``(b, c)`` slice (or per class over the batch with ``batch_dice``),
    ``-(sum(p s m) + smooth) / max(sum(s m) + smooth, 1e-8)``, with ``p`` the
    (activated) prediction, ``s`` the one-hot skeleton target and ``m`` the
    loss mask (1 without one): the value of ``SoftSkeletonRecallLoss`` in
    the authors' nnU-Net code (negative recall, so that ``1 + loss`` is the
    missed fraction). The authors add it to nnU-Net's Dice and
    cross-entropy losses with weight 1 (``DC_SkelREC_and_CE_loss``, both
    Dice and recall with ``smooth=1e-5``, ``do_bg=False``): do the same, for
    example with MONAI's ``DiceCELoss``. Differentiable in ``input``; the
    target is a constant.

    Parameters
    ----------
    apply_nonlin : callable, optional
        Applied to ``input`` first (the authors: ``softmax`` over channels).
    batch_dice : bool, optional
        Sum over the batch before the ratio (one recall per class).
    do_bg : bool, optional
        Keep channel 0. The authors' code refuses it (channel 0 is the
        softmax background); here it serves outputs without a background
        channel (``sigmoid``, one-hot targets).
    smooth : float, optional
        Added to both sums (finite, ``>= 0``; the authors' trainer: 1e-5).
    sigmoid, softmax : bool, optional
        Apply a sigmoid / a softmax over channels to ``input`` (MONAI's
        flags; at most one of them and ``apply_nonlin``).
    reduction : {"mean", "sum", "none"}, optional
        ``"mean"`` (the authors'), ``"sum"``, or ``"none"``: ``(B, C')``, or
        ``(C',)`` with ``batch_dice``, ``C'`` the channels kept.

    Notes
    -----
    The target is the skeleton that ``morphaug.transforms.SkeletonTarget``
    makes (the authors' ``SkeletonTransform``): a label map whose (dilated)
    skeleton voxels carry their class and 0 elsewhere, ``(B, 1, *spatial)``
    or ``(B, *spatial)``, or its one-hot form ``(B, C, *spatial)``, as the
    authors' code tells them apart (a target of ``input``'s shape is
    one-hot, so with one channel it is the skeleton mask). A label outside
    ``0 .. C - 1`` marks no class. The authors' ``ddp`` all-gather is not
    offered: reduce across processes yourself.

    Examples
    --------
    >>> import torch
    >>> from morphaug.losses import SkeletonRecallLoss
    >>> skeleton = torch.zeros(1, 1, 8, 8, dtype=torch.long)
    >>> skeleton[0, 0, 4, 1:7] = 1  # class 1's skeleton
    >>> logits = torch.zeros(1, 2, 8, 8, requires_grad=True)
    >>> loss = SkeletonRecallLoss(softmax=True, smooth=1e-5)(logits, skeleton)
    >>> loss.backward()
    >>> round(loss.item(), 4), logits.grad.shape
    (-0.5, torch.Size([1, 2, 8, 8]))
    """

    def __init__(self, apply_nonlin=None, batch_dice=False, do_bg=False, smooth=1.0, *, sigmoid=False,
                 softmax=False, reduction="mean"):
        super().__init__()
        reduction = check_options({"batch_dice": batch_dice, "do_bg": do_bg}, sigmoid, softmax, "apply_nonlin",
                                  apply_nonlin, reduction)
        self.apply_nonlin, self.batch_dice, self.do_bg = apply_nonlin, batch_dice, do_bg
        self.smooth = _check_smooth("smooth", smooth)
        self.sigmoid, self.softmax, self.reduction = sigmoid, softmax, reduction

    def _one_hot(self, target: torch.Tensor, input: torch.Tensor) -> torch.Tensor:
        """The skeleton target as ``input``-shaped one-hot values of ``input``'s dtype."""
        if not isinstance(target, torch.Tensor):
            raise TypeError(f"target must be a torch.Tensor, got {type(target).__name__}")
        target = target.detach()
        if target.ndim == input.ndim - 1:
            target = target.unsqueeze(1)
        if target.shape == input.shape:
            return target.to(input.dtype)
        if target.shape != (input.shape[0], 1, *input.shape[2:]):
            raise ValueError(f"target must be a (B, 1, *spatial) or (B, *spatial) label map or a one-hot "
                             f"(B, C, *spatial) map of input's shape {tuple(input.shape)}, got {tuple(target.shape)}")
        classes = torch.arange(input.shape[1], device=target.device).reshape((1, -1) + (1,) * (input.ndim - 2))
        return (target == classes).to(input.dtype)

    def forward(self, input: torch.Tensor, target: torch.Tensor, loss_mask: torch.Tensor | None = None
                ) -> torch.Tensor:
        """``input`` ``(B, C, *spatial)`` probabilities (or logits, with an activation), ``target``
        the skeleton (label map or one-hot), ``loss_mask`` ``(B, 1, *spatial)`` (1 where voxels
        count, 0 where they are ignored), or None; the loss, reduced."""
        if not isinstance(input, torch.Tensor) or not input.is_floating_point():
            raise TypeError(f"input must be a floating-point torch.Tensor, got {getattr(input, 'dtype', type(input))}")
        if input.ndim < 3:
            raise ValueError(f"input must have shape (B, C, *spatial), got {tuple(input.shape)}")
        if not self.do_bg and input.shape[1] < 2:
            raise ValueError(f"do_bg=False drops channel 0, the background: input needs 2 or more channels, "
                             f"got shape {tuple(input.shape)}")
        skeleton = self._one_hot(target, input)
        if self.sigmoid:
            input = torch.sigmoid(input)
        if self.softmax:
            input = torch.softmax(input, 1)
        if self.apply_nonlin is not None:
            input = self.apply_nonlin(input)
        if not self.do_bg:
            input, skeleton = input[:, 1:], skeleton[:, 1:]
        if loss_mask is not None:
            if not isinstance(loss_mask, torch.Tensor) or loss_mask.shape != (input.shape[0], 1, *input.shape[2:]):
                raise ValueError(f"loss_mask must be a (B, 1, *spatial) tensor for input of shape "
                                 f"{tuple(input.shape)}, got {tuple(getattr(loss_mask, 'shape', ()))}")
            skeleton = skeleton * loss_mask.detach().to(input.dtype)
        axes = (0, *range(2, input.ndim)) if self.batch_dice else tuple(range(2, input.ndim))
        recall = ((input * skeleton).sum(axes) + self.smooth) / (skeleton.sum(axes) + self.smooth).clamp_min(1e-8)
        return reduced(-recall, self.reduction)
