"""Targets derived from label maps: distance maps, boundaries, skeleton targets, boundary jitter."""

from __future__ import annotations

import math
import numbers

import torch
import torch.nn.functional as F

from .._checks import check_int
from .._dtypes import positive
from ..morphology._skeleton import METHODS as SKELETON_METHODS
from ..morphology._skeleton import skeletonize
from ._base import (
    Deterministic,
    Param,
    check_float_range,
    check_int_range,
    check_sampling,
    normal,
    per_sample,
    randint,
    sampling_for,
    uniform,
)
from ._distances import (
    FOOTPRINTS,
    METRICS,
    distance_to_background,
    morph_step,
    no_distance,
    signed_distance,
    within_radius,
)
from ._labels import (
    LabelTransform,
    any_channel,
    LABEL_FORMATS,
    any_spatial,
    blend,
    class_masks,
    class_table,
    from_index,
    spatial_dims,
    take_best,
    to_index,
)

__all__ = ["DistanceMap", "LabelBoundary", "SkeletonTarget", "RandBoundaryJitter"]


class _LabelTarget(LabelTransform):
    """Per-class target maps: the default classes include background."""

    include_background = True

    def _masks(self, x: torch.Tensor) -> tuple[str, torch.Tensor]:
        """The format of ``x`` and the masks ``(B, K', *spatial)`` of its classes."""
        fmt, classes = self._labels(x)
        return fmt, class_masks(x, fmt, class_table(classes, x.device))


class DistanceMap(Deterministic, _LabelTarget):
    """Per-class distance maps of label maps, ``(B, K', *spatial)`` float32.

    Convention:
        ``signed=False``: distance from each voxel to the nearest voxel of
        the class (0 inside the class). ``signed=True``: the signed distance
        map of boundary losses: distance to the nearest *boundary voxel* of
        the class (a class voxel with a face neighbour outside the class; the
        image border is not a boundary), negative inside the class, zero on
        the boundary voxels, positive outside, where it equals the unsigned
        distance. A class absent from a sample is at distance ``D``
        everywhere (``+D`` signed), a class filling the sample is ``0``
        unsigned and ``-D`` signed, with ``D`` the image diagonal in physical
        units (``sqrt(sum((n_i * s_i)^2))``, taxicab ``sum(n_i)``,
        chessboard ``max(n_i)``): never NaN or inf. Then ``clip`` (in
        distance units), then ``normalize``.

    Args:
        keys: label keys (index or one-hot, see :class:`RandLabelMorphology`).
        output_keys: where the maps go; default: replace ``keys``.
        metric: ``"euclidean"`` (EDT), ``"taxicab"`` or ``"chessboard"`` (exact CDT).
        signed: signed map (see Convention).
        normalize: None; ``"max"``: divide each ``(sample, class)`` map by its
            largest absolute value (an all-zero map stays zero);
            ``"diagonal"``: divide by ``D``, so values lie in ``[-1, 1]``.
        clip: None, ``c > 0`` for ``[-c, c]``, or ``(low, high)``.
        classes: class values (one-hot channels); default every class,
            background included: the one-hot channels, ``0 .. num_classes-1``,
            else background and the classes present in each index label map
            (read from the data once per key and call: free on the CPU, one
            sync on an accelerator; the maps then follow the data).
        sampling: voxel spacing per spatial axis (Euclidean only).
        num_classes, label_format, allow_missing_keys: as in :class:`RandLabelMorphology`.

    Output tensors have the input's subclass and metadata. Deterministic.

    Example:
        >>> import torch
        >>> from morphaug.transforms import DistanceMap
        >>> label = torch.zeros(1, 1, 8, 8, dtype=torch.long)
        >>> label[0, 0, 2:6, 2:6] = 1
        >>> sdf = DistanceMap("label", output_keys="sdf", signed=True, classes=[1])
        >>> out = sdf({"label": label})
        >>> out["sdf"].shape, float(out["sdf"][0, 0, 3, 3]), float(out["sdf"][0, 0, 2, 2]), float(out["sdf"][0, 0, 0, 2])
        (torch.Size([1, 1, 8, 8]), -1.0, 0.0, 2.0)
    """

    _repr_fields = ("metric", "signed", "normalize", "clip", "classes", "sampling", "num_classes",
                    "label_format")

    def __init__(self, keys, output_keys=None, metric: str = "euclidean", signed: bool = False,
                 normalize=None, clip=None, classes=None, sampling=None, num_classes=None,
                 label_format=None, *, allow_missing_keys: bool = False):
        super().__init__(keys, output_keys=output_keys, allow_missing_keys=allow_missing_keys)
        if metric not in METRICS:
            raise ValueError(f"metric must be one of {METRICS}, got {metric!r}")
        self.metric = metric
        self.signed = bool(signed)
        if normalize not in (None, "max", "diagonal"):
            raise ValueError(f"normalize must be None, 'max' or 'diagonal', got {normalize!r}")
        self.normalize = normalize
        if isinstance(clip, numbers.Real) and not isinstance(clip, bool):
            if clip <= 0:
                raise ValueError(f"clip must be positive, got {clip!r}")
            self.clip = (-float(clip), float(clip))
        else:
            self.clip = None if clip is None else check_float_range(clip, "clip", minimum=-math.inf)
        self.sampling = check_sampling(sampling)
        if self.sampling is not None and self.metric != "euclidean":
            raise ValueError(f"sampling is only supported with metric='euclidean', got {metric!r}")
        self._setup_labels(classes, num_classes, label_format, min_classes=1)

    def apply(self, x, params):
        sampling = sampling_for(self.sampling, x.ndim - 2, type(self).__name__)
        fmt, masks = self._masks(x)
        diagonal = no_distance(x.shape[2:], self.metric, sampling)
        if self.signed:
            distance = signed_distance(masks, self.metric, sampling, x if fmt == "index" else None)
        else:
            distance = distance_to_background(~masks, self.metric, sampling).to(torch.float32)
            absent = ~any_spatial(masks)
            distance.masked_fill_(absent, diagonal)  # a fresh tensor
        if self.clip is not None:
            distance = distance.clamp(*self.clip)
        if self.normalize == "diagonal":
            distance = distance / diagonal
        elif self.normalize == "max":
            scale = distance.abs().amax(dim=spatial_dims(distance), keepdim=True)
            distance = distance / scale.clamp_min(torch.finfo(torch.float32).tiny)
        return distance


