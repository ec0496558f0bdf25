"""MONAI's post-processing transforms under MONAI's names, computed by morphaug: the drop-in layer.

``from morphaug.adapters.monai import KeepLargestConnectedComponent`` in place of ``from monai.transforms
import KeepLargestConnectedComponent``: the same names, arguments, defaults, results, containers and error
types as the installed MONAI (1.6), for ``KeepLargestConnectedComponent``, ``RemoveSmallObjects``,
``FillHoles``, ``DistanceTransformEDT``, ``LabelToContour`` and ``LabelFilter`` and their dictionary
twins (suffix ``d``; MONAI's ``D`` and ``Dict`` aliases too). MONAI's own tests of these classes pass
against them (``tests/monai_suite``).

Containers
    Each class's MONAI's, on the input's device, in the input's dtype (``DistanceTransformEDT``: float64),
    a MetaTensor's metadata kept: ``RemoveSmallObjects`` and ``DistanceTransformEDT`` return the input's
    type (NumPy, tensor, MetaTensor); ``LabelFilter`` returns NumPy for NumPy and a MetaTensor for a
    tensor; the others convert any input to a MetaTensor first and return one (a plain tensor when
    MONAI's ``get_track_meta()`` is off). Inputs
    are never modified (MONAI's ``KeepLargestConnectedComponent`` writes into a tensor input).
Per sample or batched
    ``batched=False`` (keyword-only, not in MONAI): the input is one sample ``(C, *spatial)``, as
    MONAI's; ``batched=True``: a collated batch ``(B, C, *spatial)``, every sample processed as MONAI
    processes it alone, in one call of morphaug's batched kernels.
Host reads
    What MONAI reads from the data, these read too, once per call (free on the CPU, a sync on an
    accelerator): the labels present when ``applied_labels`` is None (``KeepLargestConnectedComponent``,
    ``FillHoles``), and which samples ``RemoveSmallObjects`` leaves alone or treats as label values.

Example:
    >>> import numpy as np
    >>> from morphaug.adapters.monai import KeepLargestConnectedComponent
    >>> KeepLargestConnectedComponent(connectivity=1)(np.array([[[1, 1, 0, 1]]]))  # a MetaTensor, as MONAI's
    metatensor([[[1, 1, 0, 0]]])
"""

from __future__ import annotations

import functools
import math
import warnings

import numpy as np
import torch
from monai.data.meta_tensor import MetaTensor, get_track_meta
from monai.transforms import MapTransform, Transform
from monai.utils import TransformBackends, convert_to_dst_type, convert_to_tensor, ensure_tuple, ensure_tuple_rep

from .. import _sync, ndimage
from .. import transforms as _core
from .._dtypes import SIGNED_VIEW
from ._common import check_flag

_NAMES = ["KeepLargestConnectedComponent", "RemoveSmallObjects", "FillHoles", "DistanceTransformEDT",
          "LabelToContour", "LabelFilter"]
__all__ = _NAMES + [f"{name}{suffix}" for name in _NAMES for suffix in ("d", "D", "Dict")]


class _Post(Transform):
    """An array transform: MONAI's containers around :meth:`compute` on a batch ``(B, C, *spatial)``."""

    backend = [TransformBackends.TORCH, TransformBackends.NUMPY]
    #: the output dtype (None: the input's)
    out_dtype: torch.dtype | None = None
    #: whether MONAI converts the input to a MetaTensor first (and returns one), or returns the input's type
    converts = True

    def _setup(self, batched) -> None:
        self.batched = check_flag(batched, "batched")

    def __call__(self, img):
        if not isinstance(img, (np.ndarray, torch.Tensor)):
            raise NotImplementedError(f"{self.__class__} can not handle data of type {type(img)}.")
        dst = convert_to_tensor(img, track_meta=get_track_meta()) if self.converts else img
        x = convert_to_tensor(img, track_meta=False)
        if x.dtype in SIGNED_VIEW:  # uint16 .. uint64, which torch neither orders nor sums: their values in int64
            x = x.to(torch.int64)
        if self.batched and x.ndim < 2:
            raise ValueError(f"{type(self).__name__}(batched=True) takes a batch (B, C, *spatial), got shape "
                             f"{tuple(x.shape)}")
        out = self.compute(x if self.batched else x[None], img)
        if out is None:  # unchanged, as MONAI returns it
            return img
        return convert_to_dst_type(out if self.batched else out[0], dst=dst, dtype=self.out_dtype or dst.dtype)[0]

    def compute(self, x: torch.Tensor, img) -> torch.Tensor | None:
        """The result for batch ``x``; ``img`` is the input as given (for its metadata)."""
        raise NotImplementedError


