"""Distance transforms: SciPy's ``distance_transform_*`` on ``(B, C, *spatial)`` tensors.

Every function replaces each foreground (nonzero) voxel of every ``(b, c)``
slice by its distance to the nearest background (zero) voxel of that slice,
and can return the feature transform: the coordinates of that background
voxel.

Options shared by the distance transforms
-----------------------------------------
input
    A tensor ``(B, C, *spatial)`` of any real dtype; nonzero (NaN included,
    as in SciPy) is foreground. It is never modified.
return_distances, return_indices
    What to compute; at least one must be true, and each must be true when
    its ``distances=`` / ``indices=`` tensor is given (as in SciPy, the
    error is a ``RuntimeError``; it is also a ``ValueError``).
distances
    Optional tensor of the input's shape and device receiving the distances
    (EDT and euclidean BF: ``float32`` or ``float64``; CDT, taxicab and
    chessboard BF: ``int32``). It is then not returned.
indices
    Optional ``int32`` tensor ``(S, B, C, *spatial)`` on the input's device
    receiving the feature transform. It is then not returned.
Returns
    Exactly what SciPy returns: the distances, the indices, both as a tuple
    ``(distances, indices)``, or ``None`` when everything went into
    ``distances=`` / ``indices=``. Indices are ``int32`` of shape
    ``(S, B, C, *spatial)``: ``indices[k, b, c]`` is coordinate ``k`` of the
    nearest background voxel of slice ``(b, c)``.

Batching
--------
Every ``(b, c)`` slice is transformed as SciPy transforms that slice alone
(the transforms never mix slices), in one vectorised computation over the
batch: no Python loop over samples.

SciPy parity
------------
* ``distance_transform_edt``: squared distances are exact (integers) without
  ``sampling``; distances are float32 within 1e-6 relative of SciPy (float64:
  within one ulp; torch's vectorised ``sqrt`` is not always correctly
  rounded). Indices follow SciPy's tie rule (the lower index along
  each axis, axes in order ``0 .. S-1``) and are identical to SciPy's without
  ``sampling``. With ``sampling``, two background voxels at the same
  distance may round to sums one ulp apart (in float32 and, rarely, in
  float64: 26 s^2 as 0 + 1 + 25 or as 1 + 16 + 9), so a tie may be broken the
  other way: the index then points at a background voxel at the same
  distance, to rounding. The native kernels reproduce SciPy's float64
  arithmetic, ties included.
* ``distance_transform_cdt``: distances and indices identical to SciPy's,
  for the named metrics and for any ``3 x ... x 3`` metric array (the raster
  scans are reproduced, tie order included). A metric array means
  ``metric != 0`` whatever its dtype; SciPy reads it as bytes of booleans, so
  only its bool/int8/uint8 metrics mean that.
* ``distance_transform_bf``: identical to SciPy (ties: the background voxel
  with the largest flat index); with ``sampling``, as EDT (float64: SciPy's
  ties, float32: to rounding).
* Without any background voxel in a slice, SciPy's results are kept: EDT
  measures to the index ``(-1, 0, ..., 0)``; CDT distances are ``-1`` and
  indices point at the voxel itself; BF distances are ``sqrt(DBL_MAX)``
  (``inf`` in float32) or ``-1`` (SciPy's uint32 4294967295) and indices
  are all 0.
* Dtypes: EDT/BF euclidean distances are ``float32`` (``float64`` when a
  float64 ``distances=`` is given), where SciPy returns float64; CDT and
  taxicab/chessboard BF distances are ``int32`` (SciPy: int32 and uint32).
* ``sampling`` must be positive and finite here (SciPy does not check).

Algorithms and cost (torch backend)
-----------------------------------
* EDT is separable: the nearest background along axis 0 by two cumulative
  sweeps, then per axis ``d`` the exact min-plus product
  ``g'(i) = min_j g(j) + (s_d (i - j))^2`` over each line, in blocks of at
  most ``_CHUNK_ELEMENTS`` candidates (work ``O(N * n_d)`` per axis, memory
  ``O(N)`` plus one block).
* CDT replays SciPy's two raster passes (``NI_DistanceTransformOnePass``).
  Rows along the last axis are independent inside one wavefront of rows
  (rows whose weighted row coordinates sum to the same value), so the scan is
  a Python loop over wavefronts, vectorised over the batch and all rows of a
  wavefront; inside a row the update ``v[j] = min(a[j], v[j-1] + 1)`` is one
  cumulative minimum. A 2-D input takes ``n_0`` steps per pass, a 3-D one
  ``2 n_0 + n_1`` with the chessboard metric (``n_0 + n_1`` with taxicab):
  ``O(sum of the sides)`` small kernels, work ``O(N)`` per metric offset.
* BF compares every voxel with every background voxel of its slice, in
  blocks of at most ``_CHUNK_ELEMENTS``: work ``O(B C N^2)``.

Host syncs
----------
None. A ``metric`` array given as an accelerator tensor is read back once
(it decides which offsets the raster scans use; ``morphaug._sync``).

Backends
--------
Each public function normalises and validates its arguments, calls one
worker (:func:`_edt_torch`, :func:`_cdt_torch`, :func:`_bf_torch`) on a
boolean foreground mask and writes the outputs; a native backend plugs in
where the worker is called.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from .. import _ops
from ._normalize import check_input, foreground, normalize_sequence, tensor_argument

__all__ = ["distance_transform_edt", "distance_transform_cdt", "distance_transform_bf"]

#: Most elements of one block of candidate distances (EDT min-plus, BF pairs).
_CHUNK_ELEMENTS = 1 << 24

_TAXICAB = ("taxicab", "cityblock", "manhattan")
_FLOAT_DTYPES = (torch.float32, torch.float64)
_INT_DTYPES = (torch.int32,)


class _ArgumentError(ValueError, RuntimeError):
    """A bad argument: SciPy raises ``RuntimeError`` here, morphaug ``ValueError``."""


class _DtypeError(TypeError, RuntimeError):
    """A bad output dtype: SciPy raises ``RuntimeError`` here, morphaug ``TypeError``."""


# --------------------------------------------------------------------------
# argument handling


def _check_return_flags(return_distances, return_indices, distances, indices):
    """SciPy's ``_distance_tranform_arg_check``, with messages naming the arguments."""
    errors = []
    if not return_distances and not return_indices:
        errors.append("at least one of return_distances/return_indices must be True")
    if distances is not None and not return_distances:
        errors.append("return_distances must be True if distances is supplied")
    if indices is not None and not return_indices:
        errors.append("return_indices must be True if indices is supplied")
    if errors:
        raise _ArgumentError(", ".join(errors))