class LabelBoundary(_LabelTarget):
    """Per-class boundary maps of label maps, with a random thickness per sample.

    The boundary of class mask ``M`` with thickness ``t`` (``footprint`` of
    radius ``t``, as in :class:`RandLabelMorphology`) is, with SciPy's ops:

    * ``"inner"``: ``M & ~binary_erosion(M, fp, border_value=1)``: class
      voxels within ``t`` of another class (the image border is not a boundary);
    * ``"outer"``: ``binary_dilation(M, fp) & ~M``;
    * ``"both"``: their union, the morphological gradient.

    Each is one batched ``ball_morphology`` call natively, or a threshold of
    one batched EDT/CDT on the torch backend, whatever ``t``.

    Args:
        keys: label keys (index or one-hot, see :class:`RandLabelMorphology`).
        output_keys: where the maps go; default: replace ``keys``.
        thickness: int or inclusive range ``(low, high)`` (``>= 1``), drawn per sample.
        side: ``"inner"``, ``"outer"`` or ``"both"``.
        classes: class values (one-hot channels); default every class,
            background included, as in :class:`DistanceMap`.
        prob: per-sample probability; a skipped sample's maps are all zero.
        footprint: ``"ball"``, ``"cube"`` or ``"cross"``.
        num_classes, label_format, allow_missing_keys, generator: as in
            :class:`RandLabelMorphology`.

    Output: ``(B, K', *spatial)`` of 0/1 in the label's dtype and subclass.
    Params (``last_params``): ``apply`` and ``thickness``, each ``(B,)``.

    Example:
        >>> import torch
        >>> from morphaug.transforms import LabelBoundary
        >>> label = torch.zeros(1, 1, 6, 6, dtype=torch.long)
        >>> label[0, 0, 1:5, 1:5] = 1
        >>> LabelBoundary("label", classes=[1])(label)[0, 0].sum().item()
        12
    """

    _repr_fields = ("thickness", "side", "classes", "prob", "footprint", "num_classes", "label_format")

    def __init__(self, keys, output_keys=None, thickness=1, side: str = "inner", classes=None,
                 prob: float = 1.0, footprint: str = "ball", num_classes=None, label_format=None, *,
                 allow_missing_keys: bool = False, generator: torch.Generator | None = None):
        super().__init__(keys, output_keys=output_keys, allow_missing_keys=allow_missing_keys,
                         prob=prob, generator=generator)
        self.thickness = check_int_range(thickness, "thickness", minimum=1)
        if side not in ("inner", "outer", "both"):
            raise ValueError(f"side must be 'inner', 'outer' or 'both', got {side!r}")
        self.side = side
        if footprint not in FOOTPRINTS:
            raise ValueError(f"footprint must be one of {FOOTPRINTS}, got {footprint!r}")
        self.footprint = footprint
        self._setup_labels(classes, num_classes, label_format, min_classes=1)

    def make_params(self, batch, generator=None):
        params = super().make_params(batch, generator)
        params["thickness"] = randint(*self.thickness, (batch.shape[0],), generator, batch.device)
        return params

    def param_spec(self, batch):
        return {**super().param_spec(batch), "thickness": Param(torch.int64, (), 1, math.inf)}

    def apply(self, x, params):
        _, masks = self._masks(x)
        thickness = per_sample(params["thickness"], masks.ndim)
        footprint = torch.zeros_like(thickness)  # the one footprint, self.footprint
        boundary = torch.zeros_like(masks)
        if self.side in ("inner", "both"):
            has_background = any_spatial(~masks)
            near = within_radius(masks, thickness, footprint, (self.footprint,))
            boundary |= masks & near & has_background
        if self.side in ("outer", "both"):
            present = any_spatial(masks)
            near = within_radius(~masks, thickness, footprint, (self.footprint,))
            boundary |= ~masks & near & present
        boundary &= per_sample(params["apply"], masks.ndim)
        return boundary.to(x.dtype)


