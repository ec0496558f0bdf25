"""torchvision ``transforms.v2`` versions of :mod:`morphaug.transforms`.

Arguments
    the core transform's, ``prob`` spelt ``p``, but ``keys``,
    ``output_keys`` and ``allow_missing_keys`` (inputs are found by type),
    plus ``spatial_ndim`` (and ``output_key`` for the targets): each class's
    signature and ``help()`` list and document them all.
Types
    ``tv_tensors.Mask`` is a label map, ``tv_tensors.Image`` an image, and a
    pure tensor an image by v2's rule (only the first one, and only when the
    sample has no Image/Video/PIL image). Every other type (BoundingBoxes,
    KeyPoints, Video, PIL images, numbers, strings) passes through untouched.
    A Mask goes to the core under the key ``"mask"`` (role ``"label"``), an
    image under ``"image"`` (role ``"image"``), and the core changes the
    roles it works on: label transforms change Masks only,
    ``RandGreyMorphology`` and ``RandHistogramTransfer`` images only,
    ``RandWassersteinMix`` both.
Shapes
    with ``spatial_ndim=S`` (default 2; 3 for volumes): ``S`` dims are one
    map ``(H, W)``, ``S + 1`` one sample ``(C, H, W)``, ``S + 2`` a batch
    ``(B, C, H, W)`` (so a batch of masks is ``(B, 1, H, W)``). Outputs keep
    the input's layout; a ``(H, W)`` mask whose map has ``K' > 1`` channels
    becomes ``(K', H, W)``.
Randomness
    ``make_params`` draws once per call with the core (``generator=``, else
    torch's default generator, like every v2 transform); ``p`` is the core's
    per-sample probability (one sample: v2's usual meaning). The draw is in
    ``t.core.last_params``; ``t.core(x, params=...)`` replays it.
New outputs
    v2 maps each leaf to one leaf, so :class:`DistanceMap` and
    :class:`LabelBoundary` *replace* each Mask by its map. To keep the
    label, pass ``output_key="sdf"``: the sample must then be one dict with
    one Mask, and the map is added under that key (so several target
    transforms compose: ``DistanceMap(output_key="sdf")`` then
    ``LabelBoundary(output_key="edge")``). A map is no label map: it comes
    back as a :class:`DenseTarget`, which later v2 transforms move as they
    move an image (``Resize`` interpolates it with the transform's
    interpolation; flips, crops, pads, rotations and affine, perspective and
    elastic warps apply) and leave alone otherwise: colour transforms,
    ``Normalize``, and ``ToDtype`` unless the dict names ``DenseTarget``
    (``ToDtype({tv_tensors.Mask: torch.int64, "others": None})`` keeps a
    signed distance map float).

Example:
    >>> import torch
    >>> from torchvision import tv_tensors
    >>> from torchvision.transforms import v2
    >>> from morphaug.adapters.torchvision import RandGreyMorphology, RandLabelMorphology
    >>> image = tv_tensors.Image(torch.rand(3, 32, 32))
    >>> mask = tv_tensors.Mask(torch.zeros(32, 32, dtype=torch.uint8))
    >>> mask[8:24, 8:24] = 1
    >>> pipeline = v2.Compose([v2.RandomHorizontalFlip(), RandLabelMorphology(num_classes=2, p=1.0),
    ...                        RandGreyMorphology(p=1.0)])
    >>> image, mask = pipeline(image, mask)
    >>> type(image).__name__, type(mask).__name__, tuple(mask.shape), mask.dtype
    ('Image', 'Mask', (32, 32), torch.uint8)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

try:
    import PIL.Image
    from torchvision import tv_tensors
    from torchvision.transforms import v2
    from torchvision.transforms.v2 import functional as F
    from torchvision.transforms.v2.functional import is_pure_tensor
except ImportError as error:  # pragma: no cover - exercised without torchvision
    raise ImportError("morphaug.adapters.torchvision needs torchvision: pip install torchvision") from error

from .. import transforms as _core
from .._checks import check_probability
from ._common import Adapted

__all__ = ["DenseTarget", "RandLabelMorphology", "RandGreyMorphology", "DistanceMap", "LabelBoundary", "FillHoles",
           "RandBoundaryJitter", "KeepLargestComponents", "RemoveSmallComponents", "RandRemoveComponent",
           "RandHistogramTransfer", "RandWassersteinMix", "ExpandLabels", "InstanceBoundary",
           "SkeletonTarget"]


class DenseTarget(tv_tensors.TVTensor):
    """A per-pixel target that is no label map (a distance map, a boundary map): ``[..., H, W]``.

    What :class:`DistanceMap` and :class:`LabelBoundary` return. v2's
    geometric transforms move it as an image (an image's interpolation in
    ``Resize`` and the warps); every other v2 transform passes it through,
    ``ToDtype`` included unless its dict names ``DenseTarget`` (then it is
    cast, never scaled). morphaug's transforms pass it through too.

    Args:
        data: anything :func:`torch.as_tensor` takes.
        dtype, device, requires_grad: as in ``tv_tensors.Mask``.
    """

    def __new__(cls, data: Any, *, dtype: torch.dtype | None = None, device=None,
                requires_grad: bool | None = None) -> DenseTarget:
        return cls._to_tensor(data, dtype=dtype, device=device, requires_grad=requires_grad).as_subclass(cls)


def _register_dense_target_kernels() -> None:
    """v2's geometric functionals move a DenseTarget with their image kernels; ``to_dtype`` casts it."""
    geometric = {F.horizontal_flip: F.horizontal_flip_image, F.vertical_flip: F.vertical_flip_image,
                 F.resize: F.resize_image, F.resized_crop: F.resized_crop_image, F.crop: F.crop_image,
                 F.center_crop: F.center_crop_image, F.pad: F.pad_image, F.rotate: F.rotate_image,
                 F.affine: F.affine_image, F.perspective: F.perspective_image, F.elastic: F.elastic_image,
                 F.get_size: F.get_size_image}
    for functional, kernel in geometric.items():
        F.register_kernel(functional, DenseTarget)(_on_plain(kernel))

    @F.register_kernel(F.to_dtype, DenseTarget)
    def _(inpt, dtype=torch.float32, scale=False):
        return tv_tensors.wrap(inpt.as_subclass(torch.Tensor).to(dtype), like=inpt)