def _normalize_sampling(sampling, rank: int) -> tuple[float, ...] | None:
    if sampling is None:
        return None
    try:
        values = normalize_sequence(sampling, rank, "sampling")
    except ValueError as error:
        raise _ArgumentError(str(error)) from None
    result = []
    for value in values:
        if isinstance(value, bool):
            raise TypeError(f"sampling must contain real numbers, got {value!r}")
        try:
            value = float(value)
        except (TypeError, ValueError):
            raise TypeError(f"sampling must contain real numbers, got {value!r}") from None
        if not (math.isfinite(value) and value > 0):
            raise ValueError(f"sampling must be positive and finite, got {tuple(values)!r}")
        result.append(value)
    return tuple(result)


def _check_distances(distances, input: torch.Tensor, dtypes, what: str) -> torch.dtype:
    """Validate ``distances=``; return the dtype of the distances to compute."""
    if distances is None:
        return dtypes[0]
    if not isinstance(distances, torch.Tensor):
        raise TypeError(f"distances must be None or a torch.Tensor, got {type(distances).__name__}")
    if tuple(distances.shape) != tuple(input.shape):
        raise _ArgumentError(
            f"distances has shape {tuple(distances.shape)}, expected the input's shape "
            f"{tuple(input.shape)}"
        )
    if distances.device != input.device:
        raise _ArgumentError(
            f"distances is on {distances.device}, expected the input's device {input.device}"
        )
    if distances.dtype not in dtypes:
        raise _DtypeError(
            f"distances must have dtype {' or '.join(str(d) for d in dtypes)} for {what}, "
            f"got {distances.dtype}"
        )
    return distances.dtype


def _check_indices(indices, input: torch.Tensor) -> None:
    if indices is None:
        return
    if not isinstance(indices, torch.Tensor):
        raise TypeError(f"indices must be None or a torch.Tensor, got {type(indices).__name__}")
    expected = (input.ndim - 2,) + tuple(input.shape)
    if tuple(indices.shape) != expected:
        raise _ArgumentError(
            f"indices has shape {tuple(indices.shape)}, expected (S, B, C, *spatial) = {expected}"
        )
    if indices.device != input.device:
        raise _ArgumentError(
            f"indices is on {indices.device}, expected the input's device {input.device}"
        )
    if indices.dtype != torch.int32:
        raise _DtypeError(f"indices must have dtype torch.int32, got {indices.dtype}")


def _results(dist, feats, return_distances, return_indices, distances, indices):
    """Write into ``distances=`` / ``indices=`` and return what SciPy returns."""
    result = []
    if return_distances:
        if distances is None:
            result.append(dist)
        else:
            distances.copy_(dist)
    if return_indices:
        if indices is None:
            result.append(feats)
        else:
            indices.copy_(feats)
    if len(result) == 2:
        return tuple(result)
    return result[0] if result else None


def _empty(input: torch.Tensor, dtype: torch.dtype, want_indices: bool):
    """Results for an input without voxels (the workers need at least one)."""
    dist = torch.empty(input.shape, dtype=dtype, device=input.device)
    if not want_indices:
        return dist, None
    return dist, torch.empty((input.ndim - 2,) + tuple(input.shape), dtype=torch.int32,
                             device=input.device)


