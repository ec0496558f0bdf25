"""Distance-transform building blocks of the label transforms: per-slice balls and signed distances.

Morphology by a radius-``r`` element is a threshold of one distance
transform, whatever ``r``, so one batched transform serves every sample and
class with its own radius:

* dilation of ``M`` by the radius-``r`` ball = ``dist(x, M) <= r``;
* erosion of ``M`` (``border_value=0``) = ``dist(x, not M) > r``, where the
  volume is padded by one background voxel: the nearest lattice point outside
  the volume always lies in that one-voxel shell, for every norm below.

Each ``(b, c)`` slice takes a ball of its own radius and metric: ``metrics``
names the metrics (``"euclidean"``: ``x^2 + y^2 + z^2 <= r^2``,
``"taxicab"``: ``|x| + |y| + |z| <= r``, ``"chessboard"``: the cube of side
``2r + 1``) and a ``kind`` tensor picks one per slice; each is exact with the
matching EDT / CDT.

That is the torch backend. The native kernel (``ball_morphology`` in
:func:`morphaug.backend_info`) computes the same thresholds without the
distances beyond ``r``: one call for every slice, its own radius, metric and
op (dilation or erosion), where its contract takes the radii. Signed
distance maps run on the native ``signed_edt`` kernel where it takes them.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .. import _ops
from ._binary import binary_erosion
from ._distance import distance_transform_cdt, distance_transform_edt
from ._structure import generate_binary_structure

__all__ = [
    "any_spatial",
    "distance_to_background",
    "within_radius",
    "morph_step",
    "boundary_voxels",
    "label_boundary",
    "signed_distance",
    "no_distance",
]


def any_spatial(mask: torch.Tensor) -> torch.Tensor:
    """``mask.any(dim=spatial_dims(mask), keepdim=True)`` for a bool ``(B, C, *spatial)`` mask.

    Reduced as bytes: on CPU a bool reduction over several dims is many times slower.
    """
    flat = mask.contiguous().view(torch.uint8).flatten(2)
    return (flat.any(dim=2) > 0).view(*mask.shape[:2], *([1] * (mask.ndim - 2)))


def distance_to_background(x: torch.Tensor, metric: str, sampling=None) -> torch.Tensor:
    """Distance from each true voxel of bool ``x`` to the nearest false voxel.

    EDT (float32) for ``"euclidean"``, exact CDT (int32) otherwise. Where a
    ``(b, c)`` slice has no false voxel the values are meaningless (SciPy's
    convention); callers mask those slices.
    """
    if metric == "euclidean":
        return distance_transform_edt(x, sampling=sampling)
    return distance_transform_cdt(x, metric=metric)


def _slice_radii(x: torch.Tensor, radius: torch.Tensor) -> torch.Tensor:
    per_slice = (*x.shape[:2],) + (1,) * (x.ndim - 2)
    return radius.broadcast_to(per_slice).reshape(x.shape[:2]).long()


def _ball_sizes(x: torch.Tensor, radius: torch.Tensor, *_) -> dict:
    """The size facts of the ball kernel: the radii as given (their maximum is every slice's; the
    contract reads it on the CPU only, where it costs no sync, and builds nothing on another device)."""
    return {"radius": radius}


def _native_balls(x: torch.Tensor, radius: torch.Tensor, kind: torch.Tensor, metrics: tuple[str, ...]):
    """``(radius, metric)`` per slice, the native ball kernel's arguments."""
    radii = _slice_radii(x, radius)
    kinds = kind.broadcast_to((*x.shape[:2],) + (1,) * (x.ndim - 2)).reshape(x.shape[:2])
    metric = torch.zeros_like(radii)
    for i, name in enumerate(metrics):
        metric.masked_fill_(kinds == i, _ops.kernels.BALL_METRIC_CODES[name])
    return radii, metric


@_ops.opaque_under_compile(_ops.one_result("x", lambda kw: torch.bool))
def within_radius(x: torch.Tensor, radius: torch.Tensor, kind: torch.Tensor,
                  metrics: tuple[str, ...]) -> torch.Tensor:
    """Voxels at distance ``<= radius`` from a false voxel of ``x (B, K, *spatial)``.

    ``radius`` and ``kind`` (an index into ``metrics``) are ``(B, K, 1, ...)``.
    Native: the dilation of ``~x`` by each slice's ball; torch: one distance
    transform per metric in use.
    """
    return _WITHIN_RADIUS(x, x, radius, kind, metrics)


def _within_radius_native(x, radius, kind, metrics):
    radii, metric = _native_balls(x, radius, kind, metrics)
    return _ops.kernels.ball_morphology(~x, radii, metric, torch.zeros_like(radii, dtype=torch.bool))


def _within_radius_torch(x, radius, kind, metrics):
    result = None
    for i, metric in enumerate(metrics):
        near = distance_to_background(x, metric) <= radius
        result = near if result is None else torch.where(kind == i, near, result)
    return result


@_ops.opaque_under_compile(_ops.one_result("masks", lambda kw: torch.bool))
def morph_step(masks: torch.Tensor, dilate: torch.Tensor, radius: torch.Tensor,
               kind: torch.Tensor, metrics: tuple[str, ...]) -> torch.Tensor:
    """One binary dilation (where ``dilate``) or erosion per ``(sample, class)`` by a ball.

    SciPy semantics with ``border_value=0``; radius 0 returns ``masks``.
    ``dilate``, ``radius`` and ``kind`` (an index into ``metrics``) are ``(B, K, 1, ...)``.
    """
    return _MORPH_STEP(masks, masks, dilate, radius, kind, metrics)


