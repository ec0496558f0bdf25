"""SciPy's ``generate_binary_structure`` as a ``torch.bool`` tensor.

It is not batched: it builds one element, as SciPy does. A batch of
per-sample elements is a stack of them (``torch.stack``), or see
:mod:`morphaug.footprints` for random ones. ``iterate_structure`` dilates an
element by itself, so it sits beside ``binary_dilation`` (``_binary``), as in
SciPy.
"""

from __future__ import annotations

import numpy as np
import torch

from .._checks import check_host_int

__all__ = ["generate_binary_structure"]


def generate_binary_structure(rank, connectivity):
    """Binary structuring element of ``rank`` dimensions and given connectivity.

    The element is the ``3 x ... x 3`` box whose positions lie within
    ``connectivity`` unit steps (city-block distance) of the centre:
    connectivity 1 is the cross (faces only), ``rank`` the full box.

    Parameters
    ----------
    rank : int
        Number of dimensions. A rank below 1 gives the 0-d tensor ``True``.
    connectivity : int
        Largest city-block distance from the centre of the included
        positions; values below 1 count as 1.

    Returns
    -------
    torch.Tensor
        ``torch.bool`` tensor of shape ``(3,) * rank``, on the CPU.

    Notes
    -----
    SciPy parity: identical values, as a ``torch.bool`` tensor instead of a
    NumPy ``bool`` array. ``rank`` and ``connectivity`` must be ints (SciPy
    also accepts a float ``connectivity``, compared as a distance); anything
    else is a ``TypeError``.

    See Also
    --------
    scipy.ndimage.generate_binary_structure : the reference.
    morphaug.footprints.cross : the same cross for any radius.

    Examples
    --------
    >>> from morphaug.ndimage import generate_binary_structure
    >>> generate_binary_structure(2, 1).int()
    tensor([[0, 1, 0],
            [1, 1, 1],
            [0, 1, 0]], dtype=torch.int32)
    """
    rank = check_host_int(rank, "rank")
    connectivity = max(check_host_int(connectivity, "connectivity"), 1)
    if rank < 1:
        return torch.tensor(True)
    # from NumPy values: a host element, as users give them (no tensor factory runs on the host);
    # the distances to the centre summed one axis at a time in uint8 (np.indices would hold rank
    # int64 coordinates per position: 16 GiB for rank 17, against 129 MiB here)
    steps = np.array([1, 0, 1], dtype=np.uint8)
    distance = np.zeros((), dtype=np.uint8)
    for _ in range(rank):
        distance = distance[..., None] + steps
    return torch.from_numpy(distance <= connectivity)
