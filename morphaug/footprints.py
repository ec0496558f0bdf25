"""Structuring-element (footprint) factories, including batches of random ones.

The fixed factories follow scikit-image's ``skimage.morphology`` conventions
and return ``torch.bool`` tensors:

* :func:`ball` / :func:`disk`: the Euclidean ball ``sum(x_i**2) <= r**2`` on
  the integer grid, in a box of width ``2 * r + 1`` per axis (scikit-image's
  ``ball`` / ``disk`` with ``strict_radius=True``).
* :func:`cube` / :func:`square`: all-true boxes of width ``width`` (any width
  ``>= 1``, even widths included).
* :func:`cross`: the diamond / L1 ball ``sum(|x_i|) <= r`` in a box of width
  ``2 * r + 1`` (scikit-image's ``diamond`` in 2-D, ``octahedron`` in 3-D).
  ``cross(1, n)`` equals ``scipy.ndimage.generate_binary_structure(n, 1)``.
* :func:`ellipsoid`: per-axis radii ``r_i`` (integer or float), the set
  ``sum((x_i / r_i)**2) <= 1`` in a box of width ``2 * floor(r_i) + 1``.

:func:`random_footprints` draws one element per sample, as tensors on the
batch's device, and :func:`footprints_from_params` rebuilds the same stack
from the drawn parameters (a transform replays a draw with it). Both build
the whole batch from one coordinate grid: no Python loop over samples and
no host sync.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import NamedTuple

import torch

from ._checks import check_int
from ._sync import to_device

__all__ = [
    "SHAPES",
    "SHAPE_METRICS",
    "RandomFootprints",
    "ball",
    "disk",
    "cube",
    "square",
    "cross",
    "ellipsoid",
    "random_footprints",
    "footprints_from_params",
]

#: Shape names understood by :func:`random_footprints`, in their default order.
SHAPES = ("ball", "cube", "cross")

#: The metric whose radius-``r`` ball each shape is: ``ball`` the Euclidean
#: ball, ``cube`` (side ``2r + 1``) the chessboard ball, ``cross`` the taxicab
#: ball. The transforms' distance maps and the native ball kernel use these names.
SHAPE_METRICS = {"ball": "euclidean", "cube": "chessboard", "cross": "taxicab"}

# Each shape is "metric(x) <= radius ** power" on the centred integer grid.
_POWERS = {"ball": 2, "cube": 1, "cross": 1}


class RandomFootprints(NamedTuple):
    """Result of :func:`random_footprints`.

    Attributes
    ----------
    footprints : torch.Tensor
        ``(B, *k)`` bool, ``k = 2 * max_radius + 1`` on every axis; each
        sample's element is centred in its box.
    shape_index : torch.Tensor
        ``(B,)`` int64 index of each sample's shape in ``shapes``.
    radius : torch.Tensor
        ``(B,)`` int64 radius of each sample's element.
    """

    footprints: torch.Tensor
    shape_index: torch.Tensor
    radius: torch.Tensor


def _coordinates(max_radius: int, ndim: int, device) -> list[torch.Tensor]:
    """Centred integer coordinates ``-R .. R``, one broadcastable tensor per axis."""
    line = torch.arange(-max_radius, max_radius + 1, device=device)
    return [line.view([-1 if axis == i else 1 for axis in range(ndim)]) for i in range(ndim)]


def _metrics(max_radius: int, ndim: int, device) -> dict[str, torch.Tensor]:
    """Squared L2, L-infinity and L1 norms of the grid, each ``(k,) * ndim`` int64."""
    coords = [c.abs() for c in _coordinates(max_radius, ndim, device)]
    shape = (2 * max_radius + 1,) * ndim
    squared = torch.zeros(shape, dtype=torch.int64, device=device)
    linf = torch.zeros(shape, dtype=torch.int64, device=device)
    l1 = torch.zeros(shape, dtype=torch.int64, device=device)
    for c in coords:
        squared = squared + c * c
        linf = torch.maximum(linf, c)
        l1 = l1 + c
    return {"ball": squared, "cube": linf, "cross": l1}


def ball(radius: int, ndim: int = 3, *, device=None) -> torch.Tensor:
    """Euclidean ball ``sum(x_i**2) <= radius**2``, scikit-image's convention.

    Parameters
    ----------
    radius : int
        Radius, ``>= 0``. The box is ``2 * radius + 1`` wide on every axis.
    ndim : int, optional
        Number of dimensions, ``>= 1`` (default 3).
    device : torch.device or str, optional
        Device of the result (default CPU).

    Returns
    -------
    torch.Tensor
        ``(2 * radius + 1,) * ndim`` bool.

    See Also
    --------
    skimage.morphology.ball, skimage.morphology.disk

    Examples
    --------
    >>> ball(1, 2).int()
    tensor([[0, 1, 0],
            [1, 1, 1],
            [0, 1, 0]], dtype=torch.int32)
    """
    radius = check_int(radius, "radius", 0)
    ndim = check_int(ndim, "ndim", 1)
    return _metrics(radius, ndim, device)["ball"] <= radius * radius


def disk(radius: int, *, device=None) -> torch.Tensor:
    """The 2-D :func:`ball`: ``x**2 + y**2 <= radius**2`` (scikit-image's ``disk``).

    Examples
    --------
    >>> disk(2).sum().item()
    13
    """
    return ball(radius, 2, device=device)


def cube(width: int, ndim: int = 3, *, device=None) -> torch.Tensor:
    """All-true box of ``width`` on every axis (scikit-image's ``cube``).

    Parameters
    ----------
    width : int
        Width, ``>= 1``; even widths are allowed (their centre follows
        SciPy's ``k // 2`` rule when used as a structuring element).
    ndim : int, optional
        Number of dimensions, ``>= 1`` (default 3).
    device : torch.device or str, optional
        Device of the result (default CPU).

    Examples
    --------
    >>> cube(3).shape
    torch.Size([3, 3, 3])
    """
    width = check_int(width, "width", 1)
    ndim = check_int(ndim, "ndim", 1)
    return torch.ones((width,) * ndim, dtype=torch.bool, device=device)


def square(width: int, *, device=None) -> torch.Tensor:
    """The 2-D :func:`cube` (scikit-image's ``square``).

    Examples
    --------
    >>> square(2).shape
    torch.Size([2, 2])
    """
    return cube(width, 2, device=device)


def cross(radius: int, ndim: int = 3, *, device=None) -> torch.Tensor:
    """Diamond / L1 ball ``sum(|x_i|) <= radius`` (scikit-image's ``diamond``, ``octahedron``).

    ``cross(1, n)`` is ``scipy.ndimage.generate_binary_structure(n, 1)``.

    Parameters
    ----------
    radius : int
        Radius, ``>= 0``. The box is ``2 * radius + 1`` wide on every axis.
    ndim : int, optional
        Number of dimensions, ``>= 1`` (default 3).
    device : torch.device or str, optional
        Device of the result (default CPU).

    Examples
    --------
    >>> cross(1, 3).sum().item()
    7
    """
    radius = check_int(radius, "radius", 0)
    ndim = check_int(ndim, "ndim", 1)
    return _metrics(radius, ndim, device)["cross"] <= radius


def ellipsoid(radii: Sequence[float], *, device=None) -> torch.Tensor:
    """Axis-aligned ellipsoid ``sum((x_i / r_i)**2) <= 1`` on the integer grid.

    Parameters
    ----------
    radii : sequence of float
        One radius ``>= 0`` per axis, integer or float; the number of radii
        is the number of dimensions. Axis ``i`` spans ``2 * floor(r_i) + 1``
        voxels. A zero radius keeps only the centre plane of that axis.
    device : torch.device or str, optional
        Device of the result (default CPU).

    Returns
    -------
    torch.Tensor
        Bool tensor of shape ``(2 * floor(r_i) + 1 for r_i in radii)``.

    Notes
    -----
    The test is evaluated as ``sum_i x_i**2 * prod_{j != i} r_j**2 <=
    prod_j r_j**2`` in float64, which is exact for integer (and dyadic)
    radii, so ``ellipsoid((r,) * n)`` equals ``ball(r, n)``.

    Examples
    --------
    >>> ellipsoid((1, 2.5)).int()
    tensor([[0, 0, 1, 0, 0],
            [1, 1, 1, 1, 1],
            [0, 0, 1, 0, 0]], dtype=torch.int32)
    """
    if isinstance(radii, (str, bytes)) or not isinstance(radii, Sequence):
        raise TypeError(f"radii must be a sequence of numbers, one per axis, got {radii!r}")
    if len(radii) < 1:
        raise ValueError("radii must name at least one axis")
    values = []
    for r in radii:
        if isinstance(r, bool) or not isinstance(r, numbers.Real):
            raise TypeError(f"radii must contain real numbers, got {r!r}")
        r = float(r)
        if not math.isfinite(r) or r < 0:
            raise ValueError(f"radii must be finite and >= 0, got {tuple(radii)!r}")
        values.append(r)
    half = [math.floor(r) for r in values]
    squared = [r * r for r in values]
    # Axes of radius 0 hold only x_i = 0; leave them out of the products.
    positive = [i for i, r in enumerate(values) if r > 0]
    total = math.prod(squared[i] for i in positive)
    lhs = torch.zeros([2 * h + 1 for h in half], dtype=torch.float64, device=device)
    for i in positive:
        x = torch.arange(-half[i], half[i] + 1, dtype=torch.float64, device=device)
        x = x.view([-1 if axis == i else 1 for axis in range(len(values))])
        lhs = lhs + x * x * math.prod(squared[j] for j in positive if j != i)
    return lhs <= total


def _check_shapes(shapes) -> tuple[str, ...]:
    if isinstance(shapes, str):
        shapes = (shapes,)
    if not isinstance(shapes, Sequence) or len(shapes) == 0:
        raise ValueError(f"shapes must be a non-empty sequence of names from {SHAPES}, got {shapes!r}")
    for name in shapes:
        if not isinstance(name, str) or name not in _POWERS:
            raise ValueError(f"shapes: unknown shape {name!r}, expected one of {SHAPES}")
    return tuple(shapes)


def _check_radius_range(radius) -> tuple[int, int]:
    if isinstance(radius, Sequence) and not isinstance(radius, str):
        if len(radius) != 2:
            raise ValueError(f"radius must be an int or a (low, high) pair, got {radius!r}")
        low = check_int(radius[0], "radius low", 0)
        high = check_int(radius[1], "radius high", 0)
        if low > high:
            raise ValueError(f"radius range must have low <= high, got {tuple(radius)!r}")
        return low, high
    value = check_int(radius, "radius", 0)
    return value, value


def _resolve_device(device, generator) -> torch.device:
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator or None, got {type(generator).__name__}")
    if device is None:
        return generator.device if generator is not None else torch.device("cpu")
    device = torch.device(device)
    if generator is not None and generator.device.type != device.type:
        raise ValueError(
            f"generator is on {generator.device} but device is {device}; "
            "draws come from the generator's device"
        )
    return device


def random_footprints(batch_size: int, shapes: Sequence[str] = SHAPES,
                      radius: int | tuple[int, int] = (1, 3), ndim: int = 3, *,
                      generator: torch.Generator | None = None,
                      device=None) -> RandomFootprints:
    """Draw one structuring element per sample: a random shape and radius.

    Parameters
    ----------
    batch_size : int
        Number of samples ``B``, ``>= 0``.
    shapes : sequence of str, optional
        Shapes to draw from, uniformly: ``"ball"`` (:func:`ball`),
        ``"cube"`` (:func:`cube` of width ``2 * radius + 1``) and
        ``"cross"`` (:func:`cross`). A repeated name is drawn more often.
    radius : int or (int, int), optional
        A fixed radius, or an inclusive ``(low, high)`` range drawn uniformly
        (default ``(1, 3)``); radii are ``>= 0``.
    ndim : int, optional
        Number of spatial dimensions of the elements, ``>= 1`` (default 3).
    generator : torch.Generator, optional
        Source of the draws, on the result's device. Without one, torch's
        default generator of that device is used, so ``torch.manual_seed``
        makes the draws reproducible.
    device : torch.device or str, optional
        Device of the results; defaults to the generator's device, else CPU.

    Returns
    -------
    RandomFootprints
        ``(footprints (B, *k) bool, shape_index (B,) int64, radius (B,) int64)``
        with ``k = 2 * high + 1`` on every axis and each element centred in
        its box. ``shape_index`` indexes ``shapes``.

    Notes
    -----
    ``shape_index`` is drawn first, then ``radius``, each with one
    ``torch.randint`` call for the whole batch. The stack is built on the
    device by :func:`footprints_from_params`, so a draw can be replayed.
    The result is a per-sample ``(B, *k)`` element for ``morphaug.ndimage``.

    Examples
    --------
    >>> g = torch.Generator().manual_seed(0)
    >>> draw = random_footprints(4, radius=(1, 2), ndim=2, generator=g)
    >>> draw.footprints.shape, draw.shape_index.shape, draw.radius.dtype
    (torch.Size([4, 5, 5]), torch.Size([4]), torch.int64)
    """
    batch_size = check_int(batch_size, "batch_size", 0)
    shapes = _check_shapes(shapes)
    low, high = _check_radius_range(radius)
    ndim = check_int(ndim, "ndim", 1)
    device = _resolve_device(device, generator)
    shape_index = torch.randint(0, len(shapes), (batch_size,), generator=generator, device=device)
    radii = torch.randint(low, high + 1, (batch_size,), generator=generator, device=device)
    footprints = footprints_from_params(shape_index, radii, shapes, high, ndim)
    return RandomFootprints(footprints, shape_index, radii)


def footprints_from_params(shape_index: torch.Tensor, radius: torch.Tensor,
                           shapes: Sequence[str], max_radius: int,
                           ndim: int = 3) -> torch.Tensor:
    """Rebuild a stack of footprints from per-sample shape indices and radii.

    Parameters
    ----------
    shape_index : torch.Tensor
        ``(B,)`` integer index of each sample's shape in ``shapes``.
    radius : torch.Tensor
        ``(B,)`` integer radius of each sample, ``0 <= radius <= max_radius``,
        on ``shape_index``'s device.
    shapes : sequence of str
        Shape names (see :func:`random_footprints`).
    max_radius : int
        Half-width of the common box: the result is ``(B, *k)`` with
        ``k = 2 * max_radius + 1`` on every axis.
    ndim : int, optional
        Number of spatial dimensions (default 3).

    Returns
    -------
    torch.Tensor
        ``(B, *k)`` bool on ``shape_index``'s device, each element centred.

    Notes
    -----
    On CPU the values of ``shape_index`` and ``radius`` are checked against
    their ranges; on an accelerator they are not, since reading them back
    would be a host sync: an out-of-range index is an indexing error there
    (a device-side assert on CUDA) and an out-of-range radius is cut by the box.
    Nor are they under ``torch.compile`` (a data-dependent branch).

    Examples
    --------
    >>> stack = footprints_from_params(torch.tensor([0, 2]), torch.tensor([1, 1]),
    ...                                SHAPES, max_radius=2, ndim=2)
    >>> bool((stack[0, 1:4, 1:4] == ball(1, 2)).all())
    True
    """
    shapes = _check_shapes(shapes)
    max_radius = check_int(max_radius, "max_radius", 0)
    ndim = check_int(ndim, "ndim", 1)
    for name, value in (("shape_index", shape_index), ("radius", radius)):
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
        if value.dtype.is_floating_point or value.dtype.is_complex or value.dtype == torch.bool:
            raise TypeError(f"{name} must have an integer dtype, got {value.dtype}")
        if value.ndim != 1:
            raise ValueError(f"{name} must be 1-D (B,), got shape {tuple(value.shape)}")
    if shape_index.shape != radius.shape:
        raise ValueError(
            f"shape_index {tuple(shape_index.shape)} and radius {tuple(radius.shape)} "
            "must have the same shape"
        )
    if shape_index.device != radius.device:
        raise ValueError(f"shape_index is on {shape_index.device} but radius is on {radius.device}")
    device = shape_index.device
    if device.type == "cpu" and not torch.compiler.is_compiling():
        if ((shape_index < 0) | (shape_index >= len(shapes))).any():
            raise ValueError(f"shape_index values must lie in [0, {len(shapes) - 1}]")
        if ((radius < 0) | (radius > max_radius)).any():
            raise ValueError(f"radius values must lie in [0, max_radius={max_radius}]")
    metrics = _metrics(max_radius, ndim, device)
    table = torch.stack([metrics[name] for name in shapes])          # (S, *k)
    powers = to_device(torch.tensor([_POWERS[name] for name in shapes]), device)
    index = shape_index.long()
    radius = radius.long()
    threshold = radius ** powers[index]                                # (B,)
    return table[index] <= threshold.view(-1, *([1] * ndim))
