"""morphaug.ndimage against a per-sample scipy.ndimage loop, Kornia, MONAI and seung-lab's tools.

Each case times morphaug on the whole batch and then every tool a user would
use instead, side by side in this process:

* ``scipy.ndimage loop``: one call per ``(b, c)`` slice on NumPy copies. On
  CUDA its time includes copying the batch to the host and the result back
  (the round trip a user pays); on CPU the copies are free views.
* ``kornia.morphology`` (2-D grey cases, flat footprints; and the Kornia drop-in
  ``morphaug.adapters.kornia.morphology.erosion`` against it, forward and with
  backward, in Kornia's own call) and MONAI's
  ``utils_morphological_ops.erode/dilate`` (binary cube cases): run on the
  batch's device; when not installed their rows are left out and the SciPy
  row's note says so.
* seung-lab's ``edt`` for the Euclidean distance transform, ``fastmorph``
  for ball dilation and erosion (its erosion keeps the border differently:
  the note shows the difference), ``fill_voids`` for ``binary_fill_holes`` and
  ``cc3d`` (package ``connected-components-3d``) for ``label``: per-sample
  loops, each on torch's thread count where it takes one.

Every row notes the max absolute difference against SciPy's result. Times are
medians of settled calls (``_timing.measure``: 3 calls after a warm-up call,
11 after 8 for calls of 0.1 s or less, 51 for calls of 1 ms or less, 1 for
calls over 2 s or with ``--quick``).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable

import numpy as np
import torch
import torch.nn.functional as F

import morphaug.ndimage as mnd
from morphaug import footprints
from _timing import Row, measure
from memory import serpentine, structure

SCIPY = "scipy.ndimage loop"


def _numpy(x) -> np.ndarray:
    return x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)


def _max_diff(result, expected: np.ndarray) -> float:
    a = _numpy(result).astype(np.float64)
    return float(np.abs(a - expected.astype(np.float64)).max()) if a.size else 0.0


def _scipy_loop(fn: Callable, x: torch.Tensor) -> Callable:
    """A per-slice SciPy loop, with the device round trip when ``x`` is not on the host."""
    def run():
        source = x.cpu().numpy()
        out = np.stack([np.stack([fn(source[b, c]) for c in range(source.shape[1])])
                        for b in range(source.shape[0])])
        return torch.from_numpy(out).to(x.device)
    return run


def _smooth_blobs(shape, generator: torch.Generator, device) -> torch.Tensor:
    """Smooth random blobs with enclosed holes: thresholded box-filtered noise, bool."""
    noise = torch.rand(shape, generator=generator)
    pool = F.avg_pool3d if len(shape) == 5 else F.avg_pool2d
    for _ in range(2):
        noise = pool(noise, 9, stride=1, padding=4, count_include_pad=False)
    return (noise > noise.median()).to(device)


def _shape_text(x: torch.Tensor) -> str:
    b, c, *spatial = x.shape
    size = f"{spatial[0]}^{len(spatial)}" if len(set(spatial)) == 1 else "x".join(map(str, spatial))
    return f"{b}x{c}x{size} {str(x.dtype).replace('torch.', '')}"


def _case(rows: list[Row], device, quick: bool, case: str, x: torch.Tensor,
          ours: Callable, scipy_fn: Callable, others=()) -> None:
    """Time one case: morphaug, the SciPy loop, then ``others = [(name, fn)]``.

    An ``fn`` that is a string says why that tool is skipped; it goes into the
    SciPy row's note instead of a row of its own.
    """
    result, ours_s = measure(ours, device, quick)
    expected, scipy_s = measure(_scipy_loop(scipy_fn, x), device, quick)
    expected = _numpy(expected)
    ours_diff = f"max|morphaug - scipy| = {_max_diff(result, expected):.3g}"
    note = ours_diff + ("; scipy time incl. cuda<->host copies" if device.type == "cuda" else "")
    shape = _shape_text(x)
    skipped = [fn for _, fn in others if isinstance(fn, str)]
    note = "; ".join([note] + skipped)
    rows.append(Row(case, shape, device.type, ours_s, SCIPY, scipy_s, note))
    for name, fn in others:
        if isinstance(fn, str):
            continue
        other, other_s = measure(fn, device, quick)
        note = f"{ours_diff}; max|{name} - scipy| = {_max_diff(other, expected):.3g}"
        rows.append(Row(case, shape, device.type, ours_s, name, other_s, note))


def _kornia_erosion(x: torch.Tensor, kernel: torch.Tensor):
    try:
        import kornia.morphology as km
    except ImportError:
        return "kornia not installed: skipped"
    kernel = kernel.to(x.device, x.dtype)
    return lambda: km.erosion(x, kernel)


def _monai(op: str, x: torch.Tensor, iterations: int):
    try:
        from monai.transforms.utils_morphological_ops import dilate, erode
    except ImportError:
        return "monai not installed: skipped"
    fn = dilate if op == "dilate" else erode

    def run():
        out = x.float()
        for _ in range(iterations):
            out = fn(out, filter_size=3, pad_value=0.0)
        return out
    return run


def _peer(module: str, x: torch.Tensor, call: Callable):
    """A per-sample loop of ``call(package, array)`` for the package ``module``, or why it is skipped."""
    try:
        package = importlib.import_module(module)
    except ImportError:
        return f"{module} not installed: skipped"
    return _scipy_loop(lambda a: call(package, a), x)


def _grey_cases(rows, device, quick, x: torch.Tensor, ball: torch.Tensor):
    import scipy.ndimage as ndi

    two_d = x.ndim == 4
    ball_np = ball.numpy()
    for label, kwargs, kernel in (
        ("size=3", dict(size=3), torch.ones((3,) * (x.ndim - 2))),
        ("size=7", dict(size=7), torch.ones((7,) * (x.ndim - 2))),
        (f"ball r=3 footprint ({int(ball.sum())} of {ball.numel()})", dict(footprint=ball), ball),
    ):
        scipy_kwargs = dict(footprint=ball_np) if "footprint" in kwargs else kwargs
        others = [("kornia.morphology", _kornia_erosion(x, kernel))] if two_d else []
        _case(rows, device, quick, f"grey_erosion {label}", x,
              lambda kw=kwargs: mnd.grey_erosion(x, **kw),
              lambda a, kw=scipy_kwargs: ndi.grey_erosion(a, **kw), others)


def _single_volume_cases(rows, device, quick, g: torch.Generator) -> None:
    """One large volume, where only the work inside a slice can go parallel: fill_holes on 256^3 and
    the EDT on 192^3 against their seung-lab peers."""
    import scipy.ndimage as ndi

    large = _smooth_blobs((1, 1) + (32 if quick else 256,) * 3, g, device)
    _case(rows, device, quick, "binary_fill_holes", large,
          lambda: mnd.binary_fill_holes(large),
          ndi.binary_fill_holes,
          [("fill_voids.fill loop", _peer("fill_voids", large, lambda fill_voids, a: fill_voids.fill(a)))])
    large = _smooth_blobs((1, 1) + (32 if quick else 192,) * 3, g, device)
    _case(rows, device, quick, "distance_transform_edt", large,
          lambda: mnd.distance_transform_edt(large),
          ndi.distance_transform_edt,
          [("edt (seung-lab) loop", _peer("edt", large, lambda edt, a: edt.edt(
              a, black_border=False, parallel=torch.get_num_threads())))])


def _kornia_drop_in_rows(rows, device, quick, g: torch.Generator) -> None:
    """``morphaug.adapters.kornia.morphology.erosion`` against ``kornia.morphology.erosion``, same call
    (8x3x256^2 float32, 5x5 kernel, geodesic border): forward, then forward and backward."""
    try:
        import kornia.morphology as km

        from morphaug.adapters.kornia import morphology as drop_in
    except ImportError:
        return
    x = torch.rand((2, 3, 32, 32) if quick else (8, 3, 256, 256), generator=g).to(device)
    kernel = torch.ones(5, 5, device=device)
    shape = _shape_text(x)
    ours, ours_s = measure(lambda: drop_in.erosion(x, kernel), device, quick)
    theirs, theirs_s = measure(lambda: km.erosion(x, kernel), device, quick)
    note = f"max|drop-in - kornia| = {_max_diff(ours, _numpy(theirs)):.3g}"
    rows.append(Row("kornia.morphology.erosion 5x5 (drop-in)", shape, device.type, ours_s,
                    "kornia.morphology.erosion", theirs_s, note))
    leaf = x.clone().requires_grad_()

    def backward(erosion):
        def run():
            leaf.grad = None
            erosion(leaf, kernel).sum().backward()
            return leaf.grad
        return run
    ours, ours_s = measure(backward(drop_in.erosion), device, quick)
    theirs, theirs_s = measure(backward(km.erosion), device, quick)
    note = f"max|grad drop-in - grad kornia| = {_max_diff(ours, _numpy(theirs)):.3g}"
    rows.append(Row("kornia.morphology.erosion 5x5 + backward (drop-in)", shape, device.type, ours_s,
                    "kornia.morphology.erosion", theirs_s, note))


def _watershed_cases(rows, device, quick, g: torch.Generator) -> None:
    """watershed_ift from 1 % markers of both signs, on 2-D images of 4 levels (ties everywhere) and on
    uint16 volumes, against SciPy's flood per slice (the native kernel floods each slice as SciPy does,
    slices in parallel)."""
    import scipy.ndimage as ndi

    (b2, n2), (b3, n3) = ((4, 48), (2, 24)) if quick else ((32, 256), (4, 96))
    for image in [(torch.rand((b2, 1, n2, n2), generator=g) * 4).to(torch.uint8),
                  (torch.rand((b3, 1, n3, n3, n3), generator=g) * 65535).to(torch.uint16)]:
        marked = torch.rand(image.shape, generator=g) < 0.01
        markers = torch.randint(-1, 4, image.shape, generator=g, dtype=torch.int16) * marked
        image, markers = image.to(device), markers.to(device)
        result, ours_s = measure(lambda: mnd.watershed_ift(image, markers), device, quick)

        def scipy_loop():
            source, seeds = image.cpu().numpy(), markers.cpu().numpy()
            out = np.stack([np.stack([ndi.watershed_ift(a, m) for a, m in zip(*pair)]) for pair in zip(source, seeds)])
            return torch.from_numpy(out).to(device)

        expected, scipy_s = measure(scipy_loop, device, quick)
        note = f"max|morphaug - scipy| = {_max_diff(result, _numpy(expected)):.3g}; 1 % markers"
        rows.append(Row("watershed_ift", _shape_text(image), device.type, ours_s, SCIPY, scipy_s,
                        note + ("; scipy time incl. cuda<->host copies" if device.type == "cuda" else "")))


def _measurement_cases(rows, device, quick, g: torch.Generator) -> None:
    """Region measurements of float32 volumes by 9 labels (index 1 .. 8): a histogram of 32 bins, the means
    and the medians, against SciPy per slice."""
    import scipy.ndimage as ndi

    batch, n = (2, 16) if quick else (4, 96)
    image = torch.rand((batch, 1, n, n, n), generator=g).to(device)
    labels = torch.randint(0, 9, image.shape, generator=g).to(device)
    index = list(range(1, 9))
    cases = [("histogram 32 bins, 8 labels", lambda: mnd.histogram(image, 0.0, 1.0, 32, labels, index),
              lambda a, l: np.stack(ndi.histogram(a, 0.0, 1.0, 32, l, index))),
             ("mean, 8 labels", lambda: mnd.mean(image, labels, index), lambda a, l: ndi.mean(a, l, index)),
             ("median, 8 labels", lambda: mnd.median(image, labels, index), lambda a, l: ndi.median(a, l, index))]
    for case, ours, scipy_fn in cases:
        result, ours_s = measure(ours, device, quick)

        def scipy_loop(scipy_fn=scipy_fn):
            source, label_map = image.cpu().numpy(), labels.cpu().numpy()
            out = np.stack([np.stack([scipy_fn(a, l) for a, l in zip(*pair)]) for pair in zip(source, label_map)])
            return torch.from_numpy(out).to(device)

        expected, scipy_s = measure(scipy_loop, device, quick)
        note = f"max|morphaug - scipy| = {_max_diff(result, _numpy(expected)):.3g}"
        rows.append(Row(case, _shape_text(image), device.type, ours_s, SCIPY, scipy_s,
                        note + ("; scipy time incl. cuda<->host copies" if device.type == "cuda" else "")))


def run(device: torch.device, quick: bool) -> list[Row]:
    try:
        import scipy.ndimage as ndi
    except ImportError as error:
        raise SystemExit("the ndimage suite needs SciPy: pip install --no-build-isolation '.[bench]' from the clone") from error

    device = torch.device(device)
    g = torch.Generator().manual_seed(0)
    n3, b3 = (24, 2) if quick else (96, 4)
    n2, b2 = (48, 4) if quick else (256, 32)
    rows: list[Row] = []

    volume = torch.rand((b3, 1, n3, n3, n3), generator=g).to(device)
    images = torch.rand((b2, 1, n2, n2), generator=g).to(device)
    _grey_cases(rows, device, quick, volume, footprints.ball(3))
    _grey_cases(rows, device, quick, images, footprints.disk(3))

    blobs = _smooth_blobs((b3, 1, n3, n3, n3), g, device)
    cube = footprints.cube(3)
    _case(rows, device, quick, "binary_dilation iterations=3", blobs,
          lambda: mnd.binary_dilation(blobs, iterations=3),
          lambda a: ndi.binary_dilation(a, iterations=3))
    _case(rows, device, quick, "binary_dilation cube3 iterations=3", blobs,
          lambda: mnd.binary_dilation(blobs, cube, iterations=3),
          lambda a: ndi.binary_dilation(a, cube.numpy(), iterations=3),
          [("monai.dilate", _monai("dilate", blobs, 3))])
    ball = footprints.ball(3)
    _case(rows, device, quick, "binary_dilation ball r=3", blobs,
          lambda: mnd.binary_dilation(blobs, ball),
          lambda a: ndi.binary_dilation(a, ball.numpy()),
          [("fastmorph.spherical_dilate loop", _peer("fastmorph", blobs, lambda fastmorph, a: (
              fastmorph.spherical_dilate(a, radius=3, parallel=torch.get_num_threads()))))])
    _case(rows, device, quick, "binary_erosion ball r=3", blobs,
          lambda: mnd.binary_erosion(blobs, ball),
          lambda a: ndi.binary_erosion(a, ball.numpy()),
          [("fastmorph.spherical_erode loop", _peer("fastmorph", blobs, lambda fastmorph, a: (
              fastmorph.spherical_erode(a, radius=3, parallel=torch.get_num_threads()))))])
    _case(rows, device, quick, "binary_erosion cube3", blobs,
          lambda: mnd.binary_erosion(blobs, cube),
          lambda a: ndi.binary_erosion(a, cube.numpy()),
          [("monai.erode", _monai("erode", blobs, 1))])
    _case(rows, device, quick, "binary_fill_holes", blobs,
          lambda: mnd.binary_fill_holes(blobs),
          ndi.binary_fill_holes,
          [("fill_voids.fill loop", _peer("fill_voids", blobs, lambda fill_voids, a: fill_voids.fill(a)))])
    maze, corner = torch.from_numpy(serpentine(n3))[None, None].to(device), structure("asymmetric")
    _case(rows, device, quick, "binary_fill_holes serpentine maze, cross + a corner", maze,
          lambda: mnd.binary_fill_holes(maze, corner),
          lambda a: ndi.binary_fill_holes(a, corner))
    _case(rows, device, quick, "label 26-connectivity", blobs,
          lambda: mnd.label(blobs, cube)[0],
          lambda a: ndi.label(a, cube.numpy())[0],
          [("cc3d.connected_components loop",
            _peer("cc3d", blobs, lambda cc3d, a: cc3d.connected_components(a, connectivity=26)))])
    _case(rows, device, quick, "distance_transform_edt", blobs,
          lambda: mnd.distance_transform_edt(blobs),
          ndi.distance_transform_edt,
          [("edt (seung-lab) loop", _peer("edt", blobs, lambda edt, a: edt.edt(
              a, black_border=False, parallel=torch.get_num_threads())))])
    _single_volume_cases(rows, device, quick, g)
    _kornia_drop_in_rows(rows, device, quick, g)
    _case(rows, device, quick, "distance_transform_cdt chessboard", blobs,
          lambda: mnd.distance_transform_cdt(blobs, metric="chessboard"),
          lambda a: ndi.distance_transform_cdt(a, metric="chessboard"))
    _watershed_cases(rows, device, quick, g)
    _measurement_cases(rows, device, quick, g)
    # brute force: every voxel against the background beside the blobs, so small volumes
    small = _smooth_blobs((b3, 1) + (12 if quick else 32,) * 3, torch.Generator().manual_seed(1), device)
    _case(rows, device, quick, "distance_transform_bf", small,
          lambda: mnd.distance_transform_bf(small),
          ndi.distance_transform_bf)
    if "MORPHAUG_BACKEND" in os.environ:
        for row in rows:
            row.note += f"; MORPHAUG_BACKEND={os.environ['MORPHAUG_BACKEND']}"
    return rows