def _read(tensor: torch.Tensor) -> list:
    """What a drop-in must know on the host about the labels (see the module notes)."""
    return _sync.host_read(tensor, "label classes")


def _onehot(x: torch.Tensor, is_onehot: bool | None) -> bool:
    return x.shape[1] > 1 if is_onehot is None else bool(is_onehot)


def _present(x: torch.Tensor, onehot: bool) -> list:
    """MONAI's ``get_unique_labels`` of batch ``x`` but background 0: the channels with a positive sum
    (one-hot) or the distinct values (index), over the batch; a label absent from a sample changes nothing
    there (one-hot: the caller limits changes to the channels present in each sample)."""
    if onehot:
        return [c for c, flag in enumerate(_read((x.flatten(2).sum(-1) > 0).any(0))) if flag and c != 0]
    if x.shape[1] != 1:
        raise ValueError(f"If input not one-hotted, should only be 1 channel, got {x.shape[1]}.")
    return [value for value in _distinct(x) if value != 0]


#: Label values counted into slots by :func:`_distinct` (others: a sort).
_SLOTS = 4096


def _distinct(x: torch.Tensor) -> list:
    """The distinct values of ``x``, ascending (MONAI's ``unique``): counted into slots where they are whole
    numbers in ``0 .. _SLOTS - 1`` (label maps; many times faster than ``torch.unique``'s sort), else sorted."""
    values = x.flatten()
    if values.is_floating_point():
        whole = (values.frac() == 0) & (values >= 0) & (values < _SLOTS)  # NaN and inf are not whole
    else:  # torch compares no uint32/uint64; the smaller types are widened for the slot _SLOTS
        values = values.int() if values.dtype.itemsize <= 2 else values if values.dtype.is_signed else values.long()
        whole = (values >= 0) & (values < _SLOTS)
    slot = torch.where(whole, values, _SLOTS).int()
    counts = torch.zeros(_SLOTS + 1, dtype=torch.int64, device=x.device)
    counts.index_add_(0, slot, torch.ones((), dtype=torch.int64, device=x.device).expand(slot.shape))
    present = _read(counts > 0)
    if present[_SLOTS]:
        return _read(torch.unique(x))
    return [value for value, flag in enumerate(present[:_SLOTS]) if flag]


def _per_sample(flags: list, like: torch.Tensor) -> torch.Tensor:
    """One flag per sample ``(B, 1, ...)`` on ``like``'s device, to choose between whole samples."""
    return _sync.to_device(torch.tensor(flags), like.device).view(-1, *([1] * (like.ndim - 1)))


def _values(labels: list, like: torch.Tensor) -> torch.Tensor:
    """Label values ``(1, K, 1, ...)`` in ``like``'s dtype, on its device."""
    table = _sync.to_device(torch.tensor(labels, dtype=like.dtype), like.device)
    return table.view(1, -1, *([1] * (like.ndim - 2)))


def _unique(labels) -> list:
    return list(dict.fromkeys(ensure_tuple(labels)))


