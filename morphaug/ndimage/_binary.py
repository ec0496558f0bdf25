"""Binary morphology: SciPy's ``binary_*`` functions on ``(B, C, *spatial)`` tensors.

Options shared by the binary functions
--------------------------------------
input
    A tensor ``(B, C, *spatial)`` of any real dtype; nonzero (NaN included,
    as in SciPy) is true. It is never modified.
structure
    Boolean element (nonzero is true) with ``len(axes)`` dimensions, shared
    ``(*k)``, per sample ``(B, *k)`` or per sample and channel ``(B, C, *k)``.
    ``None`` is ``generate_binary_structure(len(axes), 1)`` (the cross).
    Every axis of it may have any length; an all-false element erodes to all
    true and dilates to all false.
origin
    Shift of the element, an int or one per filtered axis, in
    ``[-(k // 2), (k - 1) // 2]`` for an element of length ``k`` (SciPy does
    not check this range and fails or misbehaves outside it; here it is a
    ``ValueError``).
iterations
    An int. The operation is repeated ``iterations`` times; below 1 it is
    repeated until the result stops changing.
mask
    Optional, of the input's shape or its spatial shape (nonzero is true):
    only the voxels where it is true are changed; elsewhere the output equals
    the input, in every iteration.
border_value
    An int: value of the voxels outside the input (nonzero is 1).
output
    ``None`` (a new ``torch.bool`` tensor), a ``torch.dtype`` (a new tensor
    of that dtype; SciPy ignores a dtype and returns ``bool``) or a tensor of
    the input's shape and device, of any real dtype, that receives the
    result and is returned (SciPy's ``output`` array).
brute_force
    Accepted and ignored: there is one algorithm, whose results are SciPy's
    ``brute_force=True`` ones (see "SciPy parity").
axes
    Spatial axes to filter (``0 .. S-1``, negatives from the end); the
    others are processed independently, slice by slice. As in SciPy, the
    element's dimensions belong to the filtered axes in increasing order,
    whatever the order of ``axes``, while ``origin[i]`` belongs to
    ``axes[i]`` when ``axes`` leaves some spatial axis out. With unsorted
    ``axes`` SciPy's dilation can move the origin off the element (it pairs
    the even-length correction with dimension ``i`` of the element, not with
    the axis of ``origin[i]``), where its result is undefined: a ``ValueError``.

Batching
--------
Every ``(b, c)`` slice is processed as SciPy processes that slice alone, with
its own element (per-sample elements) and mask, in one vectorised pass over
the batch: no Python loop over samples.

SciPy parity
------------
Results are identical to SciPy's (bool), including ``border_value``,
``mask``, ``origin`` and even-length elements. SciPy's default
``brute_force=False`` algorithm for ``iterations != 1`` (used when the
element's centre is true) disagrees with its own definition, and with
``brute_force=True``, when ``origin`` is not zero, and can crash there (as it
can when the element is longer than the input along an axis); the results
here are the ``brute_force=True`` ones. Both agree for ``origin=0``, so
``binary_propagation`` and ``binary_fill_holes`` match SciPy exactly there.
When ``iterations < 1`` and the repeated operation never settles (possible
only when the element's centre is false, e.g. ``[1, 0, 1]``), SciPy loops
forever; here a ``RuntimeError`` is raised once the cycle is detected.

Host syncs
----------
One operation (``iterations=1``) never syncs. Repeated operations run on the
device in chunks of steps (4 steps first, then twice as many each time, up to
64) and read back one flag per chunk, to stop at a fixpoint: one host sync per
chunk, none when ``1 <= iterations <= 4``. For ``iterations < 1`` (so
``binary_propagation`` and ``binary_fill_holes``) with an element that holds
its centre and is symmetric in every sample (any
``generate_binary_structure``, ball or box of odd size with ``origin=0``),
the torch backend finds the fixpoint by labelling connected components (min-label
propagation with hooking and pointer jumping, int64 labels: a few int64 copies of
the input in memory), which settles in about 5 to 7 rounds whatever the length
of the paths, with a host sync after round 4 and then every 2 rounds (the
native CUDA kernel: one sync per two rounds of sweeps over the axes). Other
elements iterate plain steps, as SciPy does; an element given as an
accelerator tensor is never read back, so it always takes that path.

Backends
--------
Each public function normalises its arguments and then calls
:func:`_binary_erosion`, SciPy's private worker on normalised arguments; it is
the one place where a backend is chosen: propagation to a fixpoint (``iterations < 1``,
binary_propagation, binary_fill_holes) with a symmetric, centre-holding element runs
on the native propagation kernel where it is built (CPU: one flood fill per slice;
CUDA: sweeps along the axes until one changes nothing, a host sync every two
rounds over the axes); a centred Euclidean ball (one step),
cross or box (any ``iterations >= 1``) with ``border_value=0`` and no mask on the
native ball kernel (``_ops.kernels.ball_morphology``); everything else on the torch backend.
"""