class SkeletonTarget(Deterministic, _LabelTarget):
    """Skeleton Recall targets (Kirchhoff et al., ECCV 2024): label values on a tube around the skeleton.

    For each sample, as nnU-Net's ``SkeletonTransform(do_tube=True)`` computes it with
    scikit-image: the foreground (every class ``> 0`` together) is skeletonized
    (``skimage.morphology.skeletonize``), the skeleton is dilated twice by the
    face-connected cross (``skimage.morphology.dilation``'s default element), and each
    voxel of that tube takes the label's value there: 0 on background (the tube is clipped
    to the foreground), each foreground voxel its own class (classes never overlap), and a
    negative value (an ignore label) is kept, as the recipe's product keeps it.
    Here the whole batch is one :func:`morphaug.morphology.skeletonize` call and one
    dilation, on the batch's device.

    Args:
        keys: label keys (index or one-hot, see :class:`RandLabelMorphology`).
        output_keys: where the targets go; default: replace ``keys``.
        method: the skeleton, :func:`morphaug.morphology.skeletonize`'s ``method``.
            ``None`` (the recipe's): scikit-image's default, ``"zhang"`` in 2-D (every
            device) and ``"lee"`` in 3-D, exact, on the native CPU kernel only (elsewhere
            ``NotImplementedError``: nothing falls back silently). ``"parallel"``: the
            topology-preserving thinning, on any device (close to ``"lee"``, not equal).
        radius: the tube's radius (``>= 0``; 0: the skeleton alone, the recipe's
            ``do_tube=False``). The recipe's 2 cross dilations are ``radius=2``,
            ``footprint="cross"``.
        footprint: ``"cross"`` (``|x| + |y| + |z| <= radius``), ``"ball"`` or ``"cube"``.
        output_format: ``"index"``: ``(B, 1, *spatial)``, the label value on the tube,
            0 elsewhere (the recipe's); ``"onehot"``: ``(B, K', *spatial)``, channel ``k``
            where that index target is class ``classes[k]`` (channel 0, background, off
            the tube); None: the label's format.
        classes: the one-hot output's channels: default every class, background
            included, as in :class:`DistanceMap` (pass ``num_classes=`` or
            ``classes=`` to fix them for index labels).
        num_classes, label_format, allow_missing_keys: as in :class:`RandLabelMorphology`.

    Output tensors have the label's dtype, subclass and metadata. Deterministic. Host
    reads: the skeleton's convergence (:func:`morphaug.morphology.skeletonize`), and the
    classes of index labels for a one-hot output without ``classes=`` or ``num_classes=``.

    Example:
        >>> import torch
        >>> from morphaug.transforms import SkeletonTarget
        >>> label = torch.zeros(1, 1, 9, 9, dtype=torch.long)
        >>> label[0, 0, 4, 1:8] = 1
        >>> label[0, 0, 3:6, 5:8] = 2
        >>> SkeletonTarget("label", radius=1)(label)[0, 0, 2:7]
        tensor([[0, 0, 0, 0, 0, 0, 0, 0, 0],
                [0, 0, 0, 0, 0, 2, 2, 0, 0],
                [0, 1, 1, 1, 1, 2, 2, 2, 0],
                [0, 0, 0, 0, 0, 2, 2, 0, 0],
                [0, 0, 0, 0, 0, 0, 0, 0, 0]])
    """

    _repr_fields = ("method", "radius", "footprint", "output_format", "classes", "num_classes", "label_format")

    def __init__(self, keys, output_keys=None, method=None, radius: int = 2, footprint: str = "cross",
                 output_format=None, classes=None, num_classes=None, label_format=None, *,
                 allow_missing_keys: bool = False):
        super().__init__(keys, output_keys=output_keys, allow_missing_keys=allow_missing_keys)
        if method is not None and (not isinstance(method, str) or method not in SKELETON_METHODS):
            raise ValueError(f"method must be None or one of {sorted(SKELETON_METHODS)}, got {method!r}")
        self.method = method
        self.radius = check_int(radius, "radius", minimum=0)
        if footprint not in FOOTPRINTS:
            raise ValueError(f"footprint must be one of {FOOTPRINTS}, got {footprint!r}")
        self.footprint = footprint
        if output_format is not None and output_format not in LABEL_FORMATS:
            raise ValueError(f"output_format must be None or one of {LABEL_FORMATS}, got {output_format!r}")
        self.output_format = output_format
        self._setup_labels(classes, num_classes, label_format, min_classes=1)

    def apply(self, x, params):
        fmt = self._format(x)
        index = to_index(x, fmt).to(x.dtype)
        skeleton = skeletonize(positive(index), method=self.method)
        tube = skeleton
        if self.radius:
            shape = (x.shape[0], 1) + (1,) * (x.ndim - 2)
            radius = torch.full(shape, self.radius, dtype=torch.int64, device=x.device)
            tube = morph_step(skeleton, torch.ones(shape, dtype=torch.bool, device=x.device), radius,
                              torch.zeros_like(radius), (self.footprint,))
        target = blend(tube, index, index.new_zeros(()))  # a 0-dim zero: no volume of zeros to fill
        if (self.output_format or fmt) == "index":
            return target
        return class_masks(target, "index", class_table(self._labels(x)[1], x.device)).to(x.dtype)


