"""``skeletonize(method="parallel")``: Lee, Kashyap and Chu's 3-D thinning with its sequential
re-check made parallel by 8 subfields of a 2 x 2 x 2 partition, on whole batches, in torch.

A voxel's 26 neighbours are read as a 27-bit code (bit ``9 (z + 1) + 3 (y + 1) + x + 1`` for the
neighbour at offset ``(z, y, x)``, the centre's bit 13 clear). A voxel is simple (Lee et al.'s
conditions) when deleting it keeps the Euler characteristic of its neighbourhood (the change summed
over its 8 octants, from the Euler table of :mod:`morphaug.measure`) and its foreground neighbours form
one 26-connected component (grown from the lowest one by :data:`STEPS` dilations inside the
neighbourhood: the longest induced path among the 26 neighbours has 8 edges).

Per border direction, in scikit-image's order (W, E, S, N, U, B; the in-plane four for slices one plane
deep), the foreground voxels whose face neighbour that way is background, that are simple and not end
points (one neighbour) are listed at once, as Lee's algorithm lists them; then each subfield in turn
deletes, all at once, its listed voxels still simple. Voxels of one subfield are never 26-neighbours, so
deleting them together keeps the topology as deleting them one by one would. Rounds of the directions
repeat until one deletes nothing; whether it did is read on the host (``morphaug._sync``, "binary
fixpoint").

The native kernel (``skeletonize_parallel``, csrc/cpu/thinning3d.cpp and csrc/cuda/thinning3d.cu) deletes
the same voxels: on the CPU it thins every slice to its fixpoint in one call; on CUDA each call runs
:data:`CHUNK` rounds and the host reads once per call whether a slice still changes. The torch code below
is the fallback: on the CPU it reads convergence every round and gathers the listed voxels only
(host-sized index lists, free there); elsewhere every :data:`CHUNK` rounds, gathering every voxel with
masks, so nothing is read back within a round.
"""

from __future__ import annotations

import itertools

import numpy as np
import torch

from .. import _ops, _sync
from ..measure._euler import euler_coefficients_3d

__all__ = ["CHUNK", "STEPS", "EULER_CHANGES", "thin_parallel"]

#: Rounds run between two convergence reads on an accelerator.
CHUNK = 4
#: Dilations that connect any two 26-connected neighbours within the neighbourhood.
STEPS = 8

_OFFSETS = [offset for offset in itertools.product((-1, 0, 1), repeat=3) if offset != (0, 0, 0)]
_FULL = (1 << 27) - 1
# The face neighbours, in the order of Lee's border directions as scikit-image visits them (W, E, S, N, U, B).
_FACES = ((0, -1, 0), (0, 1, 0), (0, 0, 1), (0, 0, -1), (1, 0, 0), (-1, 0, 0))


def _bit(offset) -> int:
    return 9 * (offset[0] + 1) + 3 * (offset[1] + 1) + offset[2] + 1


def _edge_masks() -> list[tuple[int, int]]:
    """Per axis: the bit shift of one step along it, and the bits that a step up may not enter (the
    lowest position along the axis) nor a step down (the highest)."""
    masks = []
    for axis, shift in enumerate((9, 3, 1)):
        low = sum(1 << _bit(o) for o in itertools.product((-1, 0, 1), repeat=3) if o[axis] == -1)
        high = sum(1 << _bit(o) for o in itertools.product((-1, 0, 1), repeat=3) if o[axis] == 1)
        masks.append((shift, _FULL & ~low, _FULL & ~high))
    return masks


_EDGES = _edge_masks()


def _octants() -> list[list[int]]:
    """Per octant of the centre voxel, the code bits of its 2 x 2 x 2 window in the order of the Euler
    table's corners (corner 0, the centre, excluded)."""
    corners = [(0, 0, 0), (0, 1, 0), (0, 0, 1), (0, 1, 1), (1, 0, 0), (1, 1, 0), (1, 0, 1), (1, 1, 1)]
    return [[_bit(tuple(d * s for d, s in zip(corner, signs))) for corner in corners[1:]]
            for signs in itertools.product((-1, 1), repeat=3)]


_OCTANTS = _octants()


def _euler_changes() -> np.ndarray:
    """The change of 8 x the Euler characteristic of a 2 x 2 x 2 window when its corner 0 is deleted, by
    the code of its other 7 corners (the window's coefficients are invariant under the cube's symmetries,
    so each octant reads them in its own reflected order)."""
    coefficients = euler_coefficients_3d()
    codes = np.arange(128) << 1
    return coefficients[codes | 1] - coefficients[codes]


#: :func:`_euler_changes`, which Lee's kernel takes too.
EULER_CHANGES = _euler_changes()


def _dilate(bits: torch.Tensor) -> torch.Tensor:
    """``bits`` grown by one step to the 26 neighbours, within the 3 x 3 x 3 code (separable)."""
    for shift, up, down in _EDGES:
        bits = bits | ((bits << shift) & up) | ((bits >> shift) & down)
    return bits


def _weights() -> np.ndarray:
    """The rows that read the 26 neighbours' values (0 or 1) into codes, by one matrix product: the code of
    each octant (:data:`_OCTANTS`), then the neighbourhood code's bits below and above the centre."""
    weights = np.zeros((10, len(_OFFSETS)), np.float32)
    for column, offset in enumerate(_OFFSETS):
        bit = _bit(offset)
        for row, bits in enumerate(_OCTANTS):
            if bit in bits:
                weights[row, column] = 1 << bits.index(bit)
        weights[8 if bit < 13 else 9, column] = 1 << (bit if bit < 13 else bit - 14)
    return weights


