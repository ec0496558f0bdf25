"""Kornia augmentations ``<Name>2D`` / ``<Name>3D`` over :mod:`morphaug.transforms`.

Use them alone or in ``kornia.augmentation.AugmentationSequential(...,
data_keys=["input", "mask"])``: masks are label maps (index ``(B, 1, ...)``
or one-hot ``(B, K, ...)``; the container hands them over as float and
restores their dtype, but for distance maps: see Maps), inputs are images
``(B, C, H, W)`` / ``(B, C, D, H, W)``.
Each goes to the core under its data key, ``"input"`` (role ``"image"``) or
``"mask"`` (role ``"label"``): label transforms change masks only,
``RandGreyMorphology*`` and ``RandHistogramTransfer*`` inputs only,
``RandWassersteinMix*`` both.

Arguments
    the core transform's, ``prob`` spelt ``p`` (see ``p`` below), but
    ``keys``, ``output_keys``, ``allow_missing_keys`` and ``generator``,
    plus Kornia's ``same_on_batch`` and ``keepdim``: each class's signature
    and ``help()`` list and document them all.
Parameters
    ``generate_parameters(batch_shape)`` calls the core's ``make_params`` on
    a storage-free placeholder of the mask's (or image's) shape on Kornia's
    RNG device, so the draw comes from torch's global generator as every
    Kornia draw does (``torch.manual_seed`` reproduces it); transforms that
    draw per class (``RandLabelMorphology*``, ``RandBoundaryJitter*``,
    ``RandRemoveComponent*``) need
    ``num_classes``/``classes``, one-hot masks ``label_format="onehot"``
    with them (the others infer the classes of index masks). ``same_on_batch=True`` draws one sample and repeats it.
    ``aug(x, params=aug._params)`` replays, and the core parameters in
    ``aug._params`` (all but ``batch_prob``/``forward_input_shape``) replay
    the core: ``aug.core(x, params=...)``.
Maps
    ``AugmentationSequential`` hands masks to its children as float and
    casts what comes out back to each mask's dtype, which is right for label
    maps. ``DistanceMap*`` turns masks into float32 distance maps, which an
    integer cast would truncate (and a uint8 one wrap): a container that
    holds a ``DistanceMap*`` (at any depth) returns its masks in the dtype
    its children give them, float32 maps, whatever the mask's dtype; Kornia's
    cast is kept everywhere else. ``LabelBoundary*`` maps come back in the
    mask's dtype, as the core gives them.
``p``
    Kornia's per-sample gate ``batch_prob``: the Rand* transforms pass it to
    the core as its ``"apply"`` draw; ``FillHoles*``, ``KeepLargestComponents*``
    and ``RemoveSmallComponents*`` (whose cores have no ``prob``) are blended by Kornia.
    ``LabelBoundary*`` changes the channel count, which Kornia cannot blend,
    so its ``p`` is the core's ``prob`` (a skipped sample has zero maps) and
    Kornia's gate stays 1; ``DistanceMap*`` has no ``p``.
Drop-ins
    :mod:`morphaug.adapters.kornia.morphology` (``kornia.morphology``'s
    functions) and :mod:`morphaug.adapters.kornia.contrib`
    (``connected_components``, ``distance_transform``): Kornia's names,
    arguments and results, a change of import.
3-D
    Kornia 0.9 raises ``NotImplementedError`` for masks through its 3-D
    geometric augmentations (``RandomAffine3D``), whatever the other modules;
    the ``*3D`` classes route masks themselves.

Example:
    >>> import torch
    >>> import kornia.augmentation as K
    >>> from morphaug.adapters.kornia import RandGreyMorphology2D, RandLabelMorphology2D
    >>> image, mask = torch.rand(4, 3, 32, 32), torch.zeros(4, 1, 32, 32)
    >>> mask[:, :, 8:24, 8:24] = 1
    >>> seq = K.AugmentationSequential(K.RandomAffine(degrees=10.0, p=1.0), RandLabelMorphology2D(num_classes=2),
    ...                                RandGreyMorphology2D(p=0.5), data_keys=["input", "mask"])
    >>> image, mask = seq(image, mask)
    >>> tuple(image.shape), tuple(mask.shape), sorted(mask.unique().tolist())
    ((4, 3, 32, 32), (4, 1, 32, 32), [0.0, 1.0])
"""

from __future__ import annotations

import functools
from typing import Any

import torch

try:
    from kornia.augmentation import AugmentationBase2D, AugmentationBase3D, AugmentationSequential
except ImportError as error:  # pragma: no cover - exercised without Kornia
    raise ImportError("morphaug.adapters.kornia needs Kornia: pip install kornia") from error