#: The convolution of each number of spatial axes.
_CONVOLUTIONS = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}


def smooth_noise(shape, sigma: float, generator, device) -> torch.Tensor:
    """Gaussian-filtered white noise of ``shape (B, K, *spatial)`` with unit variance.

    The noise is drawn on a margin of ``4 sigma`` (SciPy's ``truncate``) and
    filtered without padding, so the field is stationary up to the border;
    dividing by the filter's L2 norm makes each voxel standard normal.
    """
    radius = math.ceil(4.0 * sigma)
    spatial = shape[2:]
    if not math.prod(shape):  # no voxel to filter
        return normal(shape, generator, device)
    noise = normal((*shape[:2], *(n + 2 * radius for n in spatial)), generator, device)
    if radius == 0:
        return noise
    offsets = torch.arange(-radius, radius + 1, device=device, dtype=torch.float32)
    kernel = torch.exp(-0.5 * (offsets / sigma) ** 2)
    kernel = kernel / kernel.sum()
    # one pass per axis, a 1-D kernel along it, on a view of the field (no copy moving the axis last):
    # its own shape up to 3 axes, else the axes before, the axis and the axes after
    rank, sizes, field = len(spatial), list(noise.shape[2:]), noise
    for axis in range(rank):
        view, along = (sizes, axis) if rank <= 3 else ([math.prod(sizes[:axis]), sizes[axis],
                                                        math.prod(sizes[axis + 1:])], 1)
        weight = kernel.view(1, 1, *(-1 if k == along else 1 for k in range(len(view))))
        field = _CONVOLUTIONS[len(view)](field.reshape(-1, 1, *view), weight)
        sizes[axis] -= 2 * radius
    return field.reshape(shape) / kernel.square().sum().sqrt() ** rank