class KeepLargestConnectedComponent(_Post):
    """MONAI's ``KeepLargestConnectedComponent``: keep the largest connected component(s) of each label.

    MONAI's arguments and results (see ``monai.transforms.KeepLargestConnectedComponent``): removed voxels
    become 0 (one-hot: in their channel only; channels are independent masks, ``img[i] > 0``, or, with
    ``independent=False``, their union of ones); ``num_components=0`` removes every component.
    Components are labelled by :class:`morphaug.transforms.KeepLargestComponents` (ties: the later
    component in raster order first, NumPy's stable order for few components). ``batched``: see
    :mod:`morphaug.adapters.monai_post`.

    Example:
        >>> import torch
        >>> from morphaug.adapters.monai import KeepLargestConnectedComponent
        >>> KeepLargestConnectedComponent()(torch.tensor([[[1, 0, 1, 1]]])).tolist()
        [[[0, 0, 1, 1]]]
    """

    def __init__(self, applied_labels=None, is_onehot: bool | None = None, independent: bool = True,
                 connectivity: int | None = None, num_components: int = 1, *, batched: bool = False):
        super().__init__()
        self.applied_labels = _unique(applied_labels) if applied_labels is not None else None
        self.is_onehot = is_onehot
        self.independent = independent
        self.connectivity = connectivity
        if not isinstance(num_components, (int, np.integer)) or num_components < 0:
            raise ValueError(f"num_components must be an int >= 0, got {num_components!r}")
        self.num_components = int(num_components)
        self._keep = None if num_components == 0 else _core.KeepLargestComponents(
            "label", num_components=num_components, classes=(1,), connectivity=connectivity, label_format="index")
        self._setup(batched)

    def removed(self, masks: torch.Tensor) -> torch.Tensor:
        """The voxels of the components that go, ``(B, K, *spatial)``, from the masks ``(B, K, *spatial)``."""
        if self._keep is None:
            return masks
        return self._keep.removed(masks.reshape(-1, 1, *masks.shape[2:])).view(masks.shape)

    def compute(self, x, img):
        onehot = _onehot(x, self.is_onehot)
        labels = self.applied_labels if self.applied_labels is not None else _present(x, onehot)
        if not labels:
            return x
        if not onehot:
            masks = x[:, :1] == _values(labels, x)
            searched = masks if self.independent else masks.any(1, keepdim=True)
            # every mask's components in one call, the removed voxels of any of them
            gone = searched.any(1, keepdim=True) if self._keep is None else self._keep.removed(searched)
            if x.shape[1] == 1:
                return torch.where(gone, 0, x)
            return torch.cat([torch.where(gone, 0, x[:, :1]), x[:, 1:]], 1)
        out = x.clone()
        picked = x[:, labels]
        if self.independent:
            gone = self.removed(picked > 0)
            if self.applied_labels is None:  # MONAI analyses the channels with a positive sum
                gone &= (picked.flatten(2).sum(-1) > 0).view(*picked.shape[:2], *([1] * (x.ndim - 2)))
        else:
            gone = self.removed((picked == 1).any(1, keepdim=True))
        out[:, labels] = torch.where(gone, 0, picked)
        return out


@functools.lru_cache(maxsize=1)
def _inclusive() -> bool:
    """Whether the installed scikit-image's ``remove_small_objects(ar, min_size)``, as MONAI calls it,
    removes components of exactly ``min_size`` voxels (0.26 on: ``min_size`` is read as ``max_size``)."""
    from skimage.morphology import remove_small_objects
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return not remove_small_objects(np.ones(2, dtype=bool), 2).any()