from __future__ import annotations

import itertools
import operator

import torch

from .. import _ops, _sync
from ._normalize import (
    foreground,
    check_input,
    check_output,
    finish_output,
    normalize_axes,
    normalize_element,
    normalize_iterations,
    normalize_mask,
    normalize_origin,
    validate_origin,
)
from ._shift import element_offsets, pad, shifted
from ._structure import generate_binary_structure

__all__ = [
    "binary_erosion",
    "binary_dilation",
    "binary_opening",
    "binary_closing",
    "binary_hit_or_miss",
    "binary_propagation",
    "binary_fill_holes",
]

#: Chunk sizes (steps between two host syncs) of repeated steps, then of
#: component-labelling rounds (which settle in about 5 to 7 rounds).
_STEP_CHUNKS = (4, 8, 16, 32, 64)
_ROUND_CHUNKS = (4, 2)


class _Element:
    """A normalised structuring element, in the form of SciPy's ``_binary_erosion``.

    ``tensor`` is ``(B|1, C|1, *k)`` bool on the input's device; ``host`` is
    the same on the CPU when it can be read without a host sync (the element
    was not given as an accelerator tensor), else ``None``.

    As in SciPy, the element's dimensions follow the filtered axes in
    increasing order (``self.axes``), whatever the order of ``axes``, while
    ``origin[i]`` belongs to ``axes[i]`` when ``axes`` is a strict subset of
    the ``rank`` spatial axes (for all axes, to axis ``i``). ``self.origin``
    holds the result per ``self.axes``. Position ``j`` of the element reads
    the input at ``p + j - centre``, with ``centre = k // 2 + origin``.
    """

    def __init__(self, tensor, host, axes, origin, rank, origin_name="origin"):
        self.tensor = tensor
        self.host = host
        # the arguments as SciPy pairs them, to build the reflection and complement
        self.given = (tuple(axes), tuple(origin), rank, origin_name)
        self.rank = rank
        self.axes = tuple(sorted(axes))
        self.shape = tuple(tensor.shape[2:])
        if len(axes) < rank:
            by_axis = dict(zip(axes, origin))
            origin = [by_axis[axis] for axis in self.axes]
        validate_origin(origin, self.shape, origin_name)
        self.origin = tuple(origin)
        self.centre = tuple(k // 2 + o for k, o in zip(self.shape, self.origin))
        self.pads = [(c, k - 1 - c) for c, k in zip(self.centre, self.shape)]
        self.terms = self._terms()

    @classmethod
    def from_argument(cls, structure, input, axes, origin, name="structure",
                      origin_name="origin") -> "_Element":
        n_axes = len(axes)
        if structure is None:
            structure = generate_binary_structure(n_axes, 1)
        if isinstance(structure, torch.Tensor) and structure.device.type != "cpu":
            host = None
            tensor = normalize_element(structure, input, n_axes, name, torch.bool)
        else:  # normalise on the CPU (a (B, C) stand-in input gives the batch shape)
            stand_in = torch.empty(input.shape[0], input.shape[1], 0)
            host = normalize_element(structure, stand_in, n_axes, name, torch.bool)
            tensor = host.to(input.device)
        origin = normalize_origin(origin, n_axes, origin_name)
        return cls(tensor, host, axes, origin, input.ndim - 2, origin_name)

    def reflected(self) -> "_Element":
        """The element ``binary_dilation`` erodes with, as SciPy builds it:
        reflected, and ``origin[i]`` negated, minus 1 if dimension ``i`` of the
        element has even length (``i`` counts in the order of ``axes``)."""
        axes, origin, rank, origin_name = self.given
        dims = list(range(2, self.tensor.ndim))
        origin = [-o - (1 - k % 2) for o, k in zip(origin, self.shape)]
        host = None if self.host is None else self.host.flip(dims)
        return _Element(self.tensor.flip(dims), host, axes, origin, rank, origin_name)

    def complement(self, origin, origin_name) -> "_Element":
        """``~element`` at ``origin`` (in the order of ``axes``): hit-or-miss's default."""
        axes, _, rank, _ = self.given
        host = None if self.host is None else ~self.host
        return _Element(~self.tensor, host, axes, origin, rank, origin_name)

    def _terms(self):
        """``(position, weight)`` for every position some sample uses.

        ``weight`` is ``None`` when every sample uses the position, else the
        per-sample flags ``(B|1, C|1, 1, ...)`` (one 1 per spatial axis) to
        AND with the shifted view.
        An accelerator element is never read: all positions, all weighted.
        """
        ones = (1,) * self.rank
        terms = []
        for position in element_offsets(self.tensor if self.host is None else self.host):
            index = (slice(None), slice(None)) + position
            if self.host is not None and bool(self.host[index].all()):
                terms.append((position, None))
            else:
                terms.append((position, self.tensor[index].reshape(*self.tensor.shape[:2], *ones)))
        return terms

    def used_by_all(self, position) -> bool:
        """Whether every sample's element holds ``position`` (known on the host)."""
        if self.host is None or any(not 0 <= j < k for j, k in zip(position, self.shape)):
            return False
        return bool(self.host[(slice(None), slice(None)) + tuple(position)].all())


def _border(border_value) -> bool:
    if isinstance(border_value, torch.Tensor):
        raise TypeError(f"border_value must be an int, got a tensor {border_value!r}")
    try:
        return bool(operator.index(border_value))
    except TypeError:
        raise TypeError(
            f"border_value must be an int (nonzero is 1), got {border_value!r}"
        ) from None


def _arguments(input, structure, iterations, mask, output, border_value, origin, axes):
    """Normalised arguments shared by erosion, dilation, opening and closing."""
    input = check_input(input)
    axes = normalize_axes(axes, input.ndim - 2)
    element = _Element.from_argument(structure, input, axes, origin)
    iterations = normalize_iterations(iterations)
    mask = normalize_mask(mask, input)
    output = check_output(output, input)
    return foreground(input), element, iterations, mask, _border(border_value), output


# --------------------------------------------------------------------------
# Workers on normalised arguments (bool tensors and an _Element).
# --------------------------------------------------------------------------

def _binary_erosion(x, element, iterations, mask, border, invert):
    """SciPy's ``_binary_erosion`` on normalised arguments; the backend switch.

    ``invert=False`` erodes: the AND of ``x`` over the element's positions.
    ``invert=True`` is the OR instead (``binary_dilation`` passes the
    reflected element). ``x`` and ``mask`` are ``(B, C, *spatial)`` bool.
    """
    return _TABLES[invert](x, x, element, iterations, mask, border, invert)


def _iterated_ball(x, element, iterations, mask, border) -> tuple[str, int] | None:
    """``(metric, radius)`` of the ball that ``iterations`` steps of ``element`` make, when the
    native ball kernel takes the call (border 0, no mask; radii up to 127 on CPU), else None."""
    ball = _ball_of(element)
    if ball is None or mask is not None or border or iterations < 1:
        return None
    metric, radius = ball
    if metric == "euclidean" and iterations > 1:
        return None  # an iterated Euclidean ball is no Euclidean ball
    radius *= iterations  # iterated L1 / L-infinity balls add their radii
    if radius > _ops.kernels.BALL_MAX_RADIUS and x.device.type == "cpu":
        return None
    return metric, radius


def _propagate_case(x, element, iterations, mask, border, invert):
    if not invert:  # erosion = complement of the dilation of the complement
        return ~_propagate_native(~x, element, mask, not border)
    return _propagate_native(x, element, mask, border)


def _ball_case(x, element, iterations, mask, border, invert):
    metric, radius = _iterated_ball(x, element, iterations, mask, border)
    return _ball_native(x, metric, radius, erode=not invert)


def _table(op: str) -> _ops.Table:
    """binary_erosion's or binary_dilation's dispatch table (and so every binary op's)."""
    return _ops.Table(op, [
        _ops.Case("iterations < 1 with a centred, symmetric element read on the host", "propagate",
                  lambda x, element, iterations, mask, border, invert: iterations < 1 and _symmetric(element),
                  _propagate_case),
        _ops.Case("a centred ball, cross or box over every axis read on the host (iterated: cross or box), "
                  "border_value 0, no mask", "ball_morphology",
                  lambda x, element, iterations, mask, border, invert: _iterated_ball(
                      x, element, iterations, mask, border) is not None,
                  _ball_case),
    ], _binary_erosion_torch)


def _ball_of(element) -> tuple[str, int] | None:
    """``(metric, r)`` when every slice's element is the same centred radius-``r``
    ball over all spatial axes: ``footprints.cross`` (taxicab; SciPy's
    connectivity-1 structure for ``r = 1``), a full box of side ``2r + 1``
    (chessboard) or ``footprints.ball`` (euclidean); else None.

    With border value 0 and no mask, ``iterations=k`` of a cross or box is the
    ball of radius ``k r`` of its metric (shortest lattice paths between voxels
    of a box stay in the box), and one step of any of them is the ball itself:
    the native ``ball_morphology`` kernel computes all of these exactly.
    """
    rank, shape = element.rank, element.shape
    if (element.host is None or len(element.axes) != rank or any(element.origin)
            or len(set(shape)) != 1 or shape[0] % 2 == 0):
        return None
    radius = shape[0] // 2
    if radius == 0:
        return None
    host = element.host
    offsets = torch.stack(torch.meshgrid(*[torch.arange(-radius, radius + 1)] * rank, indexing="ij"))
    for metric, ball in (("chessboard", torch.ones(shape, dtype=torch.bool)),
                         ("taxicab", offsets.abs().sum(0) <= radius),
                         ("euclidean", (offsets ** 2).sum(0) <= radius ** 2)):
        if bool((host == ball).all()):
            return metric, radius
    return None


def _ball_native(x, metric, radius, erode):
    """``_ops.kernels.ball_morphology`` with one radius, metric and op for every slice."""
    lead = dict(size=x.shape[:2], device=x.device)
    code = _ops.kernels.BALL_METRIC_CODES[metric]
    return _ops.kernels.ball_morphology(x, torch.full(fill_value=radius, dtype=torch.long, **lead),
                                        torch.full(fill_value=code, dtype=torch.long, **lead),
                                        torch.full(fill_value=erode, dtype=torch.bool, **lead))


def _propagate_native(x, element, mask, border):
    """The propagation kernel of ``morphaug._C`` (``_ops.kernels.propagate``) for a symmetric element."""
    return _ops.kernels.propagate(x, mask, *_flood_element(element, x), border)


def _flood_element(element, x):
    """``(weights, offsets)`` of a symmetric element for ``_ops.kernels.propagate`` / ``fill_holes``."""
    positions = [position for position, _ in element.terms]
    offsets = []
    for position in positions:
        offset = [0] * (x.ndim - 2)
        for axis, j, c in zip(element.axes, position, element.centre):
            offset[axis] = j - c
        offsets.append(offset)
    index = (slice(None), slice(None))
    weights = torch.stack([element.tensor[index + p] for p in positions], dim=-1)
    return weights.expand(x.shape[0], x.shape[1], len(positions)), offsets


def _binary_erosion_torch(x, element, iterations, mask, border, invert):
    # Erosion is the complement of the OR of the complement, with the complement
    # border (duality), mask included: one OR worker serves both.
    if not invert:
        return ~_binary_erosion_torch(~x, element, iterations, mask, not border, True)
    if iterations < 1 and _symmetric(element):
        return _propagate(x, element, mask, border)

    def step(state):
        return _dilation_step(state, element, mask, border)

    return _repeat(step, x, iterations, _STEP_CHUNKS)


def _dilation_step(x, element, mask, border):
    """One OR step: ``out[p] = any(x[p + j - centre] for j in element)``, masked."""
    axes = element.axes
    padded = pad(x, axes, element.pads, ["constant"] * len(axes), border)
    out = torch.zeros_like(x)
    for position, weight in element.terms:
        view = shifted(padded, axes, position, x.shape)
        out |= view if weight is None else view & weight
    return out if mask is None else torch.where(mask, out, x)


def _repeat(step, x, iterations, chunks):
    """``step`` applied ``iterations`` times, or until nothing changes if ``< 1``.

    Steps run in chunks of the sizes in ``chunks`` (the last one repeats);
    after each chunk one host sync reads whether its last step changed
    anything (a fixpoint: any further step is a no-op, so stopping early is
    exact). Without a count, a cycle (the sequence returns to an earlier state
    without settling) raises: Brent's cycle detection on chunk boundaries.
    """
    remaining = iterations if iterations >= 1 else None
    sizes = itertools.chain(chunks, itertools.repeat(chunks[-1]))
    checkpoint, since, horizon = x, 0, 1
    while True:
        count = next(sizes) if remaining is None else min(next(sizes), remaining)
        for _ in range(count - 1):
            x = step(x)
        previous, x = x, step(x)
        if remaining is not None:
            remaining -= count
            if remaining == 0:
                return x
        stable, repeated = _sync.host_read(torch.stack([(previous == x).all(), (checkpoint == x).all()]),
                                           "binary fixpoint")
        if stable:
            return x
        if repeated and remaining is None:
            raise RuntimeError(
                "iterations < 1: the repeated binary operation cycles and never settles "
                "(its structure's centre is false); SciPy would loop forever"
            )
        since += 1
        if since == horizon:
            checkpoint, since, horizon = x, 0, 2 * horizon


def _propagate(x, element, mask, border):
    """Fixpoint of the masked OR step for a centred, symmetric element.

    The step is then extensive and monotone, and its offsets join voxels
    both ways, so the fixpoint is ``x`` plus the masked voxels whose
    connected component (masked voxels joined by element offsets) holds a
    seed: a masked voxel that one OR step makes true. Components are found
    by min-label propagation with hooking and pointer jumping, which settles
    in a few rounds (about logarithmic in the component size in practice),
    not one round per voxel of the longest path. Labels are slots of a table:
    0 means seeded, ``i + 1`` voxel ``i``, ``n + 1`` outside the mask; a
    voxel's label is always a slot of its own component (or 0) whose label is
    no larger, so reading the table through itself (pointer jumping) is safe.
    """
    n = x.numel()
    outside = n + 1
    if mask is None:
        mask = torch.ones_like(x)
    seeds = mask & _dilation_step(x, element, None, border)
    slots = torch.arange(1, n + 1, device=x.device).view(x.shape)
    labels = torch.where(seeds, 0, torch.where(mask, slots, outside))
    axes = element.axes
    modes = ["constant"] * len(axes)
    ends = (labels.new_zeros(1), labels.new_full((1,), outside))

    def round_(labels):
        padded = pad(labels, axes, element.pads, modes, outside)
        low = labels
        for position, weight in element.terms:
            view = shifted(padded, axes, position, x.shape)
            low = torch.minimum(low, view if weight is None else torch.where(weight, view, outside))
        low = torch.where(mask, low, outside).flatten()
        table = torch.cat([ends[0], low, ends[1]])
        table.scatter_reduce_(0, labels.flatten(), low, "amin")  # hook each root
        table = table.take(table)  # pointer jumping, twice
        table = table.take(table)
        return table[1:-1].view(x.shape)

    labels = _repeat(round_, labels, 0, _ROUND_CHUNKS)
    return torch.where(mask, labels == 0, x)


def _symmetric(element) -> bool:
    """Whether every sample's element holds its centre and ``-d`` with each offset ``d``."""
    if not element.used_by_all(element.centre):
        return False
    host = element.host.flatten(0, 1)
    for position, _ in element.terms:
        mirror = tuple(2 * c - j for c, j in zip(element.centre, position))
        if any(not 0 <= m < k for m, k in zip(mirror, element.shape)):
            return False
        if not torch.equal(host[(slice(None),) + position], host[(slice(None),) + mirror]):
            return False
    return True


_TABLES = {False: _table("binary_erosion"), True: _table("binary_dilation")}


# --------------------------------------------------------------------------
# Public functions: normalise, then call _binary_erosion.
# --------------------------------------------------------------------------


def binary_erosion(input, structure=None, iterations=1, mask=None, output=None,
                   border_value=0, origin=0, brute_force=False, *, axes=None):
    """Multidimensional binary erosion with a given structuring element.

    A voxel stays true when every position of the element, centred on it,
    falls on a true voxel (outside the input: ``border_value``).

    Parameters
    ----------
    input : torch.Tensor
        ``(B, C, *spatial)``, any real dtype; nonzero is true.
    structure : array_like, optional
        Element ``(*k)``, ``(B, *k)`` or ``(B, C, *k)``; default: the cross
        ``generate_binary_structure(len(axes), 1)``.
    iterations : int, optional
        Repeat count; below 1, repeat until the result stops changing.
    mask : array_like, optional
        Only voxels where ``mask`` is true are changed.
    output : torch.Tensor or torch.dtype, optional
        Tensor receiving the result, or the dtype of a new one.
    border_value : int, optional
        Value of the voxels outside the input (0 or 1).
    origin : int or sequence of int, optional
        Placement of the element, per filtered axis.
    brute_force : bool, optional
        Accepted for compatibility; the result does not depend on it.
    axes : int or sequence of int, optional
        Spatial axes to erode along (default: all).

    Returns
    -------
    torch.Tensor
        ``(B, C, *spatial)``, ``torch.bool`` unless ``output`` says otherwise.

    Notes
    -----
    Batching, SciPy parity (exact; ``brute_force=True`` semantics), host
    syncs of repeated operations and every option in detail: see the module
    docstring of ``morphaug.ndimage._binary``.

    See Also
    --------
    scipy.ndimage.binary_erosion : the reference, applied to each ``(b, c)`` slice.

    Examples
    --------
    >>> import torch
    >>> from morphaug.ndimage import binary_erosion
    >>> x = torch.zeros(1, 1, 5, 5, dtype=torch.bool)
    >>> x[..., 1:4, 1:4] = True
    >>> binary_erosion(x)[0, 0].int()
    tensor([[0, 0, 0, 0, 0],
            [0, 0, 0, 0, 0],
            [0, 0, 1, 0, 0],
            [0, 0, 0, 0, 0],
            [0, 0, 0, 0, 0]], dtype=torch.int32)
    """
    x, element, iterations, mask, border, output = _arguments(
        input, structure, iterations, mask, output, border_value, origin, axes)
    result = _binary_erosion(x, element, iterations, mask, border, invert=False)
    return finish_output(result, output)


def binary_dilation(input, structure=None, iterations=1, mask=None, output=None,
                    border_value=0, origin=0, brute_force=False, *, axes=None):
    """Multidimensional binary dilation with a given structuring element.

    A voxel becomes true when some position of the reflected element,
    centred on it, falls on a true voxel (outside the input:
    ``border_value``).

    Parameters
    ----------
    input : torch.Tensor
        ``(B, C, *spatial)``, any real dtype; nonzero is true.
    structure : array_like, optional
        Element ``(*k)``, ``(B, *k)`` or ``(B, C, *k)``; default: the cross.
    iterations : int, optional
        Repeat count; below 1, repeat until the result stops changing.
    mask : array_like, optional
        Only voxels where ``mask`` is true are changed.
    output : torch.Tensor or torch.dtype, optional
        Tensor receiving the result, or the dtype of a new one.
    border_value : int, optional
        Value of the voxels outside the input (0 or 1).
    origin : int or sequence of int, optional
        Placement of the element, per filtered axis.
    brute_force : bool, optional
        Accepted for compatibility; the result does not depend on it.
    axes : int or sequence of int, optional
        Spatial axes to dilate along (default: all).

    Returns
    -------
    torch.Tensor
        ``(B, C, *spatial)``, ``torch.bool`` unless ``output`` says otherwise.

    Notes
    -----
    As in SciPy the element is reflected and ``origin`` negated, minus 1
    along even-length axes, so that dilation is the dual of erosion. See
    the module docstring of ``morphaug.ndimage._binary`` for batching,
    SciPy parity (exact) and host syncs.

    See Also
    --------
    scipy.ndimage.binary_dilation : the reference, applied to each ``(b, c)`` slice.

    Examples
    --------
    >>> import torch
    >>> from morphaug.ndimage import binary_dilation
    >>> x = torch.zeros(2, 1, 7, dtype=torch.bool)
    >>> x[:, :, 3] = True
    >>> structures = torch.tensor([[1, 1, 1], [1, 1, 0]])  # one per sample
    >>> binary_dilation(x, structures)[:, 0].int()
    tensor([[0, 0, 1, 1, 1, 0, 0],
            [0, 0, 1, 1, 0, 0, 0]], dtype=torch.int32)
    """
    x, element, iterations, mask, border, output = _arguments(
        input, structure, iterations, mask, output, border_value, origin, axes)
    result = _binary_erosion(x, element.reflected(), iterations, mask, border, invert=True)
    return finish_output(result, output)


def binary_opening(input, structure=None, iterations=1, output=None, origin=0,
                   mask=None, border_value=0, brute_force=False, *, axes=None):
    """Multidimensional binary opening: erosion, then dilation, by one element.

    Removes the parts of the foreground the element does not fit in.

    Parameters
    ----------
    input : torch.Tensor
        ``(B, C, *spatial)``, any real dtype; nonzero is true.
    structure : array_like, optional
        Element ``(*k)``, ``(B, *k)`` or ``(B, C, *k)``; default: the cross.
    iterations : int, optional
        The erosion, then the dilation, are each repeated this many times
        (below 1: until they stop changing).
    output : torch.Tensor or torch.dtype, optional
        Tensor receiving the result, or the dtype of a new one.
    origin : int or sequence of int, optional
        Placement of the element, per filtered axis.
    mask : array_like, optional
        Only voxels where ``mask`` is true are changed (in both steps).
    border_value : int, optional
        Value of the voxels outside the input, in both steps.
    brute_force : bool, optional
        Accepted for compatibility; the result does not depend on it.
    axes : int or sequence of int, optional
        Spatial axes to filter (default: all).

    Returns
    -------
    torch.Tensor
        ``(B, C, *spatial)``, ``torch.bool`` unless ``output`` says otherwise.

    Notes
    -----
    ``binary_dilation(binary_erosion(x, ...), ...)`` with the same arguments,
    as in SciPy; exact parity. See the module docstring of
    ``morphaug.ndimage._binary`` for batching and host syncs.

    See Also
    --------
    scipy.ndimage.binary_opening : the reference, applied to each ``(b, c)`` slice.

    Examples
    --------
    >>> import torch
    >>> from morphaug.ndimage import binary_opening
    >>> x = torch.tensor([[[0, 1, 0, 1, 1, 1, 0]]])
    >>> binary_opening(x).int()
    tensor([[[0, 0, 0, 1, 1, 1, 0]]], dtype=torch.int32)
    """
    x, element, iterations, mask, border, output = _arguments(
        input, structure, iterations, mask, output, border_value, origin, axes)
    eroded = _binary_erosion(x, element, iterations, mask, border, invert=False)
    result = _binary_erosion(eroded, element.reflected(), iterations, mask, border,
                             invert=True)
    return finish_output(result, output)


def binary_closing(input, structure=None, iterations=1, output=None, origin=0,
                   mask=None, border_value=0, brute_force=False, *, axes=None):
    """Multidimensional binary closing: dilation, then erosion, by one element.

    Fills the gaps of the foreground the element does not fit in.

    Parameters
    ----------
    input : torch.Tensor
        ``(B, C, *spatial)``, any real dtype; nonzero is true.
    structure : array_like, optional
        Element ``(*k)``, ``(B, *k)`` or ``(B, C, *k)``; default: the cross.
    iterations : int, optional
        The dilation, then the erosion, are each repeated this many times
        (below 1: until they stop changing).
    output : torch.Tensor or torch.dtype, optional
        Tensor receiving the result, or the dtype of a new one.
    origin : int or sequence of int, optional
        Placement of the element, per filtered axis.
    mask : array_like, optional
        Only voxels where ``mask`` is true are changed (in both steps).
    border_value : int, optional
        Value of the voxels outside the input, in both steps.
    brute_force : bool, optional
        Accepted for compatibility; the result does not depend on it.
    axes : int or sequence of int, optional
        Spatial axes to filter (default: all).

    Returns
    -------
    torch.Tensor
        ``(B, C, *spatial)``, ``torch.bool`` unless ``output`` says otherwise.

    Notes
    -----
    ``binary_erosion(binary_dilation(x, ...), ...)`` with the same arguments,
    as in SciPy (so with the default ``border_value=0`` the foreground
    touching the border is eroded back); exact parity. See the module
    docstring of ``morphaug.ndimage._binary`` for batching and host syncs.

    See Also
    --------
    scipy.ndimage.binary_closing : the reference, applied to each ``(b, c)`` slice.

    Examples
    --------
    >>> import torch
    >>> from morphaug.ndimage import binary_closing
    >>> x = torch.tensor([[[0, 1, 1, 0, 1, 1, 0]]])
    >>> binary_closing(x).int()
    tensor([[[0, 1, 1, 1, 1, 1, 0]]], dtype=torch.int32)
    """
    x, element, iterations, mask, border, output = _arguments(
        input, structure, iterations, mask, output, border_value, origin, axes)
    dilated = _binary_erosion(x, element.reflected(), iterations, mask, border,
                              invert=True)
    result = _binary_erosion(dilated, element, iterations, mask, border, invert=False)
    return finish_output(result, output)


def binary_hit_or_miss(input, structure1=None, structure2=None, output=None,
                       origin1=0, origin2=None, *, axes=None):
    """Multidimensional binary hit-or-miss transform.

    A voxel is true when ``structure1``, placed on it, fits in the
    foreground and ``structure2`` fits in the background.

    Parameters
    ----------
    input : torch.Tensor
        ``(B, C, *spatial)``, any real dtype; nonzero is true.
    structure1 : array_like, optional
        Element to fit in the foreground, ``(*k)``, ``(B, *k)`` or
        ``(B, C, *k)``; default: the cross. Outside the input is background.
    structure2 : array_like, optional
        Element to fit in the background (outside the input counts as
        background); default: the complement of ``structure1`` (per sample,
        for per-sample elements).
    output : torch.Tensor or torch.dtype, optional
        Tensor receiving the result, or the dtype of a new one.
    origin1 : int or sequence of int, optional
        Placement of ``structure1``, per filtered axis.
    origin2 : int or sequence of int, optional
        Placement of ``structure2``; default: ``origin1``.
    axes : int or sequence of int, optional
        Spatial axes to filter (default: all).

    Returns
    -------
    torch.Tensor
        ``(B, C, *spatial)``, ``torch.bool`` unless ``output`` says otherwise.

    Notes
    -----
    ``binary_erosion(x, structure1, origin=origin1)`` AND the absence of
    true voxels under ``structure2`` (not reflected) at ``origin2``, as in
    SciPy; exact parity. See the module docstring of
    ``morphaug.ndimage._binary`` for batching and the shared options.

    See Also
    --------
    scipy.ndimage.binary_hit_or_miss : the reference, applied to each ``(b, c)`` slice.

    Examples
    --------
    >>> import torch
    >>> from morphaug.ndimage import binary_hit_or_miss
    >>> x = torch.tensor([[[0, 1, 0, 0, 1, 1, 0]]])
    >>> binary_hit_or_miss(x, [0, 1, 0]).int()  # isolated true voxels
    tensor([[[0, 1, 0, 0, 0, 0, 0]]], dtype=torch.int32)
    """
    input = check_input(input)
    axes = normalize_axes(axes, input.ndim - 2)
    output = check_output(output, input)
    hit = _Element.from_argument(structure1, input, axes, origin1, "structure1", "origin1")
    if origin2 is None:
        origin2 = origin1
    if structure2 is None:
        miss = hit.complement(normalize_origin(origin2, len(axes), "origin2"), "origin2")
    else:
        miss = _Element.from_argument(structure2, input, axes, origin2, "structure2", "origin2")
    x = foreground(input)
    fits = _binary_erosion(x, hit, 1, None, False, invert=False)
    touches = _binary_erosion(x, miss, 1, None, False, invert=True)
    return finish_output(fits & ~touches, output)


def binary_propagation(input, structure=None, mask=None, output=None, border_value=0,
                       origin=0, *, axes=None):
    """Multidimensional binary propagation (reconstruction by dilation) within a mask.

    Dilates ``input`` inside ``mask`` until nothing changes: the result holds
    the voxels of ``mask`` connected (by the element) to a true voxel.

    Parameters
    ----------
    input : torch.Tensor
        ``(B, C, *spatial)`` seeds, any real dtype; nonzero is true.
    structure : array_like, optional
        Connectivity element ``(*k)``, ``(B, *k)`` or ``(B, C, *k)``;
        default: the cross.
    mask : array_like, optional
        Region to propagate in (input's shape or its spatial shape); outside
        it the output equals the input. Default: everywhere.
    output : torch.Tensor or torch.dtype, optional
        Tensor receiving the result, or the dtype of a new one.
    border_value : int, optional
        Value of the voxels outside the input (0 or 1).
    origin : int or sequence of int, optional
        Placement of the element, per filtered axis.
    axes : int or sequence of int, optional
        Spatial axes to propagate along (default: all).

    Returns
    -------
    torch.Tensor
        ``(B, C, *spatial)``, ``torch.bool`` unless ``output`` says otherwise.

    Notes
    -----
    ``binary_dilation(input, structure, -1, mask, output, border_value,
    origin)``, as in SciPy. Exact parity (for ``origin != 0`` with SciPy's
    ``brute_force=True`` result, see the module docstring of
    ``morphaug.ndimage._binary``). With an element that holds its centre and
    is symmetric (``d`` in it implies ``-d``, as the default), the native
    propagation kernel runs where it is built (CPU: one flood fill per slice;
    CUDA: sweeps along the axes), else the torch backend labels the connected
    components of the mask (min-label propagation with pointer jumping, a few
    host syncs); other elements repeat masked dilation steps.

    See Also
    --------
    scipy.ndimage.binary_propagation : the reference, applied to each ``(b, c)`` slice.

    Examples
    --------
    >>> import torch
    >>> from morphaug.ndimage import binary_propagation
    >>> seed = torch.tensor([[[0, 1, 0, 0, 0, 0, 0]]])
    >>> region = torch.tensor([1, 1, 1, 0, 1, 1, 0])
    >>> binary_propagation(seed, mask=region).int()
    tensor([[[1, 1, 1, 0, 0, 0, 0]]], dtype=torch.int32)
    """
    return binary_dilation(input, structure, -1, mask, output, border_value, origin, axes=axes)


def binary_fill_holes(input, structure=None, output=None, origin=0, *, axes=None):
    """Fill the holes in binary objects.

    Holes are the background voxels not connected (by the element) to the
    border of the input.

    Parameters
    ----------
    input : torch.Tensor
        ``(B, C, *spatial)``, any real dtype; nonzero is true.
    structure : array_like, optional
        Connectivity element of the background, ``(*k)``, ``(B, *k)`` or
        ``(B, C, *k)``; default: the cross.
    output : torch.Tensor or torch.dtype, optional
        Tensor receiving the result, or the dtype of a new one.
    origin : int or sequence of int, optional
        Placement of the element, per filtered axis.
    axes : int or sequence of int, optional
        Spatial axes to fill along (default: all; holes are then found in
        each slice along the other axes).

    Returns
    -------
    torch.Tensor
        ``(B, C, *spatial)``, ``torch.bool`` unless ``output`` says otherwise.

    Notes
    -----
    ``~binary_dilation(zeros, structure, -1, ~input, border_value=1,
    origin)``, as in SciPy; exact parity (for ``origin != 0`` with SciPy's
    ``brute_force=True`` result). NaN counts as foreground. With an element
    that holds its centre and is symmetric (as the default), the native fill
    kernel runs where it is built, else the torch backend labels the
    connected components of the background; other elements repeat masked
    dilation steps. See the module docstring of ``morphaug.ndimage._binary``
    for host syncs.

    See Also
    --------
    scipy.ndimage.binary_fill_holes : the reference, applied to each ``(b, c)`` slice.

    Examples
    --------
    >>> import torch
    >>> from morphaug.ndimage import binary_fill_holes
    >>> ring = torch.ones(1, 1, 4, 4)
    >>> ring[..., 1:3, 1:3] = 0
    >>> binary_fill_holes(ring).all().item()
    True
    """
    input = check_input(input)
    output = check_output(output, input)
    x = foreground(input)
    element = _Element.from_argument(structure, x, normalize_axes(axes, x.ndim - 2), origin)
    element = element.reflected()  # as binary_dilation builds it
    return finish_output(_FILL_HOLES(x, x, element, structure, origin, axes), output)


def _fill_holes_torch(x, element, structure, origin, axes):
    """SciPy's definition: the complement of the background reached from the border."""
    seeds = torch.zeros(x.shape, dtype=torch.bool, device=x.device)
    return ~binary_dilation(seeds, structure, -1, ~x, None, 1, origin, axes=axes)


_FILL_HOLES = _ops.Table("binary_fill_holes", [
    _ops.Case("a centred, symmetric element read on the host", "fill_holes",
              lambda x, element, structure, origin, axes: _symmetric(element),
              lambda x, element, structure, origin, axes: _ops.kernels.fill_holes(x, *_flood_element(element, x))),
], _fill_holes_torch)
