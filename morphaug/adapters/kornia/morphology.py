"""``kornia.morphology`` on morphaug's grey ops: a drop-in with Kornia 0.9's names and arguments.

``from morphaug.adapters.kornia.morphology import dilation, erosion, ...`` in place of
``from kornia.morphology import ...``: the same signatures, values, dtypes, gradients and
errors, computed by :func:`morphaug.ndimage.grey_dilation` / :func:`~morphaug.ndimage.grey_erosion`
(native kernels on the CPU, one pass per element row or van Herk lines for a full kernel, where
Kornia visits every kernel cell), on any spatial rank.

Kornia's arguments, as morphaug reads them
    ``kernel`` (non-zero: in the neighbourhood) is the footprint, ``structuring_element`` the
    non-flat structure (added before the maximum of :func:`dilation`, subtracted before the minimum
    of :func:`erosion`), ``origin`` the kernel cell on the output pixel (default ``k // 2`` per
    axis; SciPy's origin ``origin - k // 2``). :func:`dilation` reflects the kernel, as SciPy
    does; :func:`erosion` does not. ``border_type``: ``"geodesic"`` (pixels outside the image take
    no part: SciPy's ``constant`` with ``cval`` -inf for a dilation, +inf for an erosion),
    ``"constant"`` (``border_value``), ``"reflect"`` (SciPy's ``mirror``), ``"replicate"``
    (``nearest``), ``"circular"`` (``wrap``); ``reflect`` and ``circular`` take Kornia's (torch's)
    limits on the pad, a ``RuntimeError`` beyond them. ``max_val`` has no effect (as in Kornia
    0.9). ``engine`` is checked as Kornia checks it; every engine gives the exact result.
    The result has the dtype in which Kornia computes: the input's, promoted with a float
    ``kernel``'s (without ``structuring_element``) or with ``structuring_element``'s.
Spatial rank
    ``tensor`` is ``(B, C, *spatial)`` with one kernel axis per spatial axis: ``(B, C, H, W)``
    with a ``(k_h, k_w)`` kernel as in Kornia, and ``(B, C, D, H, W)`` with a 3-D kernel, or
    1-D, the same definitions on more or fewer axes. Kornia itself takes 2-D only.
Gradients
    With respect to ``tensor`` and ``structuring_element`` (``kernel`` only selects), as Kornia's
    ``unfold`` engine gives them, which ``"auto"`` uses for float32/float64 with autograd on the
    CPU and for everything on CUDA: each output's gradient goes to the one pixel and element
    cell that attain it, on ties the first with the last kernel axis slowest (the first in
    raster order of the kernel window for ``engine="convolution"``, as its ``conv2d`` gives).
    Kornia's ``shift`` engine (its ``"auto"`` choice for float16/bfloat16 with autograd on the
    CPU) splits a tie's gradient between the tied cells instead. Border pixels pass their
    gradient back through the padding, as ``torch.nn.functional.pad`` does.
Not here
    TorchScript (``torch.jit.script``) of these functions.

Example:
    >>> import torch
    >>> from morphaug.adapters.kornia.morphology import dilation, erosion
    >>> x = torch.zeros(1, 1, 5, 5)
    >>> x[..., 2, 2] = 1.0
    >>> dilation(x, torch.ones(3, 3))[0, 0]
    tensor([[0., 0., 0., 0., 0.],
            [0., 1., 1., 1., 0.],
            [0., 1., 1., 1., 0.],
            [0., 1., 1., 1., 0.],
            [0., 0., 0., 0., 0.]])
    >>> erosion(dilation(x, torch.ones(3, 3)), torch.ones(3, 3)).equal(x)
    True
"""

from __future__ import annotations

import dataclasses
import math
import operator

import numpy as np
import torch
import torch.nn.functional as F
from kornia.core.exceptions import BaseError, ShapeError, TypeCheckError, ValueCheckError

from ... import ndimage
from ..._checks import is_int

__all__ = ["dilation", "erosion", "opening", "closing", "gradient", "top_hat", "bottom_hat", "reconstruction"]

