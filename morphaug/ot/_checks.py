"""Argument validation shared by the dense and grid solvers.

Every check raises ``TypeError`` (wrong kind of argument) or ``ValueError``
(wrong shape or value) with the argument's name and the value received.
Value checks read their verdicts back in one host read per check
(``morphaug._sync``, "ot arguments"), before any iteration.
"""

from __future__ import annotations

import numbers

import torch

from .. import _sync
from .._checks import check_int

METHODS = ("auto", "sinkhorn", "stabilized", "log")


def check_tensor(name: str, x) -> torch.Tensor:
    """``x`` must be a floating tensor; float16/bfloat16 are promoted later."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if not x.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got {x.dtype}")
    return x


def common_dtype(*tensors: torch.Tensor) -> torch.dtype:
    """float64 if any tensor is float64, else float32 (half precision is computed in float32)."""
    return torch.float64 if any(t.dtype == torch.float64 for t in tensors) else torch.float32


def check_same_device(**tensors: torch.Tensor) -> torch.device:
    (first, reference), *others = tensors.items()
    for name, tensor in others:
        if tensor.device != reference.device:
            raise ValueError(f"{name} is on {tensor.device} but {first} is on {reference.device}")
    return reference.device


def non_finite(x: torch.Tensor) -> torch.Tensor:
    """Whether ``x`` holds a nan or an inf, as a bool tensor on its device."""
    return ~torch.isfinite(x).all()


def check_finite(name: str, x: torch.Tensor) -> None:
    if _sync.host_read(non_finite(x), "ot arguments"):
        raise ValueError(f"{name} contains non-finite values (nan or inf)")


def check_histograms(a_name: str, a: torch.Tensor, b_name: str, b: torch.Tensor, n_batch_dims: int) -> None:
    """Finite, non-negative, positive and equal total mass per problem (balanced OT).

    The first ``n_batch_dims`` dimensions index problems; the rest are bins.
    """
    mass_a = a.flatten(n_batch_dims).sum(-1)
    mass_b = b.flatten(n_batch_dims).sum(-1)
    # Balanced OT needs equal masses; the tolerance forgives the rounding of a
    # normalisation, not unnormalised counts.
    rtol = 10 * torch.finfo(a.dtype).eps ** 0.5
    mismatch = (mass_a - mass_b).abs() > rtol * torch.maximum(mass_a, mass_b)
    problems = torch.stack([non_finite(a), (a < 0).any(), non_finite(b), (b < 0).any(),
                            ~(mass_a > 0).all(), mismatch.any()])
    a_non_finite, a_negative, b_non_finite, b_negative, empty, unequal = _sync.host_read(problems, "ot arguments")
    for name, bad, negative in ((a_name, a_non_finite, a_negative), (b_name, b_non_finite, b_negative)):
        if bad:
            raise ValueError(f"{name} contains non-finite values (nan or inf)")
        if negative:
            raise ValueError(f"{name} has negative entries; histograms must be non-negative")
    if empty:
        raise ValueError(f"{a_name} has a problem with zero total mass")
    if unequal:
        index = tuple(torch.nonzero(mismatch)[0].tolist())
        raise ValueError(
            f"{a_name} and {b_name} must have the same total mass per problem (balanced OT); "
            f"problem {index}: {mass_a[index].item():.6g} != {mass_b[index].item():.6g}"
        )


def check_reg(reg) -> float:
    if isinstance(reg, bool) or not isinstance(reg, numbers.Real):
        raise TypeError(f"reg must be a real number, got {type(reg).__name__}")
    reg = float(reg)
    if not (0 < reg < float("inf")):
        raise ValueError(f"reg must be positive and finite, got {reg}")
    return reg


def check_iterations(max_iter, tol) -> tuple[int, float]:
    max_iter = check_int(max_iter, "max_iter", minimum=1)
    if isinstance(tol, bool) or not isinstance(tol, numbers.Real):
        raise TypeError(f"tol must be a real number, got {type(tol).__name__}")
    if not 0 <= tol < float("inf"):
        raise ValueError(f"tol must be a finite number >= 0, got {tol}")
    return max_iter, float(tol)


def check_method(method: str, allowed=METHODS) -> str:
    if method not in allowed:
        raise ValueError(f"method must be one of {allowed}, got {method!r}")
    return method
