"""Distance-transform building blocks of the label transforms, by footprint name.

Footprint names map to metrics: ``ball`` (``x^2 + y^2 + z^2 <= r^2``) is the
Euclidean ball, ``cube`` (side ``2r + 1``) the chessboard ball and ``cross``
(``|x| + |y| + |z| <= r``, the radius-``r`` iterate of the connectivity-1
cross) the taxicab ball. The morphology by balls of per-slice radii, the
distance thresholds and the signed distance maps are ``morphaug.ndimage``'s
(``_label_distances``: one batched distance transform for every radius, or
the native kernels where they take the call).
"""

from __future__ import annotations

import torch

from .. import footprints
from ..ndimage import _label_distances
from ..ndimage._label_distances import (
    boundary_voxels,
    distance_to_background,
    label_boundary,
    no_distance,
    signed_distance,
)

__all__ = [
    "FOOTPRINTS",
    "METRICS",
    "FOOTPRINT_METRIC",
    "distance_to_background",
    "within_radius",
    "morph_step",
    "boundary_voxels",
    "label_boundary",
    "signed_distance",
    "no_distance",
]

FOOTPRINTS = footprints.SHAPES
FOOTPRINT_METRIC = footprints.SHAPE_METRICS
METRICS = tuple(FOOTPRINT_METRIC.values())


def _metrics(names: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(FOOTPRINT_METRIC[name] for name in names)


def within_radius(x: torch.Tensor, radius: torch.Tensor, footprint: torch.Tensor,
                  footprints: tuple[str, ...]) -> torch.Tensor:
    """Voxels at distance ``<= radius`` from a false voxel of ``x (B, K, *spatial)``.

    ``radius`` and ``footprint`` (an index into ``footprints``, footprint
    names) are ``(B, K, 1, ...)``.
    """
    return _label_distances.within_radius(x, radius, footprint, _metrics(footprints))


def morph_step(masks: torch.Tensor, dilate: torch.Tensor, radius: torch.Tensor,
               footprint: torch.Tensor, footprints: tuple[str, ...]) -> torch.Tensor:
    """One binary dilation (where ``dilate``) or erosion per ``(sample, class)``.

    SciPy semantics with ``border_value=0``; radius 0 returns ``masks``.
    ``dilate``, ``radius`` and ``footprint`` (an index into ``footprints``)
    are ``(B, K, 1, ...)``.
    """
    return _label_distances.morph_step(masks, dilate, radius, footprint, _metrics(footprints))
