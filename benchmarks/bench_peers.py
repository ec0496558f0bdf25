"""morphaug's grey morphology against OpenCV and against the memory bandwidth.

* ``cv2.erode`` (opencv-python-headless) on every 2-D image of a batch in
  turn, with ``cv2.setNumThreads`` set to torch's thread count and
  ``BORDER_REFLECT``, which is SciPy's (and morphaug's) default ``reflect``
  mode (``dcba|abcd``); the element is the same array for both (a box of
  ``size``, or ``cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (7, 7))``). The
  results are asserted equal.
* ``cv2.distanceTransform(DIST_L2, DIST_MASK_PRECISE)`` (exact Euclidean
  distances in float32) on every 2-D mask of a batch, against
  ``distance_transform_edt`` in float32; the note gives the largest
  difference to SciPy's float64 distances of both.
* The bandwidth bound: ``Tensor.copy_`` of a large float32 tensor into a
  preallocated one (each element read once and written once), against
  ``numpy.copyto``; its note gives the bandwidth and the ns per float32
  voxel that a one-pass filter cannot beat.
* ``grey_erosion(size=3)``, ``distance_transform_edt`` and
  ``binary_dilation`` (one step of the cross) on volumes 64^3 to 256^3 and
  images 128^2 to 2048^2, each against that bound (reference time = voxels x
  the big copy's ns per voxel: a speed-up of 0.5 is within 2x of the bound),
  twice: returning a new result, and writing a preallocated one (``output=``,
  ``distances=``), as the bound's copy does; the note gives the op's ns per
  voxel, its ratio to the op's cheapest size of the same rank and kind of
  result (1.00 = flat cost per voxel) and the ns per voxel of ``x.clone()``:
  a copy into fresh memory, whose first writes fault pages in as those of the
  op's new result do (on this VM, up to several times the copy).

Times are medians of settled calls (``_timing.measure``: 11 after 8 for calls
of 0.1 s or less, 51 for calls of 1 ms or less; 1 call with ``--quick``, tiny
sizes: a smoke test whose times are noise).
"""

from __future__ import annotations

import numpy as np
import torch

import morphaug.ndimage as mnd
from _timing import Row, measure

COPY = "copy bound (8 B/voxel float32)"


def _shape_text(x: torch.Tensor) -> str:
    b, c, *spatial = x.shape
    return f"{b}x{c}x{spatial[0]}^{len(spatial)} {str(x.dtype).replace('torch.', '')}"


def _values(shape, dtype: torch.dtype, generator: torch.Generator) -> torch.Tensor:
    if dtype.is_floating_point:
        return torch.rand(shape, generator=generator, dtype=dtype)
    high = torch.iinfo(dtype).max + 1
    return torch.randint(0, high, shape, generator=generator, dtype=torch.int64).to(dtype)


def _cv2_rows(rows: list[Row], quick: bool) -> None:
    try:
        import cv2
    except ImportError:
        raise SystemExit("the peers suite needs OpenCV: pip install --no-build-isolation '.[bench]' from the clone") from None
    threads = torch.get_num_threads()
    cv2.setNumThreads(threads)
    ellipse = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (7, 7))
    elements = [("size=3", dict(size=3), np.ones((3, 3), np.uint8)),
                ("size=7", dict(size=7), np.ones((7, 7), np.uint8)),
                ("7x7 ellipse footprint", dict(footprint=torch.from_numpy(ellipse.astype(bool))), ellipse)]
    b, n = (2, 48) if quick else (32, 512)
    g = torch.Generator().manual_seed(0)
    for dtype in (torch.float32, torch.uint8, torch.uint16):
        x = _values((b, 1, n, n), dtype, g)
        images = x.numpy()
        for label, kwargs, kernel in elements:
            ours = lambda kw=kwargs: mnd.grey_erosion(x, **kw)  # noqa: E731
            theirs = lambda k=kernel: np.stack([cv2.erode(images[i, 0], k, borderType=cv2.BORDER_REFLECT)  # noqa: E731
                                                for i in range(b)])[:, None]
            (result, ours_s), (expected, theirs_s) = measure(ours, "cpu", quick), measure(theirs, "cpu", quick)
            if not np.array_equal(result.numpy(), expected):
                raise AssertionError(f"grey_erosion {label} on {_shape_text(x)} differs from cv2.erode")
            rows.append(Row(f"grey_erosion {label}", _shape_text(x), "cpu", ours_s,
                            f"cv2.erode loop ({threads} threads)", theirs_s, "equal to cv2.erode"))


