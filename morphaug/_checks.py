"""Argument vocabulary shared by every layer: one checker per kind of argument.

An integer argument is any integral value (Python's, NumPy's, anything with
``__index__``) except a bool: SciPy rejects ``True`` for a size or a rank.
:func:`check_int` raises the usual errors; callers with a message of their own
(a class value, a pair of radii) ask :func:`is_int`. A border mode is checked
by :func:`check_mode` and a probability by :func:`check_probability`, in every
layer that takes one.
"""

from __future__ import annotations

import math
import numbers
import operator
from collections.abc import Mapping

__all__ = ["MODES", "is_int", "check_int", "check_mode", "check_probability", "check_label_image"]

#: SciPy border modes and the canonical name each one maps to for filters.
MODES = {
    "reflect": "reflect",
    "grid-mirror": "reflect",
    "mirror": "mirror",
    "nearest": "nearest",
    "wrap": "wrap",
    "grid-wrap": "wrap",
    "constant": "constant",
    "grid-constant": "constant",
}


def is_int(value) -> bool:
    """Whether ``value`` is an integer argument (see the module docstring)."""
    if isinstance(value, bool):
        return False
    try:
        operator.index(value)
    except TypeError:
        return False
    return True


def check_int(value, name: str, minimum: int | None = None) -> int:
    """``value`` as an int: TypeError naming ``name`` unless it is an integer argument,
    ValueError when it is below ``minimum``."""
    if not is_int(value):
        raise TypeError(f"{name} must be an int, got {value!r}")
    value = operator.index(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value


def check_mode(mode, name: str = "mode", modes: Mapping = MODES):
    """What ``modes`` maps border mode ``mode`` to (by default SciPy's canonical name, see
    :data:`MODES`): ValueError naming ``name`` unless ``mode`` is one of its keys."""
    if not isinstance(mode, str) or mode not in modes:
        raise ValueError(f"{name} must be one of {sorted(modes)}, got {mode!r}")
    return modes[mode]


def check_probability(value, name: str) -> float:
    """``value`` as a float in [0, 1]: ValueError naming ``name`` otherwise (a bool is not one)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be a probability in [0, 1], got {value!r}")
    return float(value)


# ------------------------------------------------------------------ integers read on the host
def check_host_int(value, name: str, minimum: int | None = None) -> int:
    """:func:`check_int` for an argument SciPy takes as a Python or NumPy int: a tensor is a
    TypeError too (its value would be read back from its device)."""
    import torch  # here, not at the top: this module's vocabulary needs no torch otherwise

    if isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be an int, got a tensor {value!r}")
    return check_int(value, name, minimum)


def check_label_image(value, name: str):
    """``value`` as a ``(B, C, *spatial)`` tensor of labels: bool or any integer dtype (TypeError naming
    ``name`` for anything else, floats included: a label is a whole number), one spatial axis or more."""
    import torch

    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of shape (B, C, *spatial), got {type(value).__name__}")
    if value.is_floating_point() or value.is_complex():
        raise TypeError(f"{name} must hold integer or bool labels, got dtype {value.dtype} "
                        f"(round and cast float labels first, e.g. {name}.round().long())")
    if value.layout != torch.strided:
        raise TypeError(f"{name} must be a dense (strided) tensor, got layout {value.layout}")
    if value.ndim < 3:
        raise ValueError(f"{name} must have shape (B, C, *spatial) with at least one spatial axis, "
                         f"got shape {tuple(value.shape)}")
    return value


def check_spacing(spacing, rank: int) -> tuple[float, ...]:
    """``spacing`` (scikit-image's; SciPy's ``sampling``) as one positive finite float per spatial axis:
    a number for all ``rank`` axes, or one per axis."""
    if isinstance(spacing, bool):
        raise TypeError(f"spacing must be a number or a sequence of numbers, got {spacing!r}")
    values = [spacing] if isinstance(spacing, numbers.Real) else spacing
    try:
        values = [float(s) for s in values]
    except (TypeError, ValueError):
        raise TypeError(f"spacing must be a number or a sequence of numbers, got {spacing!r}") from None
    if len(values) == 1:
        values *= rank
    if len(values) != rank or not all(0 < s < math.inf for s in values):
        raise ValueError(f"spacing must be a positive number or one per spatial axis ({rank}), got {spacing!r}")
    return tuple(values)
