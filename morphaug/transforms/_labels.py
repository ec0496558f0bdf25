"""Label maps: formats, class selection, per-class masks and recombination.

Label formats
-------------
``"index"``
    One channel ``(B, 1, *spatial)`` of class values (``0`` is background),
    in any dtype: integer, bool (two classes) or float (MONAI loads labels
    as float) holding whole numbers (the transforms refuse others where
    reading them is free: :meth:`BatchTransform._check_whole`).
``"onehot"``
    ``(B, K, *spatial)``, channel ``k`` non-zero where the class is ``k``;
    channel ``0`` is background.

With ``label_format=None`` the format is inferred from the shape:
``C == 1`` is an index map and ``C != 1`` is one-hot (a one-hot map with a
single channel would hold nothing but background).

Classes
-------
The classes a transform works on (:func:`resolve_classes`) are ``classes``
when given; else the channels of a one-hot map, ``0`` and ``1`` for a bool
index map, ``0 .. K-1`` for an index map with ``num_classes=K``; else the
classes present in the index map (:func:`present_classes`): its distinct
values that are integers in ``0 .. CLASS_LIMIT - 1``, background ``0``
always among them where a transform works on background. That costs one
pass over the labels and one read of device data
(``morphaug._sync.READS["label classes"]``): nothing on the CPU, one host
sync on an accelerator, which ``num_classes=`` or ``classes=`` avoid.
Values that are no class (negative values; fractions and NaN where they
were not refused) are kept, as is any value outside the classes a transform
works on.

On the device, classes are tables ``(B or 1, K')`` of int64 class values
(:func:`class_table`), one row per sample: masks and writes are tensor ops,
with no host-to-device copy (which would synchronise an accelerator).
"""

from __future__ import annotations

import torch

from .. import _sync
from .._checks import is_int
from ..ndimage._components import any_channel
from ..ndimage._label_distances import any_spatial
from ._base import BatchTransform, Param, per_sample

__all__ = [
    "LABEL_FORMATS",
    "CLASS_LIMIT",
    "LabelTransform",
    "check_label_format",
    "check_classes",
    "check_num_classes",
    "label_format_of",
    "present_classes",
    "configured_classes",
    "resolve_classes",
    "class_table",
    "class_masks",
    "take_best",
    "to_index",
    "from_index",
    "recombine",
    "clear",
    "spatial_dims",
    "any_spatial",
    "blend",
]

LABEL_FORMATS = ("index", "onehot")
#: Classes are inferred among the values ``0 .. CLASS_LIMIT - 1`` (:func:`present_classes`).
CLASS_LIMIT = 4096


def check_label_format(label_format) -> str | None:
    if label_format is not None and label_format not in LABEL_FORMATS:
        raise ValueError(f"label_format must be None, 'index' or 'onehot', got {label_format!r}")
    return label_format


def check_classes(classes, name: str = "classes") -> tuple[int, ...] | None:
    """None, or a sorted tuple of unique non-negative ints (one int is accepted)."""
    if classes is None:
        return None
    if is_int(classes):
        classes = (classes,)
    try:
        values = tuple(classes)
    except TypeError:
        raise TypeError(f"{name} must be None, an int or a sequence of ints, got {classes!r}") from None
    if not values:
        raise ValueError(f"{name} must not be empty (use None for the default classes)")
    for value in values:
        if not is_int(value) or value < 0:
            raise ValueError(f"{name} must contain non-negative ints, got {classes!r}")
    if len(set(values)) != len(values):
        raise ValueError(f"{name} must not repeat classes, got {classes!r}")
    return tuple(sorted(int(v) for v in values))


def check_num_classes(num_classes, minimum: int = 1) -> int | None:
    if num_classes is None:
        return None
    if not is_int(num_classes) or num_classes < minimum:
        raise ValueError(f"num_classes must be None or an int >= {minimum}, got {num_classes!r}")
    return int(num_classes)