class RemoveSmallObjects(_Post):
    """MONAI's ``RemoveSmallObjects``: skimage's ``remove_small_objects`` on each sample, as MONAI calls it.

    MONAI's rules, kept: a sample of one value comes back unchanged; a sample whose maximum is at most 1
    is a mask whose components (of ``img != 0``; ``independent_channels=False``: ``img > 0``, the values
    kept) are connected along the channel axis too (skimage labels ``(C, *spatial)`` as one array);
    a sample of larger values is a map of labels, each label value one object whatever its components
    (negative values are refused). An object is removed when it has fewer than ``min_size`` voxels, or
    ``min_size`` or fewer with scikit-image 0.26 and later (which MONAI 1.6's positional ``min_size``
    turns into ``max_size``; detected). With ``by_measure``, ``min_size`` is a volume: divided by the
    voxel volume (MetaTensor ``pixdim``, else ``pixdim``) and rounded up. ``batched``: see
    :mod:`morphaug.adapters.monai_post` (one ``pixdim`` for a batch).

    Example:
        >>> import numpy as np
        >>> from morphaug.adapters.monai import RemoveSmallObjects
        >>> RemoveSmallObjects(min_size=2)(np.array([[[1, 1, 0, 1, 0, 0, 1, 1, 1]]]))
        array([[[0, 0, 0, 0, 0, 0, 1, 1, 1]]])
    """

    converts = False

    def __init__(self, min_size: int = 64, connectivity: int = 1, independent_channels: bool = True,
                 by_measure: bool = False, pixdim=None, *, batched: bool = False):
        self.min_size = min_size
        self.connectivity = connectivity
        self.independent_channels = independent_channels
        self.by_measure = by_measure
        self.pixdim = pixdim
        self._setup(batched)

    def _threshold(self, img, rank: int) -> float:
        """MONAI's ``min_size`` for ``img`` of ``rank`` spatial axes (with ``by_measure``: in voxels)."""
        if not self.by_measure:
            if self.pixdim is not None:
                warnings.warn("`pixdim` is specified but not in use when computing the volume.")
            return self.min_size
        if isinstance(img, MetaTensor):
            pixdims = {tuple(torch.as_tensor(p).reshape(-1).tolist())
                       for p in (img.pixdim if img.is_batch else [img.pixdim])}
            if len(pixdims) != 1:
                raise ValueError(f"{type(self).__name__}(batched=True) measures a batch in one pixdim, got "
                                 f"{sorted(pixdims)}: resample to a common spacing first")
            pixdim = pixdims.pop()
        elif self.pixdim is not None:
            pixdim = ensure_tuple_rep(self.pixdim, rank)
        else:
            warnings.warn("`img` is not of type MetaTensor and `pixdim` is None, assuming affine to be identity.")
            pixdim = (1.0,) * rank
        volume = float(np.prod(np.array(pixdim)))
        if volume == 0:
            warnings.warn("Invalid `pixdim` value detected, set it to 1. Please verify the pixdim settings.")
            volume = 1
        return float(np.ceil(self.min_size / volume))

    def compute(self, x, img):
        if x.numel() == 0:
            return None
        threshold = self._threshold(img, x.ndim - 2)
        # the fewest voxels an object must have to stay
        kept_from = math.floor(threshold) + 1 if _inclusive() else math.ceil(threshold)
        flat = x.flatten(1).to(torch.uint8) if x.dtype == torch.bool else x.flatten(1)
        single, binary = _read(torch.stack([(flat == flat[:, :1]).all(1), flat.amax(1) <= 1]))
        if all(single):
            return None
        masks = not self.independent_channels or any(b and not s for b, s in zip(binary, single))
        labels = self.independent_channels and not all(b or s for b, s in zip(binary, single))
        out = x
        if labels:
            out = self._small_labels(x, threshold)
        if masks:
            fg = x > 0 if not self.independent_channels else x != 0
            # skimage labels (C, *spatial) as one array: the channel axis is one more spatial axis
            core = _core.RemoveSmallComponents("label", min_size=kept_from, connectivity=self.connectivity,
                                               classes=(1,), label_format="index")
            kept = core(fg[:, None]).view(x.shape)
            by_mask = x * kept if not self.independent_channels else kept.to(x.dtype)
            use = [b or not self.independent_channels for b in binary]
            out = by_mask if all(use) else torch.where(_per_sample(use, x), by_mask, out)
        # a batch-sized pass only where the samples take different paths
        return torch.where(_per_sample(single, x), x, out) if any(single) else out

    def _small_labels(self, x: torch.Tensor, threshold: float) -> torch.Tensor:
        """skimage on a map of labels: each sample's label values held by too few voxels become 0."""
        values = x.to(torch.int32).flatten(1)
        low, high = _read(torch.stack([values.amin(), values.amax()]))
        if low < 0:
            raise ValueError("Negative value labels are not supported. Try relabeling the input with "
                             "`scipy.ndimage.label` or `skimage.morphology.label`.")
        rows = torch.arange(x.shape[0], device=x.device)[:, None]
        if x.shape[0] * (high + 1) > max(values.numel(), _SLOTS):  # sparse label values: sorted
            _, keys, counts = torch.unique(rows * 2**32 + values, return_inverse=True, return_counts=True)
        else:  # each sample's label values counted into its own row of high + 1 slots
            keys = rows * (high + 1) + values
            counts = torch.zeros(x.shape[0] * (high + 1), dtype=torch.int64, device=x.device)
            one = torch.ones((), dtype=torch.int64, device=x.device)
            counts.index_add_(0, keys.flatten(), one.expand(keys.numel()))
        small = counts <= threshold if _inclusive() else counts < threshold
        return torch.where(small[keys], 0, values).view(x.shape).to(x.dtype)


