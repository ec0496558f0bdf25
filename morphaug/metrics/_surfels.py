"""DeepMind's surfel-weighted surface distances on whole batches: every ``(b, c)`` slice at once.

DeepMind's ``surface_distance.compute_surface_distances`` places the surfaces
of a mask on the grid of its 2x2 (2-D) or 2x2x2 (3-D) neighbourhoods ("cells",
one more than the voxels along each axis, the mask padded with zeros): a cell
whose corners are neither all inside nor all outside holds a piece of contour
(surface) whose length (area) depends on its corner pattern, its "neighbourhood
code", and on the spacing. Each surface cell lists its distance to the nearest
surface cell of the other mask (the EDT of the other mask's surface cells) and
its length / area, which weighs it in the metrics. The lengths / areas come from
``_surfel_tables`` (written by ``scripts/surfel_tables.py`` from marching
squares / cubes; tested against DeepMind's table).

Here the codes of all slices are a few shifts, the distances one batched EDT in
float64 (SciPy's), and the lists of all slices are the rows of one padded
matrix: the surface cells of each row in order of (distance, area), as DeepMind
sorts them, then padding (distance inf, area 0). On the CPU the rows are packed
to the longest list and the slices cut to the box of the batch's masks, and with
unit spacing the EDT gives float32 squares, rooted at the listed cells only;
elsewhere a row holds every cell of its slice (nothing is read back).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math

import numpy as np
import torch
import torch.nn.functional as F

from .. import _sync, ndimage
from ..ndimage._distance import squared_edt
from ._arguments import _sampling, foreground, volumes
from ._counts import true_counts
from ._lists import _reads_are_free
from ._surfel_tables import NORMALS_2D, NORMALS_3D

__all__ = ["SurfelDistances", "surfel_distances"]

_NORMALS = {2: NORMALS_2D, 3: NORMALS_3D}


@functools.lru_cache(maxsize=64)
def _areas(sampling: tuple[float, ...]) -> np.ndarray:
    """The length (2-D) / area (3-D) of the surface of each neighbourhood code at ``sampling``: normal
    component ``i`` (in eighths of a voxel) times the spacings of the other axes, in axis order."""
    def scaled(normal):
        return [functools.reduce(lambda value, j: value * sampling[j], (j for j in range(len(sampling)) if j != i),
                                 n / 8) for i, n in enumerate(normal)]
    return np.array([sum(float(np.linalg.norm(scaled(n))) for n in normals) for normals in _NORMALS[len(sampling)]])


def _codes(mask: torch.Tensor) -> torch.Tensor:
    """The neighbourhood code (uint8) of every cell of every slice: ``(B, C, *(n + 1 for n in spatial))``,
    corner ``(a, b[, c])`` of the cell at bit ``2**S - 1 - (abc in binary)``."""
    rank, spatial = mask.ndim - 2, mask.shape[2:]
    padded = F.pad(mask.to(torch.uint8), (1, 1) * rank)
    codes = torch.zeros((*mask.shape[:2], *(n + 1 for n in spatial)), dtype=torch.uint8, device=mask.device)
    for i, corner in enumerate(itertools.product((0, 1), repeat=rank)):
        window = (...,) + tuple(slice(c, c + n + 1) for c, n in zip(corner, spatial))
        codes |= padded[window] << (2 ** rank - 1 - i)
    return codes


def _cropped(pred: torch.Tensor, ref: torch.Tensor):
    """Both masks cut to the bounding box of all their voxels in the batch, where reading it back is
    free (the CPU; DeepMind crops each slice too): the surfaces and their distances are the same."""
    if not _reads_are_free(pred):
        return pred, ref
    either = (pred | ref).flatten(0, 1).any(0)
    window = []
    for axis in range(either.ndim):
        hits = either.any(tuple(a for a in range(either.ndim) if a != axis)).nonzero()
        window.append(slice(int(hits[0]), int(hits[-1]) + 1) if hits.numel() else slice(0, 1))
    return pred[(..., *window)], ref[(..., *window)]


def _distances_to(surface: torch.Tensor, sampling) -> tuple[torch.Tensor, bool, torch.Tensor]:
    """The distance of every cell to the nearest cell of ``surface`` in its slice (SciPy's EDT, as
    DeepMind's), whether those are squared, and whether the slice has a cell, ``(B, C)``: where it has
    none, the distances are SciPy's to no cell and the lists take inf (:func:`_rows`). Squared (float32,
    exact integers: half the bytes, no roots but the listed cells') on the CPU with unit spacing where
    every square stays below 2**24; else float64 distances."""
    found = surface.flatten(2).any(-1)
    exact = 2 / torch.finfo(torch.float32).eps  # float32 holds every integer up to this
    if _reads_are_free(surface) and set(sampling) == {1.0} and sum(n * n for n in surface.shape[2:]) < exact:
        return squared_edt(~surface), True, found
    distances = torch.empty(surface.shape, dtype=torch.float64, device=surface.device)
    ndimage.distance_transform_edt(~surface, sampling=sampling, distances=distances)
    return distances, False, found


def _roots(squares: torch.Tensor) -> torch.Tensor:
    """The float64 square roots of the CPU tensor ``squares``, correctly rounded as SciPy's (NumPy's
    root; torch's vectorised float64 root is an ulp off for some integers, 830 of those below 2**16)."""
    return torch.from_numpy(np.sqrt(squares.double().numpy()))


def _rows(source: torch.Tensor, counts: torch.Tensor, distance: torch.Tensor, squared: bool, found: torch.Tensor,
          codes: torch.Tensor, table: torch.Tensor):
    """The lists of the rows ``(R, cells)`` as ``(distance, area)`` matrices ``(R, K)``: each row's
    ``source`` cells (``counts`` of them) with their distances (inf in a row without a cell ``found`` to
    measure them to) and areas (``table`` of the ``codes``), padding (nan, 0) elsewhere. Packed to the
    longest list on the CPU (the distances then read at the listed cells only; ``squared`` ones rooted
    there, :func:`_roots`)."""
    if not _reads_are_free(source):
        distance = torch.where(found[:, None], distance, math.inf)
        return torch.where(source, distance, math.nan), torch.where(source, table[codes.long()], 0.0)
    rows, cells = source.nonzero(as_tuple=True)
    column = torch.arange(rows.numel()) - (counts.cumsum(0) - counts)[rows]
    width = max(int(counts.max()), 1)
    listed = _roots(distance[rows, cells]) if squared else distance[rows, cells]
    listed = torch.where(found[rows], listed, math.inf)
    d = listed.new_full((source.shape[0], width), math.nan).index_put_((rows, column), listed)
    a = table.new_zeros((source.shape[0], width)).index_put_((rows, column), table[codes[rows, cells].long()])
    return d, a


def _by(key: torch.Tensor, d: torch.Tensor, a: torch.Tensor):
    order = key.argsort(dim=-1, stable=True)
    return d.gather(-1, order), a.gather(-1, order)


def _sorted(d: torch.Tensor, a: torch.Tensor):
    """Each row's list in order of (distance, area), as DeepMind sorts it, then the padding (nan sorts
    last, even after infinite distances; it becomes inf): two stable sorts."""
    d, a = _by(a, d, a)
    d, a = _by(d, d, a)
    return torch.where(d.isnan(), math.inf, d), a


@dataclasses.dataclass(frozen=True)
class SurfelDistances:
    """The surface lists of every slice, as :func:`surfel_distances` returns them.

    Attributes
    ----------
    distances, areas : torch.Tensor
        ``(2, B, C, K)`` float64: row 0 lists the surface cells of ``ref``
        with their distances to the surface of ``pred`` (DeepMind's
        ``distances_gt_to_pred`` and ``surfel_areas_gt``), row 1 those of
        ``pred`` to ``ref``; each list in ascending order, then padding
        (inf, area 0). Distances are inf where the other surface is empty.
    counts : torch.Tensor
        ``(2, B, C)`` int64: the length of each list.
    """

    distances: torch.Tensor
    areas: torch.Tensor
    counts: torch.Tensor

    def _weighted(self, values: torch.Tensor) -> torch.Tensor:
        """The area-weighted sum of ``values`` over each list (padding counts 0)."""
        return torch.where(self.areas > 0, values * self.areas, 0.0).sum(-1)

    def robust_hausdorff(self, percent: float) -> torch.Tensor:
        """``(B, C)``: the larger of both directions' ``percent``-th area-weighted percentiles
        (``compute_robust_hausdorff``); inf where either surface is empty."""
        cumulative = self.areas.cumsum(-1)
        fraction = cumulative / cumulative[..., -1:]
        rank = torch.searchsorted(fraction, torch.full_like(fraction[..., :1], percent / 100))
        rank = torch.minimum(rank, (self.counts - 1).clamp(min=0).unsqueeze(-1))
        found = self.distances.gather(-1, rank).squeeze(-1)
        return torch.where(self.counts > 0, found, math.inf).amax(0)

    def average_surface_distance(self) -> torch.Tensor:
        """``(2, B, C)``: the area-weighted mean distance from ``ref`` to ``pred``, then from ``pred`` to
        ``ref`` (``compute_average_surface_distance``); nan for an empty source surface."""
        return self._weighted(self.distances) / self.areas.sum(-1)

    def surface_overlap_at_tolerance(self, tolerance: float) -> torch.Tensor:
        """``(2, B, C)``: the area fraction of each surface within ``tolerance`` of the other, ``ref``
        first (``compute_surface_overlap_at_tolerance``)."""
        return self._weighted((self.distances <= tolerance).double()) / self.areas.sum(-1)

    def surface_dice_at_tolerance(self, tolerance) -> torch.Tensor:
        """``(B, C)``: the area fraction of both surfaces within ``tolerance`` of the other
        (``compute_surface_dice_at_tolerance``); one tolerance, or one per channel (MONAI's
        ``class_thresholds``); nan where both surfaces are empty."""
        within = self.distances <= _per_channel(tolerance, self.distances)
        return self._weighted(within.double()).sum(0) / self.areas.sum((0, -1))


def _per_channel(tolerance, distances: torch.Tensor):
    """``tolerance`` (a number, or one per channel of ``distances (2, B, C, K)``) to compare with them."""
    values = np.asarray(tolerance, dtype=np.float64)
    if values.ndim == 0:
        return float(values)
    if values.shape != (distances.shape[2],):
        raise ValueError(f"tolerance must be a number or one per channel ({distances.shape[2]}), got {tolerance!r}")
    return _sync.to_device(torch.from_numpy(values), distances.device).view(-1, 1)


def surfel_distances(pred, ref, sampling=None) -> SurfelDistances:
    """DeepMind's surface distances (``surface_distance.compute_surface_distances``) of every slice.

    Parameters
    ----------
    pred, ref : torch.Tensor
        ``(B, C, H, W)`` or ``(B, C, D, H, W)`` masks of one shape and
        device: bool, or 0 and 1 only. ``ref`` is DeepMind's ``mask_gt``.
    sampling : float or sequence of float, optional
        The voxel spacing along each spatial axis (DeepMind's ``spacing_mm``),
        positive; default 1.

    Returns
    -------
    SurfelDistances
        The lists of both directions; its methods are DeepMind's metrics:
        ``robust_hausdorff(95)`` (HD95), ``average_surface_distance()``,
        ``surface_overlap_at_tolerance(t)``, ``surface_dice_at_tolerance(t)``.

    Notes
    -----
    Parity: the lists are DeepMind's to float64 ulps (the distances are
    SciPy's EDT, the areas its table's, each summed in another order); so
    are the sums. The percentile
    compares each list's cumulative areas with the last one instead of
    NumPy's sum of them, which can differ only where a percentile falls on a
    boundary between distances to the last ulp.

    Examples
    --------
    >>> import torch
    >>> from morphaug.metrics import surfel_distances
    >>> ref = torch.zeros(1, 1, 8, 8, dtype=torch.bool)
    >>> ref[0, 0, 2:6, 2:6] = True
    >>> surfel_distances(ref.roll(1, -1), ref).robust_hausdorff(95).tolist()
    [[1.0]]
    """
    pred, ref = volumes(pred, ref)
    rank = pred.ndim - 2
    if rank not in _NORMALS:
        raise ValueError(f"surfel_distances takes 2-D or 3-D slices (B, C, H, W) or (B, C, D, H, W), got shape "
                         f"{tuple(pred.shape)}")
    sampling = _sampling(1.0 if sampling is None else sampling, rank, "euclidean")
    pred, ref = _cropped(foreground(pred, "pred"), foreground(ref, "ref"))
    codes = _codes(torch.cat([ref, pred]))  # (2B, C, *cells)
    surfaces = (codes != 0) & (codes != 2 ** 2 ** rank - 1)
    distances, squared, found = _distances_to(surfaces.roll(pred.shape[0], 0), sampling)  # to the other surface
    table = _sync.to_device(torch.from_numpy(_areas(sampling)), codes.device)
    shape = (2, *pred.shape[:2])
    rows = math.prod(shape)
    counts = true_counts(surfaces.view(rows, -1))
    d, a = _sorted(*_rows(surfaces.view(rows, -1), counts, distances.view(rows, -1), squared, found.view(rows),
                          codes.view(rows, -1), table))
    return SurfelDistances(d.view(*shape, -1), a.view(*shape, -1), counts.view(shape))