def _unravel(flat: torch.Tensor, shape) -> torch.Tensor:
    """Flat indices ``(...)`` of an array of ``shape`` as int32 coordinates ``(S, ...)``."""
    coords = []
    for n in reversed(shape):
        coords.append(flat.remainder(n))
        flat = flat.div(n, rounding_mode="floor")
    return torch.stack(coords[::-1]).to(torch.int32)


# --------------------------------------------------------------------------
# public functions


def _edt_torch_distances(mask, sampling, want_indices: bool, dtype, want_distances: bool):
    squared, feats = _edt_torch(mask, sampling, want_indices, dtype)
    return (squared.to(dtype).sqrt_() if want_distances else None), feats


_EDT = _ops.Table("distance_transform_edt", [
    _ops.Case("every input", "edt", lambda mask, sampling, want_indices, dtype, want_distances: True,
              lambda mask, sampling, want_indices, dtype, want_distances: _ops.kernels.edt(
                  mask, sampling, want_indices, dtype)),
], _edt_torch_distances)


def distance_transform_edt(input, sampling=None, return_distances=True,
                           return_indices=False, distances=None, indices=None):
    """Exact Euclidean distance transform.

    Replaces every foreground (nonzero) voxel by its Euclidean distance to
    the nearest background (zero) voxel of its ``(b, c)`` slice; optionally
    returns the feature transform (the nearest background voxel's indices).

    Parameters
    ----------
    input : torch.Tensor
        ``(B, C, *spatial)``, any real dtype; nonzero is foreground.
    sampling : float or sequence of float, optional
        Spacing of the voxels along each spatial axis (one value for all, or
        one per axis); positive. Default: 1.
    return_distances : bool, optional
        Whether to compute the distance transform. Default True.
    return_indices : bool, optional
        Whether to compute the feature transform. Default False.
    distances : torch.Tensor, optional
        ``float32`` or ``float64`` tensor of the input's shape receiving the
        distances (computed in its dtype).
    indices : torch.Tensor, optional
        ``int32`` tensor ``(S, B, C, *spatial)`` receiving the indices.

    Returns
    -------
    distances : torch.Tensor, optional
        ``float32`` ``(B, C, *spatial)``; not returned when ``distances=``
        is given or ``return_distances`` is false.
    indices : torch.Tensor, optional
        ``int32`` ``(S, B, C, *spatial)``; not returned when ``indices=`` is
        given or ``return_indices`` is false.

    Notes
    -----
    Batching, SciPy parity (exact squared distances without ``sampling``,
    SciPy's tie rule for indices, a slice without background measures to
    ``(-1, 0, ..., 0)`` as in SciPy), algorithm and cost: see the module
    docstring of ``morphaug.ndimage._distance``.

    See Also
    --------
    scipy.ndimage.distance_transform_edt : the reference, applied to each ``(b, c)`` slice.

    Examples
    --------
    >>> import torch
    >>> from morphaug.ndimage import distance_transform_edt
    >>> x = torch.tensor([[[0, 1, 1, 1, 1]]])
    >>> distance_transform_edt(x)
    tensor([[[0., 1., 2., 3., 4.]]])
    >>> distance_transform_edt(x, sampling=0.5, return_indices=True)[1]
    tensor([[[[0, 0, 0, 0, 0]]]], dtype=torch.int32)
    """
    input = check_input(input)
    _check_return_flags(return_distances, return_indices, distances, indices)
    sampling = _normalize_sampling(sampling, input.ndim - 2)
    dtype = _check_distances(distances, input, _FLOAT_DTYPES, "distance_transform_edt")
    _check_indices(indices, input)

    mask = foreground(input)  # read only
    if input.numel() == 0:
        dist, feats = _empty(input, dtype, bool(return_indices))
    else:
        dist, feats = _EDT(mask, mask, sampling, bool(return_indices), dtype, bool(return_distances))
    return _results(dist, feats, return_distances, return_indices, distances, indices)


_CDT = _ops.Table("distance_transform_cdt", [
    _ops.Case("every metric", "cdt", lambda mask, structure, want_indices: True,
              lambda mask, structure, want_indices: _ops.kernels.cdt(mask, structure, want_indices)),
], lambda mask, structure, want_indices: _cdt_torch(mask, structure, want_indices))