class FillHoles(_Post):
    """MONAI's ``FillHoles``: fill the holes that one label encloses with that label.

    MONAI's arguments and results (see ``monai.transforms.FillHoles``): full connectivity by default; one
    channel is a map of labels, each label (``applied_labels``, else those present, 0 excluded) in
    ascending order filling everything it encloses, other labels included; several channels are one-hot,
    each applied channel filled alone (``binary_fill_holes``, values set to 0 and 1). Holes are filled by
    :func:`morphaug.ndimage.binary_fill_holes`, every sample (and one-hot channel) in one call.
    ``batched``: see :mod:`morphaug.adapters.monai_post`.

    Example:
        >>> import torch
        >>> from morphaug.adapters.monai import FillHoles
        >>> label = torch.ones(1, 3, 3)
        >>> label[0, 1, 1] = 0
        >>> FillHoles()(label)[0, 1, 1].item()
        1.0
    """

    def __init__(self, applied_labels=None, connectivity: int | None = None, *, batched: bool = False):
        super().__init__()
        self.applied_labels = _unique(applied_labels) if applied_labels else None
        self.connectivity = connectivity
        self._setup(batched)

    def compute(self, x, img):
        onehot = x.shape[1] > 1
        labels = self.applied_labels if self.applied_labels is not None else _present(x, onehot)
        labels = [label for label in labels if label != 0]
        if not labels:
            return x
        rank = x.ndim - 2
        structure = ndimage.generate_binary_structure(rank, self.connectivity or rank)
        if onehot:
            picked = x[:, labels]
            filled = ndimage.binary_fill_holes(picked != 0, structure=structure).to(x.dtype)
            if self.applied_labels is None:  # MONAI fills the channels with a positive sum
                present = (picked.flatten(2).sum(-1) > 0).view(*picked.shape[:2], *([1] * rank))
                filled = torch.where(present, filled, picked)
            out = x.clone()
            out[:, labels] = filled
            return out
        out = x[:, :1]
        for value in sorted(labels):  # MONAI's order: one label may enclose another
            out = torch.where(ndimage.binary_fill_holes(out == value, structure=structure), value, out)
        return torch.cat([out, x[:, 1:]], 1)


class DistanceTransformEDT(_Post):
    """MONAI's ``DistanceTransformEDT``: the exact Euclidean distance transform of each channel (SciPy's).

    Distances of ``img != 0`` to the nearest 0 of its channel, in ``sampling`` units, as float64 (SciPy's
    precision) in the input's container type (NumPy, tensor or MetaTensor; MONAI's MetaTensor comes
    without the input's metadata, this one keeps it); computed by
    :func:`morphaug.ndimage.distance_transform_edt` on every sample and channel in one call, on the
    input's device (no cuCIM needed; ties and values are SciPy's). ``batched``: see
    :mod:`morphaug.adapters.monai_post`.

    Example:
        >>> import numpy as np
        >>> from morphaug.adapters.monai import DistanceTransformEDT
        >>> DistanceTransformEDT()(np.array([[[0, 1, 1, 1]]])).tolist()
        [[[0.0, 1.0, 2.0, 3.0]]]
    """

    out_dtype = torch.float64
    converts = False

    def __init__(self, sampling=None, *, batched: bool = False):
        super().__init__()
        self.sampling = sampling
        self._setup(batched)

    def __call__(self, img):
        per_sample = img.ndim - (1 if self.batched else 0)
        if not 3 <= per_sample <= 4:
            raise RuntimeError("Wrong input dimensionality. Use (num_channels, H, W [,D])")
        return super().__call__(img)

    def compute(self, x, img):
        distances = torch.empty(x.shape, dtype=torch.float64, device=x.device)
        ndimage.distance_transform_edt(x, sampling=self.sampling, distances=distances)
        return distances


