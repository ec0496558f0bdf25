"""Where the extrema are, and where each value is: SciPy's ``minimum_position``,
``maximum_position``, ``extrema`` and ``value_indices``.

The positions of the extrema take ``labels`` and ``index`` as the other
measurements do: the tables of ``_regions`` hold each region's extremum and
the least raster index of the voxels that attain it (SciPy's "first" extremum).
``value_indices`` groups the voxels of the whole batch by value (on the
CPU the ``value_indices`` kernel's counting sort, elsewhere one stable sort)
and splits their coordinates by value.
"""

from __future__ import annotations

import numpy as np
import torch

from .. import _ops, _sync
from .._checks import check_host_int
from . import _unsigned
from ._docs import filler
from ._errors import DtypeError
from ._measurements import _TEXTS
from ._regions import _comparable, _key_of, _pick, _rule, _tables
from ._normalize import check_input

__all__ = ["minimum_position", "maximum_position", "extrema", "value_indices"]

_POSITIONS = {**_TEXTS, "positions": """\
    Positions are int64 coordinates along the spatial axes, in a last axis
    of ``S`` (SciPy: a tuple, or a list of tuples). The first voxel in C
    order that attains the extremum wins: SciPy's rule for one region
    (``index`` None or an int; its index-sequence path takes any of the
    tied voxels, in the order of an unstable sort). A region without voxels
    gets position 0 along every axis and value 0 (SciPy: the same in an
    index sequence, an error otherwise). NaN counts as an extremum where
    one is present."""}


def unravel(flat: torch.Tensor, shape) -> torch.Tensor:
    """The C-order coordinates of flat indices into ``shape``, in a new last axis."""
    coordinates = []
    for n in reversed(tuple(shape)):
        quotient = torch.div(flat, max(n, 1), rounding_mode="trunc")  # several times faster than // and %
        coordinates.append(flat - quotient * n)
        flat = quotient
    return torch.stack(coordinates[::-1], -1)


def _position(input, labels, index, name: str) -> torch.Tensor:
    input = check_input(input)
    rule = _rule(input, labels, index)
    return unravel(_pick(rule, _tables(input, rule, name)[name]), input.shape[2:])


@filler(_POSITIONS)
def minimum_position(input, labels=None, index=None):
    """Position of the minimum of the values of each labelled region.

    Parameters
    ----------
{input}
{labels}
{index}

    Returns
    -------
    torch.Tensor
        int64 ``(B, C, *index.shape, S)``.

    Notes
    -----
{positions}

    See Also
    --------
    scipy.ndimage.minimum_position : the reference, applied to each ``(b, c)`` slice.

    Examples
    --------
    >>> import torch
    >>> from morphaug.ndimage import minimum_position
    >>> x = torch.tensor([[[[5, 4, 2, 5], [3, 7, 0, 2], [1, 5, 1, 1]]]])
    >>> minimum_position(x)
    tensor([[[1, 2]]])
    >>> minimum_position(x, torch.tensor([[[[1, 2, 3, 4]]]]), [2, 3])
    tensor([[[[0, 1],
              [1, 2]]]])
    """
    return _position(input, labels, index, "low_at")


@filler(_POSITIONS)
def maximum_position(input, labels=None, index=None):
    """Position of the maximum of the values of each labelled region.

    Parameters
    ----------
{input}
{labels}
{index}

    Returns
    -------
    torch.Tensor
        int64 ``(B, C, *index.shape, S)``.

    Notes
    -----
{positions}

    See Also
    --------
    scipy.ndimage.maximum_position : the reference, applied to each ``(b, c)`` slice.

    Examples
    --------
    >>> import torch
    >>> from morphaug.ndimage import maximum_position
    >>> maximum_position(torch.tensor([[[[5, 4, 2, 5], [3, 7, 8, 2], [1, 5, 1, 1]]]]))
    tensor([[[1, 2]]])
    """
    return _position(input, labels, index, "high_at")


@filler(_POSITIONS)
def extrema(input, labels=None, index=None):
    """Minimum, maximum and their positions for each labelled region.

    Parameters
    ----------
{input}
{labels}
{index}

    Returns
    -------
    minimums, maximums : torch.Tensor
        ``(B, C, *index.shape)`` of the input's dtype, as :func:`minimum`
        and :func:`maximum`.
    min_positions, max_positions : torch.Tensor
        int64 ``(B, C, *index.shape, S)``, as :func:`minimum_position` and
        :func:`maximum_position`.

    Notes
    -----
{positions}

    See Also
    --------
    scipy.ndimage.extrema : the reference, applied to each ``(b, c)`` slice.

    Examples
    --------
    >>> import torch
    >>> from morphaug.ndimage import extrema
    >>> x = torch.tensor([[[[1, 2, 0, 1], [5, 3, 0, 4], [0, 0, 0, 7], [9, 3, 0, 0]]]])
    >>> extrema(x)
    (tensor([[0]]), tensor([[9]]), tensor([[[0, 2]]]), tensor([[[3, 0]]]))
    """
    input = check_input(input)
    rule = _rule(input, labels, index)
    found = {name: _pick(rule, table) for name, table in _tables(input, rule, "low_at", "high_at").items()}
    spatial = input.shape[2:]
    return found["low"], found["high"], unravel(found["low_at"], spatial), unravel(found["high_at"], spatial)


