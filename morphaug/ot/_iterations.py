"""Sinkhorn's iteration on dual potentials, shared by the dense and the grid solvers.

Both solvers run the same iteration on potentials, ``P = exp((f_i + g_j - C_ij) / reg)``,

    g = reg * log(b) - reg * LSE_i((f_i - C_ij) / reg)
    f = reg * log(a) - reg * LSE_j((g_j - C_ij) / reg)

with the soft-min ``LSE`` supplied by a *domain* (the dense solver's exact
or absorbed-kernel soft-mins, ``_dense``; the grid's per-axis kernels,
``_grid.GridSoftMin``), and POT's stopping rule (:class:`Convergence`). They
return the "c-transform" parts ``f_hat = f - reg * log(a)`` and
``g_hat = g - reg * log(b)``, finite even on bins of zero mass, from which the
potentials, the plan and the gradients follow.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

from .. import _sync

__all__ = ["CHECK_EVERY", "SinkhornResult", "safe_exponent", "Convergence", "log_domain_iterations"]

#: POT checks the marginal error every 10 iterations; so do we (one host sync each).
CHECK_EVERY = 10


class SinkhornResult(NamedTuple):
    """Result of :func:`sinkhorn` and :func:`grid_sinkhorn`, one entry per problem.

    Attributes
    ----------
    cost : Tensor, shape (B,)
        Linear transport cost ``<P, C>`` (POT's ``sinkhorn2``), differentiable
        for :func:`sinkhorn`.
    plan : Tensor, shape (B, n, m), or None
        Transport plan ``P`` when ``return_plan=True``.
    f, g : Tensor, shapes (B, n) and (B, m) (grids: ``(B, *spatial)``)
        Dual potentials, ``P_ij = exp((f_i + g_j - C_ij) / reg)``, i.e.
        ``reg * log(u)`` and ``reg * log(v)`` of POT's scalings; ``-inf`` on
        bins of zero mass. Like POT's, they are defined up to a constant
        ``(f + t, g - t)``, which may differ from POT's.
    n_iter : Tensor, shape (B,), int64
        Sinkhorn iterations run per problem (POT's ``log["niter"] + 1``).
    """

    cost: torch.Tensor
    plan: torch.Tensor | None
    f: torch.Tensor
    g: torch.Tensor
    n_iter: torch.Tensor


def safe_exponent(dtype: torch.dtype) -> float:
    """Largest ``(max C - min C) / reg`` for which one fixed Gibbs kernel is exact.

    Kernel entries and normalised scalings then stay above ``tiny / eps``, so
    no term that matters to a matmul underflows.
    """
    info = torch.finfo(dtype)
    return 0.9 * math.log(info.eps / info.tiny)


class Convergence:
    """POT's stopping rule per problem: ``||P^T 1 - b||_2 < tol`` at iterations 0, 10, 20, ...

    Problems that pass stop changing (``keep`` leaves their state as it was);
    one host sync per check.
    """

    def __init__(self, batch: int, max_iter: int, tol: float, device):
        self.tol = tol
        self.active = torch.ones(batch, dtype=torch.bool, device=device)
        self.all_active = True
        self.n_iter = torch.full((batch,), max_iter, dtype=torch.int64, device=device)

    def keep(self, new: torch.Tensor, old: torch.Tensor | None) -> torch.Tensor:
        """``new`` for problems still iterating, ``old`` for converged ones."""
        if old is None or self.all_active:
            return new
        return torch.where(self.active.unsqueeze(-1), new, old)

    def update(self, it: int, column_mass: torch.Tensor, b: torch.Tensor) -> bool:
        """Record iteration ``it``'s check; True when every problem has converged."""
        done = self.active & (torch.linalg.vector_norm(column_mass - b, dim=-1) < self.tol)
        self.n_iter = torch.where(done, it + 1, self.n_iter)
        self.active = self.active & ~done
        n_active = _sync.host_read(self.active.sum(), "ot convergence")
        self.all_active = n_active == self.active.numel()
        return n_active == 0


def log_domain_iterations(domain, a, b, reg, max_iter, tol, annealing):
    """Sinkhorn on potentials, with optional epsilon scaling (``annealing``: the regs before ``reg``)."""
    log_a, log_b = a.log(), b.log()
    state = Convergence(a.shape[0], max_iter, tol, a.device)
    f = torch.zeros_like(a)  # POT's sinkhorn_log starts from u = 0
    f_hat = g_hat = lse_f = current = None
    for it in range(max_iter):
        eps = annealing[it] if it < len(annealing) else reg
        if eps != current:
            domain.set_reg(eps, f_hat, g_hat)
            current, lse_f = eps, None
        if lse_f is None:
            lse_f = domain.lse_cols(f)
        g_hat = state.keep(-eps * lse_f, g_hat)
        f_hat = state.keep(-eps * domain.lse_rows(g_hat + eps * log_b), f_hat)
        if it < len(annealing):
            # A large eps pushes the potentials' free constant (f + t, g - t)
            # far from zero, which costs float32 digits; re-centre it.
            shift = (f_hat.mean(-1, keepdim=True) - g_hat.mean(-1, keepdim=True)) / 2
            f_hat, g_hat = f_hat - shift, g_hat + shift
        f = f_hat + eps * log_a
        lse_f = None
        if eps == reg and it % CHECK_EVERY == 0:
            # P^T 1 = exp(g / reg + LSE_i((f_i - C_ij) / reg)); reused by the next g update.
            lse_f = domain.lse_cols(f)
            if state.update(it, torch.exp(g_hat / eps + log_b + lse_f), b):
                break
            domain.absorb(f_hat, g_hat)
    return f_hat, g_hat, state.n_iter
