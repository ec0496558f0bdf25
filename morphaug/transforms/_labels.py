"""Label maps: formats, class selection, per-class masks and recombination.

Label formats
-------------
``"index"``
    One channel ``(B, 1, *spatial)`` of class values ``0 .. K-1`` (``0`` is
    background), in any dtype: integer, bool (two classes) or float (MONAI
    loads labels as float).
``"onehot"``
    ``(B, K, *spatial)``, channel ``k`` non-zero where the class is ``k``;
    channel ``0`` is background.

With ``label_format=None`` the format is inferred from the shape:
``C == 1`` is an index map and ``C > 1`` is one-hot (a one-hot map with a
single channel would hold nothing but background).

The number of classes of an index map is ``num_classes`` (2 for bool maps);
it is never read from the data, which would be a host sync.
"""

from __future__ import annotations

import torch

from .._checks import is_int
from ._base import BatchTransform

__all__ = [
    "LABEL_FORMATS",
    "LabelTransform",
    "check_label_format",
    "check_classes",
    "check_num_classes",
    "label_format_of",
    "resolve_classes",
    "class_masks",
    "take",
    "to_index",
    "from_index",
    "recombine",
    "spatial_dims",
    "any_spatial",
    "blend",
]

LABEL_FORMATS = ("index", "onehot")


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


def any_spatial(mask: torch.Tensor) -> torch.Tensor:
    """``mask.any(dim=spatial_dims(mask), keepdim=True)`` for a bool ``(B, C, *spatial)`` mask.

    Reduced as bytes: on CPU a bool reduction over several dims is many times slower.
    """
    flat = mask.contiguous().view(torch.uint8).flatten(2)
    return (flat.amax(dim=2) > 0).view(*mask.shape[:2], *([1] * (mask.ndim - 2)))


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


def resolve_classes(x: torch.Tensor, fmt: str, classes: tuple[int, ...] | None,
                    num_classes: int | None, include_background: bool, owner: str) -> tuple[int, ...]:
    """The classes to work on for label map ``x`` (shape information only, no sync).

    ``classes`` when given; otherwise ``0 .. K-1`` (``1 .. K-1`` without
    background) where ``K`` is the one-hot channel count, ``num_classes``, or 2
    for a bool index map.
    """
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
        raise ValueError(
            f"{owner}: index labels of dtype {x.dtype} need num_classes= or classes= (reading the "
            "number of classes from the data would be a host sync)"
        )
    selected = tuple(range(0 if include_background else 1, count))
    if not selected:
        raise ValueError(f"{owner}: labels with {count} class(es) have no foreground class to work on")
    return selected


def class_masks(x: torch.Tensor, fmt: str, classes: tuple[int, ...]) -> torch.Tensor:
    """``(B, K', *spatial)`` bool: where each of ``classes`` is."""
    if fmt == "onehot":
        return torch.stack([x[:, c] != 0 for c in classes], dim=1)
    if x.dtype != torch.bool and classes == tuple(range(classes[0], classes[-1] + 1)):
        values = torch.arange(classes[0], classes[-1] + 1, device=x.device, dtype=x.dtype)
        return x == values.view(1, -1, *([1] * (x.ndim - 2)))  # one pass for a range of classes
    return torch.stack([x[:, 0] == c for c in classes], dim=1)


def take(values: tuple[int, ...], position: torch.Tensor, where: torch.Tensor,
         into: torch.Tensor) -> torch.Tensor:
    """``into`` with ``values[position]`` written where ``where`` is true.

    Python values are written with ``masked_fill`` (no host-to-device copy
    of a lookup table, which would synchronise an accelerator).
    """
    for j, value in enumerate(values):
        into = into.masked_fill(where & (position == j), value)
    return into


def to_index(x: torch.Tensor, fmt: str) -> torch.Tensor:
    """An index map ``(B, 1, *spatial)``: ``x`` itself, or the argmax of one-hot ``x``."""
    if fmt == "index":
        return x
    return x.argmax(dim=1, keepdim=True)


def from_index(index: torch.Tensor, fmt: str, like: torch.Tensor) -> torch.Tensor:
    """Index map ``index`` in ``like``'s format and dtype."""
    if fmt == "index":
        return index.to(like.dtype)
    onehot = torch.nn.functional.one_hot(index[:, 0].long(), like.shape[1])
    return onehot.movedim(-1, 1).to(like.dtype)


def recombine(index: torch.Tensor, masks: torch.Tensor, new_masks: torch.Tensor,
              classes: tuple[int, ...], fill_value: int) -> torch.Tensor:
    """Apply per-class changes to an index map, keeping one class per voxel.

    Args:
        index: ``(B, 1, *spatial)`` class values.
        masks: ``(B, K', *spatial)`` bool, where each of ``classes`` was.
        new_masks: ``(B, K', *spatial)`` bool, where each class should be.
        classes: the class value of each mask channel, sorted ascending.
        fill_value: the value of voxels that a class loses and none gains.

    Convention:
        A voxel that a class gains becomes that class, whatever it was; when
        several classes gain the same voxel the highest class value wins. A
        voxel that a class loses and no class gains becomes ``fill_value``.
        Every other voxel keeps its value.
    """
    # one comparison per channel slice: far cheaper on CPU than a reduction over dim 1
    lost = masks[:, :1] > new_masks[:, :1]
    for j in range(1, len(classes)):
        lost |= masks[:, j:j + 1] > new_masks[:, j:j + 1]
    out = _fill(index, lost, fill_value)
    for j, value in enumerate(classes):  # ascending: the highest gaining class is written last
        out = _fill(out, new_masks[:, j:j + 1] > masks[:, j:j + 1], value)
    return out


def _fill(x: torch.Tensor, where: torch.Tensor, value: int) -> torch.Tensor:
    """``x.masked_fill(where, value)`` (uint8 through :func:`blend`)."""
    if x.dtype != torch.uint8:
        return x.masked_fill(where, value)
    return blend(where, value, x)


def blend(where: torch.Tensor, new, old: torch.Tensor) -> torch.Tensor:
    """``torch.where(where, new, old)`` for a bool ``where`` broadcastable to
    ``old``, and ``new`` a tensor of ``old``'s dtype (or a Python int for
    uint8), bit-exact. uint8 goes through wrapping byte arithmetic, several
    times faster on CPU than masked_fill or where."""
    if old.dtype != torch.uint8:
        return torch.where(where, new, old)
    return old + where.view(torch.uint8) * (new - old)  # new - old wraps mod 256: exact


class LabelTransform(BatchTransform):
    """Base of the transforms of label keys: label format and class selection.

    ``include_background`` says whether the default classes (``classes=None``)
    start at 0 or at 1.
    """

    include_background = False

    def _setup_labels(self, classes, num_classes, label_format, min_classes: int = 2) -> None:
        self.classes = check_classes(classes)
        self.num_classes = check_num_classes(num_classes, minimum=min_classes)
        self.label_format = check_label_format(label_format)
        if self.label_format == "index" and self.classes is None and self.num_classes is None:
            raise ValueError("index labels need num_classes= or classes=")

    def _labels(self, x: torch.Tensor) -> tuple[str, tuple[int, ...]]:
        """The format of label map ``x`` and the classes to work on."""
        owner = type(self).__name__
        fmt = label_format_of(x, self.label_format, owner)
        return fmt, resolve_classes(x, fmt, self.classes, self.num_classes, self.include_background, owner)