def _value(key: int, dtype: torch.dtype):
    """The value of ``dtype`` whose :func:`_comparable` key is ``key``."""
    if dtype in _unsigned.SIGNED:
        return key - _unsigned.ordered_value(0, dtype)
    return bool(key) if dtype == torch.bool else key


def _grouped_torch(keys: torch.Tensor, bounds, ignore_key):
    """The distinct keys of ``keys`` (increasing, a NumPy array), their voxel counts (a list) and the
    coordinates ``(2 + S, N)`` of the voxels grouped by key, each group in C order: one stable sort."""
    sorted_keys, order = keys.reshape(-1).sort(stable=True)
    if sorted_keys.device.type == "cpu":
        host = sorted_keys.numpy()
    else:
        host = np.asarray(_sync.host_read(sorted_keys, "value_indices"))
    starts = np.flatnonzero(host[1:] != host[:-1]) + 1  # sorted: each value's run starts where it changes
    distinct = host[np.concatenate([[0], starts])] if host.size else host
    counts = np.diff(np.concatenate([[0], starts, [host.size]])).tolist() if host.size else []
    return distinct, counts, unravel(order, keys.shape).T


def _grouped_native(keys: torch.Tensor, bounds, ignore_key):
    """As :func:`_grouped_torch`, by the ``value_indices`` kernel, without the ignored key."""
    lowest, highest = bounds
    counts, coords = _ops.kernels.value_indices(keys, lowest, highest - lowest + 1, ignore_key)
    host = counts.numpy()
    present = np.flatnonzero(host)
    return present + lowest, host[present].tolist(), coords


def _bounds(keys: torch.Tensor):
    """The least and greatest key of a non-empty CPU tensor, else None (the kernel is not asked)."""
    if keys.device.type != "cpu" or keys.numel() == 0:
        return None
    low, high = torch.aminmax(keys)
    return int(low), int(high)


_GROUPS = _ops.Table("value_indices", [
    _ops.Case("CPU values within max(2^16, twice the voxels)", "value_indices",
              lambda keys, bounds, ignore_key: bounds is not None, _grouped_native,
              lambda keys, bounds, ignore_key: {"span": bounds[1] - bounds[0] + 1, "voxels": keys.numel()}),
], _grouped_torch)


@torch.compiler.disable  # a dict sized by the data: torch.compile runs it eagerly, between graphs
def value_indices(arr, *, ignore_value=None):
    """Indices of every distinct value of the batch.

    Parameters
    ----------
    arr : torch.Tensor
        ``(B, C, *spatial)`` integer values (any integer dtype; SciPy
        refuses bool and float arrays, a ``ValueError``, and so does this).
    ignore_value : int, optional
        A value left out of the result.

    Returns
    -------
    dict
        ``{value: (b, c, *spatial)}``: for each distinct value (a Python
        int), in increasing order, a tuple of ``2 + S`` int64 tensors on the
        input's device, the batch, channel and spatial indices of the
        voxels that hold it, in C order, so that ``arr[indices[value]]``
        selects them.

    Notes
    -----
    The batch is one array here: SciPy's result for the whole
    ``(B, C, *spatial)`` array, as it would be computed on it (not one
    dict per slice). The entries of slice ``(b, c)`` are those whose first
    two indices are ``b`` and ``c``, in the order of SciPy's result for that
    slice. The dict is sized by the data: on an accelerator the sorted
    values are read back once (``morphaug._sync``); free on the CPU. Under
    ``torch.compile`` it runs eagerly, between graphs (with
    ``fullgraph=True``, an error).

    See Also
    --------
    scipy.ndimage.value_indices : the reference, applied to the whole batch.

    Examples
    --------
    >>> import torch
    >>> from morphaug.ndimage import value_indices
    >>> found = value_indices(torch.tensor([[[2, 0, 2, 1]]]), ignore_value=0)
    >>> list(found)
    [1, 2]
    >>> found[2]
    (tensor([0, 0]), tensor([0, 0]), tensor([0, 2]))
    """
    arr = check_input(arr, "arr")
    if arr.dtype == torch.bool or arr.dtype.is_floating_point:
        raise DtypeError(f"arr must be an integer array (SciPy: Parameter 'arr' must be an integer array), "
                         f"got {arr.dtype}")
    if ignore_value is not None:
        ignore_value = check_host_int(ignore_value, "ignore_value")
    keys = _comparable(arr)
    ignore_key = None if ignore_value is None else _key_of(ignore_value, arr.dtype)
    if ignore_key is not None and not -(2**63) <= ignore_key < 2**63:
        ignore_key = None  # no voxel holds it
    distinct, counts, coords = _GROUPS(keys, keys, _bounds(keys), ignore_key)
    pieces = coords.split(counts, dim=1)
    found = {}
    for key, piece in zip(distinct.tolist(), pieces):
        value = _value(key, arr.dtype)
        if value != ignore_value:
            found[value] = tuple(piece)
    return found