def _on_plain(kernel):
    """``kernel`` called on the plain tensor of a DenseTarget, ``(H, W)`` as ``(1, H, W)`` (an image kernel
    wants a channel axis); a tensor result is a DenseTarget of the input's layout."""
    def call(inpt, *args, **kwargs):
        plain = inpt.as_subclass(torch.Tensor)
        out = kernel(plain[None] if plain.ndim == 2 else plain, *args, **kwargs)
        if not isinstance(out, torch.Tensor):
            return out
        return tv_tensors.wrap(out[0] if plain.ndim == 2 else out, like=inpt)
    return call


_register_dense_target_kernels()


class _Transform(Adapted, v2.Transform):
    """Calls ``core_class`` on the Masks (key ``"mask"``, role label) and Images (key ``"image"``) of a v2 sample."""

    _transformed_types = (tv_tensors.Image, tv_tensors.Mask, is_pure_tensor)
    #: The core's keys: one per transformed type, with its role.
    _keys = {"image": "image", "mask": "label"}
    _dropped = frozenset({"keys", "output_keys", "allow_missing_keys", "label_keys"})  # inputs are found by type
    _renamed = {"prob": "p"}

    def __init__(self, *, spatial_ndim: int = 2, **core_args):
        """The torchvision arguments (the others are the core's).

        Args:
            spatial_ndim: 2 or 3, the number of spatial axes (see Shapes in
                the module notes).
        """
        super().__init__()
        if isinstance(spatial_ndim, bool) or spatial_ndim not in (2, 3):
            raise ValueError(f"spatial_ndim must be 2 or 3, got {spatial_ndim!r}")
        self.spatial_ndim = spatial_ndim
        if "prob" in core_args:  # checked under the name the caller used
            check_probability(core_args["prob"], "p")
        self.core = self.core_class(self._keys, allow_missing_keys=True, **core_args)

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, core={self.core!r}"

    @staticmethod
    def _key(inpt) -> str:
        return "mask" if isinstance(inpt, tv_tensors.Mask) else "image"

    def _changes(self, inpt) -> bool:
        return isinstance(inpt, torch.Tensor) and self._key(inpt) in self.core.changed_keys

    def check_inputs(self, flat_inputs: list[Any]) -> None:
        if "image" in self.core.changed_keys and any(isinstance(x, PIL.Image.Image) for x in flat_inputs):
            raise TypeError(f"{type(self).__name__} works on tensors; convert PIL images with v2.ToImage() first")

    def _batch(self, inpt: torch.Tensor) -> tuple[torch.Tensor, int]:
        """``inpt`` as a plain ``(B, C, *spatial)`` tensor, and how many axes were added."""
        added = self.spatial_ndim + 2 - inpt.ndim
        if added not in (0, 1, 2):
            raise ValueError(f"{type(self).__name__}: expected {self.spatial_ndim} to {self.spatial_ndim + 2} "
                             f"dims (spatial_ndim={self.spatial_ndim}), got shape {tuple(inpt.shape)}")
        plain = inpt.as_subclass(torch.Tensor)
        return plain[(None,) * added], added

    def make_params(self, flat_inputs: list[Any]) -> dict[str, Any]:
        for inpt in flat_inputs:
            if self._changes(inpt):
                return {"core": self.core.make_params(self._batch(inpt)[0], self.core.generator)}
        return {}  # nothing of a role the core changes: everything passes through

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        if "core" not in params or not self._changes(inpt):
            return inpt
        key = self._key(inpt)
        x, added = self._batch(inpt)
        out = self.core({key: x}, params=params["core"])[key]
        out = out[0] if added else out
        out = out[0] if added == 2 and out.shape[0] == 1 else out
        return self._wrap(out, inpt)

    def _wrap(self, out: torch.Tensor, inpt: torch.Tensor) -> torch.Tensor:
        """The result ``out`` of input ``inpt``: of ``inpt``'s type (a pure tensor stays pure)."""
        return tv_tensors.wrap(out, like=inpt) if isinstance(inpt, tv_tensors.TVTensor) else out