#: Kornia's border types and the SciPy mode each one is (geodesic: constant at the identity).
_MODES = {"geodesic": "constant", "constant": "constant", "reflect": "mirror", "replicate": "nearest",
          "circular": "wrap"}
_ENGINES = ("auto", "unfold", "convolution", "shift")


@dataclasses.dataclass(frozen=True)
class _Call:
    """One checked dilation or erosion: what the forward pass and the gradient both read."""

    included: torch.Tensor  # kernel != 0, on the kernel's device (a CPU one lets morphaug read it for free)
    origin: tuple[int, ...]  # Kornia's origin: the kernel cell on the output pixel
    border_type: str
    border_value: float
    dilate: bool
    raster_ties: bool  # engine="convolution": ties go to the first cell in raster order of the window

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.included.shape)

    @property
    def identity(self) -> float:
        return -math.inf if self.dilate else math.inf

    @property
    def pads(self) -> list[tuple[int, int]]:
        """Pixels read before and after each spatial axis (the dilation's window is reflected)."""
        if self.dilate:
            return [(k - o - 1, o) for k, o in zip(self.shape, self.origin)]
        return [(o, k - o - 1) for k, o in zip(self.shape, self.origin)]


def _check(tensor, kernel, structuring_element, origin, border_type, engine) -> tuple[int, ...]:
    """Kornia's checks, with its error types and messages, on any spatial rank; Kornia's origin."""
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"Input type is not a torch.Tensor. Got {type(tensor)}")
    if tensor.ndim < 3:
        raise ValueError(f"Input size must have 4 dimensions (B, C, *spatial: at least 3). Got {tensor.dim()}")
    if not tensor.is_floating_point():
        raise TypeError(f"Input image must have a floating-point dtype. Got {tensor.dtype}")
    if not isinstance(kernel, torch.Tensor):
        raise TypeError(f"Kernel type is not a torch.Tensor. Got {type(kernel)}")
    rank = tensor.ndim - 2
    if kernel.ndim != rank:
        raise ValueError(f"Kernel size must have {rank} dimensions, one per spatial axis of the input "
                         f"{tuple(tensor.shape)}. Got {kernel.dim()}")
    if structuring_element is not None:
        if not isinstance(structuring_element, torch.Tensor):
            raise TypeError(f"structuring_element must be a torch.Tensor or None. Got {type(structuring_element)}")
        if structuring_element.shape != kernel.shape:
            raise ValueError(f"`structuring_element` shape must match `kernel` shape. "
                             f"Got {structuring_element.shape} and {kernel.shape}.")
    if border_type not in _MODES:
        raise ValueError(f"Unknown `border_type`: {border_type}. Expected one of {list(_MODES)}.")
    if engine not in _ENGINES:
        raise NotImplementedError(f"engine {engine} is unknown, use 'auto', 'convolution', 'shift' or 'unfold'")
    if origin is None:
        return tuple(k // 2 for k in kernel.shape)
    if not isinstance(origin, (list, tuple)) or len(origin) != rank or not all(map(is_int, origin)):
        raise ValueError(f"origin must be a list of {rank} ints (a kernel cell), got {origin!r}")
    origin = tuple(map(operator.index, origin))
    if not all(0 <= o < k for o, k in zip(origin, kernel.shape)):
        raise ValueError(f"origin must be a cell of the kernel of shape {tuple(kernel.shape)}, got {list(origin)}")
    return origin


def _check_pads(call: _Call, spatial) -> None:
    """torch's limits on a ``reflect`` / ``circular`` pad, which Kornia's ``F.pad`` raises."""
    for n, (before, after) in zip(spatial, call.pads):
        if call.border_type == "reflect" and max(before, after) >= n:
            raise RuntimeError(f"border_type='reflect': the pad ({before}, {after}) that the kernel needs must be "
                               f"less than the input size {n} along every axis")
        if call.border_type == "circular" and max(before, after) > n:
            raise RuntimeError(f"border_type='circular': the pad ({before}, {after}) that the kernel needs must not "
                               f"exceed the input size {n} along any axis")


def _extremum(x: torch.Tensor, structure, call: _Call) -> torch.Tensor:
    """The dilation (erosion) by morphaug's grey op; ``x`` and ``structure`` in the compute dtype."""
    if call.included.device.type == "cpu" and not bool(call.included.any()):
        # an empty neighbourhood: the identity everywhere, as Kornia (SciPy refuses it)
        return torch.full_like(x, call.identity)
    op = ndimage.grey_dilation if call.dilate else ndimage.grey_erosion
    cval = call.identity if call.border_type == "geodesic" else call.border_value
    origin = [o - k // 2 for o, k in zip(call.origin, call.shape)]
    return op(x, footprint=call.included, structure=structure, mode=_MODES[call.border_type], cval=cval,
              origin=origin)


def _padded(x: torch.Tensor, call: _Call) -> torch.Tensor:
    """``x`` padded as Kornia pads it before its window reduction, by indexing (any rank)."""
    if call.border_type in ("geodesic", "constant"):
        value = call.identity if call.border_type == "geodesic" else call.border_value
        return F.pad(x, [p for pair in reversed(call.pads) for p in pair], value=value)
    for axis, (n, (before, after)) in enumerate(zip(x.shape[2:], call.pads)):
        index = torch.arange(-before, n + after, device=x.device)
        if call.border_type == "replicate":
            index = index.clamp(0, n - 1)
        elif call.border_type == "circular":
            index = index.remainder(n)
        else:  # reflect, without repeating the edge: period 2n - 2
            index = (n - 1) - ((index.abs() % max(2 * n - 2, 1)) - (n - 1)).abs()
        x = x.index_select(axis + 2, index)
    return x


def _window_positions(call: _Call):
    """The window cells in the order of Kornia's tie rule: unfold reduces the first kernel axis
    first, so the last axis is the slowest; the convolution engine's channels are in raster order."""
    positions = list(np.ndindex(*call.shape))
    return positions if call.raster_ties else sorted(positions, key=lambda p: p[::-1])


def _routed(grad, x, structure, out, call: _Call, needs):
    """The gradients of ``out`` for ``grad``: each output's to the first cell (Kornia's order) that
    attains it, through the pixel it reads (and its pad) and the element cell it adds.

    A cell outside the kernel is a candidate at the identity: it takes the outputs equal to the
    identity that no earlier cell took, and passes no gradient, as in Kornia. A kernel on the CPU
    is read on the host, so such cells cost one comparison; the NaN test (a NaN is the maximum
    and the minimum in Kornia) is skipped on the CPU where the result has no NaN.
    """
    with torch.enable_grad():
        leaf = x.detach().requires_grad_()
        padded = _padded(leaf, call)
    values = padded.detach()
    on_host = call.included.device.type == "cpu"
    nan = not on_host or out.device.type != "cpu" or bool(out.isnan().any())
    if structure is None and on_host and bool(call.included.all()):
        routed = _box_routed(grad, values, out, call, nan)
        element = None
    else:
        routed, element = _cells_routed(grad, values, structure, out, call, needs, nan)
    grad_x = None
    if needs[0]:
        (grad_x,) = torch.autograd.grad(padded, leaf, routed, create_graph=torch.is_grad_enabled())
    return grad_x, element


def _box_routed(grad, values, out, call: _Call, nan: bool) -> torch.Tensor:
    """:func:`_routed` for a full flat kernel, one axis at a time: the window's extreme is the extreme
    of 1-D extremes, reduced in the order of Kornia's tie rule (first axis first for ``unfold``, last
    first for ``convolution``), and each output's gradient goes back through the 1-D passes, last
    first, each time to the first cell that attains it: the same cell as in :func:`_cells_routed`,
    in ``sum(k)`` steps instead of ``prod(k)``."""
    axes = list(range(len(call.shape)))
    if call.raster_ties:
        axes.reverse()
    op = torch.maximum if call.dilate else torch.minimum
    stages = [values]
    for axis in axes[:-1]:
        dim, width = axis + 2, call.shape[axis]
        length = stages[-1].shape[dim] - width + 1
        reduced = stages[-1].narrow(dim, 0, length)
        for w in range(1, width):
            reduced = op(reduced, stages[-1].narrow(dim, w, length))
        stages.append(reduced)
    stages.append(out)
    for step in reversed(range(len(axes))):
        dim, source, result = axes[step] + 2, stages[step], stages[step + 1]
        length = result.shape[dim]
        routed = torch.zeros_like(source, dtype=grad.dtype)
        free = torch.ones(result.shape, dtype=torch.bool, device=result.device)
        for w in range(call.shape[axes[step]]):
            candidate = source.narrow(dim, w, length)
            hit = candidate == result
            if nan:
                hit |= candidate.isnan()
            hit &= free
            free ^= hit
            if call.raster_ties and step == 0:  # no gradient through infinite and NaN pixels, as above
                hit &= candidate.isfinite()
            routed.narrow(dim, w, length).add_(torch.where(hit, grad, 0))
        grad = routed
    return grad


def _cells_routed(grad, values, structure, out, call: _Call, needs, nan: bool):
    """:func:`_routed` cell by cell: the gradients w.r.t. the padded input and the element."""
    on_host = call.included.device.type == "cpu"
    routed = torch.zeros_like(values, dtype=grad.dtype)
    element = torch.zeros(call.shape, dtype=grad.dtype, device=grad.device) if needs[1] else None
    free = torch.ones(out.shape, dtype=torch.bool, device=out.device)
    sign = 1.0 if call.dilate else -1.0
    mask = call.included.to(out.device)
    at_identity = out == call.identity
    spatial = out.shape[2:]
    for window in _window_positions(call):
        cell = tuple(k - 1 - w for k, w in zip(call.shape, window)) if call.dilate else window
        view = (..., *(slice(w, w + n) for w, n in zip(window, spatial)))
        if on_host and not call.included[cell]:
            free ^= at_identity & free
            continue
        candidate = values[view]
        if structure is not None:
            candidate = candidate + sign * structure[cell]
        hit = candidate == out
        if nan:
            hit |= candidate.isnan()
        if not on_host:
            hit = torch.where(mask[cell], hit, at_identity)
        hit &= free
        free ^= hit
        if not on_host:
            hit &= mask[cell]
        if call.raster_ties:  # the convolution engine masks infinite and NaN pixels back in: no gradient
            hit &= values[view].isfinite()
        share = torch.where(hit, grad, 0)
        routed[view] += share
        if element is not None:
            element[cell] = sign * share.sum()
    return routed, element


class _MaxPlus(torch.autograd.Function):
    """A dilation or erosion on morphaug's kernels, differentiated as Kornia's ``unfold`` engine."""

    @staticmethod
    def forward(ctx, x, structure, call):
        out = _extremum(x, structure, call)
        ctx.save_for_backward(x, structure, out)
        ctx.call = call
        return out

    @staticmethod
    def backward(ctx, grad):
        x, structure, out = ctx.saved_tensors
        grad_x, grad_structure = _routed(grad, x, structure, out, ctx.call, ctx.needs_input_grad)
        if grad_structure is not None:
            grad_structure = grad_structure.to(structure.dtype)
        return grad_x, grad_structure, None


def _max_plus(tensor, kernel, structuring_element, origin, border_type, border_value, engine, dilate):
    """Kornia's dilation (``dilate``) or erosion, checked, in Kornia's compute dtype."""
    origin = _check(tensor, kernel, structuring_element, origin, border_type, engine)
    # a bool or integer kernel only selects; a float kernel (without structuring_element) or the
    # structuring element sets the compute dtype with the input's, as in Kornia
    if structuring_element is not None:
        dtype = torch.promote_types(tensor.dtype, structuring_element.dtype)
    else:
        dtype = torch.promote_types(tensor.dtype, kernel.dtype) if kernel.is_floating_point() else tensor.dtype
    x = tensor.to(dtype)
    structure = None if structuring_element is None else structuring_element.to(device=x.device, dtype=dtype)
    # Kornia pads before it promotes: the border value is rounded to the input's dtype
    border_value = torch.tensor(float(border_value), dtype=tensor.dtype).item()
    call = _Call(kernel != 0, origin, border_type, border_value, dilate,
                 engine == "convolution")
    _check_pads(call, x.shape[2:])
    if torch.is_grad_enabled() and (x.requires_grad or (structure is not None and structure.requires_grad)):
        return _MaxPlus.apply(x, structure, call)
    return _extremum(x, structure, call)


_ARGS = """
    Args:
        tensor: floating-point image ``(B, C, H, W)``, or ``(B, C, *spatial)`` of any spatial rank.
        kernel: the neighbourhood: its non-zero cells, ``(k_h, k_w)`` (one axis per spatial axis).
        structuring_element: non-flat element of the kernel's shape, or None (flat).
        origin: the kernel cell on the output pixel; default ``[k_h // 2, k_w // 2]``.
        border_type: ``"geodesic"`` (default), ``"constant"``, ``"reflect"``, ``"replicate"`` or
            ``"circular"``.
        border_value: the value past the edges with ``border_type="constant"``.
        max_val: no effect (Kornia 0.9's is kept for compatibility).
        engine: ``"auto"``, ``"unfold"``, ``"convolution"`` or ``"shift"``: the same exact result;
            ``"convolution"`` routes the gradient of a tie as Kornia's convolution engine does.

    Returns:
        the result, with the shape of ``tensor``, in Kornia's compute dtype.

    See the module notes (:mod:`morphaug.adapters.kornia.morphology`) for the semantics.
"""


def _documented(summary: str):
    def document(function):
        function.__doc__ = f"{summary}\n{_ARGS}"
        return function
    return document


@_documented("Dilation as ``kornia.morphology.dilation``: the maximum over the reflected kernel, plus the element.")
def dilation(tensor, kernel, structuring_element=None, origin=None, border_type="geodesic", border_value=0.0,
             max_val=1e4, engine="auto"):
    return _max_plus(tensor, kernel, structuring_element, origin, border_type, border_value, engine, True)


@_documented("Erosion as ``kornia.morphology.erosion``: the minimum over the kernel, less the element.")
def erosion(tensor, kernel, structuring_element=None, origin=None, border_type="geodesic", border_value=0.0,
            max_val=1e4, engine="auto"):
    return _max_plus(tensor, kernel, structuring_element, origin, border_type, border_value, engine, False)


@_documented("Opening as ``kornia.morphology.opening``: :func:`dilation` of the :func:`erosion`, same arguments.")
def opening(tensor, kernel, structuring_element=None, origin=None, border_type="geodesic", border_value=0.0,
            max_val=1e4, engine="auto"):
    args = (kernel, structuring_element, origin, border_type, border_value, max_val, engine)
    return dilation(erosion(tensor, *args), *args)


@_documented("Closing as ``kornia.morphology.closing``: :func:`erosion` of the :func:`dilation`, same arguments.")
def closing(tensor, kernel, structuring_element=None, origin=None, border_type="geodesic", border_value=0.0,
            max_val=1e4, engine="auto"):
    args = (kernel, structuring_element, origin, border_type, border_value, max_val, engine)
    return erosion(dilation(tensor, *args), *args)


@_documented("Morphological gradient as ``kornia.morphology.gradient``: :func:`dilation` minus :func:`erosion`.")
def gradient(tensor, kernel, structuring_element=None, origin=None, border_type="geodesic", border_value=0.0,
             max_val=1e4, engine="auto"):
    args = (kernel, structuring_element, origin, border_type, border_value, max_val, engine)
    return dilation(tensor, *args) - erosion(tensor, *args)


@_documented("White top hat as ``kornia.morphology.top_hat``: ``tensor`` minus its :func:`opening`.")
def top_hat(tensor, kernel, structuring_element=None, origin=None, border_type="geodesic", border_value=0.0,
            max_val=1e4, engine="auto"):
    return tensor - opening(tensor, kernel, structuring_element, origin, border_type, border_value, max_val, engine)


@_documented("Black top hat as ``kornia.morphology.bottom_hat``: the :func:`closing` minus ``tensor``.")
def bottom_hat(tensor, kernel, structuring_element=None, origin=None, border_type="geodesic", border_value=0.0,
               max_val=1e4, engine="auto"):
    return closing(tensor, kernel, structuring_element, origin, border_type, border_value, max_val, engine) - tensor


def reconstruction(seed, mask, kernel=None, method="dilation", num_iters=None, check_every=4, engine="auto"):
    """Grey reconstruction as ``kornia.morphology.reconstruction``: Kornia's loop on :func:`dilation`.

    Reconstruction by dilation repeats ``minimum(dilation(output, kernel), mask)`` from
    ``minimum(seed, mask)``, ``num_iters`` times or, with None, until a round of ``check_every``
    steps changes nothing (one host sync per round, as in Kornia); ``"erosion"`` is its dual.
    The kernel's centre is always in it (``skimage.morphology.reconstruction``'s convention).
    Values and gradients are Kornia's, each step being :func:`dilation`; any spatial rank.

    Args:
        seed: floating-point ``(B, C, H, W)`` (or ``(B, C, *spatial)``) start.
        mask: floating-point bound of ``seed``'s shape.
        kernel: odd-sized offsets a value spreads to per step (non-zero cells); default a 3 x 3 square.
        method: ``"dilation"`` or ``"erosion"``.
        num_iters: steps to run, or None: until nothing changes.
        check_every: steps between convergence checks (at least 1).
        engine: ``"auto"``, ``"unfold"`` or ``"shift"`` (``"convolution"`` is refused, as in Kornia).

    Returns:
        the reconstruction, in the promoted dtype of ``seed`` and ``mask``.
    """
    for name, value in (("seed", seed), ("mask", mask)):
        if not isinstance(value, torch.Tensor):
            raise TypeCheckError(f"{name}: not a Tensor type. Got: {type(value)}.")
    if seed.ndim < 3:
        raise ShapeError(f"seed must be (B, C, H, W) (or (B, C, *spatial)). Got {tuple(seed.shape)}")
    if seed.shape != mask.shape:
        raise ShapeError(f"Not same shape for tensors. Got: {seed.shape} and {mask.shape}")
    for name, value in (("seed", seed), ("mask", mask)):
        if not value.is_floating_point():
            raise BaseError(f"`{name}` must have a floating-point dtype. Got {value.dtype}.")
    if method not in ("dilation", "erosion"):
        raise BaseError(f"Unknown `method`: {method}. Expected 'dilation' or 'erosion'.")
    if engine == "convolution":
        raise ValueCheckError("Unsupported `engine`: convolution. Expected one of ['auto', 'unfold', 'shift'].")
    if engine not in ("auto", "unfold", "shift"):
        raise BaseError(f"Unsupported `engine`: {engine}. Expected one of ['auto', 'unfold', 'shift'].")
    if num_iters is not None and num_iters < 0:
        raise BaseError(f"`num_iters` must be non-negative. Got {num_iters}.")
    if check_every < 1:
        raise BaseError(f"`check_every` must be positive. Got {check_every}.")
    rank = seed.ndim - 2
    if kernel is None:
        kernel = torch.ones((3,) * rank, dtype=torch.bool)
    if not isinstance(kernel, torch.Tensor):
        raise TypeCheckError(f"kernel: not a Tensor type. Got: {type(kernel)}.")
    if kernel.ndim != rank:
        raise ShapeError(f"kernel must have {rank} dimensions, one per spatial axis. Got {tuple(kernel.shape)}")
    if any(k % 2 == 0 for k in kernel.shape):
        raise BaseError(f"Kernel sizes must be odd. Got {' x '.join(map(str, kernel.shape))}.")
    kernel = kernel != 0
    kernel[tuple(k // 2 for k in kernel.shape)] = True
    if method == "erosion":
        return -_reconstruct_up(-seed, -mask, kernel, num_iters, check_every, engine)
    return _reconstruct_up(seed, mask, kernel, num_iters, check_every, engine)


def _reconstruct_up(seed, mask, kernel, num_iters, check_every, engine):
    """Kornia's loop: geodesic dilations under ``mask``, a fixed count or until a round raises nothing."""
    output = torch.minimum(seed, mask)
    if num_iters is not None:
        for _ in range(num_iters):
            output = torch.minimum(dilation(output, kernel, engine=engine), mask)
        return output
    changed = True
    while changed:
        previous = output
        for _ in range(check_every):
            output = torch.minimum(dilation(output, kernel, engine=engine), mask)
        changed = bool((output > previous).any())  # Kornia's convergence test: one sync per round
    return output
