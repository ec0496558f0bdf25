"""MONAI's ``erode`` and ``dilate`` (``monai.transforms.utils_morphological_ops``), computed by morphaug.

The same names, arguments, results and containers as MONAI 1.6's: a mask ``(N, C, *spatial)`` (NumPy
array, tensor or MetaTensor) in, the same type, dtype, device and metadata out; a ``filter_size`` box of
odd sides, the input padded with ``pad_value``. MONAI convolves the mask with a box of ones that spans
every channel (a ``(C, C, *filter_size)`` kernel) and thresholds the window's mean, so each channel of
the result depends on all channels and all channels come out equal; so do these. Here the window is a
binary erosion or dilation by :mod:`morphaug.ndimage` (the native box kernel), not a float convolution.

Differs
    Any number of spatial axes (MONAI: 2 or 3). A ``filter_size`` with unequal sides pads each axis by its
    own half side (MONAI pads the axes in reverse order: its result then has another shape, or it fails).
    For a mask of 0 and 1 (MONAI's documented input) and a
    ``pad_value`` of 0 or 1 the results are MONAI's exactly. Other values are read as binary: erosion keeps
    a voxel whose window holds only ones (MONAI: whose window's mean is 1, e.g. also a window of 0 and 2),
    dilation one whose window holds a nonzero value (MONAI: whose window's sum is positive); the padding
    counts as one for erosion when ``pad_value == 1``, as nonzero for dilation when ``pad_value != 0``.

Example:
    >>> import torch
    >>> from morphaug.adapters.monai import dilate, erode
    >>> mask = torch.zeros(1, 1, 3, 3)
    >>> mask[..., 1, 1] = 1
    >>> erode(mask).sum().item(), dilate(mask).sum().item()
    (0.0, 9.0)
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import numpy as np
import torch
from monai.utils import convert_to_dst_type, convert_to_tensor, ensure_tuple_rep

from .. import ndimage

__all__ = ["erode", "dilate"]


def _box(mask, filter_size, pad_value, erosion: bool):
    if not isinstance(mask, (np.ndarray, torch.Tensor)):
        raise TypeError(f"mask must be a NumPy array or a torch.Tensor, got {type(mask).__name__}")
    x = convert_to_tensor(mask, track_meta=False)
    if x.ndim < 3:
        raise ValueError(f"mask must have shape (N, C, *spatial), got {tuple(x.shape)}")
    size = ensure_tuple_rep(filter_size, x.ndim - 2)
    if any(isinstance(s, bool) or not isinstance(s, numbers.Integral) or s < 1 or s % 2 == 0 for s in size):
        raise ValueError(f"All dimensions in filter_size must be odd numbers, got {size}.")
    if isinstance(pad_value, bool) or not isinstance(pad_value, numbers.Real):
        raise TypeError(f"pad_value must be a number, got {pad_value!r}")
    box = np.ones(size, dtype=bool)
    # the window spans every channel (MONAI's kernel sums over them): one binary image per sample
    if erosion:
        core, outside_set = (x == 1).all(1, keepdim=True), pad_value == 1
    else:
        core, outside_set = (x != 0).any(1, keepdim=True), pad_value != 0
    # a set outside is the complement's op with an empty outside (the box is symmetric), as the native
    # kernel takes it
    if erosion:
        out = ~ndimage.binary_dilation(~core, box) if outside_set else ndimage.binary_erosion(core, box)
    else:
        out = ~ndimage.binary_erosion(~core, box) if outside_set else ndimage.binary_dilation(core, box)
    result = out.expand(x.shape).float().contiguous()  # MONAI's 1.0 / 0.0, in the mask's container and dtype
    return convert_to_dst_type(src=result, dst=mask)[0]


def erode(mask, filter_size: int | Sequence[int] = 3, pad_value: float = 1.0):
    """Erode a binary mask ``(N, C, *spatial)`` by a box: ``monai.transforms.utils_morphological_ops.erode``.

    What is kept from MONAI and what differs: :mod:`morphaug.adapters.monai_morphology`.
    """
    return _box(mask, filter_size, pad_value, erosion=True)


def dilate(mask, filter_size: int | Sequence[int] = 3, pad_value: float = 0.0):
    """Dilate a binary mask ``(N, C, *spatial)`` by a box: ``monai.transforms.utils_morphological_ops.dilate``.

    What is kept from MONAI and what differs: :mod:`morphaug.adapters.monai_morphology`.
    """
    return _box(mask, filter_size, pad_value, erosion=False)
