"""Connected components of many masks at once: their sizes, and the filters that remove some.

Every ``(b, c)`` mask of a batch is labelled in one call (:func:`label`),
its components numbered across all masks and counted in one table with an
entry per component (on an accelerator, per component a batch can hold: no
host sync), and filtered by a rule applied on that table, a segmented one
per mask (the native ``filter_components`` runs the whole filter where it
takes the call: on the CPU each mask through ``label``'s run scan, its runs
keeping their labels, counted, the rule applied and the removed runs marked,
with no ``(b, c, voxel)`` labels; on CUDA ``label``'s union-find, the sizes
counted at the components' roots and the rule applied there, with no table;
``pick_component`` draws one component per mask the same way).
The component transforms of ``morphaug.transforms`` run on these.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

from .. import _ops
from ._label import label
from ._structure import generate_binary_structure

__all__ = ["Components", "components", "removed_components", "drawn_components", "any_channel"]

#: The most an int32 index counts.
_INT32_MAX = torch.iinfo(torch.int32).max


class Components(NamedTuple):
    """The components of the ``(sample, class)`` masks ``(B, K, *spatial)``, numbered across all masks:
    label ``l`` of mask ``r`` (0: outside) is slot ``first[r] + l`` of one table over all masks (the
    masks in order, each mask's labels in SciPy's order), one slot per component, not per voxel."""

    #: ``(B, K, *spatial)`` integer: each voxel's label, SciPy's numbering ``1 ..`` per mask, 0 outside.
    labels: torch.Tensor
    #: ``(B * K,)`` int64: the slot of each mask's label 0.
    first: torch.Tensor
    #: ``(B * K,)`` int64: the components of each mask.
    counts: torch.Tensor
    #: ``(B * K * N,)`` integer: each voxel's slot.
    ids: torch.Tensor
    #: ``(slots,)`` integer: the voxels of each component; 0 in the slots of label 0 and the free ones.
    sizes: torch.Tensor


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


_LABEL_SIZES = _ops.Table("component sizes (the torch backends of the component filters and draws)", [
    _ops.Case("every label map", "label_sizes", lambda labels, width: True, _ops.kernels.label_sizes),
], _label_sizes_torch)


def _most_slots(masks: int, voxels: int) -> int:
    """The most slots that ``masks`` masks of ``voxels`` voxels take: label 0 and at most ceil(N / 2)
    components each (one voxel of each component, never two face neighbours: an independent set of
    the grid, whose snake order is a path)."""
    return masks * (1 + (voxels + 1) // 2)


def _slots(counts: torch.Tensor, voxels: int) -> int:
    """How many slots the table holds: on the CPU as many as the labels (read for free); elsewhere,
    and while Dynamo traces, the most the masks can take (no host sync)."""
    if counts.device.type == "cpu" and not torch.compiler.is_compiling():
        slots = int(counts.sum()) + counts.numel()
    else:
        slots = _most_slots(counts.numel(), voxels)
    return max(slots, 1)  # an empty batch (no mask) still has a table, of one unused slot


def components(masks: torch.Tensor, hops: int) -> Components:
    """The components of every ``(b, k)`` mask of bool ``masks (B, K, *spatial)``, joined within
    ``hops`` orthogonal hops, labelled in one call and counted in one table over all masks: a
    bincount of their labels, each mask's offset by its first slot."""
    structure = generate_binary_structure(masks.ndim - 2, hops)  # on the host, read there
    labels, counts = label(masks, structure=structure)
    rows, voxels = masks.shape[0] * masks.shape[1], math.prod(masks.shape[2:])
    counts = counts.reshape(rows)
    slots = _slots(counts, voxels)
    first = (counts + 1).cumsum(0) - (counts + 1)
    index = torch.int32 if slots <= _INT32_MAX else torch.int64
    ids = (labels.reshape(rows, voxels).to(index) + first.to(index)[:, None]).view(-1)
    sizes = _LABEL_SIZES(ids, ids.view(1, 1, -1), slots).view(-1)
    sizes.index_fill_(0, first, 0)
    return Components(labels, first, counts, ids, sizes)


