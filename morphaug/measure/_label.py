"""Connected components of multi-value label maps: scikit-image's ``measure.label``, batched.

:func:`label` labels every value of a label map at once: two neighbours
(``connectivity``) are connected when they hold the same value and are not
background. A bool map is one binary problem and goes to
:func:`morphaug.ndimage.label` (the native kernel where it is built).

Other maps run their dispatch table: the native ``label_values`` kernel
where it is built (CPU and CUDA, at most 8 spatial axes: ``label``'s
union-find, joining neighbours of equal value only, one call), else
:func:`_equal_value_components`, min-label propagation on the torch backend
restricted to equal neighbours:

* every voxel holds a parent pointer, a voxel of its component (global flat
  index, so slices never mix) no larger than its own; background voxels
  hold ``total``, past every voxel. The pointers start at the first voxel
  of each voxel's run of equal values along the last axis (one ``cummax``),
  which settles runs before the first round;
* a round takes each voxel's smallest parent among itself and its equal
  neighbours (one masked ``minimum`` per offset of the structure), hooks
  the old parent to that value (``scatter_reduce`` with ``amin``) and jumps
  pointers four times, as ``morphaug.ndimage``'s torch labelling does
  (that one runs on a binary mask, where a separable window replaces the
  offsets of a full box; equal values need every offset);
* rounds run in chunks of 4 then 2, one host read per chunk ("binary
  fixpoint") saying whether the last round changed anything;
* each settled component points at its first voxel in raster order: a
  cumulative sum of those roots per slice numbers them as scikit-image does.
"""

from __future__ import annotations

import itertools

import numpy as np
import torch

from .. import _ops, _sync
from .._checks import check_host_int, check_label_image
from .._opaque import Results, opaque_under_compile
from ..ndimage import generate_binary_structure
from ..ndimage import label as _binary_label
from ..ndimage._unsigned import wrapping

__all__ = ["label", "overlap", "where_value"]

#: Rounds between two host reads: the first chunk, then each further one.
_ROUND_CHUNKS = (4, 2)
#: Pointer jumps per round.
_JUMPS = 4


def overlap(tensor: torch.Tensor, step, side: int) -> torch.Tensor:
    """The part of ``tensor (B, C, *S)`` whose voxels ``p`` (``side=0``) or ``p + step`` (``side=1``)
    both lie inside the slice."""
    for dim, j in enumerate(step, start=2):
        n = tensor.shape[dim]
        start = max(-j, 0) if side == 0 else max(j, 0)
        tensor = tensor.narrow(dim, start, n - abs(j))
    return tensor


def _equal_value_components(values: torch.Tensor, inside: torch.Tensor, structure: np.ndarray):
    """``(labels int64, counts int64 (B, C))``: components of equal ``values`` among the ``inside`` voxels."""
    total = values.numel()
    spatial = values.shape[2:]
    index_dtype = torch.int32 if total < torch.iinfo(torch.int32).max else torch.int64
    # one offset of each opposite pair (the lexicographically positive one), for neighbours inside a slice
    offsets = (tuple(int(j) for j in p) for p in np.argwhere(structure) - 1)
    half = [step for step in offsets
            if step > (0,) * len(spatial) and all(j == 0 or n > 1 for j, n in zip(step, spatial))]
    # linked[k]: the voxels p (over the overlap) equal to p + half[k], both inside
    linked = [overlap(inside, step, 0) & overlap(inside, step, 1)
              & (overlap(values, step, 0) == overlap(values, step, 1)) for step in half]

    index = torch.arange(total, dtype=index_dtype, device=values.device).view(values.shape)
    run_start = inside.clone()
    if spatial[-1] > 1:  # the last axis is always linked (every connectivity holds the faces)
        run_start[..., 1:] &= ~((values[..., 1:] == values[..., :-1]) & inside[..., :-1])
    pointers = torch.where(run_start, index, -1).cummax(-1).values
    pointers = pointers.masked_fill(~inside, total).flatten()
    background = pointers.new_full((1,), total)

    def smallest(pointers):
        pointers = pointers.view(values.shape)
        low = pointers.clone()
        for step, link in zip(half, linked):
            for side, other in ((0, 1), (1, 0)):  # p takes p + step's pointer, and p + step takes p's
                target = overlap(low, step, side)
                offer = overlap(pointers, step, other).masked_fill(~link, total)
                torch.minimum(target, offer, out=target)
        return low.flatten()

    def round_(pointers):
        low = smallest(pointers)
        table = torch.cat([low, background])
        table.scatter_reduce_(0, pointers.long(), low, "amin")  # hook each old parent
        for _ in range(_JUMPS):
            table = table.index_select(0, table)
        return table[:-1]

    chunks = itertools.chain(_ROUND_CHUNKS, itertools.repeat(_ROUND_CHUNKS[-1]))
    while True:
        for _ in range(next(chunks) - 1):
            pointers = round_(pointers)
        previous, pointers = pointers, round_(pointers)
        if _sync.host_read((previous == pointers).all().view(1), "binary fixpoint")[0]:
            break
    del previous

    flat = inside.flatten()
    roots = flat & (pointers == index.flatten())
    ranks = roots.view(values.shape[0] * values.shape[1], -1).cumsum(1)
    counts = ranks[:, -1].view(values.shape[:2])
    labels = torch.where(flat, ranks.view(-1).index_select(0, pointers.clamp(max=total - 1)), 0)
    return labels.view(values.shape), counts


