"""MONAI dictionary transforms ``<Name>d`` over :mod:`morphaug.transforms`.

Each class takes the core transform's arguments (``keys``, ``prob``,
``num_classes``, ``allow_missing_keys``, ...) but ``generator``, plus
``batched`` (its signature and ``help()`` list and document them all), and
calls the core.
``keys`` may map keys to roles (``{"image": "image", "label": "label"}``, see
:class:`morphaug.transforms.BatchTransform`): keys of a role the transform
does not change pass through untouched.

Per sample or batch
    ``batched=False`` (default, as every MONAI transform): each value is one
    sample ``(C, *spatial)``, e.g. in a ``Dataset``/``DataLoader`` worker;
    a batch axis is added before the core call and removed after it.
    ``batched=True``: each value is a collated batch ``(B, C, *spatial)``
    (after ``monai.data.list_data_collate``, on the training device).
    Nothing is guessed from the shape, but a value that contradicts
    ``batched`` raises a ``ValueError`` that says "did you mean
    batched=...?", from what is known without reading data: a MetaTensor's
    ``is_batch`` (a collated batch given per sample) and its spatial rank
    (the length of its ``spatial_shape``, else the size of its affine
    unless that is the default identity: ``(C, *spatial)`` has rank + 1
    dims, a batch rank + 2); one sample of 5 or more dims
    whose second axis is 1 (a collated ``(B, 1, ...)`` batch: MONAI
    images have at most 3 spatial axes); and a label key's channels
    (``C``, or ``B`` of a batch read as one sample) against
    ``label_format="index"`` (one channel) and ``num_classes``.
Randomness
    ``set_random_state(seed)`` seeds MONAI's ``self.R`` (``Compose``,
    ``DataLoader`` workers and ``monai.utils.set_determinism`` do it for
    you). Each call draws one integer ``seed = self.R.randint(MAX_SEED)``
    and the core draws all parameters from
    ``torch.Generator(device=batch.device).manual_seed(seed)``: equal seeds
    give equal draws on one device type. ``prob`` is the core's per-sample
    probability (one sample: MONAI's usual meaning); ``last_params`` replays.
MetaTensors
    come back as MetaTensors with a copy of their metadata (batched meta too).
Metrics
    ``HausdorffDistanceMetric``, ``SurfaceDistanceMetric`` and
    ``SurfaceDiceMetric`` are MONAI's metric classes computed by
    :mod:`morphaug.metrics`, with MONAI's signatures (defined in
    :mod:`morphaug.adapters.monai_metrics`); ``HausdorffDistance``,
    ``SurfaceDistance`` and ``PanopticQuality`` are MONAI's ignite handlers
    over them (:mod:`morphaug.adapters.monai_handlers`; pytorch-ignite is
    needed to make one, not to import this module).

Example:
    >>> import torch
    >>> from monai.data import MetaTensor
    >>> from monai.transforms import Compose
    >>> from morphaug.adapters.monai import DistanceMapd, RandLabelMorphologyd
    >>> label = torch.zeros(1, 16, 16, 16)
    >>> label[:, 4:12, 4:12, 4:12] = 1
    >>> pipeline = Compose([
    ...     RandLabelMorphologyd("label", prob=1.0, num_classes=2),
    ...     DistanceMapd("label", output_keys="sdf", signed=True, classes=[1], spacing_from_meta=True),
    ... ]).set_random_state(0)
    >>> out = pipeline({"label": MetaTensor(label, affine=torch.diag(torch.tensor([2.0, 1, 1, 1])))})
    >>> type(out["sdf"]).__name__, tuple(out["sdf"].shape), out["sdf"].pixdim.tolist()
    ('MetaTensor', (1, 16, 16, 16), [2.0, 1.0, 1.0])
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch

try:
    from monai.data import MetaTensor
    from monai.transforms import MapTransform, RandomizableTransform
    from monai.utils import MAX_SEED, TransformBackends
except ImportError as error:  # pragma: no cover - exercised without MONAI
    raise ImportError("morphaug.adapters.monai needs MONAI: pip install monai") from error

from .. import transforms as _core
from ._common import Adapted, check_flag
from . import monai_handlers, monai_losses, monai_metrics, monai_morphology, monai_post
from .monai_handlers import HausdorffDistance, PanopticQuality, SurfaceDistance
from .monai_losses import BoundaryLoss, HausdorffDTLoss, LogHausdorffDTLoss, SoftclDiceLoss, SoftDiceclDiceLoss
from .monai_metrics import (
    HausdorffDistanceMetric,
    PanopticQualityMetric,
    SurfaceDiceMetric,
    SurfaceDistanceMetric,
    compute_average_surface_distance,
    compute_hausdorff_distance,
    compute_panoptic_quality,
    compute_surface_dice,
)
from .monai_morphology import dilate, erode
from .monai_post import *  # noqa: F403 - MONAI's names, the drop-in layer

__all__ = ["RandLabelMorphologyd", "RandGreyMorphologyd", "DistanceMapd", "LabelBoundaryd",
           "RandBoundaryJitterd", "KeepLargestComponentsd", "RemoveSmallComponentsd", "RandRemoveComponentd",
           "RandHistogramTransferd", "RandWassersteinMixd", "ExpandLabelsd", "InstanceBoundaryd",
           "SkeletonTargetd",
           *monai_metrics.__all__, *monai_handlers.__all__, *monai_losses.__all__, *monai_morphology.__all__, *monai_post.__all__]


class _Mapd(Adapted, MapTransform):
    """Calls ``core_class(**core_args)`` on the present keys of the roles it changes, per sample or batched."""

    backend = [TransformBackends.TORCH]
    _dropped = frozenset({"generator"})  # randomness comes from set_random_state

    def __init__(self, *, batched: bool = False, **core_args):
        """The MONAI arguments (the others are the core's).

        Args:
            batched: ``False``: each value is one sample ``(C, *spatial)``;
                ``True``: a collated batch ``(B, C, *spatial)`` (see the module notes).
        """
        MapTransform.__init__(self, core_args["keys"], core_args["allow_missing_keys"])
        self.batched = check_flag(batched, "batched")
        if not isinstance(core_args["keys"], Mapping):
            core_args["keys"] = self.keys  # MONAI's keys; a mapping gives each key its role
        self._core_args = core_args
        self.core = self.core_class(**core_args)

    @property
    def last_params(self):
        """The core's last draw: ``self.core(batch, params=t.last_params)`` replays it."""
        return self.core.last_params

    def __call__(self, data):
        d = dict(data)
        present = list(self.key_iterator(d))
        changed = [key for key in present if key in self.core.changed_keys]
        if not changed:
            return d
        for key in changed:
            self._check_batched(key, d[key])
        # keys of the other roles go to the core as they are, and it passes them through
        batch = {key: d[key] if self.batched or key not in changed else d[key][None] for key in present}
        out = self._run(batch)
        for key, out_key in zip(self.core.keys, self.core.output_keys):
            if key in changed:
                d[out_key] = out[out_key] if self.batched else out[out_key][0]
        return d

    def _run(self, batch: dict) -> dict:
        return self.core(batch)

    def _check_batched(self, key, x) -> None:
        """Raise when ``x``'s metadata or shape contradicts ``batched`` (see the module notes); reads no data
        but a MetaTensor's affine on the CPU."""
        if not isinstance(x, torch.Tensor) or x.ndim < 2:
            return  # the core raises its own error
        rank = _spatial_rank(x)
        # the label channels x has as the other layout: B of a batch read as one sample, C of a sample read
        # as a batch, when that reading has one channel
        other = x.shape[1] if self.batched else x.shape[0]
        single = (x.shape[0] if self.batched else x.shape[1]) == 1
        if self.batched and rank is not None and not x.is_batch and x.ndim == rank + 1:
            why = f"is a MetaTensor of {rank} spatial axes (its metadata), with no batch axis (is_batch=False)"
        elif not self.batched and isinstance(x, MetaTensor) and x.is_batch:
            why = "is a collated batch (MetaTensor.is_batch=True)"
        elif not self.batched and rank is not None and x.ndim == rank + 2:
            why = f"is a MetaTensor of {rank} spatial axes (its metadata), with a batch axis"
        elif not self.batched and x.ndim >= 5 and x.shape[1] == 1:
            why = (f"would have {x.ndim - 1} spatial axes as one sample (MONAI images have at most 3): a "
                   "collated (B, 1, ...) batch")
        elif self.core.roles[key] == "label" and single and other != 1 and self._contradicts_labels(other):
            why = f"has {other} label channels {'as a batch' if self.batched else 'as one sample'}, but " \
                  + self._contradicts_labels(other)
        else:
            return
        raise ValueError(f"{type(self).__name__}(batched={self.batched}): key {key!r} of shape {tuple(x.shape)} "
                         f"{why}; did you mean batched={not self.batched}?")

    def _contradicts_labels(self, channels: int) -> str | None:
        """What of the core's label arguments says labels cannot have ``channels`` (> 1) channels, or None."""
        if getattr(self.core, "label_format", None) == "index":
            return "label_format='index' (one channel)"
        num_classes = getattr(self.core, "num_classes", None)
        return None if num_classes in (None, channels) else f"num_classes={num_classes}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(batched={self.batched}, core={self.core!r})"


def _spatial_rank(x) -> int | None:
    """The spatial rank that MetaTensor ``x``'s metadata says, or None: the length of its
    ``spatial_shape`` (set by ``LoadImage``), else the rank of its affine ``(rank + 1, rank + 1)`` unless
    that is the default identity (set when no affine is given: it says nothing) or off the CPU (not read)."""
    if not isinstance(x, MetaTensor):
        return None
    shape = x.meta.get("spatial_shape")
    if shape is not None and np.ndim(shape) == 1:
        return len(shape)
    affine = x.affine
    if affine.device.type != "cpu" or affine.ndim != 2 or affine.shape[0] != affine.shape[1]:
        return None
    if torch.equal(affine, torch.eye(affine.shape[0], dtype=affine.dtype)):
        return None
    return affine.shape[0] - 1


class _RandMapd(_Mapd, RandomizableTransform):
    """A random ``_Mapd``: one seed from ``self.R`` per call seeds a torch.Generator for the core."""

    def __init__(self, **kwargs):
        _Mapd.__init__(self, **kwargs)
        RandomizableTransform.__init__(self, prob=self.core.prob)
        self._seed = None

    def randomize(self, data=None) -> None:
        self._seed = int(self.R.randint(MAX_SEED))

    def _run(self, batch):
        self.randomize()
        first = next(batch[key] for key in self.core.changed_keys if key in batch)
        if not isinstance(first, torch.Tensor):
            return self.core(batch)  # the core raises its TypeError
        generator = torch.Generator(device=first.device).manual_seed(self._seed)
        return self.core(batch, params=self.core.make_params(first.as_subclass(torch.Tensor), generator))


class RandLabelMorphologyd(_RandMapd):
    """MONAI version of :class:`morphaug.transforms.RandLabelMorphology` (see the module notes).

    Example:
        >>> import torch
        >>> from morphaug.adapters.monai import RandLabelMorphologyd
        >>> t = RandLabelMorphologyd("label", prob=1.0, radius=1, num_classes=2).set_random_state(0)
        >>> t({"label": torch.ones(1, 8, 8, 8)})["label"].shape
        torch.Size([1, 8, 8, 8])
    """

    core_class = _core.RandLabelMorphology


class RandGreyMorphologyd(_RandMapd):
    """MONAI version of :class:`morphaug.transforms.RandGreyMorphology` (see the module notes).

    Example:
        >>> import torch
        >>> from morphaug.adapters.monai import RandGreyMorphologyd
        >>> t = RandGreyMorphologyd("image", prob=1.0, batched=True).set_random_state(0)
        >>> t({"image": torch.rand(2, 1, 8, 8, 8)})["image"].shape
        torch.Size([2, 1, 8, 8, 8])
    """

    core_class = _core.RandGreyMorphology


class LabelBoundaryd(_RandMapd):
    """MONAI version of :class:`morphaug.transforms.LabelBoundary` (see the module notes).

    Example:
        >>> import torch
        >>> from morphaug.adapters.monai import LabelBoundaryd
        >>> label = torch.zeros(1, 6, 6)
        >>> label[:, 1:5, 1:5] = 1
        >>> LabelBoundaryd("label", output_keys="edge", classes=[1])({"label": label})["edge"].sum().item()
        12.0
    """

    core_class = _core.LabelBoundary


class RandBoundaryJitterd(_RandMapd):
    """MONAI version of :class:`morphaug.transforms.RandBoundaryJitter` (see the module notes).

    Example:
        >>> import torch
        >>> from morphaug.adapters.monai import RandBoundaryJitterd
        >>> t = RandBoundaryJitterd("label", prob=1.0, num_classes=2).set_random_state(0)
        >>> t({"label": torch.zeros(1, 8, 8)})["label"].unique().tolist()
        [0.0]
    """

    core_class = _core.RandBoundaryJitter


class ExpandLabelsd(_Mapd):
    """MONAI version of :class:`morphaug.transforms.ExpandLabels` (deterministic; see the module notes).

    Example:
        >>> import torch
        >>> from morphaug.adapters.monai import ExpandLabelsd
        >>> label = torch.tensor([[[0.0, 1, 0, 0, 0, 0, 2]]])
        >>> ExpandLabelsd("label", distance=1)({"label": label})["label"][0, 0].tolist()
        [1.0, 1.0, 1.0, 0.0, 0.0, 2.0, 2.0]
    """

    core_class = _core.ExpandLabels


class InstanceBoundaryd(_Mapd):
    """MONAI version of :class:`morphaug.transforms.InstanceBoundary` (deterministic; see the module notes).

    Example:
        >>> import torch
        >>> from morphaug.adapters.monai import InstanceBoundaryd
        >>> label = torch.tensor([[[1.0, 1, 2, 2], [1, 1, 2, 2]]])
        >>> InstanceBoundaryd("label", output_keys="edge")({"label": label})["edge"][0].tolist()
        [[0.0, 1.0, 1.0, 0.0], [0.0, 1.0, 1.0, 0.0]]
    """

    core_class = _core.InstanceBoundary


class SkeletonTargetd(_Mapd):
    """MONAI version of :class:`morphaug.transforms.SkeletonTarget` (deterministic; see the module notes).

    Example:
        >>> import torch
        >>> from morphaug.adapters.monai import SkeletonTargetd
        >>> label = torch.zeros(1, 7, 7)
        >>> label[:, 3, 1:6] = 2
        >>> SkeletonTargetd("label", output_keys="skel", radius=0)({"label": label})["skel"][0, 3].tolist()
        [0.0, 2.0, 2.0, 2.0, 2.0, 2.0, 0.0]
    """

    core_class = _core.SkeletonTarget


def _meta_spacing(owner: str, key, x) -> tuple[float, ...] | None:
    """The voxel spacing of MetaTensor ``x`` (``pixdim``), one for the whole batch; None for another tensor."""
    if not isinstance(x, MetaTensor):
        return None
    ndim = x.ndim - 2
    pixdim = x.pixdim if x.is_batch else [x.pixdim]
    spacings = {tuple(float(s) for s in torch.as_tensor(p).reshape(-1)[:ndim].tolist()) for p in pixdim}
    if len(spacings) != 1 or len(next(iter(spacings))) != ndim:
        raise ValueError(f"{owner}: key {key!r} needs one spacing of {ndim} values for the whole "
                         f"batch, got {sorted(spacings)}; resample to a common spacing first")
    return spacings.pop()


class _MeasuredMapd(_Mapd):
    """A deterministic ``_Mapd`` that can measure in each key's MetaTensor spacing, passed as the core's
    ``sampling`` (one core per spacing)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._cores: dict[tuple, _core.BatchTransform] = {}

    def _spacing(self, key, x) -> tuple[float, ...] | None:
        """The spacing to measure key ``key`` in; None: the core's own ``sampling``."""
        return None

    def _run(self, batch):
        out = dict(batch)
        for key, out_key in zip(self.core.keys, self.core.output_keys):
            if key in batch and key in self.core.changed_keys:
                spacing = self._spacing(key, batch[key])
                if spacing is not None and spacing not in self._cores:
                    self._cores[spacing] = self.core_class(**{**self._core_args, "sampling": spacing})
                out[out_key] = (self.core if spacing is None else self._cores[spacing])(batch[key])
        return out


class KeepLargestComponentsd(_Mapd):
    """MONAI version of :class:`morphaug.transforms.KeepLargestComponents` (deterministic; see the module notes).

    MONAI's ``KeepLargestConnectedComponentd`` with ``applied_labels`` spelt
    ``classes``; ``is_onehot`` is the core's ``label_format``.

    Example:
        >>> import torch
        >>> from morphaug.adapters.monai import KeepLargestComponentsd
        >>> label = torch.zeros(1, 8, 8)
        >>> label[:, 1:4, 1:4] = label[:, 6, 6] = 1
        >>> KeepLargestComponentsd("label")({"label": label})["label"].sum().item()
        9.0
    """

    core_class = _core.KeepLargestComponents


class RemoveSmallComponentsd(_MeasuredMapd):
    """MONAI version of :class:`morphaug.transforms.RemoveSmallComponents` (deterministic; see the module notes).

    MONAI's ``RemoveSmallObjectsd`` with ``pixdim`` spelt ``sampling`` and
    ``independent_channels`` spelt ``independent``. With ``by_measure=True``
    a MetaTensor is measured in its own spacing (``pixdim``), as in MONAI,
    other tensors in ``sampling``.

    Example:
        >>> import torch
        >>> from monai.data import MetaTensor
        >>> from morphaug.adapters.monai import RemoveSmallComponentsd
        >>> label = torch.zeros(1, 8, 8)
        >>> label[:, 1:4, 1:4] = label[:, 6, 6:8] = 1
        >>> label = MetaTensor(label, affine=torch.diag(torch.tensor([2.0, 2.0, 1.0, 1.0])))
        >>> t = RemoveSmallComponentsd("label", min_size=10.0, by_measure=True)  # mm^2: 4 per voxel
        >>> t({"label": label})["label"].sum().item()
        9.0
    """

    core_class = _core.RemoveSmallComponents

    def _spacing(self, key, x):
        return _meta_spacing(type(self).__name__, key, x) if self.core.by_measure else None


class RandRemoveComponentd(_RandMapd):
    """MONAI version of :class:`morphaug.transforms.RandRemoveComponent` (see the module notes).

    Example:
        >>> import torch
        >>> from morphaug.adapters.monai import RandRemoveComponentd
        >>> label = torch.zeros(1, 8, 8)
        >>> label[:, 1:3, 1:3] = label[:, 5:7, 5:7] = 1
        >>> t = RandRemoveComponentd("label", prob=1.0, num_classes=2).set_random_state(0)
        >>> t({"label": label})["label"].sum().item()  # one of the two squares is gone
        4.0
    """

    core_class = _core.RandRemoveComponent


class DistanceMapd(_MeasuredMapd):
    """MONAI version of :class:`morphaug.transforms.DistanceMap` (deterministic; see the module notes).

    Example:
        >>> import torch
        >>> from monai.data import MetaTensor
        >>> from morphaug.adapters.monai import DistanceMapd
        >>> label = MetaTensor(torch.zeros(1, 1, 8), affine=torch.diag(torch.tensor([1.0, 3.0, 1, 1])))
        >>> label[0, 0, 0] = 1
        >>> t = DistanceMapd("label", classes=[1], spacing_from_meta=True)
        >>> t({"label": label})["label"][0, 0, 1].item()  # one voxel along an axis of spacing 3
        3.0
    """

    core_class = _core.DistanceMap

    def __init__(self, *, spacing_from_meta: bool = False, **kwargs):
        """The MONAI arguments of DistanceMapd.

        Args:
            spacing_from_meta: ``True`` (Euclidean only): read each key's
                voxel spacing from its MetaTensor (``pixdim``, from the
                affine) and pass it as the core's ``sampling``, so distances
                are physical (e.g. mm). All samples of a batched key must
                share one spacing (resample first, e.g. ``Spacingd``); a
                ``ValueError`` says so otherwise.
        """
        super().__init__(**kwargs)
        self.spacing_from_meta = check_flag(spacing_from_meta, "spacing_from_meta")
        if self.spacing_from_meta and (self.core.sampling is not None or self.core.metric != "euclidean"):
            raise ValueError("DistanceMapd: spacing_from_meta=True needs metric='euclidean' and no sampling=")

    def _run(self, batch):
        return super()._run(batch) if self.spacing_from_meta else self.core(batch)

    def _spacing(self, key, x):
        spacing = _meta_spacing(type(self).__name__, key, x)
        if spacing is None:
            raise TypeError(f"DistanceMapd: spacing_from_meta=True needs a MetaTensor at key {key!r}, "
                            f"got {type(x).__name__}")
        return spacing


class _PairedMapd(_RandMapd):
    """A random transform that pairs the samples of a collated batch: ``batched=True`` only."""

    def __init__(self, *, batched: bool = True, **kwargs):
        """The MONAI arguments of the pairing transforms.

        Args:
            batched: must be ``True``: each value is a collated batch
                ``(B, C, *spatial)`` whose samples are paired.
        """
        if not check_flag(batched, "batched"):
            raise ValueError(f"{type(self).__name__} pairs the samples of a collated batch and needs batched=True "
                             "(one sample would be paired with itself and never change)")
        super().__init__(batched=True, **kwargs)


class RandHistogramTransferd(_PairedMapd):
    """MONAI version of :class:`morphaug.transforms.RandHistogramTransfer`, on collated batches only.

    Example:
        >>> import torch
        >>> from morphaug.adapters.monai import RandHistogramTransferd
        >>> t = RandHistogramTransferd("image", prob=1.0).set_random_state(0)
        >>> t({"image": torch.rand(4, 1, 8, 8, 8)})["image"].shape
        torch.Size([4, 1, 8, 8, 8])
    """

    core_class = _core.RandHistogramTransfer


class RandWassersteinMixd(_PairedMapd):
    """MONAI version of :class:`morphaug.transforms.RandWassersteinMix`, on collated batches only.

    ``keys`` are images and ``label_keys`` labels, or ``keys`` maps keys to roles (MetaTensor labels are
    float index maps; ``num_classes`` spares reading their classes).

    Example:
        >>> import torch
        >>> from morphaug.adapters.monai import RandWassersteinMixd
        >>> t = RandWassersteinMixd("image", "label", prob=1.0, num_classes=2).set_random_state(0)
        >>> label = torch.zeros(2, 1, 16, 16)
        >>> label[0, :, 2:6, 2:6] = label[1, :, 9:13, 9:13] = 1
        >>> out = t({"image": torch.rand(2, 1, 16, 16), "label": label})
        >>> out["label"].sum((1, 2, 3)).tolist()  # each mixed square keeps its area
        [16.0, 16.0]
    """

    core_class = _core.RandWassersteinMix

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.keys = self.core.keys  # with label_keys
