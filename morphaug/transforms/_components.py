"""Connected-component transforms: keep the largest components, remove small ones, remove a random one.

Every ``(sample, class)`` mask of a batch is labelled in one call (one channel
per class), with no loop over samples or classes and no host sync but the
documented class inference.

* The filters (keep the largest, remove the small ones) take the removed
  voxels from ``morphaug.ndimage``'s component filter (``_components``: the
  native ``filter_components`` kernel where it takes the call; elsewhere,
  and on the torch backend, :func:`morphaug.ndimage.label` labels the batch,
  an ``index_add_`` counts the components into a ``(sample * class,
  label)`` table, the rule (a top-k, a threshold) is applied there and an
  ``index_select`` maps it back to the voxels).
* :class:`RandRemoveComponent` takes the drawn components from the same
  module's component draw (the native ``pick_component`` kernel where it
  takes the call; elsewhere the batch labelled and counted into that table,
  a component drawn per row by a cumulative count, the labels compared with
  it).

The labels are then rebuilt with the class precedence of
:func:`~morphaug.transforms._labels.recombine`: a removed voxel becomes
background (``fill_value``), and one-hot outputs stay one-hot.
"""

from __future__ import annotations

import math
import numbers

import torch

from .._checks import check_probability, is_int
from ..ndimage import _components
from ._base import Deterministic, Param, check_sampling, per_sample, randint, sampling_for, uniform
from ._labels import LabelTransform, any_channel, blend, class_masks, class_table, clear, recombine

__all__ = ["KeepLargestComponents", "RemoveSmallComponents", "RandRemoveComponent"]


def _check_connectivity(connectivity, full_by_default: bool) -> int | None:
    """An int >= 1, or None (full connectivity) where ``full_by_default``."""
    if connectivity is None and full_by_default:
        return None
    if not is_int(connectivity) or connectivity < 1:
        allowed = "None (full) or an int >= 1" if full_by_default else "an int >= 1"
        raise ValueError(f"connectivity must be {allowed}, got {connectivity!r}")
    return int(connectivity)