def _simple(flat: torch.Tensor, index: torch.Tensor, steps: dict, tables: tuple, until_settled: bool) -> tuple:
    """Whether each voxel at ``index`` of ``flat`` (the padded batch, uint8, flattened) would be a simple
    point of the foreground, and its number of foreground neighbours. ``until_settled``: stop growing the
    component once a step adds nothing (a host read: on the CPU only)."""
    changes, weights = tables
    values = torch.stack([flat.index_select(0, index + steps[offset]) for offset in _OFFSETS])
    codes = (weights @ values.float()).int()
    change = changes.index_select(0, codes[:8].flatten()).view(8, -1).sum(0)
    code = codes[8] | (codes[9] << 14)
    reach = code & -code
    for _ in range(STEPS):
        grown = _dilate(reach) & code
        if until_settled and torch.equal(grown, reach):
            break
        reach = grown
    return (change == 0) & (reach == code) & (code != 0), values.sum(0, dtype=torch.uint8)


def _compact(device: torch.device) -> bool:
    """Whether to gather the candidates only (host-sized lists, and convergence read every pass): on the
    CPU, where reading is free."""
    return device.type == "cpu"


def thin_parallel(image: torch.Tensor) -> torch.Tensor:
    """The parallel thinning of every slice of ``image`` (bool ``(B, C, D, H, W)``)."""
    return _PARALLEL(image, image)


def _thin_native(image: torch.Tensor) -> torch.Tensor:
    """:func:`thin_parallel` by the native kernel: every slice to its fixpoint in one call on the CPU,
    else :data:`CHUNK` rounds a call until no slice changes (one read per call)."""
    changes = EULER_CHANGES.tolist()
    rounds = 0 if _ops.launcher_device(image) == "cpu" else CHUNK
    still = torch.ones(image.shape[:2], dtype=torch.bool, device=image.device)
    while True:
        image, still = _ops.kernels.skeletonize_parallel(image, still, changes, rounds)
        if _sync.host_read((~still.any()).view(1), "binary fixpoint")[0]:
            return image


def _thin_torch(image: torch.Tensor) -> torch.Tensor:
    """:func:`thin_parallel` in torch."""
    device = image.device
    padded = torch.nn.functional.pad(image.to(torch.uint8), (1, 1) * 3)
    flat = padded.view(-1)
    steps = {offset: sum(o * s for o, s in zip(offset, padded.stride()[2:])) for offset in _OFFSETS}
    tables = tuple(_sync.to_device(torch.from_numpy(table), device) for table in (EULER_CHANGES, _weights()))
    interior = (...,) + (slice(1, -1),) * 3
    grid = torch.arange(flat.numel(), device=device).view(padded.shape)[interior]
    # subfield 4 a + 2 b + c holds the voxels of padded coordinates of parities (a, b, c)
    subfields = [grid[(...,) + tuple(slice(1 - p, None, 2) for p in parities)].reshape(-1)
                 for parities in itertools.product((0, 1), repeat=3)]
    positions = torch.cat(subfields)
    parity = torch.cat([torch.full(sub.shape, n, dtype=torch.uint8, device=device) for n, sub in enumerate(subfields)])
    compact = _compact(device)
    faces = _FACES[:4] if image.shape[2] == 1 else _FACES  # a single plane: its in-plane borders, as Lee's
    while True:
        before = flat.sum(dtype=torch.int64)
        for _ in range(1 if compact else CHUNK):
            for face in faces:
                border = (flat.index_select(0, positions) == 1) & (flat.index_select(0, positions + steps[face]) == 0)
                if compact:
                    _peel_listed(flat, positions[border], parity[border], steps, tables)
                else:
                    _peel_masked(flat, positions, subfields, border, steps, tables)
        if _sync.host_read((flat.sum(dtype=torch.int64) == before).view(1), "binary fixpoint")[0]:
            return padded[interior].bool()


# One border direction: the border voxels that are simple and not end points are listed at once; then,
# subfield by subfield, those still simple are deleted (Lee's sequential re-check, one subfield at a time).
def _peel_listed(flat, border, parity, steps, tables) -> None:
    """The direction's pass over the listed ``border`` voxels only (host-sized lists)."""
    simple, count = _simple(flat, border, steps, tables, True)
    candidate = simple & (count > 1)
    border, parity = border[candidate], parity[candidate]
    for subfield in range(8):
        index = border[parity == subfield]
        flat.index_copy_(0, index, flat.index_select(0, index) & ~_simple(flat, index, steps, tables, True)[0])


def _peel_masked(flat, positions, subfields, border, steps, tables) -> None:
    """The direction's pass over every voxel, ``border`` a mask of ``positions`` (no host read)."""
    simple, count = _simple(flat, positions, steps, tables, False)
    candidate = torch.zeros_like(flat, dtype=torch.bool).index_copy_(0, positions, border & simple & (count > 1))
    for index in subfields:
        delete = candidate.index_select(0, index) & _simple(flat, index, steps, tables, False)[0]
        flat.index_copy_(0, index, flat.index_select(0, index) & ~delete)


_PARALLEL = _ops.Table("skeletonize(method='parallel')", [
    _ops.Case("every input", "skeletonize_parallel", lambda image: True, _thin_native),
], _thin_torch)
