"""Random morphology of label maps and images, and per-class hole filling."""

from __future__ import annotations

import math
import numbers

import torch

from .. import footprints as _footprints
from .. import ndimage
from .._checks import check_int, check_mode, check_probability
from .._dtypes import SIGNED_VIEW, on_signed_view
from ._base import (
    BatchTransform,
    Deterministic,
    Param,
    check_choices,
    check_int_range,
    per_sample,
    randint,
    uniform,
)
from ._distances import FOOTPRINTS, morph_step
from ._labels import (
    LabelTransform,
    blend,
    class_masks,
    class_table,
    from_index,
    recombine,
    to_index,
)

__all__ = ["RandLabelMorphology", "RandGreyMorphology", "FillHoles"]

LABEL_OPS = ("dilation", "erosion", "opening", "closing")
GREY_OPS = ("erosion", "dilation", "opening", "closing", "white_tophat", "black_tophat", "gradient")
#: The ops of GREY_OPS that each one is computed from.
_BUILT_ON = {"opening": ("erosion",), "closing": ("dilation",), "white_tophat": ("opening",),
             "black_tophat": ("closing",), "gradient": ("dilation", "erosion")}
#: The ops of GREY_OPS whose first extremum is a maximum (the others' is a minimum), and those that take a second.
_MAXIMUM_FIRST = {"dilation", "closing", "black_tophat", "gradient"}
_TWO_EXTREMA = {"opening", "closing", "white_tophat", "black_tophat", "gradient"}


