"""Connected components of many masks at once: their sizes, and the filters that remove some.

Every ``(b, c)`` mask of a batch is labelled in one call (:func:`label`),
counted into a ``(B * C, width)`` table (the native ``label_sizes`` where it
takes the call) and filtered by a rule applied on that table (the native
``filter_components`` runs the whole filter where it takes the call: each
mask through ``label``'s run scan, its runs keeping their labels, counted,
the rule applied and the removed runs marked, with no ``(b, c, voxel)``
labels). The table has a column per label a mask can hold: on the CPU the
largest count of components (read for free), on an accelerator one per voxel.
The component transforms of ``morphaug.transforms`` run on these.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

from .. import _ops
from ._label import label
from ._structure import generate_binary_structure

__all__ = ["Components", "components", "removed_components", "any_channel"]

#: The most an int32 index counts.
_INT32_MAX = torch.iinfo(torch.int32).max


class Components(NamedTuple):
    """The components of the ``(sample, class)`` masks ``(B, K, *spatial)``."""

    #: ``(B, K, *spatial)`` integer: each voxel's component, SciPy's numbering ``1 ..`` per mask, 0 outside.
    labels: torch.Tensor
    #: ``(B * K, width)`` integer: the voxel count of each label; column 0 (outside) is 0.
    sizes: torch.Tensor


def _width(counts: torch.Tensor, voxels: int) -> int:
    """The columns of a table of components: outside, and every label a mask holds. On the CPU the
    largest count (read for free); elsewhere, and while Dynamo traces, every voxel's (no host sync)."""
    if counts.device.type == "cpu" and counts.numel() and not torch.compiler.is_compiling():
        return int(counts.max()) + 1
    return voxels + 1


def _keys(labels: torch.Tensor, width: int) -> torch.Tensor:
    """``(B * K * N,)``: each voxel's entry in a flat ``(B * K, width)`` table (its mask's row, its label)."""
    rows = labels.shape[0] * labels.shape[1]
    index = torch.int32 if rows * width <= _INT32_MAX else torch.int64  # int32 keys: half the memory traffic
    offsets = torch.arange(0, rows * width, width, dtype=index, device=labels.device)
    voxels = math.prod(labels.shape[2:])  # not -1: an empty batch has rows == 0
    return (labels.reshape(rows, voxels).to(index) + offsets[:, None]).view(-1)


def _label_sizes_torch(labels: torch.Tensor, width: int) -> torch.Tensor:
    voxels = math.prod(labels.shape[2:])
    count = torch.int32 if voxels <= _INT32_MAX else torch.int64
    sizes = torch.zeros(labels.shape[0] * labels.shape[1] * width, dtype=count, device=labels.device)
    keys = _keys(labels, width)
    sizes.index_add_(0, keys, torch.ones((), dtype=count, device=labels.device).expand(keys.shape))
    return sizes.view(*labels.shape[:2], width)


_LABEL_SIZES = _ops.Table("component sizes (RandRemoveComponent)", [
    _ops.Case("every label map", "label_sizes", lambda labels, width: True, _ops.kernels.label_sizes),
], _label_sizes_torch)


def components(masks: torch.Tensor, hops: int) -> Components:
    """The components of every ``(b, k)`` mask of bool ``masks (B, K, *spatial)``, joined within
    ``hops`` orthogonal hops, labelled in one call and counted in one table."""
    structure = generate_binary_structure(masks.ndim - 2, hops)  # on the host, read there
    labels, counts = label(masks, structure=structure)
    width = _width(counts, math.prod(masks.shape[2:]))
    sizes = _LABEL_SIZES(labels, labels, width).view(masks.shape[0] * masks.shape[1], width)
    sizes[:, 0].fill_(0)
    return Components(labels, sizes)


def _largest(sizes: torch.Tensor, count: int) -> torch.Tensor:
    """``(R, N + 1)`` bool: the ``count`` largest components of each row of ``sizes`` (all of them when
    there are fewer). Among components of equal size the higher label goes first: MONAI's
    ``argsort(sizes)[::-1]`` with a stable sort, i.e. the component that starts later in raster order."""
    width = sizes.shape[1]
    key = sizes.long() * width + torch.arange(width, device=sizes.device)  # distinct in a row: size, then label
    top = key.topk(min(count, width), dim=1).indices
    return torch.zeros_like(sizes, dtype=torch.bool).scatter_(1, top, True) & (sizes > 0)


def _filter_torch(masks: torch.Tensor, hops: int, keep: int, min_size: int) -> torch.Tensor:
    """The torch backend of ``filter_components``: the components labelled and counted in
    ``(B * K, width)`` tables, the rule applied there, the voxels picked by an ``index_select``."""
    found = components(masks, hops)
    sizes = found.sizes
    removed = sizes < min_size
    if keep:
        removed |= ~_largest(sizes, keep)
    removed &= sizes > 0
    picked = removed.reshape(-1).index_select(0, _keys(found.labels, sizes.shape[1]))
    return any_channel(picked.view(masks.shape))


_FILTER = _ops.Table("component filters (KeepLargestComponents, RemoveSmallComponents)", [
    _ops.Case("every mask", "filter_components", lambda masks, hops, keep, min_size: True,
              _ops.kernels.filter_components),
], _filter_torch)


def removed_components(masks: torch.Tensor, hops: int, keep: int, min_size: int) -> torch.Tensor:
    """The voxels of the components of bool ``masks (B, C, *spatial)`` (joined within ``hops``
    orthogonal hops) that a filter removes, in some channel: bool ``(B, 1, *spatial)``. A component
    goes when it has fewer than ``min_size`` voxels or, with ``keep >= 1``, when it is not among
    the ``keep`` largest of its mask (the higher label first among equal sizes)."""
    return _FILTER(masks, masks, hops, keep, min_size)


def any_channel(masks: torch.Tensor) -> torch.Tensor:
    """``masks.any(dim=1, keepdim=True)`` for bool ``(B, C, *spatial)`` masks (false for ``C = 0``).

    One ``|`` per channel slice: far cheaper on CPU than a reduction over dim 1.
    """
    out = torch.zeros((masks.shape[0], 1, *masks.shape[2:]), dtype=torch.bool, device=masks.device)
    for j in range(masks.shape[1]):
        out |= masks[:, j:j + 1]
    return out