def spatial_dims(x: torch.Tensor) -> tuple[int, ...]:
    return tuple(range(2, x.ndim))



def label_format_of(x: torch.Tensor, label_format: str | None, owner: str) -> str:
    """The format of label map ``x``: ``label_format``, or inferred from ``C``."""
    fmt = label_format or ("index" if x.shape[1] == 1 else "onehot")
    if fmt == "index" and x.shape[1] != 1:
        raise ValueError(
            f"{owner}: an index label map has one channel (B, 1, *spatial), got shape {tuple(x.shape)}"
        )
    if x.is_complex():
        raise TypeError(f"{owner}: labels must be real, got {x.dtype}")
    return fmt


def present_classes(x: torch.Tensor, owner: str) -> tuple[int, ...]:
    """The classes present in the index map ``x``: its distinct values in ``0 .. CLASS_LIMIT - 1``, ascending.

    Negative values and, in float maps, fractions and NaN are no class. One
    pass over ``x`` flags the values present, and one read
    (``_sync.host_read``, ``"label classes"``) brings the flags to the host:
    free on the CPU, one sync on an accelerator. A value of ``CLASS_LIMIT``
    or more raises ``ValueError``: such labels need ``classes=``.
    """
    values = x.flatten()
    # slot CLASS_LIMIT: a value too large to count; slot CLASS_LIMIT + 1: no class
    if values.is_floating_point():  # fractions, NaN and inf: no class; the clamp keeps the cast defined
        slot = torch.where((values.frac() == 0) & (values >= 0), values.clamp(max=CLASS_LIMIT), CLASS_LIMIT + 1)
    else:
        # room for the two slots; torch compares no uint32/uint64 (old code's int64, wrapping past 2^63)
        values = values.int() if values.dtype.itemsize <= 2 else values if values.dtype.is_signed else values.long()
        slot = torch.where(values < 0, CLASS_LIMIT + 1, values.clamp(max=CLASS_LIMIT))
    # counted into int32 slots (int64 counts, a broadcast one): several times faster than flags written
    # by index_fill_ or index_put_, with no data-dependent shape (bincount's)
    slot = slot.int()
    counts = torch.zeros(CLASS_LIMIT + 2, dtype=torch.int64, device=x.device)
    present = counts.index_add_(0, slot, torch.ones((), dtype=torch.int64, device=x.device).expand(slot.shape)) > 0
    flags = _sync.host_read(present[:CLASS_LIMIT + 1], "label classes")
    if flags[CLASS_LIMIT]:
        raise ValueError(
            f"{owner}: the index labels hold a value >= {CLASS_LIMIT}, and classes are only inferred among "
            f"0 .. {CLASS_LIMIT - 1}: pass classes= (or num_classes=)"
        )
    return tuple(value for value, flag in enumerate(flags[:CLASS_LIMIT]) if flag)


def configured_classes(x: torch.Tensor, fmt: str, classes: tuple[int, ...] | None, num_classes: int | None,
                       include_background: bool, owner: str) -> tuple[int, ...] | None:
    """The classes to work on for label map ``x`` that the arguments and ``x``'s shape fix, ascending,
    or None when they are read from the data (see :func:`resolve_classes`)."""
    if fmt == "onehot":
        count = x.shape[1]
        if num_classes is not None and num_classes != count:
            raise ValueError(f"{owner}: num_classes={num_classes} but the one-hot labels have {count} channels")
    else:
        count = num_classes if num_classes is not None else (2 if x.dtype == torch.bool else None)
    if classes is not None:
        if count is not None and classes[-1] >= count:
            raise ValueError(f"{owner}: classes {classes} do not exist in labels with {count} classes")
        return classes
    if count is None:
        return None
    return tuple(range(0 if include_background else 1, count))