def distance_transform_cdt(input, metric="chessboard", return_distances=True,
                           return_indices=False, distances=None, indices=None):
    """Distance transform for chamfer type of transforms.

    Replaces every foreground (nonzero) voxel by its chamfer distance to the
    nearest background (zero) voxel of its ``(b, c)`` slice, computed by
    SciPy's two raster passes with the neighbourhood ``metric``; optionally
    returns the feature transform.

    Parameters
    ----------
    input : torch.Tensor
        ``(B, C, *spatial)``, any real dtype; nonzero is foreground.
    metric : {'chessboard', 'taxicab', 'cityblock', 'manhattan'} or array_like, optional
        ``'chessboard'`` (default) uses the full ``3 x ... x 3`` neighbourhood
        (L-infinity distance); ``'taxicab'`` (alias ``'cityblock'``,
        ``'manhattan'``) the cross (L1 distance). An array (tensor, NumPy or
        nested lists; nonzero is true) of shape ``(3,) * S`` is a custom
        neighbourhood, shared by all slices.
    return_distances : bool, optional
        Whether to compute the distance transform. Default True.
    return_indices : bool, optional
        Whether to compute the feature transform. Default False.
    distances : torch.Tensor, optional
        ``int32`` tensor of the input's shape receiving the distances.
    indices : torch.Tensor, optional
        ``int32`` tensor ``(S, B, C, *spatial)`` receiving the indices.

    Returns
    -------
    distances : torch.Tensor, optional
        ``int32`` ``(B, C, *spatial)``; ``-1`` where no background voxel can
        be reached (e.g. a slice without background).
    indices : torch.Tensor, optional
        ``int32`` ``(S, B, C, *spatial)``, identical to SciPy's.

    Notes
    -----
    Batching, SciPy parity (identical distances and indices), the wavefront
    scan and its cost: see the module docstring of
    ``morphaug.ndimage._distance``. SciPy reads a metric array as bytes of
    booleans, so its results for a metric of a wider dtype (e.g. a list of
    Python ints) are meaningless; here any dtype means ``metric != 0``.
    A metric whose rank is not ``S`` is a ``ValueError`` (SciPy may crash).

    See Also
    --------
    scipy.ndimage.distance_transform_cdt : the reference, applied to each ``(b, c)`` slice.

    Examples
    --------
    >>> import torch
    >>> from morphaug.ndimage import distance_transform_cdt
    >>> x = torch.ones(1, 1, 3, 5, dtype=torch.bool)
    >>> x[0, 0, 0, 0] = False
    >>> distance_transform_cdt(x, metric="taxicab")[0, 0]
    tensor([[0, 1, 2, 3, 4],
            [1, 2, 3, 4, 5],
            [2, 3, 4, 5, 6]], dtype=torch.int32)
    """
    input = check_input(input)
    _check_return_flags(return_distances, return_indices, distances, indices)
    structure = _cdt_structure(metric, input.ndim - 2)
    _check_distances(distances, input, _INT_DTYPES, "distance_transform_cdt")
    _check_indices(indices, input)

    mask = foreground(input)  # read only
    if input.numel() == 0:
        dist, feats = _empty(input, torch.int32, bool(return_indices))
    else:
        dist, feats = _CDT(mask, mask, structure, bool(return_indices))
    return _results(dist, feats, return_distances, return_indices, distances, indices)


def distance_transform_bf(input, metric="euclidean", sampling=None,
                          return_distances=True, return_indices=False,
                          distances=None, indices=None):
    """Distance transform by a brute force algorithm.

    Replaces every foreground (nonzero) voxel by its distance to the nearest
    background (zero) voxel of its ``(b, c)`` slice, comparing it with every
    background voxel; optionally returns the feature transform.

    Parameters
    ----------
    input : torch.Tensor
        ``(B, C, *spatial)``, any real dtype; nonzero is foreground.
    metric : {'euclidean', 'taxicab', 'cityblock', 'manhattan', 'chessboard'}, optional
        Distance (case-insensitive); default ``'euclidean'``.
    sampling : float or sequence of float, optional
        Spacing along each spatial axis, positive; used only by
        ``'euclidean'`` (checked, then ignored by the others, as in SciPy).
    return_distances : bool, optional
        Whether to compute the distance transform. Default True.
    return_indices : bool, optional
        Whether to compute the feature transform. Default False.
    distances : torch.Tensor, optional
        Tensor of the input's shape receiving the distances: ``float32`` or
        ``float64`` for ``'euclidean'``, ``int32`` otherwise.
    indices : torch.Tensor, optional
        ``int32`` tensor ``(S, B, C, *spatial)`` receiving the indices.

    Returns
    -------
    distances : torch.Tensor, optional
        ``float32`` (euclidean) or ``int32`` (SciPy: uint32) ``(B, C, *spatial)``.
    indices : torch.Tensor, optional
        ``int32`` ``(S, B, C, *spatial)``; ties go to the background voxel with
        the largest flat index, as in SciPy.

    Notes
    -----
    Work is ``O(B C N^2)`` for ``N`` voxels per slice: use
    :func:`distance_transform_edt` or :func:`distance_transform_cdt` for
    anything but small inputs. Batching, SciPy parity and the results for a
    slice without background: see the module docstring of
    ``morphaug.ndimage._distance``.

    See Also
    --------
    scipy.ndimage.distance_transform_bf : the reference, applied to each ``(b, c)`` slice.

    Examples
    --------
    >>> import torch
    >>> from morphaug.ndimage import distance_transform_bf
    >>> x = torch.tensor([[[1, 1, 0, 1, 1, 1]]])
    >>> dist, inds = distance_transform_bf(x, metric="taxicab", return_indices=True)
    >>> dist
    tensor([[[2, 1, 0, 1, 2, 3]]], dtype=torch.int32)
    >>> inds[0]
    tensor([[[2, 2, 2, 2, 2, 2]]], dtype=torch.int32)
    """
    input = check_input(input)
    _check_return_flags(return_distances, return_indices, distances, indices)
    if not isinstance(metric, str):
        raise TypeError(f"metric must be a string, got {type(metric).__name__}")
    name = metric.lower()
    if name in _TAXICAB:
        name = "taxicab"
    elif name not in ("euclidean", "chessboard"):
        raise _ArgumentError(
            f"metric must be 'euclidean', 'taxicab', 'cityblock', 'manhattan' or "
            f"'chessboard', got {metric!r}"
        )
    sampling = _normalize_sampling(sampling, input.ndim - 2)
    if name == "euclidean":
        dtype = _check_distances(distances, input, _FLOAT_DTYPES, "metric 'euclidean'")
    else:
        sampling = None
        dtype = _check_distances(distances, input, _INT_DTYPES, f"metric {metric!r}")
    _check_indices(indices, input)

    if input.numel() == 0:
        dist, feats = _empty(input, dtype, bool(return_indices))
    else:
        dist, feats = _bf_torch(foreground(input), name, sampling, bool(return_indices), dtype)
    return _results(dist, feats, return_distances, return_indices, distances, indices)


