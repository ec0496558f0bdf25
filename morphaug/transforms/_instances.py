"""Instance-map targets: labels grown without overlap, instance boundaries (scikit-image's segmentation)."""

from __future__ import annotations

import numbers

import torch

from .. import segmentation
from .._checks import check_int
from ._base import Deterministic, check_sampling, sampling_for
from ._labels import LabelTransform, from_index, to_index

__all__ = ["ExpandLabels", "InstanceBoundary"]

#: The ``find_boundaries`` modes a target of the label's shape can take (``"subpixel"`` doubles it).
BOUNDARY_MODES = ("thick", "inner", "outer")


def _integer_index(x: torch.Tensor, fmt: str) -> torch.Tensor:
    """The index map of ``x`` with integer labels (float labels hold whole numbers, checked by the base)."""
    index = to_index(x, fmt)
    return index.to(torch.int64) if index.is_floating_point() else index


class ExpandLabels(Deterministic, LabelTransform):
    """Grow every label into the background by up to ``distance``, without overlap.

    :func:`morphaug.segmentation.expand_labels` (``skimage.segmentation.expand_labels``) on each
    sample: each background (0) voxel within Euclidean ``distance`` of a label takes the nearest
    label (SciPy's feature transform breaks ties). The standard step from nuclei to cell masks.

    Args:
        keys: label keys: index maps ``(B, 1, *spatial)`` (instance or class values; any dtype,
            float labels holding whole numbers) or one-hot ``(B, K, *spatial)`` (grown as their
            argmax index map).
        distance: how far to grow, in units of ``sampling`` (``>= 0``).
        sampling: voxel spacing per spatial axis (one number for all); default 1.
        label_format, allow_missing_keys: as in :class:`RandLabelMorphology`.

    Output: the grown labels, in the input's format, dtype and subclass. Deterministic.

    Example:
        >>> import torch
        >>> from morphaug.transforms import ExpandLabels
        >>> label = torch.tensor([[[[0, 1, 0, 0, 0, 0, 2]]]])
        >>> ExpandLabels("label", distance=1)(label)[0, 0]
        tensor([[1, 1, 1, 0, 0, 2, 2]])
    """

    _repr_fields = ("distance", "sampling", "label_format")

    def __init__(self, keys, distance: float = 1.0, sampling=None, label_format=None, *,
                 allow_missing_keys: bool = False):
        super().__init__(keys, allow_missing_keys=allow_missing_keys)
        if isinstance(distance, bool) or not isinstance(distance, numbers.Real) or not distance >= 0:
            raise ValueError(f"distance must be a number >= 0, got {distance!r}")
        self.distance = float(distance)
        self.sampling = check_sampling(sampling)
        self._setup_labels(None, None, label_format)

    def apply(self, x, params):
        fmt = self._format(x)
        sampling = sampling_for(self.sampling, x.ndim - 2, type(self).__name__) or 1
        grown = segmentation.expand_labels(_integer_index(x, fmt), self.distance, sampling)
        return from_index(grown, fmt, x)


class InstanceBoundary(Deterministic, LabelTransform):
    """Instance-boundary targets: where a voxel's neighbours hold another label.

    :func:`morphaug.segmentation.find_boundaries` (``skimage.segmentation.find_boundaries``) on
    each sample: the boundary between touching instances, which a per-class boundary
    (:class:`LabelBoundary`) does not see.

    Args:
        keys: label keys (index or one-hot, see :class:`ExpandLabels`).
        output_keys: where the maps go; default: replace ``keys``.
        mode: ``"thick"`` (both sides of every boundary), ``"inner"`` (the labelled side),
            ``"outer"`` (the background side, and labels touching another label).
        connectivity: ``1 .. ndim``: the most orthogonal hops between neighbours.
        background: the background label of ``"inner"`` and ``"outer"``.
        label_format, allow_missing_keys: as in :class:`RandLabelMorphology`.

    Output: ``(B, 1, *spatial)`` of 0/1 in the label's dtype and subclass. Deterministic.

    Example:
        >>> import torch
        >>> from morphaug.transforms import InstanceBoundary
        >>> label = torch.tensor([[[[1, 1, 2, 2], [1, 1, 2, 2]]]])
        >>> InstanceBoundary("label")(label)[0, 0]
        tensor([[0, 1, 1, 0],
                [0, 1, 1, 0]])
    """

    _repr_fields = ("mode", "connectivity", "background", "label_format")

    def __init__(self, keys, output_keys=None, mode: str = "thick", connectivity: int = 1, background: int = 0,
                 label_format=None, *, allow_missing_keys: bool = False):
        super().__init__(keys, output_keys=output_keys, allow_missing_keys=allow_missing_keys)
        if mode not in BOUNDARY_MODES:
            raise ValueError(f"mode must be one of {BOUNDARY_MODES}, got {mode!r}")
        self.mode = mode
        self.connectivity = check_int(connectivity, "connectivity", minimum=1)
        self.background = check_int(background, "background")
        self._setup_labels(None, None, label_format)

    def apply(self, x, params):
        ndim = x.ndim - 2
        if self.connectivity > ndim:
            raise ValueError(f"{type(self).__name__}: connectivity={self.connectivity} exceeds the {ndim} spatial axes")
        index = _integer_index(x, self._format(x))
        return segmentation.find_boundaries(index, self.connectivity, self.mode, self.background).to(x.dtype)
