"""MONAI's surface-distance metrics, topology metrics and panoptic quality on ``(B, C, *spatial)`` batches,
on the input's device.

hausdorff_distance
    Hausdorff distance, or a percentile of it (HD95: ``percentile=95``),
    symmetric or ``directed`` (``monai.metrics.compute_hausdorff_distance``).
average_surface_distance
    Mean surface distance from the prediction to the reference, or
    ``symmetric`` (ASSD) (``monai.metrics.compute_average_surface_distance``).
normalized_surface_dice
    Normalized surface dice at a ``tolerance``, one for all channels or one
    per channel (``monai.metrics.compute_surface_dice``).
surface_distance_metrics
    The three at once, symmetric (HD or HD95, ASSD, NSD), from one erosion
    and one set of distance lists: a :class:`SurfaceDistanceResult`.
cl_dice, betti_numbers, betti_errors
    Centreline Dice with exact skeletons, Betti numbers and their errors.
surfel_distances
    DeepMind's surfel-weighted surface distances (``surface_distance``):
    robust Hausdorff (HD95), average surface distance, surface overlap and
    surface dice at a tolerance, areas from the neighbourhood codes.
lesion_wise_metrics
    BraTS 2023 lesion-wise Dice and HD95 with the challenges' matching rule,
    lesion counts and the legacy scores.
panoptic_quality
    PQ, SQ or RQ of instance maps (``monai.metrics.compute_panoptic_quality``).

Conventions shared by the surface-distance metrics (MONAI 1.6's definitions)
---------------------------------------------------
Inputs
    ``pred`` and ``ref`` are ``(B, C, *spatial)`` with any number of spatial
    axes (none empty), of the same shape and device, bool or with values 0
    and 1 only (e.g. one-hot). Every channel is measured: MONAI's
    ``include_background=False`` is the adapters' business
    (:mod:`morphaug.adapters.monai`) or ``pred[:, 1:]``. Inputs are never
    modified.
Surfaces
    The surface of a mask is ``mask & ~binary_erosion(mask)`` with SciPy's
    cross and a border of 0 (MONAI's ``get_mask_edges``), so a mask touching
    the volume's border has its surface there.
Distances
    From each surface voxel of one mask to the nearest surface voxel of the
    other: Euclidean, in the units of ``sampling`` (MONAI's ``spacing``, one
    per spatial axis, shared by the batch), or chamfer distances in voxels
    (``"chessboard"``: L-infinity, ``"taxicab"``: L1), which take no
    ``sampling``, as MONAI ignores the spacing there.
Empty masks
    Both surfaces empty: nan (MONAI lists no distance). One empty: MONAI
    lists infinities, so HD and ASD are inf, HD with a ``percentile`` nan
    (``torch.quantile`` of infinities) and NSD 0.
Results
    ``(B, C)`` float32 tensors on the input's device, equal to MONAI's to
    float32 rounding (see each function's Parity note). No loop over
    slices: one erosion (``morphaug.ndimage``), the distance lists, then
    reductions of them. On an accelerator one distance transform runs over
    the whole batch and nothing is read back. On the CPU, where reading
    values back is free, the native ``surface_distance_lists`` kernel takes
    the surfaces of whole slices from bit-packed lines and lists them, each
    surface voxel with its distance to the other surface, searched near it
    (the float32 EDT's values bit for bit). Chamfer metrics and builds
    without the native library take an erosion and distance transforms
    instead, on slices cut to the bounding boxes of their masks in a few
    groups of similar box size (exact, as MONAI's own crop). The voxels the
    search leaves read the distance transform of the other surface's whole
    slice: those whose nearest surface voxel may lie beyond its reach, and
    those of a slice whose searches have cost about 0.4 of that transform
    already (surfaces far apart). The distances are packed before the
    reductions.
Bad input
    ``TypeError`` / ``ValueError`` naming the argument: shapes, devices,
    ``sampling`` (one positive value per axis), ``percentile`` (in [0, 100]),
    ``tolerance`` (finite, ``>= 0``, one per channel), ``distance_metric``.
    Masks that are not binary raise a ``ValueError`` on the CPU; on an
    accelerator the check is a device-side assert (``torch._assert_async``),
    which reports asynchronously, as torch's own index checks do, rather
    than a host sync.
Compilation
    Under ``torch.compile`` each call is one opaque op
    (``morphaug._opaque.opaque_under_compile``).
"""

from ._surface import (
    DISTANCE_METRICS,
    SurfaceDistanceResult,
    average_surface_distance,
    hausdorff_distance,
    normalized_surface_dice,
    surface_distance_metrics,
)
from ._surfels import SurfelDistances, surfel_distances
from ._lesions import BRATS_2023, LesionWiseResult, lesion_wise_metrics
from ._panoptic import PANOPTIC_METRICS, panoptic_quality
from ._topology import betti_errors, betti_numbers, cl_dice

__all__ = ["DISTANCE_METRICS", "SurfaceDistanceResult", "average_surface_distance", "hausdorff_distance",
           "normalized_surface_dice", "surface_distance_metrics", "cl_dice", "betti_numbers", "betti_errors",
           "PANOPTIC_METRICS", "panoptic_quality", "SurfelDistances", "surfel_distances", "BRATS_2023",
           "LesionWiseResult", "lesion_wise_metrics"]