def _check_fraction(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be a number in [0, 1], got {value!r}")
    return float(value)


def _hops(ndim: int, connectivity: int | None, owner: str) -> int:
    """``connectivity`` orthogonal hops (skimage's and MONAI's meaning; None: all of them), checked
    against the ``ndim`` spatial axes."""
    connectivity = ndim if connectivity is None else connectivity
    if connectivity > ndim:
        raise ValueError(f"{owner}: connectivity={connectivity} exceeds the {ndim} spatial axes")
    return connectivity


class _ComponentFilter(Deterministic, LabelTransform):
    """Base of the deterministic component filters: which components of each class mask go.

    ``independent``: the components of each class (``True``) or of the union of
    the classes (``False``); subclasses give the rule (:meth:`_rule`).
    """

    _repr_fields = ("classes", "connectivity", "independent", "num_classes", "label_format")

    def _rule(self, spatial: tuple[int, ...]) -> tuple[int, int]:
        """``(keep, min_size)`` in slices of shape ``spatial``: a component goes when it has fewer than
        ``min_size`` voxels or, with ``keep >= 1``, when it is not among the ``keep`` largest."""
        raise NotImplementedError

    def removed(self, masks: torch.Tensor) -> torch.Tensor:
        """The voxels of bool ``masks (B, K, *spatial)`` whose components go (each mask's, or with
        ``independent=False`` those of their union), in any mask: bool ``(B, 1, *spatial)``."""
        searched = masks if self.independent else any_channel(masks)
        hops = _hops(masks.ndim - 2, self.connectivity, type(self).__name__)
        return _components.removed_components(searched, hops, *self._rule(masks.shape[2:]))

    def apply(self, x, params):
        fmt, classes = self._labels(x)
        return clear(x, fmt, self.removed(class_masks(x, fmt, class_table(classes, x.device))), 0)


class KeepLargestComponents(_ComponentFilter):
    """Keep the largest connected component(s) of each class (MONAI's ``KeepLargestConnectedComponent``), batched.

    Each ``(sample, class)`` mask keeps its ``num_components`` largest
    components (all of them when it has fewer); the voxels of the other
    components become background (0). With ``independent=False`` the
    components are those of the union of ``classes``: its largest components
    stay, with every class in them, and the voxels of ``classes`` outside
    them become background.

    Convention:
        Components are connected through neighbours within ``connectivity``
        orthogonal hops (``generate_binary_structure(ndim, connectivity)``;
        None: full connectivity, MONAI's default). Components of equal size
        are ranked by their label (SciPy's numbering: raster order of their
        first voxel), the later one first: that is MONAI's rule
        (``argsort(sizes)[::-1]``) with a stable sort. MONAI uses NumPy's
        default sort, which is not stable: its choice among tied components
        depends on the NumPy build and on how many components there are.
        Removed voxels become background, so one-hot outputs stay one-hot
        (MONAI zeroes the channel and leaves voxels of no class); every other
        voxel keeps its value, as in :class:`RandLabelMorphology`.

    Args:
        keys: label keys (index or one-hot, see :class:`RandLabelMorphology`).
        num_components: how many components of each mask to keep (``>= 1``).
        classes: class values to filter (MONAI's ``applied_labels``); default
            the foreground classes: ``1 .. K-1`` for one-hot labels and with
            ``num_classes``, else those present in each index label map (read
            from the data once per key and call: free on the CPU, one sync on
            an accelerator).
        connectivity: None (full) or ``1 .. ndim`` orthogonal hops.
        independent: the components of each class (True), or of the union
            of ``classes`` (False), as MONAI's ``independent``.
        num_classes, label_format, allow_missing_keys: as in :class:`RandLabelMorphology`.

    Deterministic: ``last_params`` is empty.

    Example:
        >>> import torch
        >>> from morphaug.transforms import KeepLargestComponents
        >>> label = torch.tensor([[[[1, 1, 0, 1], [1, 0, 0, 0], [0, 0, 2, 2]]]])
        >>> KeepLargestComponents("label", connectivity=1)(label)[0, 0]
        tensor([[1, 1, 0, 0],
                [1, 0, 0, 0],
                [0, 0, 2, 2]])
    """

    _repr_fields = ("num_components",) + _ComponentFilter._repr_fields

    def __init__(self, keys, num_components: int = 1, classes=None, connectivity=None, independent: bool = True,
                 num_classes=None, label_format=None, *, allow_missing_keys: bool = False):
        super().__init__(keys, allow_missing_keys=allow_missing_keys)
        if not is_int(num_components) or num_components < 1:
            raise ValueError(f"num_components must be an int >= 1, got {num_components!r}")
        self.num_components = int(num_components)
        self.connectivity = _check_connectivity(connectivity, full_by_default=True)
        self.independent = bool(independent)
        self._setup_labels(classes, num_classes, label_format)

    def _rule(self, spatial):
        return self.num_components, 0


class RemoveSmallComponents(_ComponentFilter):
    """Remove the connected components smaller than ``min_size`` from each class (MONAI's ``RemoveSmallObjects``).

    A component with fewer than ``min_size`` voxels becomes background; with
    ``by_measure=True``, ``min_size`` is a physical volume (units of
    ``sampling``) and a component is removed when it has fewer than
    ``ceil(min_size / prod(sampling))`` voxels, MONAI's threshold.

    Strictly smaller is MONAI's documented rule and that of skimage's
    ``remove_small_objects(ar, min_size)`` before 0.26 (0.26:
    ``max_size=min_size - 1``). MONAI (1.6) passes ``min_size`` positionally,
    which skimage 0.26 forwards to its inclusive ``max_size``: with it,
    MONAI also removes components of exactly ``min_size`` voxels, as this
    transform does with ``min_size + 1``.

    Convention:
        Components are those of each class's mask (``independent=True``), for
        index maps of any number of classes, or of the union of ``classes``
        (``independent=False``: a union component that is too small loses
        all its classes), connected through neighbours within
        ``connectivity`` orthogonal hops. MONAI's ``RemoveSmallObjects``
        labels a two-class map, but hands an index map of more classes to
        skimage as labels, removing whole classes smaller than ``min_size``;
        on one-hot maps it also removes small background components (and,
        with ``connectivity >= 2``, joins classes across the channel axis).
        Here each class is labelled, in its own channel. Removed voxels
        become background, so one-hot outputs stay one-hot; every other voxel
        keeps its value. A sample of one class everywhere is filtered as any
        other (MONAI returns it unchanged).

    Args:
        keys: label keys (index or one-hot, see :class:`RandLabelMorphology`).
        min_size: components with fewer voxels (or less volume, with
            ``by_measure``) are removed; a number ``>= 0``.
        connectivity: ``1 .. ndim`` orthogonal hops.
        sampling: voxel spacing, one number or one per spatial axis (MONAI's
            ``pixdim``); only with ``by_measure`` (default: 1 per axis).
        by_measure: ``min_size`` is a volume in the units of ``sampling``.
        classes: class values to filter; default the foreground classes, as
            in :class:`KeepLargestComponents`.
        independent: the components of each class (True), or of the union
            of ``classes`` (False), as MONAI's ``independent_channels``.
        num_classes, label_format, allow_missing_keys: as in :class:`RandLabelMorphology`.

    Deterministic: ``last_params`` is empty.

    Example:
        >>> import torch
        >>> from morphaug.transforms import RemoveSmallComponents
        >>> label = torch.tensor([[[[1, 1, 0, 1], [1, 0, 0, 0], [0, 0, 2, 2]]]])
        >>> RemoveSmallComponents("label", min_size=2)(label)[0, 0]
        tensor([[1, 1, 0, 0],
                [1, 0, 0, 0],
                [0, 0, 2, 2]])
    """

    _repr_fields = ("min_size", "sampling", "by_measure") + _ComponentFilter._repr_fields

    def __init__(self, keys, min_size=64, connectivity: int = 1, sampling=None, by_measure: bool = False,
                 classes=None, independent: bool = True, num_classes=None, label_format=None, *,
                 allow_missing_keys: bool = False):
        super().__init__(keys, allow_missing_keys=allow_missing_keys)
        if isinstance(min_size, bool) or not isinstance(min_size, numbers.Real) or not 0 <= min_size < math.inf:
            raise ValueError(f"min_size must be a finite number >= 0, got {min_size!r}")
        self.min_size = min_size
        self.connectivity = _check_connectivity(connectivity, full_by_default=False)
        self.by_measure = bool(by_measure)
        self.sampling = check_sampling(sampling)
        if self.sampling is not None and not self.by_measure:
            raise ValueError("sampling is only used with by_measure=True (min_size is then a volume)")
        self.independent = bool(independent)
        self._setup_labels(classes, num_classes, label_format)

    def _smallest_kept(self, spatial: tuple[int, ...]) -> int:
        """The fewest voxels a component of a slice of shape ``spatial`` must have to stay."""
        size = self.min_size
        if self.by_measure:
            size = size / math.prod(sampling_for(self.sampling, len(spatial), type(self).__name__) or (1.0,))
        return math.ceil(min(size, math.prod(spatial) + 1))  # no more than removes every component

    def _rule(self, spatial):
        return 0, self._smallest_kept(spatial)


def _column_problem(table: torch.Tensor) -> str | None:
    """What keeps ``table (B, K')`` from holding column indices ``0 .. K'-1``, or None."""
    return None if bool((table < table.shape[1]).all()) else f"must hold column indices below {table.shape[1]}"


class RandRemoveComponent(LabelTransform):
    """Remove one random connected component per sample and class (nnU-Net's cascade augmentation), batched.

    batchgeneratorsv2's ``RemoveRandomConnectedComponentFromOneHotEncodingTransform``
    (with nnU-Net's ``RandomTransform`` probability as ``prob``): for each
    sample (probability ``prob``) and each class of ``classes`` (probability
    ``prob_per_class``), one component of the class's mask with fewer voxels
    than ``max_fraction`` of the sample's voxels is drawn uniformly among
    such components and removed: its voxels go to another class of
    ``classes``, drawn uniformly (probability ``prob_other_class``), or
    become ``fill_value``.

    Convention:
        Components are those of the input's class masks, connected through
        neighbours within ``connectivity`` orthogonal hops (None: full, as
        skimage's ``label`` in batchgeneratorsv2). The component is the
        ``floor(u * n)``-th (from 0) of the ``n`` eligible ones in label
        order (SciPy's numbering), ``u`` the drawn ``component`` value: a
        uniform choice, as batchgeneratorsv2's ``np.random.choice``.
        Differences from batchgeneratorsv2, which works through the classes
        one after another in a random order: here every class is processed
        from the input, where there a component given to a class that comes
        later can be drawn from that class too (with ``prob_other_class=0``
        the two agree); removed voxels become ``fill_value`` rather than no
        class, so one-hot outputs stay one-hot. Voxels that several classes
        gain go to the highest of them, as in :class:`RandLabelMorphology`.

    Args:
        keys: label keys (index or one-hot, see :class:`RandLabelMorphology`).
        prob: per-sample probability.
        classes: class values to draw from (batchgeneratorsv2's
            ``channel_idx``); default the foreground classes, as in
            :class:`RandLabelMorphology` (present in the index labels: read
            once per call, kept in the draw).
        max_fraction: only components with fewer voxels than this fraction
            of a sample's voxels are drawn (``dont_do_if_covers_more_than_x_percent``,
            a fraction despite its name, 0.25 by default there too; nnU-Net's cascade uses 0.15).
        fill_value: class value of removed voxels that no class receives (background).
        prob_per_class: probability that a class of a transformed sample loses a component (``p_per_label``).
        prob_other_class: probability that the component goes to another class of ``classes``
            rather than ``fill_value`` (``fill_with_other_class_p``: 0.25 by default there, 0 in
            nnU-Net's cascade).
        connectivity: None (full) or ``1 .. ndim`` orthogonal hops.
        num_classes, label_format, allow_missing_keys, generator: as in :class:`RandLabelMorphology`.

    Params (``last_params``): ``apply (B,)`` bool; ``classes`` (int64),
    ``class_apply`` (bool), ``component`` (float32 in ``[0, 1]``: which
    eligible component), ``to_other`` (bool) and ``other`` (the column of
    ``classes`` receiving the component; its own column: none), each
    ``(B, K')`` for the ``K'`` selected classes.

    Example:
        >>> import torch
        >>> from morphaug.transforms import RandRemoveComponent
        >>> label = torch.zeros(2, 1, 12, 12, dtype=torch.uint8)
        >>> label[:, :, 1:3, 1:3] = label[:, :, 6:9, 6:9] = 1
        >>> t = RandRemoveComponent("label", prob=1.0, num_classes=2, generator=torch.Generator().manual_seed(0))
        >>> t(label).sum((1, 2, 3)).tolist()  # each sample lost one of its two squares
        [9, 4]
    """

    _repr_fields = ("prob", "classes", "max_fraction", "fill_value", "prob_per_class", "prob_other_class",
                    "connectivity", "num_classes", "label_format")
    draws_per_class = True

    def __init__(self, keys, prob: float = 0.5, classes=None, max_fraction: float = 0.25, fill_value: int = 0,
                 prob_per_class: float = 1.0, prob_other_class: float = 0.0, connectivity=None, num_classes=None,
                 label_format=None, *, allow_missing_keys: bool = False, generator: torch.Generator | None = None):
        super().__init__(keys, allow_missing_keys=allow_missing_keys, prob=prob, generator=generator)
        self.max_fraction = _check_fraction(max_fraction, "max_fraction")
        self.prob_per_class = check_probability(prob_per_class, "prob_per_class")
        self.prob_other_class = check_probability(prob_other_class, "prob_other_class")
        self._setup_fill(fill_value)
        self.connectivity = _check_connectivity(connectivity, full_by_default=True)
        self._setup_labels(classes, num_classes, label_format)

    def make_params(self, batch, generator=None):
        params = super().make_params(batch, generator)
        classes = self._labels(batch)[1]
        count = len(classes)
        shape, device = (batch.shape[0], count), batch.device
        params["classes"] = class_table(classes, device, batch.shape[0])
        params["class_apply"] = uniform(shape, generator, device) < self.prob_per_class
        params["component"] = uniform(shape, generator, device)
        params["to_other"] = uniform(shape, generator, device) < self.prob_other_class
        # another column, uniformly: an offset 1 .. K'-1 from its own (with one class, its own: none)
        offset = randint(1, max(count - 1, 1), shape, generator, device)
        params["other"] = (torch.arange(count, device=device) + offset) % max(count, 1)
        return params

    def param_spec(self, batch):
        spec = super().param_spec(batch)
        spec["classes"], size = self._class_param(batch)
        spec.update(class_apply=Param(torch.bool, (size,)),
                    component=Param(torch.float32, (size,), 0.0, 1.0),
                    to_other=Param(torch.bool, (size,)),
                    other=Param(torch.int64, (size,), 0, math.inf, _column_problem))
        return spec

    def apply(self, x, params):
        fmt = self._format(x)
        table = params["classes"]
        masks = class_masks(x, fmt, table)
        count = masks.shape[1]
        active = params["apply"][:, None] & params["class_apply"]
        draw = torch.where(active, params["component"], -1.0)  # a negative draw: no component
        # eligible: fewer voxels than max_fraction * N (an integer bound: exact for the float product)
        bound = math.ceil(self.max_fraction * math.prod(x.shape[2:]))
        removed = _components.drawn_components(masks, _hops(x.ndim - 2, self.connectivity, type(self).__name__),
                                               draw, bound)
        columns = torch.arange(count, device=x.device)
        moved = params["to_other"] & (params["other"] != columns)
        if fmt == "index":  # a voxel is of one class: a removed one takes its column's destination
            destination = torch.where(moved, table.expand(x.shape[0], -1).gather(1, params["other"]),
                                      self.fill_value).to(x.dtype)
            out = x
            for j in range(count):
                out = blend(removed[:, j:j + 1], per_sample(destination[:, j], x.ndim), out)
            return out
        moves = (params["other"][..., None] == columns) & moved[..., None]
        gained = torch.zeros_like(removed)
        for j in range(count):  # column j's removed voxels to the columns its draw moves them to (bool: no float bmm)
            gained |= removed[:, j:j + 1] & moves[:, j].view(*moves.shape[::2], *(1,) * (x.ndim - 2))
        return recombine(x, fmt, masks, (masks & ~removed) | gained, table, self.fill_value)