def _largest(found: Components, count: int) -> torch.Tensor:
    """``(slots,)`` bool: the ``count`` largest components of each mask (all of them when there are
    fewer), and maybe slots of no component. Among components of equal size the higher label goes
    first: MONAI's ``argsort(sizes)[::-1]`` with a stable sort, i.e. the component that starts later in
    raster order. One pass per kept rank: a segmented maximum of the components' keys (size, then
    slot) over the masks, the winners' keys then marked taken."""
    sizes = found.sizes
    width, rows = sizes.numel(), found.counts.numel()
    slot = torch.arange(width, device=sizes.device)
    owner = torch.searchsorted(found.first + found.counts + 1, slot, right=True)  # rows: the free slots
    taken = -2
    key = torch.where(sizes > 0, sizes.long() * width + slot, -1)
    if not rows:
        return key == taken
    for _ in range(count):
        best = torch.full((rows + 1,), -1, dtype=torch.long, device=sizes.device)
        best = best.scatter_reduce(0, owner, key, "amax")
        # a mask without components left marks slot 0, the first mask's label 0 (no component)
        key.scatter_(0, torch.where(best < 0, 0, best % width), taken)
    return key == taken


def _filter_torch(masks: torch.Tensor, hops: int, keep: int, min_size: int) -> torch.Tensor:
    """The torch backend of ``filter_components``: the components labelled and counted in one table
    over all masks, the rule applied there, the voxels picked by an ``index_select``."""
    found = components(masks, hops)
    sizes = found.sizes
    removed = sizes < min_size
    if keep:
        removed |= ~_largest(found, keep)
    removed &= sizes > 0
    picked = removed.index_select(0, found.ids)
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


def _pick_torch(masks: torch.Tensor, hops: int, draw: torch.Tensor, max_size: int) -> torch.Tensor:
    """The torch backend of ``pick_component``: the components labelled and counted in one table over
    all masks; the eligible ones counted along the table, each mask's drawn one found by a search."""
    found = components(masks, hops)
    eligible = (found.sizes > 0) & (found.sizes < max_size)
    done = eligible.cumsum(0)  # eligible components up to each slot, over all masks in order
    start = done[found.first]  # those of the masks before each (its label 0 is none)
    total = done[found.first + found.counts] - start
    rank = (draw.reshape(-1).double() * total).floor().long()
    rank = torch.minimum(rank, total - 1).clamp_min(0)
    # the label of the (rank+1)-th eligible component of each mask; past its last label when there is none
    target = torch.searchsorted(done, start + rank + 1) - found.first
    target = torch.where(draw.reshape(-1) >= 0, target, -1)
    labels = found.labels.view(target.numel(), math.prod(masks.shape[2:]))
    return (labels == target[:, None]).view(masks.shape)


_PICK = _ops.Table("component draws (RandRemoveComponent)", [
    _ops.Case("every mask", "pick_component", lambda masks, hops, draw, max_size: True,
              _ops.kernels.pick_component),
], _pick_torch)


def drawn_components(masks: torch.Tensor, hops: int, draw: torch.Tensor, max_size: int) -> torch.Tensor:
    """The voxels of one drawn component of each ``(b, k)`` mask of bool ``masks (B, K, *spatial)``
    (joined within ``hops`` orthogonal hops): bool ``(B, K, *spatial)``. Of the ``n`` components of
    fewer than ``max_size`` voxels, in label order, the one of rank ``floor(draw * n)`` (at most
    ``n - 1``) for the float32 ``draw (B, K)``; none where the draw is negative or ``n == 0``."""
    return _PICK(masks, masks, hops, draw, max_size)


def any_channel(masks: torch.Tensor) -> torch.Tensor:
    """``masks.any(dim=1, keepdim=True)`` for bool ``(B, C, *spatial)`` masks (false for ``C = 0``).

    One ``|`` per channel slice: far cheaper on CPU than a reduction over dim 1.
    """
    out = torch.zeros((masks.shape[0], 1, *masks.shape[2:]), dtype=torch.bool, device=masks.device)
    for j in range(masks.shape[1]):
        out |= masks[:, j:j + 1]
    return out


