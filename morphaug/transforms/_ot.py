"""Optimal-transport augmentations between the samples of a batch.

Both transforms pair every sample with another sample of the same batch,
drawn once per call on the batch's device (:func:`draw_partners`), and move
it part of the way toward its partner along an optimal-transport path:

* :class:`RandHistogramTransfer`: the intensity distribution of each
  channel, by entropic OT between 1-D histograms (:func:`morphaug.ot.sinkhorn`);
* :class:`RandWassersteinMix`: the shape of each class, along the
  Wasserstein geodesic between the two class masks
  (:func:`morphaug.ot.wasserstein_barycenter`), with the images mixed
  linearly by the same weight.

A batch of one sample pairs the sample with itself: both transforms then
return it unchanged.

Host syncs: :class:`RandWassersteinMix` reads the classes of index labels
when ``num_classes`` is not given (see :mod:`morphaug.transforms`), and
:mod:`morphaug.ot` validates its histograms on the host and checks
convergence every 10 iterations (one host sync each), as POT does.
"""

from __future__ import annotations

import math

import torch

from .._checks import check_int
from ..ot import sinkhorn, wasserstein_barycenter
from ..ot._checks import check_iterations, check_reg
from ._base import (
    BatchTransform,
    Param,
    _check_keys,
    _check_roles,
    check_float_range,
    per_sample,
    uniform,
)
from ._labels import (
    LabelTransform,
    any_channel,
    class_masks,
    class_table,
    from_index,
    spatial_dims,
    take_best,
    to_index,
)

__all__ = ["RandHistogramTransfer", "RandWassersteinMix", "draw_partners"]

#: RandWassersteinMix computes its barycenters in float32 from this ``reg`` on (diameter units), else in float64:
#: float32 kernels are exact down to about 1/64 (a margin for the solver's threshold).
FLOAT32_REG = 0.02


def draw_partners(batch_size: int, generator: torch.Generator | None, device: torch.device) -> torch.Tensor:
    """A random derangement of ``0 .. B-1`` as an int64 tensor on ``device`` (no host sync).

    The samples are put in a random order (the argsort of uniform draws) and
    each one is paired with the next in that order, the last with the first:
    a uniformly random cyclic permutation, so no sample is its own partner
    when ``B >= 2`` (``B = 1`` pairs the sample with itself).

    Example:
        >>> import torch
        >>> partner = draw_partners(5, torch.Generator().manual_seed(0), torch.device("cpu"))
        >>> sorted(partner.tolist()), bool((partner != torch.arange(5)).all())
        ([0, 1, 2, 3, 4], True)
    """
    order = uniform((batch_size,), generator, device).argsort()
    return torch.empty_like(order).scatter_(0, order, order.roll(-1))


def _partner_param(batch: torch.Tensor) -> Param:
    """``params["partner"]``: ``(B,)`` indices of samples of ``batch``."""
    return Param(torch.int64, (), 0, batch.shape[0] - 1)


def _work_dtype(x: torch.Tensor, owner: str) -> torch.dtype:
    """The float dtype voxels are computed in: float64 for float64 and 32/64-bit integers, else float32."""
    if x.dtype == torch.bool or x.is_complex():
        raise TypeError(f"{owner}: images must be real numbers (float or integer), got {x.dtype}")
    return torch.float64 if x.dtype in (torch.float64, torch.int32, torch.int64) else torch.float32