class _TargetTransform(_Transform):
    """A transform whose output is a new target, a :class:`DenseTarget`; ``output_key`` adds it to a dict sample."""

    def __init__(self, *, output_key=None, **kwargs):
        """The torchvision arguments of the target transforms.

        Args:
            output_key: None: each Mask is replaced by its map; a key: the
                sample must be one dict with one Mask, and the map is added
                under that key (see New outputs in the module notes).
        """
        super().__init__(**kwargs)
        self.output_key = output_key

    def forward(self, *inputs: Any) -> Any:
        if self.output_key is None:
            return super().forward(*inputs)
        sample = inputs[0] if len(inputs) == 1 else None
        masks = [key for key, value in sample.items() if isinstance(value, tv_tensors.Mask)] \
            if isinstance(sample, Mapping) else []
        if len(masks) != 1:
            raise ValueError(f"{type(self).__name__}(output_key={self.output_key!r}) needs one dict sample with "
                             f"exactly one tv_tensors.Mask value, got {[type(x).__name__ for x in inputs]} "
                             f"with Mask keys {masks}")
        return {**sample, self.output_key: super().forward(sample[masks[0]])}

    def _wrap(self, out, inpt):
        return DenseTarget(out)


class RandLabelMorphology(_Transform):
    """v2 version of :class:`morphaug.transforms.RandLabelMorphology` on Masks (see the module notes).

    Example:
        >>> import torch
        >>> from torchvision import tv_tensors
        >>> from morphaug.adapters.torchvision import RandLabelMorphology
        >>> t = RandLabelMorphology(num_classes=2, radius=1, p=1.0)
        >>> out = t({"image": tv_tensors.Image(torch.rand(2, 3, 8, 8)),
        ...          "mask": tv_tensors.Mask(torch.ones(2, 1, 8, 8, dtype=torch.long))})
        >>> type(out["mask"]).__name__, tuple(out["mask"].shape)
        ('Mask', (2, 1, 8, 8))
    """

    core_class = _core.RandLabelMorphology


class RandGreyMorphology(_Transform):
    """v2 version of :class:`morphaug.transforms.RandGreyMorphology` on Images (see the module notes).

    Example:
        >>> import torch
        >>> from morphaug.adapters.torchvision import RandGreyMorphology
        >>> RandGreyMorphology(p=1.0)(torch.rand(3, 8, 8)).shape  # a pure tensor is an image
        torch.Size([3, 8, 8])
    """

    core_class = _core.RandGreyMorphology