def resolve_classes(x: torch.Tensor, fmt: str, classes: tuple[int, ...] | None,
                    num_classes: int | None, include_background: bool, owner: str) -> tuple[int, ...]:
    """The classes to work on for label map ``x``, ascending (see the module notes).

    ``classes`` when given; otherwise ``0 .. K-1`` (``1 .. K-1`` without
    background) where ``K`` is the one-hot channel count, ``num_classes``, or 2
    for a bool index map; otherwise the classes present in the index map
    (:func:`present_classes`, one read), with background when
    ``include_background``. The result may be empty: nothing to work on.
    """
    known = configured_classes(x, fmt, classes, num_classes, include_background, owner)
    if known is not None:
        return known
    present = set(present_classes(x, owner))
    return tuple(sorted(present | {0} if include_background else present - {0}))


def class_table(classes: tuple[int, ...], device: torch.device, batch: int = 1) -> torch.Tensor:
    """``classes`` as a ``(batch, K')`` int64 table on ``device``, filled there (no host-to-device copy)."""
    table = torch.empty((batch, len(classes)), dtype=torch.int64, device=device)
    for j, value in enumerate(classes):
        table[:, j].fill_(value)
    return table


def class_masks(x: torch.Tensor, fmt: str, classes: torch.Tensor) -> torch.Tensor:
    """``(B, K', *spatial)`` bool: where each class of the table ``classes (B or 1, K')`` is.

    Index maps: ``x == class``; one-hot maps: channel ``class`` non-zero. A
    class that is no channel of a one-hot map is nowhere.
    """
    table = per_sample(classes, x.ndim)
    if fmt == "index":
        typed = table.to(x.dtype)  # compared in x's dtype: several times faster than promoted to int64
        holds = typed.to(torch.int64) == table  # a class x's dtype cannot hold is nowhere
        if table.device.type == "cpu" and not torch.compiler.is_compiling() and bool(holds.all()):
            return x == typed  # read for free on the CPU: one pass fewer
        return (x == typed) & holds
    channels = x.shape[1]
    valid = (table >= 0) & (table < channels)  # (B or 1, K', 1, ...): a class that is no channel is nowhere
    if table.device.type == "cpu" and not torch.compiler.is_compiling() and table.shape[0] == 1 and bool(valid.all()):
        # read for free on the CPU: the channels of one table, a view where they follow each other,
        # compared into a contiguous result (the kernels' layout: no copy there)
        columns = table.flatten().tolist()
        follow = columns == list(range(columns[0], columns[0] + len(columns))) if columns else True
        picked = x.narrow(1, columns[0] if columns else 0, len(columns)) if follow else x.index_select(1, table.flatten())
        return torch.ne(picked, 0, out=torch.empty(picked.shape, dtype=torch.bool))
    picked = x.gather(1, table.clamp(0, max(channels - 1, 0)).expand(x.shape[0], -1, *x.shape[2:]))
    return (picked != 0) & valid


def take_best(classes: torch.Tensor, score: torch.Tensor, where: torch.Tensor, into: torch.Tensor) -> torch.Tensor:
    """``into (B, 1, *spatial)`` with, where ``where``, the class of ``classes (B or 1, K')`` of highest
    ``score (B, K', *spatial)`` (the first class on ties). With no class, ``where`` must hold nowhere."""
    if score.shape[1] == 0:
        return into.clone()
    best = score.argmax(dim=1, keepdim=True)
    values = classes.expand(best.shape[0], -1).gather(1, best.flatten(1)).view(best.shape)
    return blend(where, values.to(into.dtype), into)


def to_index(x: torch.Tensor, fmt: str) -> torch.Tensor:
    """An index map ``(B, 1, *spatial)``: ``x`` itself, or the argmax of one-hot ``x`` (0 without channels)."""
    if fmt == "index":
        return x
    if x.shape[1] == 0:
        return torch.zeros((x.shape[0], 1, *x.shape[2:]), dtype=torch.int64, device=x.device)
    return x.argmax(dim=1, keepdim=True)


