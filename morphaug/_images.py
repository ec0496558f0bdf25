"""The images of the scikit-image-style modules (``morphaug.morphology``, ``morphaug.measure``) and of
the topology metrics, checked in one place."""

from __future__ import annotations

import torch

__all__ = ["image_batch", "binary_image"]


def image_batch(image, name: str = "image", ranks: tuple[int, ...] = (2, 3)) -> torch.Tensor:
    """``image`` checked as a real ``(B, C, *spatial)`` tensor with a spatial rank in ``ranks``."""
    if not isinstance(image, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of shape (B, C, *spatial), got {type(image).__name__}")
    if image.is_complex():
        raise TypeError(f"{name} must be real, got {image.dtype}")
    if image.ndim - 2 not in ranks:
        wanted = " or ".join(str(rank) for rank in ranks)
        raise ValueError(f"{name} must have shape (B, C, *spatial) with {wanted} spatial axes, got shape "
                         f"{tuple(image.shape)}")
    return image


def binary_image(image, name: str = "image", ranks: tuple[int, ...] = (2, 3)) -> torch.Tensor:
    """``image`` (see :func:`image_batch`) as a bool mask. It must be binary (bool, or 0 and 1 only):
    checked at once on the CPU, by a device-side assert elsewhere (``torch._assert_async``: no host
    sync)."""
    image = image_batch(image, name, ranks)
    if image.dtype == torch.bool:
        return image
    mask = image == 1
    message = f"{name} must be binary (bool, or 0 and 1 only): threshold it first"
    if image.numel() == 0:
        return mask
    binary = (mask | (image == 0)).all()
    if image.device.type == "cpu":
        if not binary:
            raise ValueError(message)
    else:
        torch._assert_async(binary, message)
    return mask