def _native_values(values: torch.Tensor, background: int, structure: np.ndarray):
    """The ``label_values`` kernel's labels and counts."""
    return _ops.kernels.label_values(values, structure, background, torch.int64)


def _torch_values(values: torch.Tensor, background: int, structure: np.ndarray):
    """:func:`_equal_value_components` of the voxels not holding ``background``."""
    inside = ~where_value(values, background)
    return _equal_value_components(wrapping(values).contiguous(), inside.contiguous(), structure)


_VALUES = _ops.Table("measure.label", [
    _ops.Case("integer maps", "label_values", lambda values, background, structure: True, _native_values),
], _torch_values)


def where_value(label_image: torch.Tensor, value: int) -> torch.Tensor:
    """Where the integer ``label_image`` holds the int ``value`` (nowhere when its dtype cannot hold it)."""
    info = torch.iinfo(label_image.dtype)
    if not info.min <= value <= info.max:
        return torch.zeros(label_image.shape, dtype=torch.bool, device=label_image.device)
    return label_image == value


def _raster_swap(spatial) -> tuple[int, int] | None:
    """The two spatial axes scikit-image swaps before numbering (``_ccomp.reshape_array``): a size-1
    axis after a longer one goes before it, so its raster order is that of the swapped map. Of its
    list of swaps only the last is applied (at most one exists up to 3 axes, all it labels)."""
    ones = [k for k, n in enumerate(spatial) if n == 1][::-1]
    bigs = [k for k, n in enumerate(spatial) if n > 1]
    swaps = []
    for one, big in zip(ones, bigs):
        if one < big:
            break
        swaps.append((one, big))
    return swaps[-1] if swaps else None


def _returned(kw):
    x = kw["label_image"]
    labels = (tuple(x.shape), torch.int32 if x.dtype == torch.bool else torch.int64)
    return [labels, (tuple(x.shape[:2]), torch.int64)] if kw.get("return_num") else [labels]


def _op_name(name: str):
    """Name the function ``name`` while it is decorated: the compiled op is ``morphaug_opaque::<name>``,
    and ``morphaug.ndimage.label`` holds ``label``."""
    def rename(function):
        function.__name__ = name
        return function
    return rename


@opaque_under_compile(Results(("label_image",), _returned, lambda kw, tensors: tuple(tensors) if kw.get("return_num")
                              else tensors[0]))