def from_index(index: torch.Tensor, fmt: str, like: torch.Tensor) -> torch.Tensor:
    """Index map ``index`` in ``like``'s format and dtype."""
    if fmt == "index":
        return index.to(like.dtype)
    channels = torch.arange(like.shape[1], device=index.device).view(1, -1, *([1] * (index.ndim - 2)))
    return (index == channels).to(like.dtype)



def recombine(x: torch.Tensor, fmt: str, masks: torch.Tensor, new_masks: torch.Tensor,
              classes: torch.Tensor, fill_value: int) -> torch.Tensor:
    """Apply per-class changes to the label map ``x``, a new tensor of its format and dtype.

    Args:
        x: index ``(B, 1, *spatial)`` or one-hot ``(B, K, *spatial)`` labels.
        fmt: ``x``'s format.
        masks: ``(B, K', *spatial)`` bool, where each class of ``classes`` was.
        new_masks: ``(B, K', *spatial)`` bool, where each class should be.
        classes: the class value of each mask channel, a table ``(B or 1, K')``
            sorted ascending.
        fill_value: the value of voxels that a class loses and none gains.

    Convention:
        A voxel that a class gains becomes that class, whatever it was; when
        several classes gain the same voxel the highest class value wins. A
        voxel that a class loses and no class gains becomes ``fill_value``.
        Every other voxel keeps its value: in a one-hot map all its channels,
        overlaps and voxels of no class included, so only the changed voxels
        become one-hot.
    """
    lost = any_channel(masks > new_masks)
    # index maps start from themselves; a one-hot map's unchanged voxels are taken from x below
    index = x if fmt == "index" else torch.zeros_like(lost, dtype=torch.int64)
    out = _fill(index, lost, fill_value)
    table = per_sample(classes, x.ndim)
    for j in range(masks.shape[1]):  # ascending: the highest gaining class is written last
        out = blend(new_masks[:, j:j + 1] > masks[:, j:j + 1], table[:, j:j + 1].to(out.dtype), out)
    if fmt == "index":
        return out
    return torch.where(lost | any_channel(new_masks > masks), from_index(out, fmt, x), x)


def clear(x: torch.Tensor, fmt: str, lost: torch.Tensor, fill_value: int) -> torch.Tensor:
    """The label map ``x`` with the voxels where bool ``lost (B, 1, *spatial)`` holds set to class
    ``fill_value``: :func:`recombine`'s rule for a change in which classes only lose voxels (a
    one-hot voxel lost becomes one-hot, every other voxel keeps its value), in fewer passes."""
    if fmt == "index":
        return _fill(x, lost, fill_value)
    channels = torch.arange(x.shape[1], device=x.device).view(1, -1, *([1] * (x.ndim - 2)))
    return torch.where(lost, (channels == fill_value).to(x.dtype), x)  # fill_value's one-hot vector


def _fill(x: torch.Tensor, where: torch.Tensor, value: int) -> torch.Tensor:
    """``x.masked_fill(where, value)``: uint8 through :func:`blend`, the wider unsigned dtypes (which
    have no ``masked_fill``) through ``torch.where``."""
    if x.dtype == torch.uint8:
        return blend(where, value, x)
    if x.dtype in (torch.uint16, torch.uint32, torch.uint64):
        return torch.where(where, value, x)
    return x.masked_fill(where, value)


def _holds(dtype: torch.dtype, value: int) -> bool:
    """Whether labels of ``dtype`` hold the class ``value`` (floating dtypes round: not checked)."""
    if dtype == torch.bool:
        return value <= 1
    if dtype.is_floating_point:
        return True
    return value <= torch.iinfo(dtype).max


