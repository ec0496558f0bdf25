"""MONAI's distance lists of every ``(b, c)`` slice, in the layout each device reduces best.

On an accelerator the lists stay masks over every voxel of the volume
(:class:`_Dense`), from one distance transform of the surfaces of every
slice: nothing is read back. On the CPU, where reading values costs nothing,
the surface voxels are listed, each with its distance to the other surface
(``morphaug.ndimage._surface_lists``), and the distances are packed one list
after the other (:class:`_Packed`). Each metric is one reduction of the
lists (:class:`Lists`).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import torch

from ..ndimage._surface_lists import surface_distance_lists, surface_distances, surfaces
from ._arguments import foreground
from ._counts import true_counts

__all__ = ["Lists", "lists"]


@dataclasses.dataclass(frozen=True)
class Lists:
    """MONAI's distance lists, one per row: direction ``d`` (pred -> ref, then ref -> pred when
    symmetric) and slice ``(b, c)``. ``n_source`` / ``n_target (D, B, C)``: the voxel counts of
    the row's source and target surfaces. :class:`_Dense` and :class:`_Packed` hold the
    distances and reduce each list."""

    n_source: torch.Tensor
    n_target: torch.Tensor

    def listed(self) -> torch.Tensor:
        """How many distances MONAI lists: one per source voxel or, when the source surface is
        empty, one inf per target voxel (``get_surface_distance``)."""
        return torch.where(self.n_source > 0, self.n_source, self.n_target)

    def infinite(self) -> torch.Tensor:
        """Whether MONAI lists infinities only: exactly one of the two surfaces is empty."""
        return (self.n_source == 0) != (self.n_target == 0)

    def finite(self) -> torch.Tensor:
        return (self.n_source > 0) & (self.n_target > 0)


def _ranked(ascending, start, count, q: float) -> torch.Tensor:
    """``torch.quantile`` of each list, as MONAI computes it (linear interpolation,
    ``numpy.percentile``'s default, with torch's arithmetic: the rank ``float32(q) * (count - 1)``
    in float64), from each row's ``count`` values in ascending order at ``ascending[start:]``
    (flat); arbitrary where ``count`` is 0."""
    rank = float(np.float32(q)) * (count - 1).clamp(min=0).double()
    below, above = rank.floor(), rank.ceil()
    return torch.lerp(ascending[start + below.long()], ascending[start + above.long()], (rank - below).float())


@dataclasses.dataclass(frozen=True)
class _Dense(Lists):
    """The lists as masks over each row's voxels (accelerators): ``source (D, B, C, N)`` the source
    surface, ``distance`` the distance of every voxel to the target surface (arbitrary where that
    surface is empty)."""

    source: torch.Tensor
    distance: torch.Tensor

    def _at_source(self) -> torch.Tensor:
        return torch.where(self.source, self.distance, 0.0)

    def largest(self) -> torch.Tensor:
        return self._at_source().amax(-1)

    def total(self) -> torch.Tensor:
        return self._at_source().sum(-1)

    def within(self, tolerance) -> torch.Tensor:
        return ((self.distance <= tolerance) & self.source).sum(-1, dtype=torch.int32)

    def quantile(self, q: float) -> torch.Tensor:
        ascending = torch.where(self.source, self.distance, math.inf).sort(-1).values
        rows, voxels = self.n_source.numel(), self.source.shape[-1]
        start = torch.arange(rows, device=ascending.device).view(self.n_source.shape) * voxels
        return _ranked(ascending.flatten(), start, self.n_source, q)


@dataclasses.dataclass(frozen=True)
class _Packed(Lists):
    """The lists one after the other (CPU): ``values`` each row's distances in ascending order, rows
    in order, then one 0 (so that every index below is valid); ``rows`` the row of each value (flat
    index of ``(D, B, C)``); ``start (D, B, C)`` where each row's list begins."""

    values: torch.Tensor
    rows: torch.Tensor
    start: torch.Tensor

    def largest(self) -> torch.Tensor:
        return self.values[(self.start + self.n_source - 1).clamp(min=0)]

    def total(self) -> torch.Tensor:
        sums = torch.zeros(self.n_source.numel(), dtype=torch.float64)
        return sums.index_add_(0, self.rows, self.values[:-1].double()).float().view(self.n_source.shape)

    def within(self, tolerance) -> torch.Tensor:
        per_row = torch.as_tensor(tolerance, dtype=torch.float32).reshape(-1).expand(self.n_source.shape)
        counts = torch.zeros(self.n_source.numel(), dtype=torch.int64)
        hits = (self.values[:-1] <= per_row.flatten()[self.rows]).long()
        return counts.index_add_(0, self.rows, hits).view(self.n_source.shape)

    def quantile(self, q: float) -> torch.Tensor:
        return _ranked(self.values, self.start, self.n_source, q)


