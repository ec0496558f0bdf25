"""morphaug.segmentation and morphaug.measure against a per-volume scikit-image loop and cc3d.

* ``expand_labels`` (distance 3) on sparse instance seeds (0.1 % of the voxels, 99 labels): morphaug on
  the whole batch against ``skimage.segmentation.expand_labels`` on each volume in turn.
* ``find_boundaries`` (thick, connectivity 1) on the grown instance map, against skimage's loop.
* ``measure.euler_number`` (26-connectivity) of the map's blobs (``smooth > 0.5``) against skimage's loop.
* ``measure.label`` of a map of 8 values (smooth blobs, 26-connectivity: every value labelled) against
  ``cc3d.connected_components`` (package ``connected-components-3d``) and ``skimage.measure.label``
  on each volume in turn.

On CUDA the loops' times include copying the batch to the host and the result back. Every row notes
whether the results are identical (cc3d numbers its components in its own order: the note compares
partitions, by the component count and by the pairs of labels that co-occur). Times are medians of
settled calls (``_timing.measure``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

import numpy as np
import torch
import torch.nn.functional as F

from morphaug import measure, segmentation
from _timing import Row, measure as timed

SKIMAGE = "skimage loop"


def _loop(fn: Callable, x: torch.Tensor) -> Callable:
    """``fn`` on each ``(b, c)`` volume of ``x`` in turn, on the host (with the device round trip)."""
    def run():
        source = x.cpu().numpy()
        out = np.stack([np.stack([fn(volume) for volume in sample]) for sample in source])
        return torch.from_numpy(out).to(x.device)
    return run


def _text(x: torch.Tensor, what: str) -> str:
    b, c, *spatial = x.shape
    return f"{b}x{c}x{spatial[0]}^{len(spatial)} {str(x.dtype).replace('torch.', '')}, {what}"


def _same(ours: torch.Tensor, theirs: torch.Tensor) -> str:
    return "identical" if torch.equal(ours.cpu(), theirs.cpu().to(ours.dtype)) else "DIFFERENT"


def _same_partition(ours: torch.Tensor, theirs: torch.Tensor) -> str:
    """Whether two labellings cut the volumes into the same components (numbered in any order)."""
    a, b = ours.cpu().flatten(1).long(), theirs.cpu().flatten(1).long()
    pairs = torch.stack([a, b], -1)
    same = all(len(torch.unique(p, dim=0)) == len(torch.unique(x)) == len(torch.unique(y))
               for p, x, y in zip(pairs, a, b))
    return "same components" if same else "DIFFERENT components"


def run(device: torch.device, quick: bool) -> list[Row]:
    try:
        import skimage.measure
        import skimage.segmentation
    except ImportError as error:
        raise SystemExit("the segmentation suite needs scikit-image: pip install '.[bench]'") from error
    device = torch.device(device)
    g = torch.Generator().manual_seed(0)
    b, n = (2, 24) if quick else (4, 128)
    rows: list[Row] = []

    seeds = torch.rand((b, 1, n, n, n), generator=g) < 0.001
    seeds = torch.where(seeds, torch.randint(1, 100, seeds.shape, generator=g), 0).to(device)
    grown, ours_s = timed(lambda: segmentation.expand_labels(seeds, 3), device, quick)
    expected, theirs_s = timed(_loop(lambda a: skimage.segmentation.expand_labels(a, 3), seeds), device, quick)
    rows.append(Row("expand_labels distance=3", _text(seeds, "99 labels on 0.1 %"), device.type, ours_s,
                    SKIMAGE, theirs_s, _same(grown, expected)))

    edges, ours_s = timed(lambda: segmentation.find_boundaries(grown), device, quick)
    expected, theirs_s = timed(_loop(skimage.segmentation.find_boundaries, grown), device, quick)
    rows.append(Row("find_boundaries thick", _text(grown, "grown instances"), device.type, ours_s, SKIMAGE,
                    theirs_s, _same(edges, expected)))

    smooth = F.interpolate(torch.rand((b, 1, n // 4, n // 4, n // 4), generator=g), size=(n, n, n),
                           mode="trilinear")
    values = (smooth * 8).long().clamp(0, 7).to(device)
    blobs = (smooth > 0.5).to(device)
    numbers, ours_s = timed(lambda: measure.euler_number(blobs), device, quick)
    expected, theirs_s = timed(_loop(skimage.measure.euler_number, blobs), device, quick)
    rows.append(Row("euler_number connectivity=3", _text(blobs, "smooth blobs"), device.type, ours_s, SKIMAGE,
                    theirs_s, _same(numbers, expected)))

    case, shape = "measure.label connectivity=3", _text(values, "8 values")
    labels, ours_s = timed(lambda: measure.label(values), device, quick)
    expected, theirs_s = timed(_loop(skimage.measure.label, values), device, quick)
    rows.append(Row(case, shape, device.type, ours_s, SKIMAGE, theirs_s, _same(labels, expected)))
    try:
        cc3d = importlib.import_module("cc3d")
    except ImportError:
        rows[-1].note += "; cc3d not installed: skipped"
        return rows
    # cc3d labels every value too; its background is 0 as skimage's
    other, theirs_s = timed(_loop(lambda a: cc3d.connected_components(a, connectivity=26), values), device, quick)
    rows.append(Row(case, shape, device.type, ours_s, "cc3d.connected_components loop", theirs_s,
                    _same_partition(labels, other)))
    return rows