#: The bytes of samples :class:`LabelToContour` takes at once on the CPU (within the caches).
_CPU_CHUNK_BYTES = 4 << 20


def _laplace(values: torch.Tensor, out: torch.Tensor) -> None:
    """MONAI's Laplacian edge of ``values`` clamped to ``[0, 1]``, into ``out``: ``3^n`` times the voxel less the
    sum over its ``3^n`` box (zero outside), one 3-tap sum per axis, in place in two buffers that take turns."""
    box, spare = values, None
    for axis in range(2, values.ndim):
        summed = box.clone() if spare is None else spare.copy_(box)
        n = values.shape[axis]
        if n > 1:
            summed.narrow(axis, 1, n - 1).add_(box.narrow(axis, 0, n - 1))
            summed.narrow(axis, 0, n - 1).add_(box.narrow(axis, 1, n - 1))
        box, spare = summed, (None if box is values else box)
    torch.mul(values, 3 ** (values.ndim - 2), out=out).sub_(box).clamp_(0.0, 1.0)


class LabelToContour(_Post):
    """MONAI's ``LabelToContour``: MONAI's Laplacian edge of each channel, clamped to ``[0, 1]``.

    ``(3^n - 1) x - (the sum of x's other neighbours in the 3^n box)``, zero outside, MONAI's
    convolution, as ``3^n x`` less a separable box sum (exact for whole numbers; other values within
    float rounding), every sample and channel at once (on the CPU, a few MiB of samples at a time, within
    the caches): a linear filter, on 0/1 masks the inner boundary
    ``x & ~binary_erosion(x)``, and MONAI's values for any other input. 2-D and 3-D, as MONAI's.
    ``batched``: see :mod:`morphaug.adapters.monai_post`.

    Example:
        >>> import torch
        >>> from morphaug.adapters.monai import LabelToContour
        >>> LabelToContour()(torch.ones(1, 3, 3))[0].tolist()
        [[1.0, 1.0, 1.0], [1.0, 0.0, 1.0], [1.0, 1.0, 1.0]]
    """

    def __init__(self, kernel_type: str = "Laplace", *, batched: bool = False):
        if kernel_type != "Laplace":
            raise NotImplementedError('Currently only kernel_type="Laplace" is supported.')
        self.kernel_type = kernel_type
        self._setup(batched)

    def compute(self, x, img):
        rank = x.ndim - 2
        if rank not in (2, 3):
            raise ValueError(f"{self.__class__} can only handle 2D or 3D images.")
        values = x if x.is_floating_point() else x.float()
        out = torch.empty_like(values)
        # on the CPU, a few MiB of samples at a time, so that the passes over them stay in the cache
        sample_bytes = max(1, values.nbytes // max(1, len(values)))
        step = max(1, _CPU_CHUNK_BYTES // sample_bytes if values.device.type == "cpu" else len(values))
        for start in range(0, len(values), step):
            _laplace(values[start:start + step], out[start:start + step])
        return out


class LabelFilter(_Post):
    """MONAI's ``LabelFilter``: keep the values in ``applied_labels``, set every other value to 0.

    Elementwise, on any shape (``batched`` changes nothing but is accepted for symmetry).

    Example:
        >>> import numpy as np
        >>> from morphaug.adapters.monai import LabelFilter
        >>> LabelFilter([1, 3])(np.array([[1, 2, 3]]))
        array([[1, 0, 3]])
    """

    def __init__(self, applied_labels, *, batched: bool = False):
        self.applied_labels = ensure_tuple(applied_labels)
        self._setup(batched)

    def __call__(self, img):
        if not isinstance(img, (np.ndarray, torch.Tensor)):
            raise NotImplementedError(f"{self.__class__} can not handle data of type {type(img)}.")
        if isinstance(img, np.ndarray):
            return np.asarray(np.where(np.isin(img, self.applied_labels), img, 0))
        dst = convert_to_tensor(img, track_meta=get_track_meta())
        x = convert_to_tensor(img, track_meta=False)
        labels = _sync.to_device(torch.as_tensor(self.applied_labels), x.device)
        values = x.to(torch.int64) if x.dtype in SIGNED_VIEW else x  # torch.isin promotes none of them
        return convert_to_dst_type(torch.where(torch.isin(values, labels), x, 0), dst)[0]


class _Dict(MapTransform):
    """A dictionary twin: the array transform on each present key."""

    def __init__(self, keys, allow_missing_keys: bool, converter: _Post):
        super().__init__(keys, allow_missing_keys)
        self.converter = converter
        self.backend = converter.backend

    def __call__(self, data):
        d = dict(data)
        for key in self.key_iterator(d):
            d[key] = self.converter(d[key])
        return d


class KeepLargestConnectedComponentd(_Dict):
    """MONAI's ``KeepLargestConnectedComponentd``: :class:`KeepLargestConnectedComponent` on ``keys``."""

    def __init__(self, keys, applied_labels=None, is_onehot: bool | None = None, independent: bool = True,
                 connectivity: int | None = None, num_components: int = 1, allow_missing_keys: bool = False, *,
                 batched: bool = False):
        super().__init__(keys, allow_missing_keys, KeepLargestConnectedComponent(
            applied_labels, is_onehot, independent, connectivity, num_components, batched=batched))


class RemoveSmallObjectsd(_Dict):
    """MONAI's ``RemoveSmallObjectsd``: :class:`RemoveSmallObjects` on ``keys``."""

    def __init__(self, keys, min_size: int = 64, connectivity: int = 1, independent_channels: bool = True,
                 by_measure: bool = False, pixdim=None, allow_missing_keys: bool = False, *, batched: bool = False):
        super().__init__(keys, allow_missing_keys, RemoveSmallObjects(
            min_size, connectivity, independent_channels, by_measure, pixdim, batched=batched))


class FillHolesd(_Dict):
    """MONAI's ``FillHolesd``: :class:`FillHoles` on ``keys``."""

    def __init__(self, keys, applied_labels=None, connectivity: int | None = None, allow_missing_keys: bool = False,
                 *, batched: bool = False):
        super().__init__(keys, allow_missing_keys, FillHoles(applied_labels, connectivity, batched=batched))


class DistanceTransformEDTd(_Dict):
    """MONAI's ``DistanceTransformEDTd``: :class:`DistanceTransformEDT` on ``keys``."""

    def __init__(self, keys, allow_missing_keys: bool = False, sampling=None, *, batched: bool = False):
        super().__init__(keys, allow_missing_keys, DistanceTransformEDT(sampling, batched=batched))
        self.sampling = sampling
        self.distance_transform = self.converter


class LabelToContourd(_Dict):
    """MONAI's ``LabelToContourd``: :class:`LabelToContour` on ``keys``."""

    def __init__(self, keys, kernel_type: str = "Laplace", allow_missing_keys: bool = False, *, batched: bool = False):
        super().__init__(keys, allow_missing_keys, LabelToContour(kernel_type, batched=batched))


class LabelFilterd(_Dict):
    """MONAI's ``LabelFilterd``: :class:`LabelFilter` on ``keys``."""

    def __init__(self, keys, applied_labels, allow_missing_keys: bool = False, *, batched: bool = False):
        super().__init__(keys, allow_missing_keys, LabelFilter(applied_labels, batched=batched))


for _name in _NAMES:
    globals()[f"{_name}D"] = globals()[f"{_name}Dict"] = globals()[f"{_name}d"]