def blend(where: torch.Tensor, new, old: torch.Tensor) -> torch.Tensor:
    """``torch.where(where, new, old)`` for a bool ``where`` broadcastable to
    ``old``, and ``new`` a tensor of ``old``'s dtype (or a Python int for
    uint8), bit-exact. uint8 goes through wrapping byte arithmetic, several
    times faster on CPU than masked_fill or where."""
    if old.dtype != torch.uint8:
        return torch.where(where, new, old)
    return old + where.view(torch.uint8) * (new - old)  # new - old wraps mod 256: exact


def _not_inferable(table: torch.Tensor, background: bool) -> str | None:
    """What keeps a ``(B, K')`` table from being classes :func:`resolve_classes` could infer, or None."""
    ascending = bool((table[:, 1:] > table[:, :-1]).all())
    if ascending and (not background or bool((table[:, :1] == 0).all())):
        return None
    return f"must hold ascending classes{', background 0 first,' if background else ''} in each row"


class LabelTransform(BatchTransform):
    """Base of the transforms of label keys: label format and class selection.

    ``include_background`` says whether the default classes (``classes=None``)
    start at 0 or at 1. ``draws_per_class``: the draw holds the classes it was
    made for (``params["classes"]``), so ``make_params`` reads the labels
    when it infers them.
    """

    include_background = False
    draws_per_class = False
    #: The class value of voxels that a class loses and none gains, for the transforms that set it.
    fill_value: int | None = None

    def _setup_labels(self, classes, num_classes, label_format, min_classes: int = 2) -> None:
        self.classes = check_classes(classes)
        self.num_classes = check_num_classes(num_classes, minimum=min_classes)
        self.label_format = check_label_format(label_format)

    def _setup_fill(self, fill_value) -> None:
        """Check and set :attr:`fill_value`, a class value."""
        if not is_int(fill_value) or fill_value < 0:
            raise ValueError(f"fill_value must be a non-negative int (a class value), got {fill_value!r}")
        self.fill_value = int(fill_value)

    def _format(self, x: torch.Tensor) -> str:
        """The format of label map ``x`` (shape information only); a one-hot map must have the channel
        :attr:`fill_value` (unless it has no channel: then nothing is filled)."""
        fmt = label_format_of(x, self.label_format, type(self).__name__)
        if fmt == "onehot" and self.fill_value is not None and 0 < x.shape[1] <= self.fill_value:
            raise ValueError(f"{type(self).__name__}: fill_value={self.fill_value} is not a channel of "
                             f"one-hot labels with {x.shape[1]} channels")
        if fmt == "index" and self.fill_value is not None and not _holds(x.dtype, self.fill_value):
            raise ValueError(f"{type(self).__name__}: fill_value={self.fill_value} does not fit index labels of "
                             f"dtype {x.dtype}")
        return fmt

    def _labels(self, x: torch.Tensor) -> tuple[str, tuple[int, ...]]:
        """The format of label map ``x`` and the classes to work on (one read when they are inferred)."""
        fmt = self._format(x)
        return fmt, resolve_classes(x, fmt, self.classes, self.num_classes, self.include_background,
                                    type(self).__name__)

    def _class_param(self, batch: torch.Tensor, background: bool = False) -> tuple[Param, int | str]:
        """The ``"classes"`` parameter of a per-class draw for ``batch``, and the size of its class axis.

        The classes of :meth:`_labels`, background added with ``background``:
        those the arguments and the shape fix (checked on the CPU), else any
        ascending classes that inference could find (a named size).
        """
        known = configured_classes(batch, self._format(batch), self.classes, self.num_classes,
                                   self.include_background, type(self).__name__)
        if known is None:
            first = 0 if background or self.include_background else 1
            return Param(torch.int64, ("classes",), first, CLASS_LIMIT - 1,
                         lambda table: _not_inferable(table, background)), "classes"
        known = tuple(sorted({0, *known})) if background else known

        def configured(table):
            if not torch.equal(table, class_table(known, table.device, table.shape[0])):
                return f"must hold the classes {known} of these labels in each row"
            return None

        return Param(torch.int64, (len(known),), values=configured), len(known)