# --------------------------------------------------------------------------
# EDT (torch backend)


def _edt_work(spatial, sampling, dtype):
    """Dtype and 'no background' value of the squared distances."""
    if sampling is not None:
        return dtype, math.inf
    if sum(n * n for n in spatial) < 1 << 30:
        return torch.int32, 1 << 30
    return torch.int64, 1 << 62


def _edt_torch(mask: torch.Tensor, sampling, want_indices: bool, dtype: torch.dtype):
    """Squared Euclidean distances of ``mask``'s foreground and SciPy's feature transform.

    ``mask`` is a non-empty bool ``(B, C, *spatial)`` tensor, true on the
    foreground; ``sampling`` a tuple of positive floats or ``None``; ``dtype`` the dtype
    of the distances to be returned (the squared distances are computed in
    it when ``sampling`` is given, else exactly in integers).

    Returns ``(squared, indices)``: squared distances ``(B, C, *spatial)``
    (int32/int64 without sampling) and, when ``want_indices``, int32
    ``(S, B, C, *spatial)`` indices, else ``None``.
    """
    spatial = tuple(mask.shape[2:])
    rank = len(spatial)
    scale = sampling if sampling is not None else (None,) * rank
    work, inf = _edt_work(spatial, sampling, dtype)

    squared, nearest = _nearest_on_axis0(mask, scale[0], work, inf)
    feats = [nearest] if want_indices else []
    for axis in range(1, rank):
        squared, feats = _min_plus_axis(squared, feats, axis, scale[axis], work, inf)

    # A slice without background: SciPy leaves the features at (-1, 0, ..., 0)
    # and measures the distances to that index.
    empty = squared >= inf
    fallback = torch.zeros((), dtype=work, device=mask.device)
    for k, n in enumerate(spatial):
        steps = torch.arange(n, device=mask.device) + (1 if k == 0 else 0)
        term = _scaled_square(steps, scale[k], work).reshape((n,) + (1,) * (rank - 1 - k))
        fallback = fallback + term
    squared = torch.where(empty, fallback, squared)
    if not want_indices:
        return squared.contiguous(), None
    indices = torch.stack(feats)
    indices[0].masked_fill_(empty, -1)
    indices[1:].masked_fill_(empty, 0)
    return squared.contiguous(), indices


def _scaled_square(steps: torch.Tensor, scale, work: torch.dtype) -> torch.Tensor:
    """``(steps * scale) ** 2`` in ``work`` (SciPy's order of rounding)."""
    steps = steps.to(work)
    if scale is not None:
        steps = steps * scale
    return steps * steps


def _nearest_on_axis0(mask, scale, work, inf):
    """Squared distance to, and index of, the nearest background along axis 0.

    Two cumulative sweeps per line; a tie goes to the lower index (SciPy).
    """
    fg = mask.movedim(2, -1)
    n = fg.shape[-1]
    pos = torch.arange(n, dtype=torch.int32, device=mask.device)
    before = torch.where(fg, -2 * n - 1, pos).cummax(-1).values
    after = torch.where(fg, 3 * n, pos).flip(-1).cummin(-1).values.flip(-1)
    take_before = pos - before <= after - pos
    nearest = torch.where(take_before, before, after)
    found = (before >= 0) | (after < n)
    squared = _scaled_square((nearest - pos).abs(), scale, work)
    squared = squared.masked_fill(~found, inf)
    return squared.movedim(-1, 2), nearest.movedim(-1, 2)


