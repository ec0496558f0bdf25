"""The arguments of ``morphaug.metrics``, each checked in one place: the masks (their shapes by
:func:`volumes`, their values by :func:`foreground`), ``sampling``, ``distance_metric``,
``percentile``, ``tolerance`` and the flags."""

from __future__ import annotations

import numbers

import numpy as np
import torch

from .._sync import to_device
from ..ndimage._surface_lists import binary_values

__all__ = ["DISTANCE_METRICS", "checked", "check_percentile", "check_tolerance", "check_flag", "foreground", "volumes"]

#: The distance metrics, as MONAI names them (``distance_metric=``).
DISTANCE_METRICS = ("euclidean", "chessboard", "taxicab")


def _volume(x, name: str) -> torch.Tensor:
    """``x`` checked as a real ``(B, C, *spatial)`` tensor (its values: :func:`foreground`)."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of shape (B, C, *spatial), got {type(x).__name__}")
    if x.ndim < 3 or 0 in x.shape[2:]:
        raise ValueError(f"{name} must have shape (B, C, *spatial) with at least one spatial axis, none "
                         f"empty, got shape {tuple(x.shape)}")
    if x.is_complex():
        raise TypeError(f"{name} must be real, got {x.dtype}")
    return x


def foreground(x, name: str) -> torch.Tensor:
    """``x`` as a bool mask. ``x`` must be binary (bool, or 0 and 1 only): checked at once on the CPU,
    by a device-side assert elsewhere (``torch._assert_async``: no host sync)."""
    if x.dtype == torch.bool:
        return x
    mask, binary = binary_values(x)
    message = f"{name} must be binary (bool, or 0 and 1 only): threshold or one-hot encode it first"
    if x.device.type == "cpu":
        if not binary:
            raise ValueError(message)
    else:
        torch._assert_async(binary, message)
    return mask


def volumes(pred, ref) -> tuple[torch.Tensor, torch.Tensor]:
    """``pred`` and ``ref`` checked as real ``(B, C, *spatial)`` tensors of one shape, on one device."""
    pred, ref = _volume(pred, "pred"), _volume(ref, "ref")
    if pred.shape != ref.shape:
        raise ValueError(f"pred and ref must have the same shape, got {tuple(pred.shape)} and {tuple(ref.shape)}")
    if pred.device != ref.device:
        raise ValueError(f"pred and ref must be on the same device, got {pred.device} and {ref.device}")
    return pred, ref


def checked(pred, ref, sampling, distance_metric):
    """``(pred, ref, sampling, distance_metric)`` checked and normalised: what every metric takes (the
    values of ``pred`` and ``ref`` are checked by :func:`lists`, which makes them masks)."""
    pred, ref = volumes(pred, ref)
    distance_metric = _distance_metric(distance_metric)
    return pred, ref, _sampling(sampling, pred.ndim - 2, distance_metric), distance_metric


def _numbers(value, name: str, what: str) -> np.ndarray:
    """``value`` (a number, or a sequence / array / CPU tensor of numbers) as float64 values."""
    try:
        values = np.asarray(value)
    except (TypeError, ValueError, RuntimeError):
        values = None
    if values is None or values.dtype.kind not in "iuf":  # bools, strings and objects are not numbers
        raise TypeError(f"{name} must be {what}, got {value!r}")
    return values.astype(np.float64)


def _sampling(sampling, rank: int, distance_metric: str) -> tuple[float, ...] | None:
    if sampling is None:
        return None
    if distance_metric != "euclidean":
        raise ValueError(f"sampling applies to distance_metric='euclidean' only (MONAI ignores the spacing of "
                         f"the chamfer metrics), got distance_metric={distance_metric!r}")
    values = _numbers(sampling, "sampling", f"a number or a sequence of {rank} numbers")
    if values.ndim == 0:
        values = np.full(rank, values)
    if values.shape != (rank,):
        raise ValueError(f"sampling must have one value per spatial axis ({rank}), got {sampling!r}")
    if not np.all(np.isfinite(values) & (values > 0)):
        raise ValueError(f"sampling must be positive and finite, got {sampling!r}")
    return tuple(values.tolist())


def _distance_metric(distance_metric) -> str:
    if distance_metric not in DISTANCE_METRICS:
        raise ValueError(f"distance_metric must be one of {DISTANCE_METRICS}, got {distance_metric!r}")
    return distance_metric


def check_percentile(percentile) -> None:
    if percentile is None:
        return
    if isinstance(percentile, bool) or not isinstance(percentile, numbers.Real):
        raise TypeError(f"percentile must be None or a number in [0, 100], got {percentile!r}")
    if not 0 <= percentile <= 100:
        raise ValueError(f"percentile must be in [0, 100], got {percentile!r}")


def check_tolerance(tolerance, channels: int, device) -> float | torch.Tensor:
    values = _numbers(tolerance, "tolerance", f"a number or a sequence of {channels} numbers (one per channel)")
    if values.ndim > 1 or (values.ndim == 1 and values.shape != (channels,)):
        raise ValueError(f"tolerance must be a number or one per channel ({channels}), got {tolerance!r}")
    if not np.all(np.isfinite(values) & (values >= 0)):
        raise ValueError(f"tolerance must be finite and >= 0, got {tolerance!r}")
    if values.ndim == 0:
        return float(values)
    return to_device(torch.tensor(values.tolist(), dtype=torch.float32), device)[:, None]


def check_flag(value, name: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return value