def _minus(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a - b`` as NumPy's (wrapping for unsigned integers); the exclusive or of bool images, as SciPy's
    top-hats."""
    return a ^ b if a.dtype == torch.bool else on_signed_view(torch.sub, a, b)


def _reversal(x: torch.Tensor, samples: torch.Tensor):
    """The op that reverses the order of the values of ``x``'s dtype in the ``samples (B,)`` (bool),
    exactly and invertibly (it is its own inverse), one launch a call: times -1 for floats, every bit
    flipped (an exclusive or with all ones) for integers and bool."""
    flip = per_sample(samples, x.ndim)
    if x.is_floating_point():
        sign = torch.where(flip, -1, 1).to(x.dtype)
        return lambda t: t * sign
    if x.dtype == torch.bool:
        return lambda t: t ^ flip
    ones = -flip.to(SIGNED_VIEW.get(x.dtype, x.dtype))
    return lambda t: on_signed_view(lambda bits: bits ^ ones, t)


def _per_sample_extremum(x: torch.Tensor, footprints: torch.Tensor, maximum: torch.Tensor, mode: str) -> torch.Tensor:
    """``grey_dilation`` of the samples where ``maximum (B,)``, ``grey_erosion`` of the others, by their
    ``footprints (B, *k)`` (odd sides, centred), in one ``grey_erosion`` of the whole batch: a dilation is
    the order-reversed erosion of the order-reversed image by the reflected footprint (SciPy's dilation
    reflects it). Exact for every border mode but a constant one (whose cval would need reversing too)."""
    element = torch.where(maximum.view(-1, *(1,) * (footprints.ndim - 1)),
                          footprints.flip(tuple(range(1, footprints.ndim))), footprints)
    reverse = _reversal(x, maximum)
    return reverse(ndimage.grey_erosion(reverse(x), footprint=element, mode=mode))


def _is_one_of(choice: torch.Tensor, names: tuple[str, ...], wanted: set[str]) -> torch.Tensor:
    """Where ``names[choice]`` is in ``wanted``, for a tensor of indices ``choice``."""
    result = torch.zeros_like(choice, dtype=torch.bool)
    for i, name in enumerate(names):
        if name in wanted:
            result = result | (choice == i)
    return result


class RandLabelMorphology(LabelTransform):
    """Random per-class binary morphology of label maps (nnU-Net cascade augmentation), batched.

    For each sample (probability ``prob``) and each class of ``classes``
    (probability ``prob_per_class``) an op, a footprint shape and an integer
    radius are drawn; the class's mask is transformed with SciPy's binary op
    (``border_value=0``) and the label map is rebuilt.

    Convention (class precedence):
        All classes are transformed from the input label map, then combined:
        a voxel that a class gains is taken from whatever class held it; when
        several classes gain one voxel the highest class value wins; a voxel
        that a class loses and no class gains becomes ``fill_value``. Every
        other voxel keeps its value, so a sample or class that is not drawn
        is returned exactly.

    Labels: ``label_format`` ``"index"`` ``(B, 1, ...)`` or ``"onehot"``
    ``(B, K, ...)``; None infers index for one channel, one-hot otherwise.
    Output has the input's format and dtype. The mask of a one-hot class is
    its channel (non-zero). A one-hot voxel that a drawn class gains or loses
    becomes one-hot (its class as above: overlapping classes there are
    resolved, the highest gaining class or ``fill_value``); every other voxel
    keeps all its channels, overlaps and voxels of no class included.

    Classes (see :mod:`morphaug.transforms`): ``classes``; else the one-hot
    channels ``1 .. K-1``, or ``1 .. num_classes-1`` for index labels; else
    the foreground classes present in the index labels of the batch (of the
    first label key of the call), read once per call from the data (free on
    the CPU, one sync on an accelerator; ``num_classes=`` avoids it). Values
    that are no class (negative, fractions) are kept, unless a class gains
    their voxels. The draw holds its classes, so every key of the call and a
    replay use them.

    Args:
        keys: label keys.
        ops: op names to draw from: ``dilation``, ``erosion``, ``opening``, ``closing``.
        radius: int or inclusive range ``(low, high)`` of integer radii (``>= 0``).
        footprint: shape names to draw from: ``ball``, ``cube``, ``cross``
            (as :mod:`morphaug.footprints`).
        prob: per-sample probability.
        prob_per_class: probability that a class of a transformed sample is changed.
        classes: class values to transform; default: see Classes.
        fill_value: class value of voxels a class loses (background).
        num_classes: ``K`` for index labels when ``classes`` is None.
        label_format: None, ``"index"`` or ``"onehot"``.
        allow_missing_keys, generator: see :class:`BatchTransform`.

    Params (``last_params``): ``apply (B,)`` bool; ``classes`` (the class
    values, int64), ``class_apply`` (bool), ``op`` (index into ``ops``),
    ``footprint`` (index into ``footprint``) and ``radius``, each
    ``(B, K')`` for the ``K'`` selected classes.

    Radii cost nothing extra: each step is one batched call over all samples
    and classes, each with its own radius and footprint: the native
    ``ball_morphology`` kernel, or on the torch backend a threshold of one
    EDT/CDT per footprint shape in use (see ``_distances``).

    Example:
        >>> import torch
        >>> from morphaug.transforms import RandLabelMorphology
        >>> t = RandLabelMorphology("label", radius=(1, 2), prob=1.0, num_classes=3,
        ...                         generator=torch.Generator().manual_seed(0))
        >>> label = torch.zeros(2, 1, 16, 16, 16, dtype=torch.uint8)
        >>> label[:, :, 4:12, 4:12, 4:12] = 1
        >>> out = t({"label": label})["label"]
        >>> out.shape, out.dtype
        (torch.Size([2, 1, 16, 16, 16]), torch.uint8)
    """

    _repr_fields = ("ops", "radius", "footprint", "prob", "prob_per_class", "classes", "fill_value",
                    "num_classes", "label_format")
    draws_per_class = True

    def __init__(self, keys, ops=LABEL_OPS, radius=(1, 3), footprint=FOOTPRINTS, prob: float = 0.5,
                 prob_per_class: float = 1.0, classes=None, fill_value: int = 0, num_classes=None,
                 label_format=None, *, allow_missing_keys: bool = False,
                 generator: torch.Generator | None = None):
        super().__init__(keys, allow_missing_keys=allow_missing_keys, prob=prob, generator=generator)
        self.ops = check_choices(ops, LABEL_OPS, "ops")
        self.radius = check_int_range(radius, "radius", minimum=0)
        self.footprint = check_choices(footprint, FOOTPRINTS, "footprint")
        self.prob_per_class = check_probability(prob_per_class, "prob_per_class")
        self._setup_fill(fill_value)
        self._setup_labels(classes, num_classes, label_format)

    def make_params(self, batch, generator=None):
        params = super().make_params(batch, generator)
        classes = self._labels(batch)[1]
        shape = (batch.shape[0], len(classes))
        device = batch.device
        params["classes"] = class_table(classes, device, batch.shape[0])
        params["class_apply"] = uniform(shape, generator, device) < self.prob_per_class
        params["op"] = randint(0, len(self.ops) - 1, shape, generator, device)
        params["footprint"] = randint(0, len(self.footprint) - 1, shape, generator, device)
        params["radius"] = randint(*self.radius, shape, generator, device)
        return params

    def param_spec(self, batch):
        spec = super().param_spec(batch)
        spec["classes"], size = self._class_param(batch)
        spec.update(class_apply=Param(torch.bool, (size,)),
                    op=Param(torch.int64, (size,), 0, len(self.ops) - 1),
                    footprint=Param(torch.int64, (size,), 0, len(self.footprint) - 1),
                    radius=Param(torch.int64, (size,), 0, math.inf))
        return spec

    def apply(self, x, params):
        fmt = self._format(x)
        masks = class_masks(x, fmt, params["classes"])
        # a skipped sample or class has radius 0: unchanged, and recombine keeps it exactly
        return recombine(x, fmt, masks, self._morph(masks, params), params["classes"], self.fill_value)

    def _morph(self, masks: torch.Tensor, params) -> torch.Tensor:
        """The drawn op on each ``(sample, class)`` mask of ``masks (B, K', *spatial)``."""
        ndim = masks.ndim
        op = per_sample(params["op"], ndim)
        active = per_sample(params["apply"][:, None] & params["class_apply"], ndim)
        radius = torch.where(active, per_sample(params["radius"], ndim), 0)  # radius 0: unchanged
        footprint = per_sample(params["footprint"], ndim)
        first_dilates = _is_one_of(op, self.ops, {"dilation", "closing"})
        result = morph_step(masks, first_dilates, radius, footprint, self.footprint)
        if {"opening", "closing"} & set(self.ops):
            two_steps = _is_one_of(op, self.ops, {"opening", "closing"})
            second_radius = torch.where(two_steps, radius, 0)
            result = morph_step(result, ~first_dilates, second_radius, footprint, self.footprint)
        return result


def _empty_footprints(footprints: torch.Tensor) -> str | None:
    """What is wrong with replayed ``footprints (B, *k)``: a sample's without a true voxel (every
    sample's element is used, drawn or not: SciPy's grey ops reject an all-false footprint)."""
    empty = ~footprints.flatten(1).any(1)
    if empty.any():
        return (f"must hold a true voxel in every sample's footprint (also where apply is False), but "
                f"samples {empty.nonzero().flatten().tolist()} hold none")
    return None


class RandGreyMorphology(BatchTransform):
    """Random grey-level morphology of images with a random element per sample.

    For each sample (probability ``prob``) an op, a footprint shape and an
    integer radius are drawn (:func:`morphaug.footprints.random_footprints`);
    the sample becomes ``scipy.ndimage``'s op with that flat footprint:
    ``erosion``/``dilation`` (``grey_erosion``/``grey_dilation``),
    ``opening``/``closing`` (``grey_opening``/``grey_closing``),
    ``white_tophat``, ``black_tophat`` and ``gradient``
    (``morphological_gradient``). Each op is computed once, with the
    per-sample footprints, no loop over samples: on an accelerator (and
    while ``torch.compile`` traces) two extrema of the whole batch, each
    sample taking its own erosion or dilation in each (a dilation as the
    erosion of the order-reversed image, reversed back), then its op's
    result with ``torch.where`` (knowing which were drawn would be a host
    sync); with a constant border, every op of ``ops`` on the whole batch
    instead; on the CPU, where reading the draw is free,
    each op on the samples that drew it or an op built on it, gathered and
    written back by index (an erosion and a dilation per sample at most).

    Bool images follow SciPy: the top-hats are exclusive ors, and
    ``gradient`` is not defined (NumPy has no boolean subtract), so a bool
    image with ``"gradient"`` in ``ops`` raises ``TypeError`` whatever is
    drawn.

    Args:
        keys: image keys (float, integer or bool intensities, dtype preserved).
        ops: op names to draw from (see above).
        radius: int or inclusive range ``(low, high)`` of radii (``>= 1``).
        footprint: shape names to draw from: ``ball``, ``cube``, ``cross``.
        prob: per-sample probability.
        mode, cval: border handling, as in ``scipy.ndimage.grey_erosion``.
        allow_missing_keys, generator: see :class:`BatchTransform`.

    Params (``last_params``): ``apply``, ``op`` (index into ``ops``),
    ``footprint`` (index into ``footprint``), ``radius``, each ``(B,)``, and
    ``footprints (B, *k)`` bool, the elements themselves.

    Example:
        >>> import torch
        >>> from morphaug.transforms import RandGreyMorphology
        >>> t = RandGreyMorphology("image", prob=1.0, generator=torch.Generator().manual_seed(0))
        >>> image = torch.rand(2, 1, 16, 16, 16)
        >>> t({"image": image})["image"].shape
        torch.Size([2, 1, 16, 16, 16])
    """

    role = "image"
    _repr_fields = ("ops", "radius", "footprint", "prob", "mode", "cval")

    def __init__(self, keys, ops=GREY_OPS, radius=(1, 2), footprint=FOOTPRINTS, prob: float = 0.5,
                 mode: str = "reflect", cval: float = 0.0, *, allow_missing_keys: bool = False,
                 generator: torch.Generator | None = None):
        super().__init__(keys, allow_missing_keys=allow_missing_keys, prob=prob, generator=generator)
        self.ops = check_choices(ops, GREY_OPS, "ops")
        self.radius = check_int_range(radius, "radius", minimum=1)
        self.footprint = check_choices(footprint, FOOTPRINTS, "footprint")
        check_mode(mode)
        self.mode = mode
        if isinstance(cval, bool) or not isinstance(cval, numbers.Real):
            raise TypeError(f"cval must be a real number, got {cval!r}")
        self.cval = cval

    def make_params(self, batch, generator=None):
        params = super().make_params(batch, generator)
        batch_size, device = batch.shape[0], batch.device
        params["op"] = randint(0, len(self.ops) - 1, (batch_size,), generator, device)
        # random_footprints' draws, in its order, through the draws that torch.compile traces
        params["footprint"] = randint(0, len(self.footprint) - 1, (batch_size,), generator, device)
        params["radius"] = randint(*self.radius, (batch_size,), generator, device)
        params["footprints"] = _footprints.footprints_from_params(params["footprint"], params["radius"],
                                                                 self.footprint, self.radius[1], batch.ndim - 2)
        return params

    def param_spec(self, batch):
        spec = super().param_spec(batch)
        spec.update(op=Param(torch.int64, (), 0, len(self.ops) - 1),
                    footprint=Param(torch.int64, (), 0, len(self.footprint) - 1),
                    radius=Param(torch.int64, (), 1, self.radius[1]),  # what the footprints' box holds
                    footprints=Param(torch.bool, (2 * self.radius[1] + 1,) * (batch.ndim - 2),
                                     values=_empty_footprints))
        return spec

    def _check_input(self, x, role, where):
        if x.dtype == torch.bool and "gradient" in self.ops:
            raise TypeError(
                f"{type(self).__name__}: {where} is a bool image, on which 'gradient' (in ops) is not defined "
                "(scipy.ndimage.morphological_gradient raises: NumPy has no boolean subtract); drop it from "
                "ops or cast the image"
            )

    def apply(self, x, params):
        op, apply = params["op"], params["apply"]
        if op.device.type != "cpu" or torch.compiler.is_compiling():
            # the whole batch, each sample taking its own op (reading the draw would be a host sync)
            if check_mode(self.mode) != "constant":
                return blend(per_sample(apply, x.ndim), self._two_extrema(x, params["footprints"], op), x)
            results = self._ops(x, params["footprints"], None)  # every op, each on the whole batch
            out = x
            for i, name in enumerate(self.ops):
                out = torch.where(per_sample(op, x.ndim) == i, results(name, None), out)
            return blend(per_sample(apply, x.ndim), out, x)
        # on the CPU the draw is read for free: each op runs on the samples that drew it or an op built on it
        drawn = {name: (apply & (op == i)).nonzero().flatten() for i, name in enumerate(self.ops)}
        drawn = {name: samples for name, samples in drawn.items() if samples.numel()}
        results = self._ops(x, params["footprints"], drawn)
        out = x.clone()
        for name, samples in drawn.items():
            on_signed_view(lambda o, r: o.index_copy_(0, samples, r), out, results(name, samples))
        return out

    def _two_extrema(self, x: torch.Tensor, footprints: torch.Tensor, op: torch.Tensor) -> torch.Tensor:
        """Each sample's op ``op (B,)`` in two per-sample extrema of the whole batch, not the four
        erosions and dilations of every op: first the erosion or the dilation that the op starts with, then
        the other one, of that result (opening, closing, the top-hats) or of the image (gradient)."""
        maximum = _is_one_of(op, self.ops, _MAXIMUM_FIRST)
        first = _per_sample_extremum(x, footprints, maximum, self.mode)
        if not _TWO_EXTREMA & set(self.ops):
            return first
        gradient = per_sample(_is_one_of(op, self.ops, {"gradient"}), x.ndim)
        second = _per_sample_extremum(torch.where(gradient, x, first), footprints, ~maximum, self.mode)
        recipes = {"opening": lambda: second, "closing": lambda: second, "white_tophat": lambda: _minus(x, second),
                   "black_tophat": lambda: _minus(second, x), "gradient": lambda: _minus(first, second)}
        out = first  # erosion, dilation
        for i, name in enumerate(self.ops):
            if name in recipes:
                out = torch.where(per_sample(op, x.ndim) == i, recipes[name](), out)
        return out

    def _ops(self, x: torch.Tensor, footprints: torch.Tensor, drawn: dict[str, torch.Tensor] | None):
        """``result(name, samples)``: op ``name`` of the samples ``samples`` (sorted indices; None: the
        whole batch). Each op runs once: on the whole batch where ``drawn`` is None, else on the samples
        that drew it (``drawn[name]``) or an op built on it."""
        rows = {}  # name -> the samples it runs on (None: all)

        def need(name, samples):
            rows[name] = samples if name not in rows else torch.unique(torch.cat([rows[name], samples]))
            for base in _BUILT_ON.get(name, ()):
                need(base, samples)

        for name, samples in (drawn or {}).items():
            need(name, samples)

        def part(name, tensor):  # tensor (over the whole batch) on the samples of op name
            return tensor if drawn is None else tensor.index_select(0, rows[name])

        def grey(fn, name, image):
            return fn(image, footprint=part(name, footprints), mode=self.mode, cval=self.cval)

        recipes = {
            "erosion": lambda: grey(ndimage.grey_erosion, "erosion", part("erosion", x)),
            "dilation": lambda: grey(ndimage.grey_dilation, "dilation", part("dilation", x)),
            # as scipy's grey_opening and grey_closing
            "opening": lambda: grey(ndimage.grey_dilation, "opening", result("erosion", rows.get("opening"))),
            "closing": lambda: grey(ndimage.grey_erosion, "closing", result("dilation", rows.get("closing"))),
            "white_tophat": lambda: _minus(part("white_tophat", x), result("opening", rows.get("white_tophat"))),
            "black_tophat": lambda: _minus(result("closing", rows.get("black_tophat")), part("black_tophat", x)),
            "gradient": lambda: _minus(*(result(base, rows.get("gradient")) for base in ("dilation", "erosion"))),
        }
        cache = {}

        def result(name, samples):
            if name not in cache:
                cache[name] = recipes[name]()
            if samples is None or samples.numel() == rows[name].numel():  # samples is a subset of rows[name]
                return cache[name]
            return cache[name].index_select(0, torch.searchsorted(rows[name], samples))

        return result


class FillHoles(Deterministic, LabelTransform):
    """Fill the holes of each class of a label map (``scipy.ndimage.binary_fill_holes``).

    A hole of class ``k`` is a region outside the class that the class
    encloses (background connectivity ``connectivity``, as
    ``generate_binary_structure(ndim, connectivity)``).

    Convention:
        Only background voxels (class 0) are filled, so a class enclosed by
        another is kept. A background voxel in holes of several classes
        (nested classes) goes to the innermost one: the class whose filled
        region (``binary_fill_holes`` of its mask) is smallest, the lowest
        class on a tie. Deterministic: ``last_params`` is empty.

    Args:
        keys: label keys (index or one-hot, see :class:`RandLabelMorphology`).
        classes: class values to fill; default the foreground classes: ``1 .. K-1``
            for one-hot labels and with ``num_classes``, else those present in
            each index label map (read from the data once per key and call:
            free on the CPU, one sync on an accelerator).
        connectivity: 1 (faces) .. ndim (full) connectivity of the background.
        num_classes, label_format, allow_missing_keys: as in :class:`RandLabelMorphology`.

    Example:
        >>> import torch
        >>> from morphaug.transforms import FillHoles
        >>> label = torch.zeros(1, 1, 5, 5, dtype=torch.long)
        >>> label[0, 0, 1:4, 1:4] = 1
        >>> label[0, 0, 2, 2] = 0
        >>> int(FillHoles("label", num_classes=2)(label)[0, 0, 2, 2])
        1
    """

    _repr_fields = ("classes", "connectivity", "num_classes", "label_format")

    def __init__(self, keys, classes=None, connectivity: int = 1, num_classes=None, label_format=None,
                 *, allow_missing_keys: bool = False):
        super().__init__(keys, allow_missing_keys=allow_missing_keys)
        self.connectivity = check_int(connectivity, "connectivity", minimum=1)
        self._setup_labels(classes, num_classes, label_format)

    def apply(self, x, params):
        ndim = x.ndim - 2
        if self.connectivity > ndim:
            raise ValueError(f"{type(self).__name__}: connectivity={self.connectivity} exceeds the {ndim} spatial axes")
        fmt, classes = self._labels(x)
        index = to_index(x, fmt)
        table = class_table(classes, x.device)
        masks = class_masks(index, "index", table)
        # a host element, read on the host: symmetric, so the fill takes the native kernel
        # or the torch backend's component labelling (an element on the device would take plain steps)
        structure = ndimage.generate_binary_structure(ndim, self.connectivity)
        filled = ndimage.binary_fill_holes(masks, structure=structure)
        holes = filled & ~masks & (index == 0)
        # the innermost class wins: the classes are written from the largest filled region to the smallest,
        # one (B, 1, *spatial) pass each (a per-voxel argmax over the class axis costs several times more)
        order = filled.flatten(2).sum(-1).sort(dim=1, stable=True).indices  # ascending: ties by class
        values = table.expand(x.shape[0], -1).gather(1, order).to(index.dtype)
        out, at = index, (-1, 1, *([1] * ndim))
        for rank in reversed(range(order.shape[1])):  # a tie: the lower class is written last
            hole = holes.gather(1, order[:, rank].view(at).expand(-1, 1, *x.shape[2:]))
            out = blend(hole, values[:, rank].view(at), out)
        return from_index(out, fmt, x)
