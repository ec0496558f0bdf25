"""``euler_number``: scikit-image's Euler characteristic of every ``(b, c)`` slice."""

from __future__ import annotations

import itertools

import numpy as np
import torch

from .. import _ops
from .._checks import check_host_int
from .._sync import to_device
from .._dtypes import positive
from .._images import image_batch

__all__ = ["euler_number", "euler_coefficients_3d"]

# The corner of the 2 x ... x 2 window read by each bit of a configuration code, as scikit-image's
# convolution numbers them (an offset of 1 is the previous voxel along that axis).
_CORNERS = {2: ((0, 0), (1, 0), (0, 1), (1, 1)),
            3: ((0, 0, 0), (0, 1, 0), (0, 0, 1), (0, 1, 1), (1, 0, 0), (1, 1, 0), (1, 0, 1), (1, 1, 1))}
# scikit-image's 2-D coefficients (Gray's bit-quads): the codes counted +1 and -1, for 8- and 4-connectivity.
_COEFS_2D = {2: ((8,), (6, 14)), 1: ((1, 9), (7,))}


def euler_coefficients_3d() -> np.ndarray:
    """8 times the Euler characteristic contributed by each 2 x 2 x 2 configuration of 26-connected
    voxels (closed unit cubes): each cell of the cube complex at the window's centre vertex counts
    ``(-1) ** dim`` when a voxel around it is foreground, shared equally by its ``2 ** dim`` vertices
    (Ohser et al.'s coefficients, which scikit-image lists)."""
    coefficients = np.zeros(256, np.int64)
    for code in range(256):
        on = [corner for bit, corner in enumerate(_CORNERS[3]) if code >> bit & 1]
        for cell in itertools.product((None, 0, 1), repeat=3):  # None: the cell does not extend along that axis
            dim = sum(side is not None for side in cell)
            present = any(all(side is None or corner[a] == side for a, side in enumerate(cell)) for corner in on)
            coefficients[code] += (-1) ** dim * present * 2 ** (3 - dim)
    return coefficients


def _tables() -> dict[tuple[int, int], np.ndarray]:
    tables = {}
    for connectivity, (plus, minus) in _COEFS_2D.items():
        table = np.zeros(16, np.int64)
        table[list(plus)], table[list(minus)] = 1, -1
        tables[2, connectivity] = table
    tables[3, 3] = euler_coefficients_3d()
    tables[3, 1] = tables[3, 3][::-1].copy()  # 6-connectivity: the complement's configuration
    return tables


_TABLES = _tables()
#: The same tables as Python ints, the kernel's arguments (constants under ``torch.compile``).
_CODES = {key: tuple(int(v) for v in table) for key, table in _TABLES.items()}


def _torch_sums(mask: torch.Tensor, connectivity: int) -> torch.Tensor:
    """The table's sums over the configuration codes, built from shifted views of the whole batch."""
    rank = mask.ndim - 2
    table = _TABLES[rank, connectivity]
    # scikit-image pads by one voxel of background, then reads the window ending at every padded voxel
    # (the voxels before the padding read as background too): pad two before and one after
    padded = torch.nn.functional.pad(mask.to(torch.uint8), (2, 1) * rank)
    size = [n + 2 for n in mask.shape[2:]]
    code = torch.zeros(mask.shape[:2] + tuple(size), dtype=torch.uint8, device=mask.device)
    for bit, corner in enumerate(_CORNERS[rank]):
        window = tuple(slice(1 - back, 1 - back + n) for back, n in zip(corner, size))
        code |= padded[(..., *window)] << bit
    return to_device(torch.from_numpy(table), mask.device)[code.int()].flatten(2).sum(-1)


_SUMS = _ops.Table("measure.euler_number", [
    _ops.Case("2-D and 3-D masks", "euler_number", lambda mask, connectivity: True,
              lambda mask, connectivity: _ops.kernels.euler_number(mask, _CODES[mask.ndim - 2, connectivity])),
], _torch_sums)


def euler_number(image, connectivity=None):
    """The Euler characteristic of every ``(b, c)`` slice (``skimage.measure.euler_number``).

    In 2-D the number of objects minus the number of holes; in 3-D the
    number of objects plus the number of cavities minus the number of
    tunnels.

    Parameters
    ----------
    image : torch.Tensor
        ``(B, C, H, W)`` or ``(B, C, D, H, W)``, any real dtype; values
        greater than 0 are the object (as in scikit-image). It is never
        modified.
    connectivity : int, optional
        The most orthogonal hops between neighbours: 1 or 2 in 2-D (4- and
        8-neighbours), 1 or 3 in 3-D (6 and 26; 2 is a
        ``NotImplementedError``, as in scikit-image). Default: full
        (``image.ndim - 2``).

    Returns
    -------
    torch.Tensor
        ``torch.int64`` of shape ``(B, C)``, on the input's device.

    Notes
    -----
    Parity: equal to scikit-image's per slice, from the same table of
    2 x 2 (x 2) configurations (Ohser et al.) over the zero-padded image, and
    the same truncation in 3-D. The native ``euler_number`` kernel sums the
    table over every window in one pass (one launch on CUDA); the torch
    backend builds the codes from shifted views of the whole batch. Nothing
    is read back.

    See Also
    --------
    skimage.measure.euler_number

    Examples
    --------
    >>> import torch
    >>> from morphaug.measure import euler_number
    >>> ring = torch.ones(1, 1, 3, 3)
    >>> ring[0, 0, 1, 1] = 0
    >>> euler_number(ring), euler_number(ring, connectivity=1)
    (tensor([[0]]), tensor([[0]]))
    """
    image = image_batch(image)
    rank = image.ndim - 2
    if connectivity is None:
        connectivity = rank
    connectivity = check_host_int(connectivity, "connectivity", minimum=1)
    if connectivity > rank:
        raise ValueError(f"connectivity must be in [1, {rank}] for {rank} spatial axes, got {connectivity}")
    if rank == 3 and connectivity == 2:
        raise NotImplementedError("connectivity=2 (18-neighbours) is not implemented for 3-D images, as in "
                                  "scikit-image: use 1 or 3")
    mask = positive(image)
    sums = _SUMS(mask, mask, connectivity)
    return sums if rank == 2 else torch.div(sums, 8, rounding_mode="trunc")
