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
Errors
    A ``distances=`` / ``indices=`` of the wrong shape or device is a
    ``ValueError`` that is also a ``RuntimeError``; of the wrong dtype, a
    ``TypeError`` that is also a ``ValueError`` and a ``RuntimeError`` (SciPy
    raises ``RuntimeError`` for EDT and BF, ``ValueError`` for CDT).
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
  with the largest flat index). The native kernels compute in SciPy's float64
  arithmetic, so with ``sampling`` too: float32 distances are SciPy's rounded,
  indices SciPy's; the torch backend squares in the distances' dtype (float32:
  ties to rounding).
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
See ``morphaug.ndimage._torch.distance``: a separable exact EDT (min-plus
products per axis, in bounded blocks), SciPy's two CDT raster passes (by
sweeps along the axes for the taxicab and chessboard metrics, by wavefronts
of rows for other metric arrays), and BF by blocks of pairs (on the CPU
with SciPy's candidates only, elsewhere with every voxel). The native
CDT and BF kernels take up to 6 spatial axes; more run on the torch backend.

Host syncs
----------
None. A ``metric`` array given as an accelerator tensor is read back once
(it decides which offsets the raster scans use; ``morphaug._sync``).

Backends
--------
Each public function normalises and validates its arguments, calls one
worker on a boolean foreground mask and writes the outputs: EDT, CDT and BF
through their dispatch tables (the native kernel where it is built, else the
torch backend). The native EDT writes a contiguous
``distances=`` itself when no indices are asked; other outputs are computed,
then copied in.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from .. import _ops
from ._docs import DISTANCE, filler
from ._errors import ArgumentError, DtypeError
from ._normalize import (
    check_dense,
    check_input,
    check_no_overlap,
    foreground,
    normalize_sequence,
    tensor_argument,
    written_in_place,
)
from ._torch import distance as _torch_distance

__all__ = ["distance_transform_edt", "distance_transform_cdt", "distance_transform_bf"]

_TAXICAB = ("taxicab", "cityblock", "manhattan")
_FLOAT_DTYPES = (torch.float32, torch.float64)
_INT_DTYPES = (torch.int32,)


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
        raise ArgumentError(", ".join(errors))


def _normalize_sampling(sampling, rank: int) -> tuple[float, ...] | None:
    if sampling is None:
        return None
    try:
        values = normalize_sequence(sampling, rank, "sampling")
    except ValueError as error:
        raise ArgumentError(str(error)) from None
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
    check_dense(distances, "distances")
    if tuple(distances.shape) != tuple(input.shape):
        raise ArgumentError(
            f"distances has shape {tuple(distances.shape)}, expected the input's shape "
            f"{tuple(input.shape)}"
        )
    if distances.device != input.device:
        raise ArgumentError(
            f"distances is on {distances.device}, expected the input's device {input.device}"
        )
    if distances.dtype not in dtypes:
        raise DtypeError(
            f"distances must have dtype {' or '.join(str(d) for d in dtypes)} for {what}, "
            f"got {distances.dtype}"
        )
    check_no_overlap(distances, "distances")
    return distances.dtype


def _check_indices(indices, input: torch.Tensor) -> None:
    if indices is None:
        return
    if not isinstance(indices, torch.Tensor):
        raise TypeError(f"indices must be None or a torch.Tensor, got {type(indices).__name__}")
    check_dense(indices, "indices")
    expected = (input.ndim - 2,) + tuple(input.shape)
    if tuple(indices.shape) != expected:
        raise ArgumentError(
            f"indices has shape {tuple(indices.shape)}, expected (S, B, C, *spatial) = {expected}"
        )
    if indices.device != input.device:
        raise ArgumentError(
            f"indices is on {indices.device}, expected the input's device {input.device}"
        )
    if indices.dtype != torch.int32:
        raise DtypeError(f"indices must have dtype torch.int32, got {indices.dtype}")
    check_no_overlap(indices, "indices")


def _results(dist, feats, return_distances, return_indices, distances, indices):
    """Write into ``distances=`` / ``indices=`` and return what SciPy returns."""
    result = []
    if return_distances:
        if distances is None:
            result.append(dist)
        elif dist is not distances:  # else written in place by the kernel
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



def _cdt_structure(metric, rank: int) -> np.ndarray:
    """The chamfer neighbourhood as a bool NumPy array of shape ``(3,) * rank``."""
    if isinstance(metric, str):
        if metric in _TAXICAB:
            return _torch_distance.taxicab_neighbourhood(rank)
        if metric == "chessboard":
            return np.ones((3,) * rank, dtype=bool)
        raise ValueError(
            f"invalid metric provided: metric must be 'chessboard', 'taxicab', 'cityblock', "
            f"'manhattan' or an array of shape {(3,) * rank}, got {metric!r}"
        )
    if isinstance(metric, torch.Tensor):
        metric = check_dense(metric, "metric")
        metric = metric.numpy(force=True) if metric.device.type == "cpu" else tensor_argument(metric)
    try:
        array = np.asarray(metric)
    except (TypeError, ValueError) as error:
        raise ValueError(f"invalid metric provided: metric must be a string or array_like, "
                         f"got {metric!r}") from error
    if array.dtype.kind not in "biuf":
        raise ValueError(f"invalid metric provided: metric must be a real array, got dtype {array.dtype}")
    if array.shape != (3,) * rank:
        raise ValueError(
            f"metric must have shape {(3,) * rank} (size 3 along each of the {rank} "
            f"spatial axes), got {array.shape}"
        )
    return array != 0


# --------------------------------------------------------------------------
# public functions

_document = filler(DISTANCE)


def _bf_dtypes(name: str) -> tuple[torch.dtype, ...]:
    """The dtypes of BF distances under metric ``name`` (lower case), the default first
    (SciPy: float64 or uint32)."""
    return _FLOAT_DTYPES if name == "euclidean" else _INT_DTYPES


def _edt_torch_distances(mask, sampling, want_indices: bool, dtype, want_distances: bool, into):
    squared, feats = _torch_distance.edt(mask, sampling, want_indices, dtype)
    return (squared.to(dtype).sqrt_() if want_distances else None), feats


# into: distances= where the kernel writes it (no indices asked, _normalize.written_in_place), else None
_EDT = _ops.Table("distance_transform_edt", [
    _ops.Case("every input", "edt", lambda mask, sampling, want_indices, dtype, want_distances, into: True,
              lambda mask, sampling, want_indices, dtype, want_distances, into: _ops.kernels.edt(
                  mask, sampling, want_indices, dtype, out=into)),
], _edt_torch_distances)


def _squared_edt_torch(mask):
    return _torch_distance.edt(mask, None, False, torch.float32)[0].to(torch.float32)


_SQUARED_EDT = _ops.Table("squared_edt", [
    _ops.Case("every input", "edt", lambda mask: True,
              lambda mask: _ops.kernels.edt(mask, None, False, torch.float32, True)[0]),
], _squared_edt_torch)


def squared_edt(mask: torch.Tensor) -> torch.Tensor:
    """The squares of ``distance_transform_edt(mask)`` (unit spacing, bool ``mask``) as float32: exact
    integers below 2**24, whose float64 roots are SciPy's distances bit for bit (for the metrics that
    take the roots of a few voxels only)."""
    return _SQUARED_EDT(mask, mask)


@_ops.opaque_under_compile(_ops.distances(lambda kw: torch.float32))
@_document
def distance_transform_edt(input, sampling=None, return_distances=True,
                           return_indices=False, distances=None, indices=None):
    """Exact Euclidean distance transform.

    Replaces every foreground (nonzero) voxel by its Euclidean distance to
    the nearest background (zero) voxel of its ``(b, c)`` slice; optionally
    returns the feature transform (the nearest background voxel's indices).

    Parameters
    ----------
{input}
    sampling : float or sequence of float, optional
        Spacing of the voxels along each spatial axis (one value for all, or
        one per axis); positive. Default: 1.
{return_distances}
{return_indices}
    distances : torch.Tensor, optional
        ``float32`` or ``float64`` tensor of the input's shape receiving the
        distances (computed in its dtype). The native kernel writes it in
        place when it is contiguous and no indices are asked; otherwise the
        distances are computed, then copied in.
{indices}

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
    docstring of ``morphaug.ndimage._distance``. Peak extra memory of the
    distances, the float32 result included: 4 bytes per voxel natively,
    about 23 on the torch backend (float32 work buffers of the volume's size
    and the blocks of its min-plus products); SciPy takes about 49
    (1x1x256^3, measured by ``benchmarks/memory.py``).

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
        into = None if return_indices else written_in_place(distances, mask, dtype)
        dist, feats = _EDT(mask, mask, sampling, bool(return_indices), dtype, bool(return_distances), into)
    return _results(dist, feats, return_distances, return_indices, distances, indices)


_CDT = _ops.Table("distance_transform_cdt", [
    _ops.Case("every metric", "cdt", lambda mask, structure, want_indices: True,
              lambda mask, structure, want_indices: _ops.kernels.cdt(mask, structure, want_indices)),
], _torch_distance.cdt)


@_ops.opaque_under_compile(_ops.distances(lambda kw: torch.int32))
@_document
def distance_transform_cdt(input, metric="chessboard", return_distances=True,
                           return_indices=False, distances=None, indices=None):
    """Distance transform for chamfer type of transforms.

    Replaces every foreground (nonzero) voxel by its chamfer distance to the
    nearest background (zero) voxel of its ``(b, c)`` slice, computed by
    SciPy's two raster passes with the neighbourhood ``metric``; optionally
    returns the feature transform.

    Parameters
    ----------
{input}
    metric : {'chessboard', 'taxicab', 'cityblock', 'manhattan'} or array_like, optional
        ``'chessboard'`` (default) uses the full ``3 x ... x 3`` neighbourhood
        (L-infinity distance); ``'taxicab'`` (alias ``'cityblock'``,
        ``'manhattan'``) the cross (L1 distance). An array (tensor, NumPy or
        nested lists; nonzero is true) of shape ``(3,) * S`` is a custom
        neighbourhood, shared by all slices.
{return_distances}
{return_indices}
    distances : torch.Tensor, optional
        ``int32`` tensor of the input's shape receiving the distances.
{indices}

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
    scan and its cost: see the *Distance transforms* notes
    (docs/parity.md). SciPy reads a metric array as bytes of
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


_BF = _ops.Table("distance_transform_bf", [
    _ops.Case("every metric", "distance_bf", lambda mask, metric, sampling, want_indices, dtype: True,
              lambda mask, metric, sampling, want_indices, dtype: _ops.kernels.distance_bf(
                  mask, metric, sampling, want_indices, dtype)),
], _torch_distance.bf)


@_ops.opaque_under_compile(_ops.distances(lambda kw: _bf_dtypes(str(kw.get("metric", "euclidean")).lower())[0]))
@_document
def distance_transform_bf(input, metric="euclidean", sampling=None,
                          return_distances=True, return_indices=False,
                          distances=None, indices=None):
    """Distance transform by a brute force algorithm.

    Replaces every foreground (nonzero) voxel by its distance to the nearest
    background (zero) voxel of its ``(b, c)`` slice, comparing it with every
    background voxel beside the foreground (SciPy's candidates); optionally
    returns the feature transform.

    Parameters
    ----------
{input}
    metric : {'euclidean', 'taxicab', 'cityblock', 'manhattan', 'chessboard'}, optional
        Distance (case-insensitive); default ``'euclidean'``.
    sampling : float or sequence of float, optional
        Spacing along each spatial axis, positive; used only by
        ``'euclidean'`` (checked, then ignored by the others, as in SciPy).
{return_distances}
{return_indices}
    distances : torch.Tensor, optional
        Tensor of the input's shape receiving the distances: ``float32`` or
        ``float64`` for ``'euclidean'``, ``int32`` otherwise.
{indices}

    Returns
    -------
    distances : torch.Tensor, optional
        ``float32`` (euclidean) or ``int32`` (SciPy: uint32) ``(B, C, *spatial)``.
    indices : torch.Tensor, optional
        ``int32`` ``(S, B, C, *spatial)``; ties go to the background voxel with
        the largest flat index, as in SciPy.

    Notes
    -----
    Work is ``O(B C N M)`` for ``N`` voxels and ``M`` candidates per slice
    (``O(B C N^2)`` on the torch backend off the CPU, which compares every
    pair there rather than read the candidates' count): use
    :func:`distance_transform_edt` or :func:`distance_transform_cdt` for
    anything but small inputs. Batching, SciPy parity and the results for a
    slice without background: see the *Distance transforms* notes
    (docs/parity.md).

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
        raise ArgumentError(
            f"metric must be 'euclidean', 'taxicab', 'cityblock', 'manhattan' or "
            f"'chessboard', got {metric!r}"
        )
    sampling = _normalize_sampling(sampling, input.ndim - 2)  # checked, then used by euclidean only
    if name != "euclidean":
        sampling = None
    dtype = _check_distances(distances, input, _bf_dtypes(name), f"metric {metric!r}")
    _check_indices(indices, input)

    if input.numel() == 0:
        dist, feats = _empty(input, dtype, bool(return_indices))
    else:
        mask = foreground(input)  # read only
        dist, feats = _BF(mask, mask, name, sampling, bool(return_indices), dtype)
    return _results(dist, feats, return_distances, return_indices, distances, indices)
