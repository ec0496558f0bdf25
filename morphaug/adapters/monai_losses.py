"""MONAI's distance-transform and clDice losses under MONAI's names: :mod:`morphaug.losses` with MONAI's errors.

``HausdorffDTLoss``, ``LogHausdorffDTLoss``, ``BoundaryLoss``, ``SoftclDiceLoss`` and ``SoftDiceclDiceLoss``
are :mod:`morphaug.losses`' classes (MONAI 1.6's signatures, values and gradients, the distance maps made on
the device for the whole batch) that raise MONAI's ``AssertionError``, with MONAI's message, where input and
target shapes differ (:mod:`morphaug.losses` raises a ``ValueError``). MONAI's own tests of the Hausdorff and
clDice losses pass against them (``tests/monai_suite``).

Example:
    >>> import torch
    >>> from morphaug.adapters.monai import HausdorffDTLoss
    >>> HausdorffDTLoss()(torch.zeros(1, 2, 4, 4), torch.zeros(1, 3, 4, 4))
    Traceback (most recent call last):
    ...
    AssertionError: ground truth has different shape (torch.Size([1, 2, 4, 4])) from input (torch.Size([1, 1, 4, 4]))
"""

from __future__ import annotations

from .. import losses

__all__ = ["HausdorffDTLoss", "LogHausdorffDTLoss", "BoundaryLoss", "SoftclDiceLoss", "SoftDiceclDiceLoss"]


class _GroundTruthShape:
    @staticmethod
    def _same_shape(input, target) -> None:
        if target.shape != input.shape:  # MONAI's error and message
            raise AssertionError(f"ground truth has different shape ({target.shape}) from input ({input.shape})")


class HausdorffDTLoss(_GroundTruthShape, losses.HausdorffDTLoss):
    """MONAI's ``HausdorffDTLoss``: :class:`morphaug.losses.HausdorffDTLoss` with MONAI's error types."""


class LogHausdorffDTLoss(_GroundTruthShape, losses.LogHausdorffDTLoss):
    """MONAI's ``LogHausdorffDTLoss``: :class:`morphaug.losses.LogHausdorffDTLoss` with MONAI's error types."""


class BoundaryLoss(losses.BoundaryLoss):
    """MONAI's ``BoundaryLoss``: :class:`morphaug.losses.BoundaryLoss` with MONAI's error types."""

    @staticmethod
    def _same_shape(input, target) -> None:
        if target.shape != input.shape:  # MONAI's error and message
            raise AssertionError(f"input and target shapes do not match: {input.shape} vs {target.shape}")


class SoftclDiceLoss(_GroundTruthShape, losses.SoftclDiceLoss):
    """MONAI's ``SoftclDiceLoss``: :class:`morphaug.losses.SoftclDiceLoss` with MONAI's error types."""


class SoftDiceclDiceLoss(_GroundTruthShape, losses.SoftDiceclDiceLoss):
    """MONAI's ``SoftDiceclDiceLoss``: :class:`morphaug.losses.SoftDiceclDiceLoss` with MONAI's error types."""