class RandBoundaryJitter(LabelTransform):
    """Annotation noise: smooth random displacement of every class boundary.

    Each candidate class (``classes`` plus background 0) gets a signed
    distance map ``sdf_k`` (:class:`DistanceMap` convention, voxel units)
    and a smooth standard-normal field ``g_k`` (Gaussian-filtered noise with
    standard deviation ``smoothness`` voxels). Each voxel of a candidate
    class becomes ``argmax_k(-sdf_k + sqrt(2) * m * g_k)`` (ties: the lowest
    class), with ``m`` drawn per sample in ``magnitude``: at ``m = 0`` the
    labels are unchanged, and an interface between two classes moves by
    ``(sqrt(2) m (g_j - g_k)) / 2`` voxels, a displacement with standard
    deviation ``m``. Voxels of classes outside the candidates are kept and
    never gained. Labels stay valid: one class per voxel, same format and dtype.

    Args:
        keys: label keys (index or one-hot, see :class:`RandLabelMorphology`).
        magnitude: number or range ``(low, high)`` (``>= 0``): displacement
            standard deviation in voxels, drawn per sample.
        smoothness: standard deviation of the Gaussian filter in voxels (``>= 0``).
        prob: per-sample probability.
        classes: classes whose boundaries move; default the foreground
            classes, as in :class:`RandLabelMorphology` (present in the index
            labels: read once per call, kept in the draw).
        num_classes, label_format, allow_missing_keys, generator: as in
            :class:`RandLabelMorphology`.

    Params (``last_params``): ``apply`` and ``magnitude``, ``(B,)``;
    ``classes (B, K'')`` int64, the sorted candidate classes, and ``field``
    ``(B, K'', *spatial)`` float32, ``g_k`` for each of them.

    Example:
        >>> import torch
        >>> from morphaug.transforms import RandBoundaryJitter
        >>> label = torch.zeros(2, 1, 16, 16, dtype=torch.uint8)
        >>> label[:, :, 4:12, 4:12] = 1
        >>> t = RandBoundaryJitter("label", prob=1.0, num_classes=2,
        ...                        generator=torch.Generator().manual_seed(0))
        >>> t(label).unique().tolist()
        [0, 1]
    """

    _repr_fields = ("magnitude", "smoothness", "prob", "classes", "num_classes", "label_format")
    draws_per_class = True

    def __init__(self, keys, magnitude=(0.0, 2.0), smoothness: float = 4.0, prob: float = 0.5,
                 classes=None, num_classes=None, label_format=None, *, allow_missing_keys: bool = False,
                 generator: torch.Generator | None = None):
        super().__init__(keys, allow_missing_keys=allow_missing_keys, prob=prob, generator=generator)
        self.magnitude = check_float_range(magnitude, "magnitude", minimum=0.0)
        if isinstance(smoothness, bool) or not isinstance(smoothness, numbers.Real) or not 0 <= smoothness < math.inf:
            raise ValueError(f"smoothness must be a finite number >= 0, got {smoothness!r}")
        self.smoothness = float(smoothness)
        self._setup_labels(classes, num_classes, label_format)

    def _candidates(self, x: torch.Tensor) -> tuple[int, ...]:
        """The competing classes: ``classes`` and background (one read when they are inferred)."""
        return tuple(sorted({0, *self._labels(x)[1]}))

    def make_params(self, batch, generator=None):
        params = super().make_params(batch, generator)
        batch_size, device = batch.shape[0], batch.device
        candidates = self._candidates(batch)
        params["classes"] = class_table(candidates, device, batch_size)
        low, high = self.magnitude
        params["magnitude"] = low + (high - low) * uniform((batch_size,), generator, device)
        shape = (batch_size, len(candidates), *batch.shape[2:])
        params["field"] = smooth_noise(shape, self.smoothness, generator, device)
        return params

    def param_spec(self, batch):
        spec = super().param_spec(batch)
        spec["classes"], size = self._class_param(batch, background=True)
        spec["magnitude"] = Param(torch.float32, (), 0.0, math.inf)
        spec["field"] = Param(torch.float32, (size, *batch.shape[2:]))
        return spec

    def apply(self, x, params):
        fmt = self._format(x)
        candidates, field = params["classes"], params["field"]
        index = to_index(x, fmt)
        masks = class_masks(index, "index", candidates)
        score = math.sqrt(2.0) * per_sample(params["magnitude"], field.ndim) * field
        score = score - signed_distance(masks, "euclidean")
        move = any_channel(masks) & per_sample(params["apply"], x.ndim)
        return from_index(take_best(candidates, score, move, index), fmt, x)
