"""Normalised elements, shared by the public ndimage modules and the torch backend.

:class:`Filter` is a grey op's min/max filter as ``morphaug.ndimage._grey``
normalises it; :class:`Element` a binary op's structuring element as
``morphaug.ndimage._binary`` normalises it. The dispatch tables read them to
choose a kernel, and the algorithms of ``morphaug.ndimage._torch`` run on them.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
import torch

from ._normalize import normalize_element, normalize_origin, validate_origin
from ._shift import element_offsets
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
                      origin_name="origin") -> Element:
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

    def reflected(self) -> Element:
        """The element ``binary_dilation`` erodes with, as SciPy builds it:
        reflected, and ``origin[i]`` negated, minus 1 if dimension ``i`` of the
        element has even length (``i`` counts in the order of ``axes``)."""
        axes, origin, rank, origin_name = self.given
        dims = list(range(2, self.tensor.ndim))
        origin = [-o - (1 - k % 2) for o, k in zip(origin, self.shape)]
        host = None if self.host is None else self.host.flip(dims)
        return Element(self.tensor.flip(dims), host, axes, origin, rank, origin_name)

    def complement(self, origin, origin_name) -> Element:
        """``~element`` at ``origin`` (in the order of ``axes``): hit-or-miss's default."""
        axes, _, rank, _ = self.given
        host = None if self.host is None else ~self.host
        return Element(~self.tensor, host, axes, origin, rank, origin_name)

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
        offsets = torch.stack(torch.meshgrid(*[torch.arange(-radius, radius + 1)] * rank, indexing="ij"))
        for metric, ball in (("chessboard", torch.ones(shape, dtype=torch.bool)),
                             ("taxicab", offsets.abs().sum(0) <= radius),
                             ("euclidean", (offsets ** 2).sum(0) <= radius ** 2)):
            if bool((self.host == ball).all()):
                return metric, radius
        return None

    def symmetric(self) -> bool:
        """Whether every sample's element holds its centre and ``-d`` with each offset ``d``."""
        if not self.used_by_all(self.centre):
            return False
        host = self.host.flatten(0, 1)
        for position, _ in self.terms:
            mirror = tuple(2 * c - j for c, j in zip(self.centre, position))
            if any(not 0 <= m < k for m, k in zip(mirror, self.shape)):
                return False
            if not torch.equal(host[(slice(None),) + position], host[(slice(None),) + mirror]):
                return False
        return True