from ... import transforms as _core
from ..._checks import check_probability
from .._common import Adapted, check_flag

__all__ = [f"{name}{dim}D" for name in ("RandLabelMorphology", "RandGreyMorphology", "DistanceMap", "LabelBoundary",
                                         "FillHoles", "RandBoundaryJitter", "KeepLargestComponents",
                                         "RemoveSmallComponents", "RandRemoveComponent", "RandHistogramTransfer",
                                         "RandWassersteinMix", "ExpandLabels", "InstanceBoundary", "SkeletonTarget")
           for dim in (2, 3)]

_KORNIA_PARAMS = ("batch_prob", "forward_input_shape")


class _Adapter(Adapted):
    """Mixin before AugmentationBase2D/3D: draws with the core's make_params, applies with the core."""

    _dropped = frozenset({"keys", "output_keys", "allow_missing_keys", "generator", "label_keys"})
    _renamed = {"prob": "p"}
    #: True where ``p`` (the core's prob) is Kornia's per-sample gate, handed to the core as its "apply" draw
    #: (Rand*); False where it stays the core's prob and Kornia's gate is 1 (LabelBoundary), where Kornia
    #: blends (:class:`_Blended`) or where there is no ``p`` (DistanceMap).
    gate: bool = True
    #: True where the core turns masks into float maps (DistanceMap), which must not be cast back to the mask's dtype.
    float_maps: bool = False

    #: The core's keys: Kornia's data keys, with their roles.
    _keys = {"input": "image", "mask": "label"}

    def __init__(self, *, same_on_batch: bool = False, keepdim: bool = False, **core_args):
        """The Kornia arguments (the others are the core's, ``prob`` spelt ``p``).

        Args:
            same_on_batch: draw the parameters of one sample and repeat them
                for the whole batch.
            keepdim: Kornia's ``keepdim``: the output keeps the input's shape.
        """
        p = core_args.pop("p", 1.0)  # Kornia's own p (see _Blended); the others' p is the core's prob
        check_probability(core_args.get("prob", p), "p")
        if self.gate:
            p, core_args["prob"] = core_args["prob"], 1.0
        super().__init__(p=p, same_on_batch=check_flag(same_on_batch, "same_on_batch"),
                         keepdim=check_flag(keepdim, "keepdim"))
        self.core = self.core_class(self._keys, allow_missing_keys=True, **core_args)

    def _channels(self, batch_shape) -> int:
        """The channel count of the data the core draws for: the image's or the mask's."""
        core = self.core
        if "input" in core.changed_keys:
            return batch_shape[1]
        if getattr(core, "draws_per_class", False) and core.num_classes is None and core.classes is None:
            # the core would read the classes from the mask, which Kornia hands over after the draw
            raise ValueError(f"{type(self).__name__}: masks need num_classes= (or classes=) to draw")
        if getattr(core, "label_format", None) != "onehot":
            return 1
        if core.num_classes is None and core.classes is None:
            raise ValueError(f"{type(self).__name__}: one-hot masks need num_classes= (or classes=) to draw")
        return core.num_classes or core.classes[-1] + 1

    def generate_parameters(self, batch_shape) -> dict[str, torch.Tensor]:
        size = batch_shape[0]
        shape = (1 if self.same_on_batch else size, self._channels(batch_shape), *batch_shape[2:])
        placeholder = torch.empty((), device=self.device, dtype=torch.float32).expand(shape)
        params = self.core.make_params(placeholder)
        if self.gate:
            params.pop("apply", None)
        return {name: value.expand(size, *value.shape[1:]) for name, value in params.items()}

    def core_params(self, params: dict[str, Any]) -> dict[str, torch.Tensor]:
        """The core's draw within Kornia's ``params`` (with Kornia's gate as ``"apply"`` for Rand*)."""
        out = {name: value for name, value in params.items()
               if isinstance(value, torch.Tensor) and name not in _KORNIA_PARAMS}
        if self.gate:
            out["apply"] = self._gate(params)
        return out

    def _run(self, x: torch.Tensor, params, key: str) -> torch.Tensor:
        """``x`` through the core under ``key`` (returned as is when the core does not change its role)."""
        return self.core({key: x}, params=self.core_params(params))[key]

    def apply_transform(self, input, params, flags, transform=None):
        return self._run(input, params, "input")

    def apply_transform_mask(self, input, params, flags, transform=None):
        return self._run(input, params, "mask")

    def apply_non_transform_mask(self, input, params, flags, transform=None):
        return input

    def __repr__(self) -> str:
        return f"{type(self).__name__}(p={self.p}, same_on_batch={self.same_on_batch}, core={self.core!r})"


