"""Binary structuring elements: SciPy's ``generate_binary_structure`` and
``iterate_structure`` as ``torch.bool`` tensors.

These two are not batched: they build one element, as SciPy does. A batch of
per-sample elements is a stack of them (``torch.stack``), or see
:mod:`morphaug.footprints` for random ones.
"""

from __future__ import annotations

import numpy as np
import torch

from .._checks import check_int
from ._normalize import check_dense, host_tensor, normalize_origin

__all__ = ["generate_binary_structure", "iterate_structure"]


def _int(value, name: str) -> int:
    if isinstance(value, torch.Tensor):  # SciPy takes Python and NumPy ints only
        raise TypeError(f"{name} must be an int, got {value!r}")
    return check_int(value, name)


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
    rank = _int(rank, "rank")
    connectivity = max(_int(connectivity, "connectivity"), 1)
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


def iterate_structure(structure, iterations, origin=None):
    """Iterate a structuring element by dilating it with itself.

    The result is the element a single dilation would need to match
    ``iterations`` dilations by ``structure``.

    Parameters
    ----------
    structure : array_like
        The element (a tensor, NumPy array or nested list; nonzero is true),
        of any rank. Not batched.
    iterations : int
        Number of dilations the result stands for.
    origin : int or sequence of int, optional
        Origin of ``structure`` (one per axis, or one for all). When given
        and ``iterations >= 2``, the origin of the result is returned too.

    Returns
    -------
    torch.Tensor or (torch.Tensor, list of int)
        The iterated element as ``torch.bool``, of shape
        ``k + (iterations - 1) * (k - 1)`` per axis, on the device of a
        ``structure`` tensor (else the CPU); with ``origin``, also the
        origin ``iterations * origin`` per axis.

    Notes
    -----
    SciPy parity: identical values and shapes, and the same quirk that the
    ``(structure, origin)`` pair is returned only when ``origin`` is given
    and ``iterations >= 2``: for ``iterations < 2`` only the (copied)
    element comes back. Here it is always ``torch.bool`` (SciPy returns the
    input's dtype unchanged when ``iterations < 2``). ``iterations`` must be
    an int.

    See Also
    --------
    scipy.ndimage.iterate_structure : the reference.

    Examples
    --------
    >>> from morphaug.ndimage import generate_binary_structure, iterate_structure
    >>> iterate_structure(generate_binary_structure(2, 1), 2).int()
    tensor([[0, 0, 1, 0, 0],
            [0, 1, 1, 1, 0],
            [1, 1, 1, 1, 1],
            [0, 1, 1, 1, 0],
            [0, 0, 1, 0, 0]], dtype=torch.int32)
    """
    from ._binary import binary_dilation  # _binary imports this module

    if isinstance(structure, torch.Tensor):
        element = check_dense(structure, "structure")
    else:
        try:
            element = host_tensor(structure)
        except (TypeError, ValueError, RuntimeError) as error:
            raise TypeError(
                f"structure must be array-like, got {type(structure).__name__}"
            ) from error
    if element.is_complex():
        raise TypeError(f"structure must be real, got complex dtype {element.dtype}")
    if element.numel() == 0:
        raise ValueError(f"structure must not be empty, got shape {tuple(element.shape)}")
    iterations = _int(iterations, "iterations")
    element = element != 0
    if iterations < 2:
        return element
    if element.ndim == 0:
        out = element
    else:
        grow = iterations - 1
        shape = [k + grow * (k - 1) for k in element.shape]
        out = element.new_zeros(shape)
        centre = tuple(slice(grow * (k // 2), grow * (k // 2) + k) for k in element.shape)
        out[centre] = element
        out = binary_dilation(out[None, None], element, iterations=grow)[0, 0]
    if origin is None:
        return out
    origin = normalize_origin(origin, element.ndim)
    return out, [iterations * o for o in origin]