@_op_name("measure_label")
def label(label_image, background=None, return_num=False, connectivity=None):
    """Label the connected regions of equal value of every slice.

    Two voxels are connected when they are neighbours (``connectivity``) and
    hold the same value; every value but ``background`` is labelled, each
    connected region of it numbered ``1 .. n`` in the raster order of its
    first voxel, per slice.

    Parameters
    ----------
    label_image : torch.Tensor
        ``(B, C, *spatial)`` bool or integer labels (any integer dtype,
        negative values included). It is never modified.
    background : int, optional
        The value labelled 0. Default 0; for a bool map, ``background=1``
        labels the false regions (scikit-image's rule: any other value
        labels the true ones).
    return_num : bool, optional
        Also return the number of regions of each slice.
    connectivity : int, optional
        ``1 .. S`` for ``S`` spatial axes: the most orthogonal hops between
        neighbours. Default ``S`` (the full ``3 x ... x 3`` box).

    Returns
    -------
    labels : torch.Tensor
        ``(B, C, *spatial)``: ``torch.int64`` (``torch.int32`` for a bool
        map), the dtypes scikit-image returns.
    num : torch.Tensor
        ``torch.int64`` of shape ``(B, C)``, the number of regions of each
        slice, on the input's device; only with ``return_num=True``.

    Raises
    ------
    TypeError
        ``label_image`` not a tensor, or of a floating or complex dtype;
        ``background`` or ``connectivity`` not an int.
    ValueError
        ``label_image`` without a spatial axis; ``connectivity`` outside
        ``1 .. S``.

    Notes
    -----
    Batching: every ``(b, c)`` slice is labelled as scikit-image labels that
    slice alone, in one pass over the batch, every value at once.

    scikit-image parity: labels and counts identical to
    ``skimage.measure.label`` per slice. Differences: ``num`` is a
    ``(B, C)`` tensor, not an int (no host read); floating labels are a
    ``TypeError`` (scikit-image truncates them to integers). Numbering
    follows scikit-image's quirk for maps with a size-1 axis after a longer
    one (it swaps the two, numbers in that raster order and swaps back). A
    non-bool map may have more than 3 spatial axes (scikit-image: 1 to 3),
    numbered in raster order.

    Cost: a bool map takes :func:`morphaug.ndimage.label` (native kernels
    where built). Other maps take the native ``label_values`` kernel where
    it is built (CPU and CUDA, up to 8 spatial axes): one union-find pass
    over the map whatever the number of values, no host read. Otherwise
    (the torch backend): min-label propagation over equal neighbours, a few
    rounds (about logarithmic in a region's size) of one masked minimum per
    neighbour offset, with one host read per chunk of rounds.

    See Also
    --------
    skimage.measure.label : the reference, applied to each ``(b, c)`` slice.
    morphaug.ndimage.label : SciPy's binary labelling.

    Examples
    --------
    >>> import torch
    >>> from morphaug.measure import label
    >>> x = torch.tensor([[[[1, 1, 2], [0, 2, 2], [3, 0, 1]]]])
    >>> labels, num = label(x, return_num=True)
    >>> labels[0, 0]
    tensor([[1, 1, 2],
            [0, 2, 2],
            [3, 0, 4]])
    >>> num
    tensor([[4]])
    """
    label_image = check_label_image(label_image, "label_image")
    rank = label_image.ndim - 2
    connectivity = rank if connectivity is None else check_host_int(connectivity, "connectivity")
    if not 1 <= connectivity <= rank:
        raise ValueError(f"connectivity must be in 1 .. {rank} for {rank} spatial axes, got {connectivity}")
    background = 0 if background is None else check_host_int(background, "background")
    structure = generate_binary_structure(rank, connectivity).numpy()
    if label_image.dtype == torch.bool:
        mask = ~label_image if background == 1 else label_image
        labels, num = _binary_label(mask, structure=structure)
    elif label_image.numel() == 0:
        labels = torch.zeros(label_image.shape, dtype=torch.int64, device=label_image.device)
        num = torch.zeros(label_image.shape[:2], dtype=torch.int64, device=label_image.device)
    else:
        swap = _raster_swap(label_image.shape[2:]) if rank <= 3 else None
        values = label_image if swap is None else label_image.transpose(2 + swap[0], 2 + swap[1])
        labels, num = _VALUES(values, values, background, structure)
        if swap is not None:
            labels = labels.transpose(2 + swap[0], 2 + swap[1]).contiguous()
    return (labels, num) if return_num else labels


label.__name__ = "label"  # its public name again, once its op is named