class RandBoundaryJitter(_Transform):
    """v2 version of :class:`morphaug.transforms.RandBoundaryJitter` on Masks (see the module notes).

    Example:
        >>> import torch
        >>> from torchvision import tv_tensors
        >>> from morphaug.adapters.torchvision import RandBoundaryJitter
        >>> RandBoundaryJitter(num_classes=2, p=1.0)(tv_tensors.Mask(torch.zeros(8, 8, dtype=torch.uint8))).sum()
        tensor(0)
    """

    core_class = _core.RandBoundaryJitter


class FillHoles(_Transform):
    """v2 version of :class:`morphaug.transforms.FillHoles` on Masks (see the module notes).

    Example:
        >>> import torch
        >>> from torchvision import tv_tensors
        >>> from morphaug.adapters.torchvision import FillHoles
        >>> mask = torch.zeros(5, 5, dtype=torch.uint8)
        >>> mask[1:4, 1:4] = 1
        >>> mask[2, 2] = 0
        >>> FillHoles(num_classes=2)(tv_tensors.Mask(mask))[2, 2].item()
        1
    """

    core_class = _core.FillHoles


class KeepLargestComponents(_Transform):
    """v2 version of :class:`morphaug.transforms.KeepLargestComponents` on Masks (see the module notes).

    Example:
        >>> import torch
        >>> from torchvision import tv_tensors
        >>> from morphaug.adapters.torchvision import KeepLargestComponents
        >>> mask = torch.zeros(8, 8, dtype=torch.uint8)
        >>> mask[1:4, 1:4] = mask[6, 6] = 1
        >>> KeepLargestComponents()(tv_tensors.Mask(mask)).sum().item()
        9
    """

    core_class = _core.KeepLargestComponents


class RemoveSmallComponents(_Transform):
    """v2 version of :class:`morphaug.transforms.RemoveSmallComponents` on Masks (see the module notes).

    Example:
        >>> import torch
        >>> from torchvision import tv_tensors
        >>> from morphaug.adapters.torchvision import RemoveSmallComponents
        >>> mask = torch.zeros(8, 8, dtype=torch.uint8)
        >>> mask[1:4, 1:4] = mask[6, 6] = 1
        >>> RemoveSmallComponents(min_size=2)(tv_tensors.Mask(mask)).sum().item()
        9
    """

    core_class = _core.RemoveSmallComponents


class RandRemoveComponent(_Transform):
    """v2 version of :class:`morphaug.transforms.RandRemoveComponent` on Masks (see the module notes).

    Example:
        >>> import torch
        >>> from torchvision import tv_tensors
        >>> from morphaug.adapters.torchvision import RandRemoveComponent
        >>> mask = torch.zeros(8, 8, dtype=torch.uint8)
        >>> mask[1:3, 1:3] = mask[5:7, 5:7] = 1
        >>> RandRemoveComponent(num_classes=2, p=1.0)(tv_tensors.Mask(mask)).sum().item()
        4
    """

    core_class = _core.RandRemoveComponent


class DistanceMap(_TargetTransform):
    """v2 version of :class:`morphaug.transforms.DistanceMap`: each Mask becomes its map, a
    :class:`DenseTarget` (see the module notes).

    Example:
        >>> import torch
        >>> from torchvision import tv_tensors
        >>> from morphaug.adapters.torchvision import DistanceMap
        >>> mask = tv_tensors.Mask(torch.zeros(8, 8, dtype=torch.uint8))
        >>> mask[2:6, 2:6] = 1
        >>> out = DistanceMap(signed=True, classes=[1], output_key="sdf")({"mask": mask})
        >>> sorted(out), type(out["sdf"]).__name__, out["sdf"].dtype, out["sdf"][0, 2].item()
        (['mask', 'sdf'], 'DenseTarget', torch.float32, 2.0)
    """

    core_class = _core.DistanceMap


class LabelBoundary(_TargetTransform):
    """v2 version of :class:`morphaug.transforms.LabelBoundary`: each Mask becomes its boundary map, a
    :class:`DenseTarget` (see the module notes).

    Example:
        >>> import torch
        >>> from torchvision import tv_tensors
        >>> from morphaug.adapters.torchvision import LabelBoundary
        >>> mask = tv_tensors.Mask(torch.zeros(6, 6, dtype=torch.long))
        >>> mask[1:5, 1:5] = 1
        >>> LabelBoundary(classes=[1])(mask).sum().item()
        12
    """

    core_class = _core.LabelBoundary