def _morph_step_native(masks, dilate, radius, kind, metrics):
    radii, metric = _native_balls(masks, radius, kind, metrics)
    erode = ~dilate.broadcast_to(radii.shape + (1,) * (masks.ndim - 2)).reshape(radii.shape)
    return _ops.kernels.ball_morphology(masks, radii, metric, erode)


def _morph_step_torch(masks, dilate, radius, kind, metrics):
    n = masks.ndim - 2
    padded = F.pad(masks, [1, 1] * n, value=False)
    # Dilation measures the distance to the mask, erosion the distance to its complement.
    near = within_radius(padded ^ dilate, radius, kind, metrics)
    near = near[(slice(None), slice(None)) + (slice(1, -1),) * n]
    present = any_spatial(masks)
    return (near == dilate) & (present | ~dilate)  # dilation: near & present; erosion: ~near


def boundary_voxels(masks: torch.Tensor) -> torch.Tensor:
    """Mask voxels with a face neighbour outside the mask (the image border is not one)."""
    # generate_binary_structure(n, 1) on the host, read there: its 2n + 1 true
    # positions are visited (an element on the device would visit all 3^n)
    cross = generate_binary_structure(masks.ndim - 2, 1)
    return masks & ~binary_erosion(masks, structure=cross, border_value=1)


def label_boundary(index: torch.Tensor) -> torch.Tensor:
    """Voxels of an index label map with a face neighbour of another value.

    For each class ``c`` of ``index (B, 1, *spatial)``,
    ``(index == c) & label_boundary(index)`` is ``boundary_voxels(index == c)``,
    at the cost of one comparison per axis for all classes at once.
    """
    changes = torch.zeros(index.shape, dtype=torch.bool, device=index.device)
    for dim in range(2, index.ndim):
        n = index.shape[dim]
        if n < 2:
            continue
        step = index.narrow(dim, 1, n - 1) != index.narrow(dim, 0, n - 1)
        changes.narrow(dim, 1, n - 1).logical_or_(step)
        changes.narrow(dim, 0, n - 1).logical_or_(step)
    return changes


def no_distance(shape, metric: str, sampling=None) -> float:
    """A length no distance in a volume of ``shape`` reaches: its diagonal.

    Euclidean: ``sqrt(sum((n_i * s_i)^2))``; taxicab: ``sum(n_i)``;
    chessboard: ``max(n_i)``.
    """
    spacing = [1.0] * len(shape) if sampling is None else list(sampling)
    extent = [n * s for n, s in zip(shape, spacing)]
    if metric == "euclidean":
        return math.sqrt(sum(e * e for e in extent))
    if metric == "taxicab":
        return float(sum(extent))
    return float(max(extent))


def signed_distance(masks: torch.Tensor, metric: str, sampling=None,
                    index: torch.Tensor | None = None) -> torch.Tensor:
    """Signed distance map of each channel of bool ``masks (B, K, *spatial)``, float32.

    Convention: the distance to the nearest boundary voxel (a mask voxel with
    a face neighbour outside the mask), negative inside the mask, zero on the
    boundary voxels, positive outside, where it equals the distance to the
    nearest mask voxel. A channel without boundary voxels (empty, or full) is
    ``+D`` (empty) or ``-D`` (full), with ``D`` the volume's diagonal
    (:func:`no_distance`): farther than any real distance. ``index``, when
    given, is the index label map ``(B, 1, *spatial)`` the masks are classes
    of (one class per voxel: boundaries are where labels change).

    Native (Euclidean, unit sampling): one kernel call,
    :func:`morphaug._ops.kernels.signed_edt`; otherwise a boundary erosion
    and one EDT per channel (on the native EDT, the same values bit for bit).
    """
    return _SIGNED_DISTANCE(masks, masks, metric, sampling, index)


def _signed_edt_takes(masks, metric, sampling, index) -> bool:
    unit = sampling is None or all(s == 1.0 for s in sampling)
    return metric == "euclidean" and unit and bool(masks.numel())


def _signed_distance_torch(masks, metric, sampling, index):
    boundary = boundary_voxels(masks) if index is None else masks & label_boundary(index)
    distance = distance_to_background(~boundary, metric, sampling).to(torch.float32)
    distance.masked_fill_(~any_spatial(boundary), no_distance(masks.shape[2:], metric, sampling))
    # -1 inside, +1 elsewhere (+0 on the boundary, never -0), as bytes: cheaper than a where
    sign = (masks > boundary).view(torch.int8).mul(-2).add_(1)
    return distance.mul_(sign)  # a fresh tensor


_MORPH_STEP = _ops.Table("label morphology (RandLabelMorphology)", [
    _ops.Case("every non-empty batch", "ball_morphology",
              lambda masks, dilate, radius, kind, metrics: bool(masks.numel()), _morph_step_native,
              sizes=lambda masks, dilate, radius, kind, metrics: _ball_sizes(masks, radius)),
], _morph_step_torch)
_WITHIN_RADIUS = _ops.Table("distance thresholds (LabelBoundary)", [
    _ops.Case("every non-empty batch", "ball_morphology", lambda x, radius, kind, metrics: bool(x.numel()),
              _within_radius_native, sizes=_ball_sizes),
], _within_radius_torch)
_SIGNED_DISTANCE = _ops.Table("signed distance maps (DistanceMap, RandBoundaryJitter)", [
    _ops.Case("Euclidean, unit sampling", "signed_edt", _signed_edt_takes,
              lambda masks, metric, sampling, index: _ops.kernels.signed_edt(masks)),
], _signed_distance_torch)