def _cast_like(y: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """``y`` in ``like``'s dtype; integers are rounded (values stay in the inputs' range)."""
    if not like.is_floating_point():
        y = y.round()
    return y.to(like.dtype)


class RandHistogramTransfer(BatchTransform):
    """Move each sample's intensity histogram toward another sample's, by entropic OT.

    Each sample ``b`` (probability ``prob``) is paired with a random other
    sample ``p`` of the batch (:func:`draw_partners`) and gets a strength
    ``s`` in ``strength``. For every channel, with its own intensity range
    ``[lo, hi]`` (per-sample, per-channel min and max, computed on the
    device), the voxels are counted in ``bins`` equal bins; the entropic OT
    plan ``P`` between the histograms of ``b`` and ``p`` is solved with
    :func:`morphaug.ot.sinkhorn` (all ``B * C`` problems in one call) and
    each voxel ``x`` becomes

        ``(1 - s) x + s T(x)``,

    where ``T`` is the barycentric projection of ``P``: the mean intensity of
    the partner's bins that ``x``'s bin is sent to. Labels pass through.

    Convention:
        Cost: the squared distance between bin centres, each histogram's
        bins placed on ``[0, 1]`` (its own ``[lo, hi]`` normalised). In 1-D
        every such cost has the same unregularised optimal plan as the
        squared distance of raw intensities (the monotone, quantile-matching
        plan); normalising makes ``reg`` relative to each histogram's spread
        whatever the intensity units. The entropic map
        ``T(y) = sum_l t_l softmax_l((g_l - (y - c_l)^2) / reg)`` (``g``: the
        partner's dual potential, ``c_l``/``t_l``: its bin centres
        normalised/in intensities) is the barycentric projection of ``P`` at
        the bin centres and extends it to any ``y``; it is evaluated at the
        bin centres and at both ends of the range (``lo``, ``hi``) and
        interpolated linearly in between, so ``T`` is continuous and
        non-decreasing: the order of intensities is kept (equal intensities
        stay equal; distinct ones may become equal only where the partner's
        histogram is flat) and there is no posterisation into ``bins``
        levels. ``T`` takes values in the partner's ``[lo, hi]``; integer
        images are rounded back to their dtype.
        Flat channels (``lo == hi``): a flat sample becomes its partner's
        mean intensity (of its bin centres), everything mapped toward a flat
        partner becomes its value: never NaN. Non-finite intensities are not
        checked (that would be a host sync): a NaN voxel stays NaN, and a
        channel holding NaN or inf may come out non-finite, as may the
        channels moved toward it. A sample paired with itself (a batch of
        one) and ``s = 0`` return the input exactly.
        Entropic bias: ``T`` is smoother than the exact quantile map, by
        about ``sqrt(reg / 2)`` of each range; smaller ``reg`` is sharper
        and needs more Sinkhorn iterations.

    Args:
        keys: image keys (float or integer intensities, dtype preserved).
        strength: number or range ``(low, high)`` in ``[0, 1]``, drawn per sample.
        prob: per-sample probability.
        bins: histogram bins per channel (``>= 2``).
        reg: entropic regularisation, in squared units of the normalised
            ranges (> 0).
        max_iter, tol: Sinkhorn iterations and stopping threshold
            (``||P^T 1 - b||_2 < tol``; see :func:`morphaug.ot.sinkhorn`).
        allow_missing_keys, generator: see :class:`BatchTransform`.

    Params (``last_params``): ``apply (B,)`` bool, ``partner (B,)`` int64
    (the sample each one moves toward), ``strength (B,)`` float32.

    The histograms and the transport are computed in float64 (``B * C``
    problems of ``bins x bins``); the voxels in float32 (float64 for
    float64 and 32/64-bit integer images).

    Example:
        >>> import torch
        >>> from morphaug.transforms import RandHistogramTransfer
        >>> t = RandHistogramTransfer("image", strength=1.0, prob=1.0,
        ...                           generator=torch.Generator().manual_seed(0))
        >>> image = torch.stack([torch.rand(1, 16, 16), 10 + 5 * torch.rand(1, 16, 16)])
        >>> out = t({"image": image})["image"]
        >>> t.last_params["partner"].tolist()
        [1, 0]
        >>> bool(out[0].min() > 9.5), bool(out[1].max() < 1.5)
        (True, True)
    """

    role = "image"
    _repr_fields = ("strength", "prob", "bins", "reg", "max_iter", "tol")

    def __init__(self, keys, strength=(0.0, 1.0), prob: float = 0.5, bins: int = 64, reg: float = 3e-3,
                 max_iter: int = 1000, tol: float = 1e-3, *, allow_missing_keys: bool = False,
                 generator: torch.Generator | None = None):
        super().__init__(keys, allow_missing_keys=allow_missing_keys, prob=prob, generator=generator)
        self.strength = check_float_range(strength, "strength", minimum=0.0)
        if self.strength[1] > 1.0:
            raise ValueError(f"strength must lie in [0, 1], got {strength!r}")
        self.bins = check_int(bins, "bins", minimum=2)
        self.reg = check_reg(reg)
        self.max_iter, self.tol = check_iterations(max_iter, tol)

    def make_params(self, batch, generator=None):
        params = super().make_params(batch, generator)
        batch_size, device = batch.shape[0], batch.device
        params["partner"] = draw_partners(batch_size, generator, device)
        low, high = self.strength
        params["strength"] = low + (high - low) * uniform((batch_size,), generator, device)
        return params

    def param_spec(self, batch):
        return {**super().param_spec(batch), "partner": _partner_param(batch),
                "strength": Param(torch.float32, (), 0.0, 1.0)}

    def apply(self, x, params):
        owner = type(self).__name__
        work = _work_dtype(x, owner)
        partner = params["partner"]
        if not x.numel():  # no histogram to transport (morphaug.ot solves no empty problem)
            return x.clone()
        mapped = self._transport_map(x.flatten(2).to(work), partner).reshape(x.shape)
        strength = per_sample(params["strength"], x.ndim).to(work)
        y = _cast_like(torch.lerp(x.to(work), mapped, strength), x)
        keep = ~params["apply"] | (partner == torch.arange(x.shape[0], device=x.device))
        return torch.where(per_sample(keep, x.ndim) | (per_sample(params["strength"], x.ndim) == 0), x, y)

    def _transport_map(self, flat: torch.Tensor, partner: torch.Tensor) -> torch.Tensor:
        """``T(x)`` for every voxel of ``flat (B, C, N)``, toward channel ``c`` of sample ``partner[b]``."""
        batch, channels, _ = flat.shape
        bins, reg, device = self.bins, self.reg, flat.device
        lo, hi = flat.amin(-1, keepdim=True), flat.amax(-1, keepdim=True)
        span = hi - lo
        # position in bin units, in [0, bins]; a flat channel sits at the centre of its only bin
        position = (flat - lo) / span.clamp_min(torch.finfo(flat.dtype).tiny) * bins
        position = torch.where(span > 0, position, 0.5).nan_to_num_(0.0, bins, 0.0)  # in range even for NaN
        ot = torch.float64
        counted = position.floor().clamp_(0, bins - 1).long()
        hist = torch.zeros(batch, channels, bins, dtype=ot, device=device)
        hist.scatter_add_(-1, counted, torch.ones((), dtype=ot, device=device).expand(counted.shape))
        hist = hist / flat.shape[-1]
        centres = (torch.arange(bins, dtype=ot, device=device) + 0.5) / bins
        cost = (centres[:, None] - centres[None, :]) ** 2
        result = sinkhorn(hist.flatten(0, 1), hist[partner].flatten(0, 1), cost, reg,
                          max_iter=self.max_iter, tol=self.tol)
        # T at the nodes 0, centres, 1 (normalised): the entropic map, the plan's barycentric
        # projection at the centres, mapped to the partner's intensities
        nodes = torch.cat([centres.new_zeros(1), centres, centres.new_ones(1)])
        g = result.g.view(batch, channels, 1, bins)
        weights = torch.softmax((g - (nodes[:, None] - centres[None, :]) ** 2) / reg, dim=-1)
        at_nodes = (lo[partner] + span[partner] * (weights * centres).sum(-1)).to(flat.dtype)
        # linear interpolation between the nodes around each voxel (node j + 1 is centre j)
        left = (position - 0.5).floor().add_(1).clamp_(0, bins)
        start, stop = (left - 0.5).clamp(min=0), (left + 0.5).clamp(max=bins)
        left = left.long()
        below = torch.gather(at_nodes, -1, left)
        above = torch.gather(at_nodes, -1, left + 1)
        return torch.lerp(below, above, (position - start) / (stop - start))


class RandWassersteinMix(LabelTransform):
    """Shape-aware mixing of pairs of samples along Wasserstein geodesics.

    Each sample ``b`` (probability ``prob``) is paired with a random other
    sample ``p`` of the batch (:func:`draw_partners`) and gets a weight ``w``
    in ``weight``. For every foreground class ``k``, the class masks ``A``
    (of ``b``) and ``B`` (of ``p``), normalised to unit mass, are
    interpolated by their entropic Wasserstein barycenter with weights
    ``(1 - w, w)`` (:func:`morphaug.ot.wasserstein_barycenter`, squared
    Euclidean cost on the voxel grid, all ``B x (K - 1)`` problems in one
    call): the point at ``w`` on the geodesic from ``A`` to ``B``, e.g. a
    disc half-way between two translated discs. The images are mixed
    linearly with the same ``w``: ``(1 - w) x_b + w x_p`` (mixup).

    Convention (labels):
        The barycenter of class ``k`` is scaled to the interpolated volume
        ``m_k = round((1 - w) |A| + w |B|)`` voxels and thresholded so that
        class ``k`` claims exactly its ``m_k`` densest voxels (a
        mass-preserving threshold; exact ties in raster order). A voxel
        claimed by several classes goes to the one with the largest density
        (the lowest class on ties), so colliding classes may end up with
        fewer voxels; a voxel claimed by none is background (0), so values
        that are no class (negative ones) do not survive a mix. A class present
        in only one of the two samples is not transported: its mask is
        interpolated toward itself, so it shrinks (or grows) to ``m_k``
        voxels around its densest part. The endpoints are exact: ``w = 0``
        returns the sample, ``w = 1`` its partner, and a sample paired with
        itself (a batch of one) is returned unchanged, as is a skipped sample.
        Labels stay valid: one class per voxel, input format and dtype
        (one-hot labels are read by argmax).

    Regularisation:
        ``reg`` is in units of the squared grid diameter (the grid is scaled
        so that its diagonal has length 1, voxels are isotropic): the
        entropic blur has a standard deviation of about ``sqrt(reg / 2)``
        diagonals (the default ``2e-3``: 0.03 of the diagonal, 2.8 voxels on
        a 64 x 64 image), and the threshold above takes most of it back.
        The barycenters are computed in float64 for ``reg < 0.02`` and in
        float32 from ``0.02`` on (about 4 times faster, but a blur of 0.1
        diagonal rounds non-convex shapes off); the Gibbs-kernel matmuls of
        :func:`morphaug.ot.wasserstein_barycenter` are exact down to about
        ``1/64`` in float32 and ``1/600`` in float64, below which it uses its
        exact log-domain path, which is much slower.

    Args:
        keys: image keys, mixed linearly (float or integer, dtype preserved;
            integers are rounded), or a mapping ``{key: role}`` of image and
            label keys (see :class:`BatchTransform`).
        label_keys: label keys (index ``(B, 1, ...)`` or one-hot
            ``(B, K, ...)``), mixed along the geodesics; added to ``keys``.
        weight: number or range ``(low, high)`` in ``[0, 1]`` drawn per
            sample: how far each sample moves toward its partner.
        prob: per-sample probability.
        reg: entropic regularisation (> 0), see above.
        max_iter, tol: barycenter iterations and stopping threshold (see
            :func:`morphaug.ot.wasserstein_barycenter`).
        num_classes: ``K`` for index labels; default: the foreground classes
            present in each index label map, read from the data (free on the
            CPU, one sync per label key on an accelerator; see
            :mod:`morphaug.transforms`).
        label_format: None (index for one channel, one-hot otherwise), ``"index"`` or ``"onehot"``.
        allow_missing_keys, generator: see :class:`BatchTransform`.

    A bare tensor is an image (the role of ``keys``); pass a mapping to mix labels.

    Params (``last_params``): ``apply (B,)`` bool, ``partner (B,)`` int64,
    ``weight (B,)`` float32.

    Example:
        >>> import torch
        >>> from morphaug.transforms import RandWassersteinMix
        >>> label = torch.zeros(2, 1, 24, 24, dtype=torch.long)
        >>> label[0, 0, 8:14, 2:8] = 1   # a square on the left
        >>> label[1, 0, 8:14, 16:22] = 1  # the same square on the right
        >>> t = RandWassersteinMix("image", "label", weight=0.5, prob=1.0, num_classes=2,
        ...                        generator=torch.Generator().manual_seed(0))
        >>> out = t({"image": torch.rand(2, 1, 24, 24), "label": label})
        >>> mixed = out["label"][0, 0]
        >>> int(mixed.sum()), mixed.nonzero()[:, 1].float().mean().item()  # same area, half-way
        (36, 11.5)
    """

    role = "image"
    _repr_fields = ("weight", "prob", "reg", "max_iter", "tol", "num_classes", "label_format")

    def __init__(self, keys, label_keys=None, weight=(0.2, 0.8), prob: float = 0.5, reg: float = 2e-3,
                 max_iter: int = 1000, tol: float = 1e-4, num_classes=None, label_format=None, *,
                 allow_missing_keys: bool = False, generator: torch.Generator | None = None):
        roles = _check_roles(keys, self.role, "keys")
        if label_keys is not None:
            label_keys = _check_keys(label_keys, "label_keys")
            shared = set(roles) & set(label_keys)
            if shared:
                raise ValueError(f"keys and label_keys must not share keys, got {sorted(shared, key=repr)}")
            roles.update(dict.fromkeys(label_keys, "label"))
        super().__init__(roles, allow_missing_keys=allow_missing_keys, prob=prob, generator=generator)
        self.weight = check_float_range(weight, "weight", minimum=0.0)
        if self.weight[1] > 1.0:
            raise ValueError(f"weight must lie in [0, 1], got {weight!r}")
        self.reg = check_reg(reg)
        self.max_iter, self.tol = check_iterations(max_iter, tol)
        self._setup_labels(None, num_classes, label_format)

    @property
    def image_keys(self) -> tuple:
        """The keys of role ``"image"``."""
        return tuple(key for key, role in self.roles.items() if role == "image")

    @property
    def label_keys(self) -> tuple:
        """The keys of role ``"label"``."""
        return tuple(key for key, role in self.roles.items() if role == "label")

    def _keys_repr(self) -> str:
        """``keys=`` the images and ``label_keys=`` the labels (the roles when no key is an image)."""
        if not self.image_keys:
            return f"keys={self.roles!r}"
        return f"keys={self.image_keys!r}, label_keys={self.label_keys or None!r}"

    def appliers(self):
        return {"image": self.apply, "label": self.apply_label}

    # ---------------------------------------------------------------- draws
    def make_params(self, batch, generator=None):
        params = super().make_params(batch, generator)
        batch_size, device = batch.shape[0], batch.device
        params["partner"] = draw_partners(batch_size, generator, device)
        low, high = self.weight
        params["weight"] = low + (high - low) * uniform((batch_size,), generator, device)
        return params

    def param_spec(self, batch):
        return {**super().param_spec(batch), "partner": _partner_param(batch),
                "weight": Param(torch.float32, (), 0.0, 1.0)}

    def apply(self, x, params):
        """Images, mixed linearly: ``(1 - w) x_b + w x_p``."""
        partner = params["partner"]
        work = _work_dtype(x, type(self).__name__)
        weight = per_sample(params["weight"], x.ndim).to(work)
        mixed = _cast_like(torch.lerp(x.to(work), x[partner].to(work), weight), x)
        return self._endpoints(x, partner, params, mixed)

    def apply_label(self, x, params):
        """Label maps, mixed along the Wasserstein geodesics of their classes."""
        partner = params["partner"]
        return self._endpoints(x, partner, params, self._mix_labels(x, partner, params["weight"]))

    def _endpoints(self, x: torch.Tensor, partner: torch.Tensor, params, mixed: torch.Tensor) -> torch.Tensor:
        """``mixed``, with ``x`` where skipped, paired with itself or ``w = 0`` and the partner at ``w = 1``."""
        weight = per_sample(params["weight"], x.ndim)
        mixed = torch.where(weight == 1, x[partner], mixed)
        keep = ~params["apply"] | (partner == torch.arange(x.shape[0], device=x.device))
        return torch.where(per_sample(keep, x.ndim) | (weight == 0), x, mixed)

    def _mix_labels(self, x: torch.Tensor, partner: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        fmt, classes = self._labels(x)
        index = to_index(x, fmt)
        table = class_table(classes, x.device)
        masks = class_masks(index, "index", table)  # (B, K', *spatial)
        if not masks.numel():  # no class, sample or voxel: nothing to transport, and nothing claimed
            return from_index(torch.zeros_like(index), fmt, x)
        dims = spatial_dims(masks)
        shape = masks.shape[2:]
        dtype = torch.float32 if self.reg >= FLOAT32_REG else torch.float64
        own = masks.to(dtype)
        other = own[partner]
        own_size, other_size = own.sum(dims, keepdim=True), other.sum(dims, keepdim=True)
        # A class absent from one side is interpolated toward itself; absent from both: uniform, mass 0.
        uniform_density = torch.full_like(own, 1.0 / math.prod(shape))
        own_density = own / own_size.clamp_min(1)
        other_density = other / other_size.clamp_min(1)
        own_density = torch.where(own_size > 0, own_density,
                                  torch.where(other_size > 0, other_density, uniform_density))
        other_density = torch.where(other_size > 0, other_density, own_density)
        hists = torch.stack([own_density, other_density], dim=2).flatten(0, 1)  # (B K', 2, *spatial)
        w = weight.to(dtype)[:, None].expand(masks.shape[:2]).reshape(-1)
        diameter = math.sqrt(sum((n - 1) ** 2 for n in shape))
        barycenter = wasserstein_barycenter(
            hists, self.reg, torch.stack([1 - w, w], dim=-1), max_iter=self.max_iter, tol=self.tol,
            spacing=1.0 / diameter if diameter > 0 else 1.0,
        ).view(masks.shape)
        volume = torch.lerp(own_size, other_size, per_sample(w.view(masks.shape[:2]), own.ndim)).round()
        density = barycenter * volume
        # mass-preserving threshold: the `volume` densest voxels of each (sample, class), ties in raster order
        flat = density.flatten(2)
        order = flat.argsort(dim=-1, descending=True, stable=True)
        rank = torch.empty_like(order).scatter_(-1, order, torch.arange(flat.shape[-1], device=x.device)
                                                .expand_as(order))
        claims = (rank < volume.flatten(2)).view(density.shape)
        score = torch.where(claims, density, -1.0)
        mixed = take_best(table, score, any_channel(claims), torch.zeros_like(index))
        return from_index(mixed, fmt, x)
