"""Surface voxels and their distance lists, per ``(b, c)`` slice: what MONAI's surface metrics measure.

MONAI (``monai.metrics.utils.get_edge_surface_distance``) takes, per slice,
the surface voxels of the prediction and of the reference
(``mask ^ binary_erosion(mask)``: SciPy's cross, border 0) and lists the
distance from each surface voxel of one to the nearest surface voxel of the
other. :func:`surface_distance_lists` lists them for CPU masks (the native
``surface_distance_lists`` kernel takes the surfaces from bit-packed lines
and searches the lines near each voxel; the torch backend cuts the slices to
their bounding boxes, in groups of similar box size, and reads distance
transforms). Exact: the search gives the float32 distance transform's values
bit for bit, and outside its box a slice is empty, so the erosion (border 0)
of a window finds the same surfaces (MONAI crops each slice to its box grown
by one voxel) and the nearest surface voxels lie in the box.
:func:`binary_values` checks that an input is binary while it makes it a
mask, in one pass where the native kernel takes it. ``morphaug.metrics``
reduces the lists.
"""

from __future__ import annotations

import math

import torch

from .. import _ops
from ._binary import binary_erosion
from ._distance import distance_transform_cdt, distance_transform_edt

__all__ = ["binary_values", "surfaces", "surface_distances", "surface_distance_lists"]