def _distance_rows(rows: list[Row], quick: bool) -> None:
    import cv2
    import scipy.ndimage as ndi

    threads = torch.get_num_threads()
    b, n = (2, 48) if quick else (32, 512)
    g = torch.Generator().manual_seed(2)
    masks = torch.rand((b, 1, n, n), generator=g) > 0.02  # sparse background: long distances
    images = masks.numpy().astype(np.uint8)
    ours = lambda: mnd.distance_transform_edt(masks)  # noqa: E731
    theirs = lambda: np.stack([cv2.distanceTransform(images[i, 0], cv2.DIST_L2, cv2.DIST_MASK_PRECISE)  # noqa: E731
                               for i in range(b)])[:, None]
    (result, ours_s), (other, theirs_s) = measure(ours, "cpu", quick), measure(theirs, "cpu", quick)
    exact = np.stack([ndi.distance_transform_edt(images[i, 0]) for i in range(b)])[:, None]
    note = (f"max|morphaug - scipy| = {np.abs(result.numpy() - exact).max():.2g}; "
            f"max|cv2 - scipy| = {np.abs(other - exact).max():.2g}")
    rows.append(Row("distance_transform_edt", f"{b}x1x{n}^2 bool", "cpu", ours_s,
                    f"cv2.distanceTransform PRECISE loop ({threads} threads)", theirs_s, note))


def _copy_bound(rows: list[Row], quick: bool) -> float:
    """The big copy's row; returns its seconds per float32 voxel."""
    numel = 1 << (20 if quick else 26)
    src = torch.rand(numel)
    dst = torch.empty_like(src)
    ours_s = measure(lambda: dst.copy_(src), "cpu", quick)[1]
    theirs_s = measure(lambda: np.copyto(dst.numpy(), src.numpy()), "cpu", quick)[1]
    per_voxel = ours_s / numel
    note = f"{2 * src.element_size() / per_voxel / 1e9:.1f} GB/s read + write, {per_voxel * 1e9:.2f} ns/voxel"
    rows.append(Row("Tensor.copy_ (bandwidth bound)", f"{numel >> 20}M float32", "cpu", ours_s,
                    "numpy.copyto", theirs_s, note))
    return per_voxel


PER_VOXEL_OPS = (  # (case, op(x, out): out a preallocated result or None, mask input, result dtype)
    ("grey_erosion size=3", lambda x, out: mnd.grey_erosion(x, size=3, output=out), False, torch.float32),
    ("distance_transform_edt", lambda x, out: mnd.distance_transform_edt(x, distances=out), True, torch.float32),
    ("binary_dilation cross", lambda x, out: mnd.binary_dilation(x, output=out), True, torch.bool),
)


def _bound_rows(rows: list[Row], quick: bool, per_voxel: float) -> None:
    shapes = ([(1, 1, 16, 16, 16), (4, 1, 32, 32)] if quick else
              [(1, 1, 64, 64, 64), (1, 1, 128, 128, 128), (1, 1, 256, 256, 256),
               (32, 1, 128, 128), (32, 1, 512, 512), (2, 1, 2048, 2048)])
    g = torch.Generator().manual_seed(1)
    for case, op, mask, result_dtype in PER_VOXEL_OPS:
        for preallocated in (False, True):
            measured = []
            for shape in shapes:
                x = torch.rand(shape, generator=g)
                x = x > 0.3 if mask else x
                out = torch.empty(shape, dtype=result_dtype) if preallocated else None
                ours_s = measure(lambda: op(x, out), "cpu", quick)[1]
                clone_ns = measure(x.clone, "cpu", quick)[1] / x.numel() * 1e9
                measured.append((x, ours_s, ours_s / x.numel() * 1e9, clone_ns))
            label = f"{case}{' into output' if preallocated else ''}, per voxel"
            for x, ours_s, ns, clone_ns in measured:
                best = min(other_ns for other, _, other_ns, _ in measured if other.ndim == x.ndim)
                rows.append(Row(label, _shape_text(x), "cpu", ours_s, COPY, per_voxel * x.numel(),
                                f"{ns:.2f} ns/voxel, {ns / best:.2f}x the cheapest {x.ndim - 2}-D size; "
                                f"bound {per_voxel * 1e9:.2f} ns/voxel; x.clone() {clone_ns:.2f} ns/voxel"))


def run(device: torch.device, quick: bool) -> list[Row]:
    if torch.device(device).type != "cpu":  # OpenCV and the copy bound are CPU measurements
        return []
    rows: list[Row] = []
    _cv2_rows(rows, quick)
    _distance_rows(rows, quick)
    per_voxel = _copy_bound(rows, quick)
    _bound_rows(rows, quick, per_voxel)
    return rows