def _keep_float_maps(postproc_mask):
    """Kornia's cast of each output mask back to its input's dtype, but for the float maps of a ``float_maps`` child."""

    @functools.wraps(postproc_mask)
    def _postproc_mask(self, arg, like):
        if any(isinstance(module, _Adapter) and module.float_maps for module in self.modules()):
            return arg
        return postproc_mask(self, arg, like)

    return _postproc_mask


AugmentationSequential._postproc_mask = _keep_float_maps(AugmentationSequential._postproc_mask)


class _Blended(_Adapter):
    """An ``_Adapter`` whose ``p`` is Kornia's own, for a core without ``prob`` (FillHoles, the component
    filters): Kornia blends."""

    gate = False

    def __init__(self, *, p: float = 1.0, **kwargs):
        """The Kornia probability of a transform that Kornia blends.

        Args:
            p: per-sample probability; a skipped sample keeps its mask (Kornia blends).
        """
        super().__init__(p=p, **kwargs)


def _pair(name: str, core_class: type, summary: str, adapter: type = _Adapter, **attrs):
    """The 2-D and 3-D classes of one core transform."""
    classes = []
    for dim, base in ((2, AugmentationBase2D), (3, AugmentationBase3D)):
        shape = "(B, C, H, W)" if dim == 2 else "(B, C, D, H, W)"
        doc = (f"Kornia {dim}-D version of :class:`morphaug.transforms.{name}` on {shape}: {summary}\n\n"
               f"    See the module notes.\n")
        namespace = {"core_class": core_class, "__doc__": doc, "__module__": __name__,
                     "__qualname__": f"{name}{dim}D", **attrs}
        classes.append(type(f"{name}{dim}D", (adapter, base), namespace))
    return classes


RandLabelMorphology2D, RandLabelMorphology3D = _pair(
    "RandLabelMorphology", _core.RandLabelMorphology, "random per-class morphology of masks.")
RandGreyMorphology2D, RandGreyMorphology3D = _pair(
    "RandGreyMorphology", _core.RandGreyMorphology, "random grey morphology of inputs.")
RandBoundaryJitter2D, RandBoundaryJitter3D = _pair(
    "RandBoundaryJitter", _core.RandBoundaryJitter, "smooth random boundary moves of masks.")
FillHoles2D, FillHoles3D = _pair(
    "FillHoles", _core.FillHoles, "fills the holes of each class of masks.", adapter=_Blended)
KeepLargestComponents2D, KeepLargestComponents3D = _pair(
    "KeepLargestComponents", _core.KeepLargestComponents, "keeps the largest components of each class of masks.",
    adapter=_Blended)
RemoveSmallComponents2D, RemoveSmallComponents3D = _pair(
    "RemoveSmallComponents", _core.RemoveSmallComponents, "removes the small components of each class of masks.",
    adapter=_Blended)
RandRemoveComponent2D, RandRemoveComponent3D = _pair(
    "RandRemoveComponent", _core.RandRemoveComponent, "removes a random component of each class of masks.")
LabelBoundary2D, LabelBoundary3D = _pair(
    "LabelBoundary", _core.LabelBoundary, "each mask becomes its ``(B, K', ...)`` boundary maps.", gate=False)
ExpandLabels2D, ExpandLabels3D = _pair(
    "ExpandLabels", _core.ExpandLabels, "grows the labels of masks without overlap.", adapter=_Blended)
InstanceBoundary2D, InstanceBoundary3D = _pair(
    "InstanceBoundary", _core.InstanceBoundary, "each mask becomes its ``(B, 1, ...)`` instance-boundary map.",
    gate=False)
SkeletonTarget2D, SkeletonTarget3D = _pair(
    "SkeletonTarget", _core.SkeletonTarget, "each mask becomes its Skeleton Recall target.", gate=False)
DistanceMap2D, DistanceMap3D = _pair(
    "DistanceMap", _core.DistanceMap, "each mask becomes its ``(B, K', ...)`` float32 distance maps.",
    gate=False, float_maps=True)
RandHistogramTransfer2D, RandHistogramTransfer3D = _pair(
    "RandHistogramTransfer", _core.RandHistogramTransfer,
    "inputs' histograms moved toward another sample's (``same_on_batch``: all toward sample 0).")
RandWassersteinMix2D, RandWassersteinMix3D = _pair(
    "RandWassersteinMix", _core.RandWassersteinMix,
    "pairs of samples mixed, masks along Wasserstein geodesics (``same_on_batch``: all toward sample 0).")