def _binary_by_comparisons(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The torch backend of :func:`binary_values`: ``x == 1``, and whether every non-zero value is a
    1. The non-zero values are counted on a mask of them, like ``x == 1``: count_nonzero of a
    non-contiguous x (a channels-last y_pred[:, 1:]) is 4x slower."""
    mask = torch.eq(x, 1, out=torch.empty(x.shape, dtype=torch.bool, device=x.device))
    return mask, torch.count_nonzero(torch.ne(x, 0, out=torch.empty_like(mask))) == torch.count_nonzero(mask)


def _binary_in_one_pass(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    mask, others = _ops.kernels.binary_values(x)
    return mask, others == 0


_BINARY_VALUES = _ops.Table("binary masks (morphaug.metrics)", [
    _ops.Case("every real dtype", "binary_values", lambda x: True, _binary_in_one_pass),
], _binary_by_comparisons)


def binary_values(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``x == 1`` of a real ``(B, C, *spatial)`` tensor, and whether ``x`` is binary (a bool
    scalar tensor, on ``x``'s device: nothing is read back)."""
    return _BINARY_VALUES(x, x)


def surfaces(masks: torch.Tensor) -> torch.Tensor:
    """The surface voxels of ``masks`` (bool ``(B, C, *spatial)``), as MONAI: ``mask ^ erosion``."""
    return masks & ~binary_erosion(masks)


def surface_distances(targets: torch.Tensor, sampling, distance_metric) -> torch.Tensor:
    """The float32 distance of every voxel to the surface ``targets`` of its slice."""
    if distance_metric == "euclidean":
        return distance_transform_edt(~targets, sampling=sampling)
    return distance_transform_cdt(~targets, metric=distance_metric).float()


def _occupied(x: torch.Tensor) -> list[torch.Tensor]:
    """Per spatial axis of ``x`` (uint8 ``(B, C, *spatial)``, 0 or 1), whether each position along it
    holds a voxel 1: ``(B, C, n)`` per axis, from two reductions of the volume (uint8 ``amax`` is
    faster than bool ``any``)."""
    if x.ndim == 3:
        return [x]
    return [x.flatten(3).amax(-1)] + _occupied(x.amax(2))


def _boxes(union: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The bounding box of every slice of ``union`` (bool ``(B, C, *spatial)``): its first voxel and its
    sides, ``(B * C, rank)`` each; sides 0 (and first voxel 0) in an empty slice."""
    firsts, sides = [], []
    for occupied in _occupied(union.view(torch.uint8)):
        occupied = occupied.flatten(0, 1)
        first = occupied.argmax(-1)
        firsts.append(first)
        sides.append(torch.where(occupied.amax(-1) > 0, occupied.shape[-1] - occupied.flip(-1).argmax(-1) - first, 0))
    return torch.stack(firsts, -1), torch.stack(sides, -1)


def _window(x: torch.Tensor, members: torch.Tensor, sizes: list[int], first: torch.Tensor) -> torch.Tensor:
    """Slices ``members`` (flat indices of ``(B, C)``) of ``x`` (``(B, C, *spatial)``), each cut to the
    window of ``sizes`` from ``first`` (``(n, rank)``): ``(n, 1, *sizes)``, from one view of every
    window (no copy of ``x``)."""
    for axis, size in enumerate(sizes):
        x = x.unfold(2 + axis, size, 1)
    channels = x.shape[1]
    return x[(members // channels, members % channels, *first.unbind(-1))][:, None]


def _read_from_transforms(rows, row, voxel, sampling, distance_metric, eroded: bool = True) -> torch.Tensor:
    """The distance transform of every surface of ``rows`` (bool ``(2n, 1, *spatial)``: the surfaces or,
    unless ``eroded``, the masks) that some listed voxel ``(row, voxel)`` measures to (row ``row + n``
    or ``row - n``), read at the listed voxels."""
    pairs = rows.shape[0] // 2
    targets, slot = torch.unique((row + pairs) % (2 * pairs), return_inverse=True)
    found = rows[targets] if eroded else surfaces(rows[targets])
    return surface_distances(found, sampling, distance_metric).flatten(1)[slot, voxel]


#: Groups of boxes per doubling of their volume: finer groups waste less of each window on the
#: smaller boxes, at one more erosion and distance transform each (3: 8x2x96^3 balls, 13% faster
#: than 1 on one thread).
_GROUPS_PER_DOUBLING = 3


def _lists_by_transforms(pred, ref, sampling, distance_metric, symmetric: bool):
    """The torch backend of :func:`surface_distance_lists`: the slices go in groups whose bounding boxes are
    within a factor ``2 ** (1 / 3)`` in volume (:data:`_GROUPS_PER_DOUBLING`), each group cut to one
    window, the largest box of the group along each axis. A group's surfaces are one erosion, listed
    and counted by one ``nonzero``, and each surface voxel reads the distance transform of the
    other mask's surface."""
    batch, channels, *spatial = pred.shape
    slices = batch * channels
    firsts, sides = _boxes(pred | ref)
    size_class = (_GROUPS_PER_DOUBLING * sides.prod(-1).clamp(min=1).double().log2()).floor()
    counts = torch.zeros(2, slices, dtype=torch.int64)  # surface voxels of pred, of ref
    values, rows = [], []
    for group in size_class.unique().tolist():  # a few groups, not a loop over slices
        members = torch.nonzero(size_class == group)[:, 0]
        sizes = sides[members].amax(0).clamp(min=1)
        first = torch.minimum(firsts[members], torch.tensor(spatial) - sizes)  # windows inside the volume
        sizes = sizes.tolist()
        edges = surfaces(torch.cat([_window(m, members, sizes, first) for m in (pred, ref)]))  # pred's, then ref's
        n = len(members)
        row, voxel = torch.nonzero(edges.view(2 * n, -1)).unbind(1)
        counts[:, members] = torch.bincount(row, minlength=2 * n).view(2, n)
        if not symmetric:  # pred's surface voxels only, ref's distances
            keep = row < n
            row, voxel = row[keep], voxel[keep]
        # a surface voxel of pred (row < n) or of ref measures to the other one's surface
        values.append(_read_from_transforms(edges, row, voxel, sampling, distance_metric))
        direction = (row >= n).long()
        rows.append(direction * slices + members[row - direction * n])
    return (torch.cat(rows) if rows else torch.zeros(0, dtype=torch.int64),
            torch.cat(values) if values else torch.zeros(0), counts)


#: Offsets (voxels, along each axis but the last) that the native search visits before it leaves
#: a voxel to the distance transform: (2 * 24 + 1) ** 2 lines at most per voxel.
_SEARCH_REACH = 24

#: Line offsets that the searches of the voxels measuring to one slice may visit in all, per voxel
#: of the slice, before the slice's distance transform takes the voxels left. An offset (up to 4
#: lines) costs about as much as 1.7 voxels of the native EDT, so the search gives up after about
#: 0.4 transforms' worth of work. The benchmark's 8x3x96^3 masks visit 0.03 per voxel; with the
#: prediction 40 planes off its reference they would visit several (1.0 s without a budget, 0.4 s
#: with one, MONAI 1.7 s).
_SEARCH_BUDGET = 0.25


def _lists_by_search(pred, ref, sampling, distance_metric, symmetric: bool):
    """The native case of :func:`surface_distance_lists`: the surfaces of whole slices listed from bits, and
    each listed voxel searches the lines of the other surface near it; the voxels it leaves (nearest
    voxel maybe beyond the reach, or the slice's budget spent) read the distance transforms."""
    sources, values, counts = _ops.kernels.surface_distance_lists(pred, ref, sampling, _SEARCH_REACH,
                                                                  _SEARCH_BUDGET, symmetric)
    voxels = math.prod(pred.shape[2:])
    rows = sources.div(voxels, rounding_mode="floor")
    left = torch.nonzero(values < 0)[:, 0]
    if len(left):
        masks = torch.cat([pred, ref]).flatten(0, 1)[:, None]  # (2 * slices, 1, *spatial): the rows
        values[left] = _read_from_transforms(masks, rows[left], sources[left] - rows[left] * voxels, sampling,
                                             distance_metric, eroded=False)
    return rows, values, counts.view(2, -1)


_SURFACE_LISTS = _ops.Table("surface distance lists (morphaug.metrics on the CPU)", [
    _ops.Case("euclidean", "surface_distance_lists",
              lambda pred, ref, sampling, distance_metric, symmetric: distance_metric == "euclidean",
              _lists_by_search),
], _lists_by_transforms)


def surface_distance_lists(pred, ref, sampling, distance_metric: str, symmetric: bool):
    """MONAI's distance lists of the masks ``pred`` and ``ref`` (bool ``(B, C, *spatial)``, CPU):
    ``(rows, distances, counts)``: the row (flat index of ``(2, B, C)``: pred's slices, then ref's)
    of each listed surface voxel (of both, or of pred's unless ``symmetric``), its distance to the
    other mask's surface in the same slice, and the surface voxels of every row (``(2, B * C)``);
    the same lists on every case of the table, bit for bit (in another order)."""
    return _SURFACE_LISTS(pred, pred, ref, sampling, distance_metric, symmetric)