def _min_plus_axis(squared, feats, axis, scale, work, inf):
    """One separable EDT step along spatial ``axis``: ``min_j g(j) + (s (i - j))^2``.

    ``feats`` holds the feature coordinates of the axes before ``axis``;
    they are gathered from the winning ``j`` (the first minimum: a tie goes
    to the lower index, as in SciPy) and ``j`` becomes coordinate ``axis``.
    """
    dim = axis + 2
    moved = squared.movedim(dim, -1)
    shape = moved.shape
    n = shape[-1]
    g = moved.reshape(-1, n)
    lines = g.shape[0]
    pos = torch.arange(n, device=g.device)
    weights = _scaled_square(pos[:, None] - pos[None, :], scale, work)
    old = [f.movedim(dim, -1).reshape(-1, n) for f in feats]

    out = torch.empty_like(g)
    new = [torch.empty_like(g, dtype=torch.int32) for _ in range(len(feats) + 1)] if feats else []
    block_i = max(1, min(n, _CHUNK_ELEMENTS // max(n, 1)))
    block_l = max(1, _CHUNK_ELEMENTS // max(block_i * n, 1))
    for l0 in range(0, lines, block_l):
        l1 = min(lines, l0 + block_l)
        for i0 in range(0, n, block_i):
            i1 = min(n, i0 + block_i)
            value, arg = _min_plus_block(g[l0:l1], weights[i0:i1], bool(feats))
            out[l0:l1, i0:i1] = value
            if feats:
                for f_old, f_new in zip(old, new):
                    f_new[l0:l1, i0:i1] = f_old[l0:l1].gather(1, arg)
                new[-1][l0:l1, i0:i1] = arg
    if not work.is_floating_point:
        out.clamp_(max=inf)
    out = out.reshape(shape).movedim(-1, dim)
    return out, [f.reshape(shape).movedim(-1, dim) for f in new]


def _min_plus_block(g: torch.Tensor, weights: torch.Tensor, want_arg: bool):
    """``min_j g[l, j] + weights[i, j]`` for a block ``(L, n) x (I, n)``; first argmin."""
    candidates = g[:, None, :] + weights[None]
    if want_arg:
        return _first_min(candidates)
    return candidates.amin(-1), None


def _first_min(values: torch.Tensor):
    """Minimum over the last dim and the index of its first occurrence.

    ``argmin`` + ``gather`` rather than ``min(dim)``, which is far slower on
    small CPU tensors when the cores are busy.
    """
    index = values.argmin(-1, keepdim=True)
    return values.gather(-1, index)[..., 0], index[..., 0]


# --------------------------------------------------------------------------
# CDT (torch backend)


def _cdt_structure(metric, rank: int) -> np.ndarray:
    """The chamfer neighbourhood as a bool NumPy array of shape ``(3,) * rank``."""
    if isinstance(metric, str):
        if metric in _TAXICAB:
            return np.abs(np.indices((3,) * rank) - 1).sum(0) <= 1
        if metric == "chessboard":
            return np.ones((3,) * rank, dtype=bool)
        raise ValueError(
            f"metric must be 'chessboard', 'taxicab', 'cityblock', 'manhattan' or an "
            f"array of shape {(3,) * rank}, got {metric!r}"
        )
    if isinstance(metric, torch.Tensor):
        metric = metric.numpy(force=True) if metric.device.type == "cpu" else tensor_argument(metric)
    try:
        array = np.asarray(metric)
    except (TypeError, ValueError) as error:
        raise ValueError(f"metric must be a string or array_like, got {metric!r}") from error
    if array.dtype.kind not in "biuf":
        raise ValueError(f"metric must be a real array, got dtype {array.dtype}")
    if array.shape != (3,) * rank:
        raise ValueError(
            f"metric must have shape {(3,) * rank} (size 3 along each of the {rank} "
            f"spatial axes), got {array.shape}"
        )
    return array != 0


class _ChamferPlan:
    """What one raster pass needs: offsets in SciPy's order and the row wavefronts.

    The spatial array is seen as rows along the last axis. SciPy's pass reads,
    in raster order, the neighbours in the first half of the structure (flat
    order), i.e. rows earlier in raster order plus the previous voxel of the
    same row. Row ``r`` only depends on rows with a smaller weighted sum
    ``t(r) = sum_k w_k r_k``, so the rows of one wavefront (one ``t``) are
    updated together: ``w = (2^(R-1), ..., 2, 1)`` for the chessboard metric
    on ``R`` row axes, ``(1, ..., 1)`` for taxicab.
    """

    def __init__(self, spatial, structure: np.ndarray, device):
        row_shape = spatial[:-1]
        rank_rows = len(row_shape)
        n_rows = int(np.prod(row_shape, dtype=np.int64))
        first_half = [
            tuple(int(v) for v in np.unravel_index(flat, structure.shape))
            for flat in range(structure.size // 2) if structure.flat[flat]
        ]
        offsets = [tuple(k - 1 for k in o) for o in first_half]
        self.in_row = (0,) * (len(spatial) - 1) + (-1,) in offsets
        groups: dict[tuple, list[int]] = {}
        for o in offsets:
            if any(o[:-1]):
                groups.setdefault(o[:-1], []).append(o[-1])
        self.lasts = list(groups.values())

        # t(r) - t(r + o) >= 1 for every offset o: w_k exceeds what the later
        # axes can add for the offsets whose first nonzero (-1) is on axis k.
        weights = [0] * rank_rows
        for k in range(rank_rows - 1, -1, -1):
            later = [sum(w * v for w, v in zip(weights[k + 1:], o[k + 1:]))
                     for o in groups if o[k] != 0 and not any(o[:k])]
            weights[k] = 1 + max([0] + later) if later else 0
        coords = np.indices(row_shape).reshape(rank_rows, n_rows)
        wave = np.asarray(weights, dtype=np.int64) @ coords if rank_rows else np.zeros(1, np.int64)
        order = np.argsort(wave, kind="stable")
        self.bounds = np.searchsorted(wave[order], np.arange(wave.max() + 2)).tolist()

        neighbours, valid = [], []
        for o_row in groups:
            target = coords[:, order] + np.asarray(o_row)[:, None]
            inside = np.all((target >= 0) & (target < np.asarray(row_shape)[:, None]), axis=0)
            clipped = np.clip(target, 0, np.asarray(row_shape)[:, None] - 1)
            neighbours.append(np.ravel_multi_index(tuple(clipped), row_shape))
            valid.append(inside)
        self.order = torch.as_tensor(order, device=device)
        self.neighbours = torch.as_tensor(np.array(neighbours, dtype=np.int64).reshape(
            len(groups), n_rows), device=device)
        self.valid = torch.as_tensor(np.array(valid, dtype=bool).reshape(
            len(groups), n_rows), device=device)


_CDT_INF = 1 << 30


def _cdt_torch(mask: torch.Tensor, structure: np.ndarray, want_indices: bool):
    """SciPy's chamfer distance transform of ``mask``'s foreground.

    ``mask`` is a non-empty bool ``(B, C, *spatial)`` tensor, true on the
    foreground; ``structure`` a bool NumPy array ``(3,) * S``. Runs SciPy's forward
    raster pass, then the same pass on the array reversed along every axis
    (``NI_DistanceTransformOnePass`` twice).

    Returns int32 distances ``(B, C, *spatial)`` (``-1``: unreached) and,
    when ``want_indices``, int32 indices ``(S, B, C, *spatial)``, else ``None``.
    """
    spatial = tuple(mask.shape[2:])
    batch = mask.shape[0] * mask.shape[1]
    m = spatial[-1]
    n_rows = math.prod(spatial[:-1])
    device = mask.device
    plan = _ChamferPlan(spatial, structure, device)

    values = torch.where(mask, _CDT_INF, 0).to(torch.int32).reshape(batch, n_rows, m)
    feats = None
    if want_indices:
        feats = torch.arange(n_rows * m, dtype=torch.int32, device=device)
        feats = feats.reshape(1, n_rows, m).expand(batch, n_rows, m).clone()
    _chamfer_pass(values, feats, plan)
    values = values.flip(1, 2)
    feats = feats.flip(1, 2) if feats is not None else None
    _chamfer_pass(values, feats, plan)
    values = values.flip(1, 2)

    dist = values.masked_fill(values >= _CDT_INF, -1).reshape(mask.shape)
    if feats is None:
        return dist, None
    return dist, _unravel(feats.flip(1, 2).reshape(mask.shape), spatial)


def _chamfer_pass(values: torch.Tensor, feats, plan: _ChamferPlan) -> None:
    """One raster pass of SciPy's chamfer transform, in place, wavefront by wavefront.

    ``values`` (int32, ``_CDT_INF`` for unreached) and ``feats`` (int32 flat
    indices, or ``None``) are ``(B*C, rows, m)``. At each voxel SciPy keeps
    the first minimum of [its own value, then ``neighbour + 1`` for each
    offset in flat order]; the previous voxel of the row comes last.
    """
    m = values.shape[-1]
    pos = torch.arange(m, device=values.device)
    for start, stop in zip(plan.bounds[:-1], plan.bounds[1:]):
        if start == stop:
            continue
        rows = plan.order[start:stop]
        best = values.index_select(1, rows)
        best_f = feats.index_select(1, rows) if feats is not None else None
        for group, lasts in enumerate(plan.lasts):
            source = plan.neighbours[group, start:stop]
            inside = plan.valid[group, start:stop][None, :, None]
            nv = values.index_select(1, source).masked_fill(~inside, _CDT_INF)
            nv = F.pad(nv, (1, 1), value=_CDT_INF) + 1
            nf = F.pad(feats.index_select(1, source), (1, 1)) if feats is not None else None
            for last in lasts:  # a neighbour wins only when strictly better
                candidate = nv[..., 1 + last:1 + last + m]
                if nf is None:
                    best = torch.minimum(best, candidate)
                    continue
                better = candidate < best
                best = torch.where(better, candidate, best)
                best_f = torch.where(better, nf[..., 1 + last:1 + last + m], best_f)
        if plan.in_row and feats is None:
            # v[j] = min(a[j], v[j-1] + 1) = min_{k<=j} (a[k] - k) + j
            best = (best - pos).cummin(-1).values + pos
        elif plan.in_row:
            # The winner for j is the largest k <= j minimising a[k] - k (a[j]
            # wins ties against the previous voxel): encode k in the key.
            key = (best.long() - pos) * m + (m - 1 - pos)
            winner = (m - 1) - key.cummin(-1).values.remainder(m)
            best = best.gather(-1, winner) + (pos - winner)
            best_f = best_f.gather(-1, winner)
        values.index_copy_(1, rows, best.to(torch.int32))
        if feats is not None:
            feats.index_copy_(1, rows, best_f)


# --------------------------------------------------------------------------
# BF (torch backend)


def _bf_torch(mask: torch.Tensor, metric: str, sampling, want_indices: bool, dtype):
    """Brute-force distance transform of ``mask``'s foreground, SciPy's ties.

    ``mask`` is a non-empty bool ``(B, C, *spatial)`` tensor, true on the
    foreground; ``metric`` is ``'euclidean'``, ``'taxicab'`` or ``'chessboard'``;
    ``sampling`` (euclidean only) a tuple of positive floats or ``None``;
    ``dtype`` the distances' dtype. Every voxel is compared with every
    background voxel of its slice in blocks of at most ``_CHUNK_ELEMENTS``;
    a tie goes to the largest flat index (SciPy walks its list of border
    voxels backwards and keeps the first minimum).

    Returns distances ``(B, C, *spatial)`` and, when ``want_indices``, int32
    indices ``(S, B, C, *spatial)``, else ``None``.
    """
    spatial = tuple(mask.shape[2:])
    device = mask.device
    batch = mask.shape[0] * mask.shape[1]
    size = math.prod(spatial)
    background = ~mask.reshape(batch, size)
    grids = torch.meshgrid(*[torch.arange(n, device=device) for n in spatial], indexing="ij")
    coords = [g.reshape(-1) for g in grids]
    if metric == "euclidean" and sampling is not None:
        work, inf = dtype, math.inf
    else:
        work, inf = torch.int64, 1 << 62

    best = torch.full((batch, size), inf, dtype=work, device=device)
    arg = torch.zeros((batch, size), dtype=torch.int64, device=device)
    block_c = max(1, min(size, _CHUNK_ELEMENTS // max(batch, 1)))
    block_q = max(1, _CHUNK_ELEMENTS // max(batch * block_c, 1))
    for q0 in range(0, size, block_q):
        q1 = min(size, q0 + block_q)
        for c0 in range(0, size, block_c):
            c1 = min(size, c0 + block_c)
            pair = _bf_pair_distances(coords, (q0, q1), (c0, c1), metric, sampling, work)
            value = torch.where(background[:, None, c0:c1], pair, inf)
            # last minimum of the block = first minimum of the reversed block
            value, where = _first_min(value.flip(-1))
            where = (c1 - 1) - where
            better = value <= best[:, q0:q1]  # later blocks hold larger indices
            best[:, q0:q1] = torch.where(better, value, best[:, q0:q1])
            arg[:, q0:q1] = torch.where(better, where, arg[:, q0:q1])

    empty = best >= inf  # a slice without background
    if metric == "euclidean":
        # SciPy: sqrt(DBL_MAX), which overflows to inf in float32
        unreached = math.sqrt(np.finfo(np.float64).max)
        if unreached > torch.finfo(dtype).max:
            unreached = math.inf
        dist = best.to(dtype).sqrt_().masked_fill_(empty, unreached)
    else:
        dist = best.masked_fill(empty, -1).to(torch.int32)
    dist = dist.reshape(mask.shape)
    if not want_indices:
        return dist, None
    return dist, _unravel(arg.masked_fill(empty, 0).reshape(mask.shape), spatial)


def _bf_pair_distances(coords, queries, candidates, metric, sampling, work):
    """Distances ``(Q, C)`` between two ranges of flat positions (SciPy's arithmetic)."""
    total = None
    for k, c in enumerate(coords):
        diff = c[queries[0]:queries[1], None] - c[None, candidates[0]:candidates[1]]
        if metric == "euclidean":
            term = _scaled_square(diff, sampling[k] if sampling is not None else None, work)
        else:
            term = diff.abs()
        if total is None:
            total = term
        elif metric == "chessboard":
            total = torch.maximum(total, term)
        else:
            total = total + term
    return total.to(work)
