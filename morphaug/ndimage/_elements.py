"""Normalised elements, shared by the public ndimage modules and the torch backend.

:class:`Filter` is a grey op's min/max filter as ``morphaug.ndimage._grey_filter``
normalises it; :class:`Element` a binary op's structuring element as
``morphaug.ndimage._binary_backends`` normalises it. The dispatch tables read them to
choose a kernel, and the algorithms of ``morphaug.ndimage._torch`` run on them.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np
import torch

from .. import _sync
from ._normalize import device_element, normalize_element, normalize_origin, stream_key, validate_origin
from ._structure import generate_binary_structure

__all__ = ["Element", "Filter"]


@dataclasses.dataclass(frozen=True)
class Filter:
    """A normalised min/max filter, as SciPy's ``_min_or_max_filter`` sees it.

    ``axes`` are increasing; ``shape`` (the box, or the element's extent),
    ``origins`` and ``modes`` follow them. ``footprint`` (bool) and
    ``structure`` (float64) are ``(B|1, C|1, *shape)`` on the input's device,
    or ``None`` (every position / flat); ``host`` is the footprint as a NumPy
    array when it could be read without a host sync, ``structure_host`` the
    structure likewise (float64).
    """

    axes: tuple[int, ...]
    shape: tuple[int, ...]
    origins: tuple[int, ...]
    modes: tuple[str, ...]
    cval: object
    separable: bool
    footprint: torch.Tensor | None = None
    structure: torch.Tensor | None = None
    host: np.ndarray | None = None
    structure_host: np.ndarray | None = None

    @property
    def shared_host(self) -> bool:
        """Whether the footprint is one for every slice, read on the host."""
        return self.host is not None and self.host.shape[0] * self.host.shape[1] == 1


#: Elements of more than this many positions are not kept by :func:`_kept_element`.
_KEPT_SIZE = 4096


@functools.cache
def _cross(rank: int) -> torch.Tensor:
    """SciPy's default structure (connectivity 1), never modified."""
    return generate_binary_structure(rank, 1)


class Element:
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

    Building one costs O(1); what the kernels read of it is computed when first
    asked for, in vectorised work over the element (O(element size)), and kept
    (with the element, for the next calls with the same small host element):
    :attr:`ball` and :meth:`used_by_all` for the dispatch tables, :attr:`used`
    and :attr:`offsets` for the native propagation, :attr:`terms` and
    :meth:`links` (one Python tuple per position) for the torch backend only.
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

    @classmethod
    def from_argument(cls, structure, input, axes, origin, name="structure",
                      origin_name="origin") -> Element:
        n_axes = len(axes)
        if structure is None:
            structure = _cross(n_axes)
        if isinstance(structure, torch.Tensor) and structure.device.type != "cpu":
            tensor = normalize_element(structure, input, n_axes, name, torch.bool)
            origin = normalize_origin(origin, n_axes, origin_name)
            return cls(tensor, None, axes, origin, input.ndim - 2, origin_name)
        # normalise on the CPU (a (B, C) stand-in input gives the batch shape)
        stand_in = torch.empty(input.shape[0], input.shape[1], 0)
        host = normalize_element(structure, stand_in, n_axes, name, torch.bool)
        origin = normalize_origin(origin, n_axes, origin_name)
        rank = input.ndim - 2
        if host.numel() > _KEPT_SIZE or type(input) is not torch.Tensor:  # not kept, nor a tracing mode's
            return cls(device_element(host, input.device), host, axes, origin, rank, origin_name)
        return _kept_element(tuple(host.shape), host.numpy().tobytes(), tuple(axes), tuple(origin), rank,
                             origin_name, input.device, stream_key(input.device))

    def reflected(self) -> Element:
        """The element ``binary_dilation`` erodes with, as SciPy builds it:
        reflected, and ``origin[i]`` negated, minus 1 if dimension ``i`` of the
        element has even length (``i`` counts in the order of ``axes``)."""
        return self._reflected

    @functools.cached_property
    def _reflected(self) -> Element:
        axes, origin, rank, origin_name = self.given
        dims = list(range(2, self.tensor.ndim))
        origin = [-o - (1 - k % 2) for o, k in zip(origin, self.shape)]
        host = None if self.host is None else self.host.flip(dims)
        tensor = host if self.tensor is self.host else self.tensor.flip(dims)
        return Element(tensor, host, axes, origin, rank, origin_name)

    def complement(self, origin, origin_name) -> Element:
        """``~element`` at ``origin`` (in the order of ``axes``): hit-or-miss's default."""
        axes, _, rank, _ = self.given
        host = None if self.host is None else ~self.host
        tensor = host if self.tensor is self.host else ~self.tensor
        return Element(tensor, host, axes, origin, rank, origin_name)

    @functools.cached_property
    def used(self) -> torch.Tensor:
        """Flat (C order) indices in the element's box, int64 on the CPU, of the positions
        some slice's element holds, read on the host; every position for an accelerator
        element (never read)."""
        if self.host is None:
            return torch.arange(math.prod(self.shape))
        return self.host.flatten(0, 1).any(0).flatten().nonzero().flatten()

    @functools.cached_property
    def offsets(self) -> torch.Tensor:
        """``(len(used), rank)`` int64 on the CPU: position minus centre of each of
        :attr:`used`, on every spatial axis (0 on the axes not filtered)."""
        return self._offsets(self.used)

    def _offsets(self, flat: torch.Tensor) -> torch.Tensor:
        strides = [math.prod(self.shape[i + 1:]) for i in range(len(self.shape))]
        offsets = torch.zeros(len(flat), self.rank, dtype=torch.long)
        for axis, stride, k, c in zip(self.axes, strides, self.shape, self.centre):
            offsets[:, axis] = flat // stride % k - c
        return offsets

    @functools.cached_property
    def terms(self) -> list[tuple[tuple[int, ...], torch.Tensor | None]]:
        """``(offset, weight)`` for every position some slice uses, in C order: one OR step
        reads the input at ``p + offset`` (``offset`` per spatial axis, a tuple).

        ``weight`` is ``None`` when every slice uses the position, else the
        per-slice flags ``(B|1, C|1, 1, ...)`` (one 1 per spatial axis) on the
        element's device, to AND with the read. An accelerator element is never
        read: all positions, all weighted.
        """
        return self._terms(self.host, self.tensor)

    def links(self):
        """``(two_way, one_way)``: :attr:`terms` of the offsets ``d != 0`` of a host
        element whose mirror ``-d`` the same slice's element holds too (the
        links a connected-component labelling may follow both ways), and of the
        other offsets (the centre is in neither)."""
        mirrored_host, mirrored = self._mirror
        both_host = self.host & mirrored_host
        both_host[(slice(None), slice(None)) + self.centre] = False
        return (self._terms(both_host, self.tensor & mirrored),
                self._terms(self.host & ~mirrored_host, self.tensor & ~mirrored))

    @property
    def mirror_host(self) -> torch.Tensor:
        """The host element mirrored through its centre (positions whose mirror leaves the box: false)."""
        return self._mirror[0]

    @functools.cached_property
    def _mirror(self):
        """The host element and its device copy mirrored through the centre (:func:`_mirrored`)."""
        host = _mirrored(self.host, self.centre)
        return host, host if self.tensor is self.host else _mirrored(self.tensor, self.centre)

    def _terms(self, host, tensor):
        """The terms of the positions that ``host`` (``(B|1, C|1, *k)`` bool, or None:
        every position) says some slice holds, weighted by ``tensor`` (the same on
        the element's device) where not every slice does."""
        ones = (1,) * self.rank
        if host is None:
            flat, shared = self.used, [False] * len(self.used)
            index = torch.arange(len(flat), device=tensor.device)
        else:
            held = host.flatten(0, 1).flatten(1)
            flat = held.any(0).nonzero().flatten()
            shared = held[:, flat].all(0).tolist()
            index = _sync.to_device(flat, tensor.device)
        weights = tensor.flatten(2).index_select(2, index)
        lead = tensor.shape[:2]
        return [(tuple(offset), None if every else weights[:, :, i].view(*lead, *ones))
                for i, (offset, every) in enumerate(zip(self._offsets(flat).tolist(), shared))]

    def used_by_all(self, position) -> bool:
        """Whether every sample's element holds ``position`` (known on the host)."""
        if self.host is None or any(not 0 <= j < k for j, k in zip(position, self.shape)):
            return False
        return bool(self.host[(slice(None), slice(None)) + tuple(position)].all())

    @functools.cached_property
    def ball(self) -> tuple[str, int] | None:
        """``(metric, r)`` when every slice's element is the same centred radius-``r``
        ball over all spatial axes, read on the host: ``footprints.cross`` (taxicab;
        SciPy's connectivity-1 structure for ``r = 1``), a full box of side
        ``2r + 1`` (chessboard) or ``footprints.ball`` (euclidean); else None.

        With border value 0 and no mask, ``iterations=k`` of a cross or box is the
        ball of radius ``k r`` of its metric (shortest lattice paths between voxels
        of a box stay in the box), and one step of any of them is the ball itself:
        the native ``ball_morphology`` kernel computes all of these exactly.
        """
        rank, shape = self.rank, self.shape
        if (self.host is None or len(self.axes) != rank or any(self.origin)
                or len(set(shape)) != 1 or shape[0] % 2 == 0):
            return None
        radius = shape[0] // 2
        if radius == 0:
            return None
        if bool(self.host.all()):
            return "chessboard", radius
        # The element is the ball when every slice holds the same positions, all of them inside
        # the ball, as many as the ball has: no (2r + 1)^rank box of coordinates is built.
        held = self.host.flatten(0, 1)
        if not bool((held == held[:1]).all()):
            return None
        offsets = (held[0].nonzero() - radius).abs()
        for metric, power, bound in (("taxicab", 1, radius), ("euclidean", 2, radius ** 2)):
            if (bool(((offsets ** power).sum(1) <= bound).all())
                    and len(offsets) == _lattice_points(rank, radius, power, bound)):
                return metric, radius
        return None


def _lattice_points(rank: int, radius: int, power: int, bound: int) -> int:
    """How many integer points ``c`` with ``|c_i| <= radius`` have ``sum |c_i|^power <= bound``:
    counted axis by axis over the partial sums (``rank * (bound + 1) * (radius + 1)`` steps)."""
    counts = [1] + [0] * bound  # counts[t]: points of the axes so far whose sum is t
    for _ in range(rank):
        step = [0] * (bound + 1)
        for total, n in enumerate(counts):
            if n:
                for c in range(radius + 1):
                    term = total + c ** power
                    if term > bound:
                        break
                    step[term] += n * (1 if c == 0 else 2)
        counts = step
    return sum(counts)


def _mirrored(element: torch.Tensor, centre) -> torch.Tensor:
    """``element (B|1, C|1, *k)`` mirrored through ``centre``: position ``j`` holds
    ``element[2 centre - j]``, false where that falls outside the box."""
    dims = list(range(2, element.ndim))
    flipped = element.flip(dims)  # position j holds element[k - 1 - j]: shifted by 2 centre - (k - 1)
    shifts = [2 * c - (k - 1) for c, k in zip(centre, element.shape[2:])]
    if not any(shifts):
        return flipped
    mirrored = torch.zeros_like(element)
    target, source = [slice(None)] * 2, [slice(None)] * 2
    for shift, k in zip(shifts, element.shape[2:]):
        target.append(slice(max(shift, 0), k + min(shift, 0)))
        source.append(slice(max(-shift, 0), k - max(shift, 0)))
    mirrored[tuple(target)] = flipped[tuple(source)]
    return mirrored


@functools.lru_cache(maxsize=64)
def _kept_element(shape, data: bytes, axes, origin, rank, origin_name, device, stream) -> Element:
    """The element of a small host ``structure`` for the last calls, by content and by the
    input's device and stream (:func:`stream_key`): a pipeline calls with the same few
    elements, and describing one (its kind, its offsets) costs more than a small input's
    whole op, copying it to an accelerator a host sync."""
    host = torch.from_numpy(np.frombuffer(data, dtype=bool).reshape(shape).copy())  # not the caller's tensor
    return Element(device_element(host, device), host, axes, origin, rank, origin_name)
