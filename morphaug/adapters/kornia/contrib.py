"""``kornia.contrib``'s labelling and distance transform, exact, on morphaug's kernels.

``connected_components``, ``distance_transform`` and ``DistanceTransform`` with Kornia 0.9's
names, arguments, shapes, dtypes and errors. Where Kornia approximates, these are exact:

* :func:`connected_components` labels the converged 8-connected components (one
  :func:`morphaug.ndimage.label` pass), numbered as Kornia numbers them; Kornia runs
  ``num_iterations`` max-pooling steps and so agrees only once they reach across every
  component (a component longer than that comes out split).
* :func:`distance_transform` is the exact Euclidean distance to the nearest positive pixel
  (:func:`morphaug.ndimage.distance_transform_edt`), where Kornia's cascade of soft-minimum
  convolutions is approximate (up to 29 % short along diagonals in 2-D); ``kernel_size`` and
  ``h`` are checked as Kornia checks them but change nothing, and the result carries no
  gradient (it is piecewise constant in the image).

Example:
    >>> import torch
    >>> from morphaug.adapters.kornia.contrib import connected_components, distance_transform
    >>> image = torch.tensor([[[[1., 0., 0., 1.], [1., 0., 0., 0.]]]])
    >>> connected_components(image)
    tensor([[[[5, 0, 0, 4],
              [5, 0, 0, 0]]]])
    >>> distance_transform(torch.tensor([[[[0., 0., 0., 1.]]]]))
    tensor([[[[3., 2., 1., 0.]]]])
"""

from __future__ import annotations

import torch
from kornia.core.exceptions import BaseError, TypeCheckError

from ... import ndimage

__all__ = ["connected_components", "distance_transform", "DistanceTransform"]

_EIGHT_CONNECTED = torch.ones(3, 3, dtype=torch.bool)


def connected_components(image: torch.Tensor, num_iterations: int = 100) -> torch.Tensor:
    """The 8-connected components of ``image == 1``, labelled as ``kornia.contrib.connected_components``.

    A component's label is 1 plus the largest raster index of its pixels in the batch flattened
    to ``(N, H, W)``; the background is 0. The labels are the converged ones: Kornia's equal them
    once ``num_iterations`` max-pooling steps cross every component (see the module notes).

    Args:
        image: ``(*, 1, H, W)``; foreground is a value exactly equal to 1 (any dtype).
        num_iterations: a positive int, checked as Kornia checks it; the result does not depend on it.

    Returns:
        int64 labels with the shape of ``image``.
    """
    if not isinstance(image, torch.Tensor):
        raise TypeError(f"Input imagetype is not a torch.Tensor. Got: {type(image)}")
    if not isinstance(num_iterations, int) or num_iterations < 1:
        raise TypeError("Input num_iterations must be a positive integer.")
    if len(image.shape) < 3 or image.shape[-3] != 1:
        raise ValueError(f"Input image shape must be (*,1,H,W). Got: {image.shape}")
    if image.numel() == 0:
        return torch.zeros(image.shape, dtype=torch.int64, device=image.device)
    height, width = image.shape[-2:]
    mask = (image == 1).reshape(-1, 1, height, width)
    labels, _ = ndimage.label(mask, structure=_EIGHT_CONNECTED, output=torch.int64)
    labels = labels.flatten(1)
    ids = torch.arange(1, height * width + 1, device=image.device).expand_as(labels)
    largest = labels.new_zeros((labels.shape[0], height * width + 1))
    largest.scatter_reduce_(1, labels, ids, "amax")
    offset = torch.arange(labels.shape[0], device=image.device).unsqueeze(1) * (height * width)
    return torch.where(labels > 0, largest.gather(1, labels) + offset, 0).view(image.shape)


def _check_distance_arguments(image, kernel_size, h) -> None:
    """Kornia's checks of ``distance_transform``, with its error types (``kornia.core.exceptions``)."""
    if not isinstance(image, torch.Tensor):
        raise TypeCheckError(f"Not a Tensor type. Got: {type(image)}.")
    if not image.is_floating_point():
        raise BaseError("image must be a floating point tensor")
    if image.ndim not in (4, 5):
        raise BaseError(f"Invalid image shape, we expect BxCxHxW or BxCxDxHxW. Got: {image.shape}")
    if not isinstance(kernel_size, int) or isinstance(kernel_size, bool):
        raise TypeCheckError(f"kernel_size must be an int. Got: {type(kernel_size)}")
    if kernel_size % 2 == 0 or kernel_size < 3:
        raise BaseError("kernel_size must be an odd integer >= 3")
    if not h > 0:
        raise BaseError(f"h must be a positive float, got {h}")


def distance_transform(image: torch.Tensor, kernel_size: int = 3, h: float = 0.35) -> torch.Tensor:
    """The exact Euclidean distance to the nearest positive pixel, as ``kornia.contrib.distance_transform``
    approximates it: ``scipy.ndimage.distance_transform_edt(image <= 0)`` per ``(b, c)`` slice.

    A slice without any positive pixel is 0 everywhere, as in Kornia. Kornia's soft sources
    (``0 < v < 1``) are full sources here. See the module notes for what is exact here and not in Kornia.

    Args:
        image: floating-point ``(B, C, H, W)`` or ``(B, C, D, H, W)``.
        kernel_size: an odd int of at least 3, checked as Kornia checks it; no effect.
        h: a positive float, checked as Kornia checks it; no effect.

    Returns:
        the distances, with the shape and dtype of ``image`` (computed in float32, or float64
        for float64 input); no gradient.
    """
    _check_distance_arguments(image, kernel_size, h)
    background = image <= 0
    work = torch.float64 if image.dtype == torch.float64 else torch.float32
    distances = torch.empty(image.shape, dtype=work, device=image.device)
    ndimage.distance_transform_edt(background, distances=distances)
    sources = ~background.flatten(2).all(-1)
    return torch.where(sources.view(*sources.shape, *[1] * (image.ndim - 2)), distances, 0).to(image.dtype)


class DistanceTransform(torch.nn.Module):
    """``kornia.contrib.DistanceTransform``: :func:`distance_transform` as a module.

    Args:
        kernel_size: as :func:`distance_transform`'s (no effect).
        h: as :func:`distance_transform`'s (no effect).
    """

    def __init__(self, kernel_size: int = 3, h: float = 0.35) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.h = h

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        return distance_transform(image, self.kernel_size, self.h)