class ExpandLabels(_Transform):
    """v2 version of :class:`morphaug.transforms.ExpandLabels` on Masks (see the module notes).

    Example:
        >>> import torch
        >>> from torchvision import tv_tensors
        >>> from morphaug.adapters.torchvision import ExpandLabels
        >>> mask = tv_tensors.Mask(torch.tensor([[0, 1, 0, 0, 0, 0, 2]]))
        >>> ExpandLabels(distance=1)(mask).tolist()
        [[1, 1, 1, 0, 0, 2, 2]]
    """

    core_class = _core.ExpandLabels


class InstanceBoundary(_TargetTransform):
    """v2 version of :class:`morphaug.transforms.InstanceBoundary`: each Mask becomes its boundary map, a
    :class:`DenseTarget` (see the module notes).

    Example:
        >>> import torch
        >>> from torchvision import tv_tensors
        >>> from morphaug.adapters.torchvision import InstanceBoundary
        >>> mask = tv_tensors.Mask(torch.tensor([[1, 1, 2, 2], [1, 1, 2, 2]]))
        >>> InstanceBoundary()(mask).tolist()
        [[0, 1, 1, 0], [0, 1, 1, 0]]
    """

    core_class = _core.InstanceBoundary


class SkeletonTarget(_TargetTransform):
    """v2 version of :class:`morphaug.transforms.SkeletonTarget`: each Mask becomes its Skeleton Recall
    target, a :class:`DenseTarget` (see the module notes).

    Example:
        >>> import torch
        >>> from torchvision import tv_tensors
        >>> from morphaug.adapters.torchvision import SkeletonTarget
        >>> mask = tv_tensors.Mask(torch.zeros(7, 7, dtype=torch.long))
        >>> mask[3, 1:6] = 2
        >>> out = SkeletonTarget(radius=0, output_key="skel")({"mask": mask})
        >>> type(out["skel"]).__name__, out["skel"][3].tolist()
        ('DenseTarget', [0, 2, 2, 2, 2, 2, 0])
    """

    core_class = _core.SkeletonTarget


class _PairedTransform(_Transform):
    """A transform that pairs the samples of a batch: inputs must be batches ``(B, C, *spatial)``."""

    def _batch(self, inpt):
        x, added = super()._batch(inpt)
        if added:
            raise ValueError(f"{type(self).__name__} pairs the samples of a batch: expected (B, C, *spatial) with "
                             f"spatial_ndim={self.spatial_ndim}, got one sample of shape {tuple(inpt.shape)}")
        return x, added


class RandHistogramTransfer(_PairedTransform):
    """v2 version of :class:`morphaug.transforms.RandHistogramTransfer` on batches of Images.

    Example:
        >>> import torch
        >>> from torchvision import tv_tensors
        >>> from morphaug.adapters.torchvision import RandHistogramTransfer
        >>> out = RandHistogramTransfer(p=1.0)(tv_tensors.Image(torch.rand(4, 3, 8, 8)))
        >>> type(out).__name__, tuple(out.shape)
        ('Image', (4, 3, 8, 8))
    """

    core_class = _core.RandHistogramTransfer


class RandWassersteinMix(_PairedTransform):
    """v2 version of :class:`morphaug.transforms.RandWassersteinMix`: Images mixed, Masks along geodesics.

    On a batch only.

    Example:
        >>> import torch
        >>> from torchvision import tv_tensors
        >>> from morphaug.adapters.torchvision import RandWassersteinMix
        >>> mask = torch.zeros(2, 1, 16, 16, dtype=torch.uint8)
        >>> mask[0, :, 2:6, 2:6] = mask[1, :, 9:13, 9:13] = 1
        >>> image, mask = RandWassersteinMix(num_classes=2, p=1.0)(
        ...     tv_tensors.Image(torch.rand(2, 3, 16, 16)), tv_tensors.Mask(mask))
        >>> type(mask).__name__, mask.dtype, mask.sum((1, 2, 3)).tolist()
        ('Mask', torch.uint8, [16, 16])
    """

    core_class = _core.RandWassersteinMix