def _packed(values, rows, n_source, n_target) -> _Packed:
    """:class:`_Packed` from the distances ``values`` (float32, non-negative) in any order and their
    ``rows``: one sort of ``row * 2**32 + value's bits`` (ordered as the values, being non-negative)."""
    bits = values.view(torch.int32).long()
    order = (rows * 2 ** 32 + bits).sort().indices  # by row, then by value
    counts = n_source.flatten().long()
    start = (counts.cumsum(0) - counts).view(n_source.shape)
    return _Packed(n_source, n_target, torch.cat([values[order], values.new_zeros(1)]), rows[order], start)


def _reads_are_free(x: torch.Tensor) -> bool:
    """Whether reading values of ``x`` back costs nothing (a CPU tensor): then the slices are cropped
    to their masks, in groups of similar size, and the lists packed (module docstring)."""
    return x.device.type == "cpu"


def _dense(pred, ref, sampling, distance_metric, symmetric: bool) -> _Dense:
    """The lists of every slice of ``pred`` and ``ref``: one erosion, one distance transform."""
    batch, channels = pred.shape[:2]
    edges = surfaces(torch.cat([pred, ref]))  # (2B, C, ...): the surfaces of pred, then of ref
    counts = true_counts(edges.flatten(2)).int()
    if symmetric:
        sources, targets = edges, edges.roll(batch, 0)
        n_source, n_target = counts, counts.roll(batch, 0)
    else:
        sources, targets = edges[:batch], edges[batch:]
        n_source, n_target = counts[:batch], counts[batch:]
    distance = surface_distances(targets, sampling, distance_metric)
    directions = (2 if symmetric else 1, batch, channels)
    voxels = math.prod(pred.shape[2:])
    return _Dense(n_source.reshape(directions), n_target.reshape(directions),
                  sources.reshape(*directions, voxels), distance.reshape(*directions, voxels))


def _host_lists(pred, ref, sampling, distance_metric, symmetric: bool) -> _Packed:
    """The lists of CPU masks, packed. Each mask becomes a contiguous tensor (whatever its layout:
    reductions of a channels-last one-hot are several times slower)."""
    batch, channels = pred.shape[:2]
    directions = 2 if symmetric else 1
    rows, values, counts = surface_distance_lists(pred.contiguous(), ref.contiguous(), sampling, distance_metric,
                                                  symmetric)
    shape = (directions, batch, channels)
    return _packed(values, rows, counts[:directions].int().view(shape), counts.flip(0)[:directions].int().view(shape))


def lists(pred, ref, sampling, distance_metric, symmetric: bool) -> Lists:
    """MONAI's distance lists of every slice of ``pred`` and ``ref``, which become masks (checked
    binary): packed on the CPU, dense elsewhere."""
    pred, ref = foreground(pred, "pred"), foreground(ref, "ref")
    if _reads_are_free(pred):
        return _host_lists(pred, ref, sampling, distance_metric, symmetric)
    return _dense(pred, ref, sampling, distance_metric, symmetric)


