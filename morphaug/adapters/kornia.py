"""Kornia augmentations ``<Name>2D`` / ``<Name>3D`` over :mod:`morphaug.transforms`.

Use them alone or in ``kornia.augmentation.AugmentationSequential(...,
data_keys=["input", "mask"])``: masks are label maps (index ``(B, 1, ...)``
or one-hot ``(B, K, ...)``; the container hands them over as float and
restores their dtype), inputs are images ``(B, C, H, W)`` / ``(B, C, D, H, W)``.
Each goes to the core under its data key, ``"input"`` (role ``"image"``) or
``"mask"`` (role ``"label"``): label transforms change masks only,
``RandGreyMorphology*`` and ``RandHistogramTransfer*`` inputs only,
``RandWassersteinMix*`` both.

Parameters
    ``generate_parameters(batch_shape)`` calls the core's ``make_params`` on
    a storage-free placeholder of the mask's (or image's) shape on Kornia's
    RNG device, so the draw comes from torch's global generator as every
    Kornia draw does (``torch.manual_seed`` reproduces it); transforms that
    draw per class (``RandLabelMorphology*``, ``RandBoundaryJitter*``) need
    ``num_classes``/``classes``, one-hot masks ``label_format="onehot"``
    with them (the others infer the classes of index masks). ``same_on_batch=True`` draws one sample and repeats it.
    ``aug(x, params=aug._params)`` replays, and the core parameters in
    ``aug._params`` (all but ``batch_prob``/``forward_input_shape``) replay
    the core: ``aug.core(x, params=...)``.
``p``
    Kornia's per-sample gate ``batch_prob``: the Rand* transforms pass it to
    the core as its ``"apply"`` draw, ``FillHoles*`` is blended by Kornia.
    ``LabelBoundary*`` changes the channel count, which Kornia cannot blend,
    so its ``p`` is the core's ``prob`` (a skipped sample has zero maps) and
    Kornia's gate stays 1; ``DistanceMap*`` has no ``p``.
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

from typing import Any

import torch

try:
    from kornia.augmentation import AugmentationBase2D, AugmentationBase3D
except ImportError as error:  # pragma: no cover - exercised without Kornia
    raise ImportError("morphaug.adapters.kornia needs Kornia: pip install morphaug[kornia]") from error

from .. import transforms as _core

__all__ = [f"{name}{dim}D" for name in ("RandLabelMorphology", "RandGreyMorphology", "DistanceMap", "LabelBoundary",
                                         "FillHoles", "RandBoundaryJitter", "RandHistogramTransfer",
                                         "RandWassersteinMix") for dim in (2, 3)]

_KORNIA_PARAMS = ("batch_prob", "forward_input_shape")


class _Adapter:
    """Mixin before AugmentationBase2D/3D: draws with the core's make_params, applies with the core."""

    core_class: type = _core.BatchTransform
    #: how ``p`` is used: "gate" (Kornia's gate is the core's "apply"), "blend" (Kornia blends),
    #: "core" (the core's prob; Kornia's gate stays 1), None (no p).
    p_mode: str | None = "gate"
    p_default: float = 0.5

    #: The core's keys: Kornia's data keys, with their roles.
    _keys = {"input": "image", "mask": "label"}

    def __init__(self, *args, p: float | None = None, same_on_batch: bool = False, keepdim: bool = False, **kwargs):
        for name in ("keys", "output_keys", "allow_missing_keys", "prob", "generator"):
            if name in kwargs:
                raise TypeError(f"{type(self).__name__} takes no {name}= (see morphaug.adapters.kornia)")
        p = self.p_default if p is None else p
        if self.p_mode is None and p != 1.0:
            raise ValueError(f"{type(self).__name__} has no probability (a deterministic map), got p={p!r}")
        if self.p_mode in ("gate", "core"):
            kwargs["prob"] = 1.0 if self.p_mode == "gate" else p
        super().__init__(p=p if self.p_mode in ("gate", "blend") else 1.0, same_on_batch=same_on_batch,
                         keepdim=keepdim)
        self.core = self.core_class(self._keys, *args, allow_missing_keys=True, **kwargs)

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
        if self.p_mode == "gate":
            params.pop("apply", None)
        return {name: value.expand(size, *value.shape[1:]) for name, value in params.items()}

    def core_params(self, params: dict[str, Any]) -> dict[str, torch.Tensor]:
        """The core's draw within Kornia's ``params`` (with Kornia's gate as ``"apply"`` for Rand*)."""
        out = {name: value for name, value in params.items()
               if isinstance(value, torch.Tensor) and name not in _KORNIA_PARAMS}
        if self.p_mode == "gate":
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


def _pair(name: str, core_class: type, p_mode, p_default: float, summary: str, adapter: type = _Adapter):
    """The 2-D and 3-D classes of one core transform."""
    classes = []
    for dim, base in ((2, AugmentationBase2D), (3, AugmentationBase3D)):
        shape = "(B, C, H, W)" if dim == 2 else "(B, C, D, H, W)"
        doc = (f"Kornia {dim}-D version of :class:`morphaug.transforms.{name}` on {shape}: {summary}\n\n"
               f"    Args: ``p``, ``same_on_batch``, ``keepdim`` (Kornia) and the core's arguments\n"
               f"    (not ``keys``/``prob``/``generator``); see the module notes.\n")
        attrs = {"core_class": core_class, "p_mode": p_mode, "p_default": p_default, "__doc__": doc,
                 "__module__": __name__, "__qualname__": f"{name}{dim}D"}
        classes.append(type(f"{name}{dim}D", (adapter, base), attrs))
    return classes


RandLabelMorphology2D, RandLabelMorphology3D = _pair(
    "RandLabelMorphology", _core.RandLabelMorphology, "gate", 0.5, "random per-class morphology of masks.")
RandGreyMorphology2D, RandGreyMorphology3D = _pair(
    "RandGreyMorphology", _core.RandGreyMorphology, "gate", 0.5, "random grey morphology of inputs.")
RandBoundaryJitter2D, RandBoundaryJitter3D = _pair(
    "RandBoundaryJitter", _core.RandBoundaryJitter, "gate", 0.5, "smooth random boundary moves of masks.")
FillHoles2D, FillHoles3D = _pair(
    "FillHoles", _core.FillHoles, "blend", 1.0, "fills the holes of each class of masks.")
LabelBoundary2D, LabelBoundary3D = _pair(
    "LabelBoundary", _core.LabelBoundary, "core", 1.0, "each mask becomes its ``(B, K', ...)`` boundary maps.")
DistanceMap2D, DistanceMap3D = _pair(
    "DistanceMap", _core.DistanceMap, None, 1.0, "each mask becomes its ``(B, K', ...)`` float32 distance maps.")


class _MixAdapter(_Adapter):
    """An ``_Adapter`` whose arguments are keywords: a first positional one would be the core's ``label_keys``."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)


RandHistogramTransfer2D, RandHistogramTransfer3D = _pair(
    "RandHistogramTransfer", _core.RandHistogramTransfer, "gate", 0.5,
    "inputs' histograms moved toward another sample's (``same_on_batch``: all toward sample 0).")
RandWassersteinMix2D, RandWassersteinMix3D = _pair(
    "RandWassersteinMix", _core.RandWassersteinMix, "gate", 0.5,
    "pairs of samples mixed, masks along Wasserstein geodesics (``same_on_batch``: all toward sample 0).",
    adapter=_MixAdapter)
