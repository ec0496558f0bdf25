"""``regionprops_table``: scikit-image's cheap region properties of every label of every slice, as tensors.

The measurements' region tables (``morphaug.ndimage._regions``, the native ``region_stats`` kernel where
it takes the call) give every property: voxel counts, per-axis coordinate minima, maxima and sums, and the
intensity sums, minima and maxima, in a pass over the voxels (two with intensities). No loop over slices or
labels; the largest label is read back only when ``max_label`` is not given.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from .. import _sync
from .._checks import check_host_int, check_label_image, check_spacing
from ..ndimage import _regions

__all__ = ["PROPERTIES", "regionprops_table"]

#: The properties offered (scikit-image's names) and what each is.
PROPERTIES = {
    "label": "the label (0 for a label absent from the slice)",
    "num_pixels": "voxels of the region",
    "area": "voxels times the volume of one voxel (spacing)",
    "bbox": "per axis, the first and one past the last index (in voxels, as scikit-image's)",
    "area_bbox": "the volume of the bounding box",
    "extent": "area / area_bbox",
    "centroid": "the mean coordinate per axis, times spacing",
    "equivalent_diameter_area": "the diameter of the ball of the region's area",
    "intensity_mean": "the mean of intensity_image over the region",
    "intensity_min": "the least intensity over the region",
    "intensity_max": "the greatest intensity over the region",
    "centroid_weighted": "the intensity-weighted mean coordinate per axis, times spacing",
}
_INTENSITY = {"intensity_mean", "intensity_min", "intensity_max", "centroid_weighted"}


def _properties(properties, has_intensity: bool) -> tuple[str, ...]:
    if isinstance(properties, str):
        properties = (properties,)
    try:
        properties = tuple(properties)
    except TypeError:
        raise TypeError(f"properties must be a sequence of property names, got {properties!r}") from None
    unknown = [p for p in properties if p not in PROPERTIES]
    if unknown:
        raise ValueError(f"properties {unknown} are not offered: regionprops_table computes {sorted(PROPERTIES)}")
    if not has_intensity and any(p in _INTENSITY for p in properties):
        raise ValueError(f"properties {sorted(_INTENSITY & set(properties))} need an intensity_image")
    return properties


def _ball_diameter(volume: torch.Tensor, rank: int) -> torch.Tensor:
    """The diameter of the ``rank``-ball of ``volume`` (scikit-image's ``equivalent_diameter_area``)."""
    if rank == 2:
        return torch.sqrt(4 * volume / math.pi)
    if rank == 3:
        return (6 * volume / math.pi) ** (1 / 3)
    return 2 * (volume * math.gamma(rank / 2 + 1) / math.pi ** (rank / 2)) ** (1 / rank)


@torch.compiler.disable  # a dict of tables sized by the data's largest label: run eagerly, between graphs
def regionprops_table(label_image, intensity_image=None, properties=("label", "bbox"), *, cache=True,
                      separator="-", extra_properties=None, spacing=None, max_label=None):
    """Region properties of every label of every ``(b, c)`` slice (``skimage.measure.regionprops_table``).

    Parameters
    ----------
    label_image : torch.Tensor
        ``(B, C, *spatial)`` labels, bool or an integer dtype, never negative;
        0 is background. Never modified.
    intensity_image : torch.Tensor, optional
        Real values of ``label_image``'s shape, on its device (needed by the
        ``intensity_*`` and ``centroid_weighted`` properties).
    properties : sequence of str
        Names from :data:`PROPERTIES`, scikit-image's (the cheap ones: those
        that reduce voxels; shape properties such as ``perimeter`` or
        ``moments`` are not offered).
    cache : bool
        Accepted for scikit-image's signature; everything is computed at once.
    separator : str
        Between a property's name and its axis in the keys (``"bbox-0"``).
    extra_properties : None
        Python functions per region are not offered (they would loop over
        regions on the host); ``None`` only.
    spacing : float or sequence of float, optional
        The voxel size per spatial axis (scikit-image's), scaling ``area``,
        ``area_bbox``, the centroids and ``equivalent_diameter_area``.
    max_label : int, optional
        Report labels ``1 .. max_label``; larger labels are left out. Default:
        the largest label of the batch, read back from the device (the
        documented "regionprops max_label" read).

    Returns
    -------
    dict of str to torch.Tensor
        scikit-image's keys (``"label"``, ``"area"``, ``"bbox-0"``, ...), each a
        ``(B, C, max_label)`` tensor on the input's device: column ``j`` is
        label ``j + 1``. A label absent from a slice has ``label`` 0 and
        ``num_pixels`` and ``area`` 0, ``bbox`` -1 and nan elsewhere;
        ``out["label"] > 0`` selects the rows scikit-image lists.
        Dtypes as scikit-image's: ``label``, ``num_pixels`` and ``bbox`` int64,
        intensity minima and maxima in the intensity's dtype (float64 for
        integers), the rest float64.

    Examples
    --------
    >>> import torch
    >>> from morphaug.measure import regionprops_table
    >>> labels = torch.zeros(1, 1, 4, 5, dtype=torch.int64)
    >>> labels[0, 0, 1:3, 1:4] = 2
    >>> table = regionprops_table(labels, properties=("label", "area", "bbox"))
    >>> table["label"].tolist(), table["area"].tolist(), table["bbox-2"].tolist()
    ([[[0, 2]]], [[[0.0, 6.0]]], [[[-1, 3]]])
    """
    label_image = check_label_image(label_image, "label_image")
    rank = label_image.ndim - 2
    if intensity_image is not None:
        if not isinstance(intensity_image, torch.Tensor) or intensity_image.is_complex():
            raise TypeError(f"intensity_image must be a real torch.Tensor, got {type(intensity_image).__name__}")
        if intensity_image.shape != label_image.shape or intensity_image.device != label_image.device:
            raise ValueError(f"intensity_image must have label_image's shape and device, got "
                             f"{tuple(intensity_image.shape)} on {intensity_image.device}")
    properties = _properties(properties, intensity_image is not None)
    if not isinstance(separator, str):
        raise TypeError(f"separator must be a str, got {separator!r}")
    if extra_properties is not None:
        raise NotImplementedError("extra_properties (a Python function per region) is not offered: compute "
                                  "from the returned tensors or use morphaug.ndimage.labeled_comprehension")
    spacing = check_spacing(1.0 if spacing is None else spacing, rank)
    labels = label_image.long()
    negative = (labels < 0).any()
    message = "label_image must not hold negative labels"
    if labels.device.type == "cpu":
        if negative:
            raise ValueError(message)
    else:
        torch._assert_async(~negative, message)
    if max_label is None:
        top = _sync.host_read(labels.amax() if labels.numel() else labels.new_zeros(()), "regionprops max_label")
    else:
        top = check_host_int(max_label, "max_label", minimum=0)
    return _tables(labels, intensity_image, properties, separator, spacing, top)


def _tables(labels, intensity, properties, separator, spacing, top) -> dict[str, torch.Tensor]:
    """The properties from the measurements' region tables (``morphaug.ndimage._regions``: the native
    ``region_stats`` kernel where it takes the call), one column per label ``1 .. top``: a pass over a
    mask of ones for the geometry, one over the intensities for theirs."""
    rank, wanted = labels.ndim - 2, set(properties)
    index = np.arange(1, top + 1)  # host data, staged to the device as a user's index is

    def tables(values, *names):
        rule = _regions._rule(values, labels, index)
        return {name: _regions._pick(rule, table) for name, table in _regions._tables(values, rule, *names).items()}

    geometry = {"bounds"} if wanted & {"bbox", "area_bbox", "extent"} else set()
    geometry |= {"moments"} if "centroid" in wanted else set()
    picked = tables(torch.ones(labels.shape, dtype=torch.bool, device=labels.device), *geometry)
    count = picked["count"]
    present = count > 0
    nan = torch.full((), float("nan"), dtype=torch.float64, device=labels.device)
    if wanted & _INTENSITY:
        shade = tables(intensity, *({"sum"} if wanted & {"intensity_mean", "centroid_weighted"} else set()),
                       *({"low"} if "intensity_min" in wanted else set()),
                       *({"high"} if "intensity_max" in wanted else set()),
                       *({"moments"} if "centroid_weighted" in wanted else set()))
    voxel = math.prod(spacing)
    area = count.double() * voxel
    out = {}
    for name in properties:
        if name == "label":
            out[name] = torch.where(present, torch.arange(1, top + 1, device=labels.device), 0)
        elif name == "num_pixels":
            out[name] = count
        elif name == "area":
            out[name] = area
        elif name == "bbox":
            edges = [picked["lower"][..., axis] for axis in range(rank)]
            edges += [picked["upper"][..., axis] + 1 for axis in range(rank)]
            for axis, edge in enumerate(edges):
                out[f"{name}{separator}{axis}"] = edge.masked_fill(~present, -1)
        elif name in ("area_bbox", "extent"):
            box = (picked["upper"] + 1 - picked["lower"]).prod(-1).double() * voxel
            out[name] = torch.where(present, box if name == "area_bbox" else area / box, nan)
        elif name == "centroid":
            for axis in range(rank):
                out[f"{name}{separator}{axis}"] = picked["moments"][..., axis] / count * spacing[axis]
        elif name == "equivalent_diameter_area":
            out[name] = torch.where(present, _ball_diameter(area, rank), nan)
        elif name == "intensity_mean":
            out[name] = shade["sum"] / count
        elif name in ("intensity_min", "intensity_max"):
            found = shade["low" if name == "intensity_min" else "high"]
            found = found if found.is_floating_point() else found.double()
            out[name] = torch.where(present, found, nan.to(found.dtype))
        elif name == "centroid_weighted":
            for axis in range(rank):
                out[f"{name}{separator}{axis}"] = torch.where(
                    present, shade["moments"][..., axis] / shade["sum"] * spacing[axis], nan)
    return out
