"""A label-preprocessing pass with morphaug.ndimage, side by side with SciPy.

Run it as::

    python -m morphaug.demo [--device auto|cpu|cuda] [--out DIR] [--size N] [--batch B] [--busy N]

It builds a seeded synthetic batch (no download): 3-D label maps of
overlapping ellipsoids with classes 0..3, enclosed holes and salt-and-pepper
label noise, plus a noisy intensity image. On the chosen device it then
fills holes per class, opens and closes each class mask, computes signed
distance maps (``distance_transform_edt``) and chessboard distances
(``distance_transform_cdt``), finds label boundaries with a
``morphological_gradient`` and smooths the image with ``grey_opening``.

Each step is timed against the same step done with a per-sample, per-class
``scipy.ndimage`` loop on the same input (on CUDA the SciPy time includes
copying the batch to the host and the result back). A table
``op | morphaug ms | SciPy ms | speed-up | max abs diff`` is printed and
written with a figure of mid slices (``morphaug_demo.png``) to ``--out``
(default ``demo_output/``). ``--busy N`` then times every step again beside N
busy processes (:func:`busy_processes`), as on a core shared with DataLoader
workers or other jobs, and prints that table too.

It needs SciPy and matplotlib: ``pip install scipy matplotlib``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

import morphaug.ndimage as mnd
from morphaug.footprints import ball

__all__ = ["DemoRow", "busy_processes", "make_phantom", "run_demo", "format_rows", "main"]

CLASSES = 3


@dataclass
class DemoRow:
    """One timed step: morphaug against a per-sample SciPy loop."""

    op: str
    ours_ms: float
    scipy_ms: float
    max_abs_diff: float

    @property
    def speedup(self) -> float:
        return self.scipy_ms / self.ours_ms


def _require_extras():
    try:
        import matplotlib
        import scipy.ndimage
    except ImportError as error:
        raise SystemExit(
            f"morphaug.demo needs SciPy and matplotlib ({error.name} is missing): "
            "pip install scipy matplotlib"
        ) from error
    matplotlib.use("Agg")
    return scipy.ndimage


def make_phantom(batch: int, size: int, *, seed: int = 0, ellipsoids: int = 6):
    """A seeded batch of 3-D label maps and noisy images, built on the CPU.

    Each sample paints ``ellipsoids`` random axis-aligned ellipsoids with
    classes 1..3 in order over a background of 0, carves an enclosed
    spherical hole at the centre of the first three, then flips 0.5 % of
    the voxels to background (pepper) and 0.2 % to a random class (salt).
    The image is the class intensity (before the label noise) plus a smooth
    ramp and Gaussian noise.

    Returns
    -------
    labels : torch.Tensor
        ``(batch, 1, size, size, size)`` int64 in ``0..3``.
    image : torch.Tensor
        ``(batch, 1, size, size, size)`` float32.

    Examples
    --------
    >>> labels, image = make_phantom(2, 16)
    >>> labels.shape, int(labels.max()) <= 3, image.dtype
    (torch.Size([2, 1, 16, 16, 16]), True, torch.float32)
    """
    g = torch.Generator().manual_seed(seed)
    grid = torch.arange(size, dtype=torch.float32) + 0.5
    centres = (0.25 + 0.5 * torch.rand(batch, ellipsoids, 3, generator=g)) * size
    radii = (0.1 + 0.15 * torch.rand(batch, ellipsoids, 3, generator=g)) * size
    classes = torch.randint(1, CLASSES + 1, (batch, ellipsoids), generator=g)

    def inside(centre, radius):  # sum ((x_i - c_i) / r_i)^2 <= 1, (B, E, N, N, N)
        z, y, x = ((grid - centre[..., i, None]) / radius[..., i, None] for i in range(3))
        return z[..., :, None, None] ** 2 + y[..., None, :, None] ** 2 + x[..., None, None, :] ** 2 <= 1

    objects = inside(centres, radii)
    hole_radii = 0.35 * radii[:, :3].amin(-1, keepdim=True).expand(-1, -1, 3)
    holes = inside(centres[:, :3], hole_radii).any(1)
    labels = torch.zeros((batch, size, size, size), dtype=torch.int64)
    for e in range(ellipsoids):
        labels = torch.where(objects[:, e], classes[:, e, None, None, None], labels)
    labels = labels.masked_fill(holes, 0)

    ramp = grid / size - 0.5
    image = labels.float() / CLASSES + 0.3 * ramp[:, None, None]
    image = image + 0.15 * torch.randn(labels.shape, generator=g)
    noise = torch.rand(labels.shape, generator=g)
    salt = torch.randint(1, CLASSES + 1, labels.shape, generator=g)
    labels = torch.where(noise < 0.005, 0, torch.where(noise > 0.998, salt, labels))
    return labels[:, None], image[:, None]


def _numpy(x: torch.Tensor) -> np.ndarray:
    return x.detach().cpu().numpy()


def _scipy_loop(fn: Callable, x: torch.Tensor) -> torch.Tensor:
    """``fn`` on every ``(b, c)`` slice of a host copy; the result goes back to the device."""
    array = _numpy(x)
    out = np.stack([np.stack([fn(array[b, c]) for c in range(array.shape[1])])
                    for b in range(array.shape[0])])
    return torch.from_numpy(out).to(x.device)


def _timed(fn: Callable, device: torch.device):
    """``(result, milliseconds)`` of one call, after a warm-up call on CUDA."""
    if device.type == "cuda":
        fn()
        torch.cuda.synchronize(device)
    start = time.perf_counter()
    result = fn()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return result, (time.perf_counter() - start) * 1e3


def _max_abs_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.double() - b.double()).abs().max()) if a.numel() else 0.0


def _signed_distance(mask: torch.Tensor) -> torch.Tensor:
    """Positive outside the mask, negative inside, via two EDTs."""
    return mnd.distance_transform_edt(~mask) - mnd.distance_transform_edt(mask)


def _labels_from_masks(masks: torch.Tensor) -> torch.Tensor:
    """``(B, K, ...)`` class masks back to a ``(B, 1, ...)`` label map (higher class wins)."""
    labels = torch.zeros_like(masks[:, :1], dtype=torch.int64)
    for k in range(masks.shape[1]):
        labels = torch.where(masks[:, k:k + 1], k + 1, labels)
    return labels


def run_demo(device: torch.device, out: Path, size: int = 64, batch: int = 4,
             seed: int = 0) -> tuple[list[DemoRow], Path]:
    """Run the pass on ``device``, compare each step with SciPy, write the figure.

    Returns the table rows and the path of the PNG figure.
    """
    ndi = _require_extras()
    device = torch.device(device)
    labels, image = (t.to(device) for t in make_phantom(batch, size, seed=seed))
    element = ball(1)
    element_np = element.numpy()
    masks = torch.cat([labels == k for k in range(1, CLASSES + 1)], dim=1)

    def scipy_signed_distance(m):
        return ndi.distance_transform_edt(~m) - ndi.distance_transform_edt(m)

    rows = []

    def step(name: str, ours: Callable, scipy_fn: Callable, x: torch.Tensor):
        result, ours_ms = _timed(ours, device)
        expected, scipy_ms = _timed(lambda: _scipy_loop(scipy_fn, x), device)
        rows.append(DemoRow(name, ours_ms, scipy_ms, _max_abs_diff(result, expected)))
        return result

    filled = step("binary_fill_holes, per class", lambda: mnd.binary_fill_holes(masks),
                  ndi.binary_fill_holes, masks)
    opened = step("binary_opening, ball r=1", lambda: mnd.binary_opening(filled, element),
                  lambda m: ndi.binary_opening(m, element_np), filled)
    closed = step("binary_closing, ball r=1", lambda: mnd.binary_closing(opened, element),
                  lambda m: ndi.binary_closing(m, element_np), opened)
    signed = step("signed distance (2x distance_transform_edt)", lambda: _signed_distance(closed),
                  scipy_signed_distance, closed)
    chessboard = step("distance_transform_cdt chessboard",
                      lambda: mnd.distance_transform_cdt(closed, metric="chessboard"),
                      lambda m: ndi.distance_transform_cdt(m, metric="chessboard"), closed)
    cleaned = _labels_from_masks(closed)
    gradient = step("morphological_gradient on labels, size=3",
                    lambda: mnd.morphological_gradient(cleaned, size=3),
                    lambda a: ndi.morphological_gradient(a, size=3), cleaned)
    smoothed = step("grey_opening of image, ball r=1",
                    lambda: mnd.grey_opening(image, footprint=element),
                    lambda a: ndi.grey_opening(a, footprint=element_np), image)

    out.mkdir(parents=True, exist_ok=True)
    figure = out / "morphaug_demo.png"
    panels = [
        ("(a) image", image, "image"),
        ("(b) grey_opening of image", smoothed, "image"),
        ("(c) labels, input", labels, "labels"),
        ("(d) labels, filled/opened/closed", cleaned, "labels"),
        ("(e) signed distance to class 1", signed[:, :1], "signed"),
        ("(f) chessboard distance inside class 1", chessboard[:, :1], "distance"),
        ("(g) label boundary (gradient != 0)", gradient != 0, "binary"),
        ("(h) voxels changed, (c) vs (d)", labels != cleaned, "binary"),
    ]
    _plot(panels, figure, title=f"morphaug demo: sample 0, mid z-slice, on {device.type}")
    (out / "morphaug_demo.md").write_text(format_rows(rows) + "\n")
    return rows, figure


def _plot(panels, path: Path, title: str) -> None:
    """A 2 x 4 grid of mid z-slices of sample 0, one labelled panel per volume."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import BoundaryNorm, ListedColormap

    # one colour per class 0..K of the label panels (K their largest label), the same in each
    classes = 1 + max(int(volume.max()) for _, volume, style in panels if style == "labels")
    tab10 = plt.get_cmap("tab10")
    label_colours = ListedColormap([tab10(k % 10) for k in range(classes)])
    label_norm = BoundaryNorm(np.arange(classes + 1) - 0.5, classes)
    fig, axes = plt.subplots(2, 4, figsize=(16, 8.5), constrained_layout=True)
    for ax, (name, volume, style) in zip(axes.flat, panels):
        data = _numpy(volume[0, 0, volume.shape[2] // 2]).astype(np.float32)
        ticks = None
        if style == "labels":
            shown = ax.imshow(data, cmap=label_colours, norm=label_norm, interpolation="nearest")
            ticks = range(classes)
        elif style == "signed":  # colours span the inside; the outside saturates
            limit = max(float(-data.min()), 1.0)
            shown = ax.imshow(data, cmap="RdBu_r", vmin=-limit, vmax=limit)
            ax.contour(data, levels=[0.0], colors="k", linewidths=0.8)
        elif style == "distance":  # background (0) left blank
            shown = ax.imshow(np.where(data > 0, data, np.nan), cmap="viridis", interpolation="nearest")
        else:
            shown = ax.imshow(data, cmap="gray", interpolation="nearest")
        ax.set_title(name)
        ax.set_xlabel("x")
        ax.set_ylabel("y")
        fig.colorbar(shown, ax=ax, shrink=0.8, ticks=ticks)
    fig.suptitle(title)
    fig.savefig(path, dpi=80)
    plt.close(fig)


def format_rows(rows: list[DemoRow]) -> str:
    """The rows as a markdown table."""
    lines = ["| op | morphaug ms | SciPy ms | speed-up | max abs diff |", "|---|---:|---:|---:|---:|"]
    for row in rows:
        lines.append(f"| {row.op} | {row.ours_ms:.1f} | {row.scipy_ms:.1f} | "
                     f"{row.speedup:.2f}x | {row.max_abs_diff:.3g} |")
    return "\n".join(lines)


#: One busy process: a torch matrix product on 2 threads, forever.
_BUSY = "import torch; torch.set_num_threads(2); a = torch.rand(768, 768); print(flush=True)\nwhile True: a @ a"


@contextlib.contextmanager
def busy_processes(count: int):
    """``count`` processes that keep the CPU busy (each a torch matrix product on 2 threads,
    as a DataLoader worker or another job would) while the block runs."""
    busy = [subprocess.Popen([sys.executable, "-c", _BUSY], stdout=subprocess.PIPE) for _ in range(count)]
    try:
        for process in busy:  # each prints a line once it computes
            process.stdout.readline()
        yield
    finally:
        for process in busy:
            process.kill()
            process.wait()


def _pick_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def main(argv=None) -> int:
    """Command-line entry point; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m morphaug.demo", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto",
                        help="where morphaug runs (auto: cuda when available, else cpu)")
    parser.add_argument("--out", type=Path, default=Path("demo_output"),
                        help="folder for the figure and the table (default: demo_output/)")
    parser.add_argument("--size", type=int, default=64, help="volume edge N (default 64)")
    parser.add_argument("--batch", type=int, default=4, help="batch size B (default 4)")
    parser.add_argument("--busy", type=int, default=0, metavar="N",
                        help="time every step again beside N busy processes (default 0: no)")
    args = parser.parse_args(argv)
    if args.size < 8:
        parser.error(f"--size must be >= 8, got {args.size}")
    if args.batch < 1:
        parser.error(f"--batch must be >= 1, got {args.batch}")
    if args.busy < 0:
        parser.error(f"--busy must be >= 0, got {args.busy}")
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: CUDA is not available")
    device = _pick_device(args.device)

    machine = torch.cuda.get_device_name(device) if device.type == "cuda" else (
        f"{platform.machine()} CPU, {os.cpu_count()} cores")
    print(f"morphaug demo: {args.batch}x1x{args.size}^3 labels (classes 0..{CLASSES}) and image "
          f"on {device} ({machine}), torch {torch.__version__}, {torch.get_num_threads()} torch threads; "
          "SciPy runs single-threaded")
    if device.type == "cuda":
        print("SciPy times include the device -> host copy and the copy back.")
    rows, figure = run_demo(device, args.out, size=args.size, batch=args.batch)
    print(format_rows(rows))
    if args.busy:
        with busy_processes(args.busy):
            busy_rows, _ = run_demo(device, args.out / "busy", size=args.size, batch=args.batch)
        print(f"\nbeside {args.busy} busy processes (each a torch matrix product on 2 threads):")
        print(format_rows(busy_rows))
    print(f"\nfigure: {figure}\ntable: {args.out / 'morphaug_demo.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
