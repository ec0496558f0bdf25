"""Batched entropic optimal transport between histograms with a dense cost matrix.

Sinkhorn's iteration runs on every problem of the batch at once, in one of two
forms that produce the same iterates:

* ``scaling_iterations`` (method "sinkhorn"): POT's matrix scaling
  ``v = b / K^T u, u = a / K v`` with one Gibbs kernel, a GEMM per half-step
  when the cost is shared;
* ``log_domain_iterations`` (methods "stabilized" and "log", and the grid
  solver): the same iteration on dual potentials, ``P = exp((f_i + g_j - C_ij) / reg)``,

      g = reg * log(b) - reg * LSE_i((f_i - C_ij) / reg)
      f = reg * log(a) - reg * LSE_j((g_j - C_ij) / reg)

  with the soft-min ``LSE`` evaluated exactly (``_LogDomain``) or as a bmm
  with a kernel absorbed into the potentials (``_AbsorbedKernel``).

Both return the "c-transform" parts ``f_hat = f - reg * log(a)`` and
``g_hat = g - reg * log(b)``, finite even on bins of zero mass, from which the
potentials, the plan and the gradients follow.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import nn

from .. import _ops, _sync
from ._checks import (
    check_finite,
    check_histograms,
    check_iterations,
    check_method,
    check_reg,
    check_same_device,
    check_tensor,
    common_dtype,
)

__all__ = ["SinkhornResult", "sinkhorn", "SinkhornLoss"]

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


def epsilon_schedule(reg: float, span: float, factor: float | None) -> list[float]:
    """Decreasing regularisations ``span * factor**k`` above ``reg`` (empty without scaling)."""
    if factor is None:
        return []
    steps = []
    value = span
    while value > reg:
        steps.append(value)
        value *= factor
    return steps


def matvec_cols(u: torch.Tensor, kernel: torch.Tensor) -> torch.Tensor:
    """``sum_i u[b, i] K[(b,) i, j]``: one GEMM for a shared kernel, else a bmm."""
    if kernel.dim() == 2:
        return u @ kernel
    return torch.bmm(u.unsqueeze(-2), kernel).squeeze(-2)


def matvec_rows(v: torch.Tensor, kernel: torch.Tensor) -> torch.Tensor:
    """``sum_j K[(b,) i, j] v[b, j]``."""
    return matvec_cols(v, kernel.mT)


def kernel_products(kernel: torch.Tensor):
    """``(cols, rows)``: :func:`matvec_cols` and :func:`matvec_rows` by a fixed ``kernel``.

    A shared kernel is stored twice (``K`` and ``K^T``, each contiguous) so that
    both products take the ``x @ M^T`` layout, the fastest GEMM layout for
    these shapes on MKL (about 15% faster than ``x @ K``).
    """
    if kernel.dim() != 2:
        return (lambda u: matvec_cols(u, kernel)), (lambda v: matvec_rows(v, kernel))
    kernel_t = kernel.mT.contiguous()
    return (lambda u: u @ kernel_t.mT), (lambda v: v @ kernel.mT)


def transport_plan(f: torch.Tensor, g: torch.Tensor, cost: torch.Tensor, reg: float) -> torch.Tensor:
    """``P_ij = exp((f_i + g_j - C_ij) / reg)``, shape (B, n, m)."""
    return torch.exp((f.unsqueeze(-1) + g.unsqueeze(-2) - cost) / reg)


class _Convergence:
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


#: The shared-cost loop in C++ (the same iterates); a cost per problem on torch.
_SCALING = _ops.Table("sinkhorn (method 'sinkhorn', SinkhornLoss)", [
    _ops.Case("one cost for every problem", "sinkhorn_scaling",
              lambda a, b, kernel, max_iter, tol: kernel.dim() == 2,
              lambda a, b, kernel, max_iter, tol: _ops.kernels.sinkhorn_scaling(
                  a, b, kernel, max_iter, tol, CHECK_EVERY)),
], lambda a, b, kernel, max_iter, tol: _scaling_loop(a, b, kernel, max_iter, tol))


def scaling_iterations(a, b, cost, reg, max_iter, tol):
    """POT's ``sinkhorn_knopp`` on the batch with one fixed kernel ``K = exp((min C - C) / reg)``.

    ``v = b / K^T u`` then ``u = a / K v``: a GEMM per half-step when the cost
    is shared (bmm otherwise) and a few ``(B, n)`` divisions, no exp or log.
    ``u`` is divided by its maximum before each ``K^T u`` (``v`` takes the
    factor back, the plan does not change), which bounds every scaling while
    ``(max C - min C) / reg <= safe_exponent(dtype)``. The state is the two
    denominators ``q_f = K v`` and ``q_g = K^T u``, from which
    ``f_hat = -reg log q_f`` and ``g_hat = min C - reg log q_g``.
    """
    c_min = cost.amin((-2, -1), keepdim=True)
    kernel = torch.exp((c_min - cost) / reg)
    q_f, q_g, u, scale, n_iter = _SCALING(a, a, b, kernel, max_iter, tol)
    value = (u * matvec_rows(b / q_g, kernel * cost)).sum(-1) * scale.squeeze(-1)
    return -reg * q_f.log(), c_min.squeeze(-1) - reg * q_g.log(), n_iter, value


def _scaling_loop(a, b, kernel, max_iter, tol):
    """The iteration of :func:`scaling_iterations` in torch: ``(q_f, q_g, u, scale, n_iter)``,
    ``u`` divided by its row maximum ``scale``."""
    state = _Convergence(a.shape[0], max_iter, tol, a.device)
    cols, rows = kernel_products(kernel)
    u = torch.ones_like(a)  # POT's u = 1 / n, up to the free constant
    q_f = q_g = k_u = None
    for it in range(max_iter):
        if k_u is None:
            k_u = cols(u)
        q_g = state.keep(k_u, q_g)
        q_f = state.keep(rows(b / q_g), q_f)
        u = a / q_f
        scale = u.amax(-1, keepdim=True)
        u.mul_(scale.reciprocal())  # as the native loop (core/sinkhorn.h)
        k_u = None
        if it % CHECK_EVERY == 0:
            # P^T 1 = v * K^T (scale u); K^T u is reused by the next iteration.
            k_u = cols(u)
            if state.update(it, b / q_g * k_u * scale, b):
                break
    return q_f, q_g, u, scale, state.n_iter


def soft_min_cols(f: torch.Tensor, cost: torch.Tensor, reg: float) -> torch.Tensor:
    """Exact ``LSE_i((f_i - C_ij) / reg)``, shape (B, m)."""
    return torch.logsumexp((f.unsqueeze(-1) - cost) / reg, dim=-2)


def soft_min_rows(g: torch.Tensor, cost: torch.Tensor, reg: float) -> torch.Tensor:
    """Exact ``LSE_j((g_j - C_ij) / reg)``, shape (B, n)."""
    return torch.logsumexp((g.unsqueeze(-2) - cost) / reg, dim=-1)


class _LogDomain:
    """Exact soft-min: one ``logsumexp`` over ``(B, n, m)`` per half-step (POT's sinkhorn_log)."""

    def __init__(self, cost: torch.Tensor):
        self.cost = cost

    def set_reg(self, reg: float, f_hat, g_hat) -> None:
        self.reg = reg

    def absorb(self, f_hat, g_hat) -> None:
        pass

    def lse_cols(self, f: torch.Tensor) -> torch.Tensor:
        return soft_min_cols(f, self.cost, self.reg)

    def lse_rows(self, g: torch.Tensor) -> torch.Tensor:
        return soft_min_rows(g, self.cost, self.reg)


class _AbsorbedKernel(_LogDomain):
    """Soft-min as a bmm with a per-problem kernel centred on reference potentials.

    With ``K = exp((phi_i + psi_j - C_ij) / reg)`` and ``x = (f - phi) / reg``,

        LSE_i((f_i - C_ij) / reg) = s + log(sum_i exp(x_i - s) K_ij) - psi_j / reg,

    ``s = max_i x_i``. ``absorb`` moves the references to the current
    potentials (POT's ``sinkhorn_stabilized`` absorption), so the kernel's
    entries are the current plan's whatever ``reg``. The first step, before
    there is anything to absorb, is an exact logsumexp. A matmul that
    underflows (potentials that moved far since the last absorption, in
    float32 with a tiny ``reg``) is clamped to the smallest normal number: that
    step is inexact but finite, and the next absorption repairs the kernel.
    """

    def __init__(self, cost: torch.Tensor, a: torch.Tensor, b: torch.Tensor):
        super().__init__(cost)
        self.tiny = torch.finfo(cost.dtype).tiny
        # References on bins of zero mass: f_hat + reg * log(tiny) keeps those
        # kernel rows and columns bounded while they carry no mass.
        self.log_a = a.clamp_min(self.tiny).log()
        self.log_b = b.clamp_min(self.tiny).log()
        self.kernel = None

    def set_reg(self, reg: float, f_hat, g_hat) -> None:
        self.reg = reg
        self.absorb(f_hat, g_hat)

    def absorb(self, f_hat, g_hat) -> None:
        if f_hat is None:
            return
        self.phi = f_hat + self.reg * self.log_a
        self.psi = g_hat + self.reg * self.log_b
        self.kernel = transport_plan(self.phi, self.psi, self.cost, self.reg)

    def _soft_min(self, f, phi, psi, matvec):
        x = (f - phi) / self.reg
        shift = x.amax(-1, keepdim=True)
        q = matvec(torch.exp(x - shift), self.kernel).clamp_min(self.tiny)
        return q.log() + shift - psi / self.reg

    def lse_cols(self, f: torch.Tensor) -> torch.Tensor:
        if self.kernel is None:
            return super().lse_cols(f)
        return self._soft_min(f, self.phi, self.psi, matvec_cols)

    def lse_rows(self, g: torch.Tensor) -> torch.Tensor:
        if self.kernel is None:
            return super().lse_rows(g)
        return self._soft_min(g, self.psi, self.phi, matvec_rows)


def log_domain_iterations(domain, a, b, reg, max_iter, tol, annealing):
    """Sinkhorn on potentials, with optional epsilon scaling (``annealing``: the regs before ``reg``)."""
    log_a, log_b = a.log(), b.log()
    state = _Convergence(a.shape[0], max_iter, tol, a.device)
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


def solve(a, b, cost, reg, max_iter, tol, method, epsilon_scaling):
    """Batched Sinkhorn on checked, detached inputs: ``(f_hat, g_hat, n_iter, <P, C>)``."""
    span = _sync.host_read((cost.amax((-2, -1)) - cost.amin((-2, -1))).max(), "ot cost range")
    fits = span / reg <= safe_exponent(cost.dtype)
    if method == "sinkhorn" and not fits:
        raise ValueError(
            f"method='sinkhorn' needs (max cost - min cost) / reg <= {safe_exponent(cost.dtype):.0f} "
            f"in {cost.dtype}, got {span / reg:.4g}; use method='stabilized' or 'log'"
        )
    if method == "sinkhorn" and epsilon_scaling is not None:
        raise ValueError("epsilon_scaling needs method='stabilized', 'log' or 'auto', not 'sinkhorn'")
    if method == "sinkhorn" or (method == "auto" and fits and epsilon_scaling is None):
        return scaling_iterations(a, b, cost, reg, max_iter, tol)
    domain = _LogDomain(cost) if method == "log" else _AbsorbedKernel(cost, a, b)
    annealing = epsilon_schedule(reg, span, epsilon_scaling)[: max_iter - 1]  # the last iteration is at reg
    f_hat, g_hat, n_iter = log_domain_iterations(domain, a, b, reg, max_iter, tol, annealing)
    plan = transport_plan(f_hat + reg * a.log(), g_hat + reg * b.log(), cost, reg)
    return f_hat, g_hat, n_iter, (plan * cost).sum((-2, -1))


def implicit_gradients(a, b, cost, f_hat, g_hat, reg):
    """Gradients of ``<P, C>`` at the Sinkhorn fixed point, by implicit differentiation.

    With ``L = (f_hat_i + g_hat_j - C_ij) / reg``, ``E = exp(L)`` and
    ``P = a_i E_ij b_j``, differentiating the marginal constraints gives

        w_f + E (b * w_g) = -(E * L) b,   w_g + E^T (a * w_f) = -(E * L)^T a,
        dC = P * (1 + L + w_f + w_g),   da = reg * w_f + f_hat,   db = reg * w_g + g_hat.

    ``(f_hat, g_hat, P)`` alone is the envelope-theorem gradient of the
    entropic objective; the ``w`` terms add the derivative of its entropy, so
    the result is the gradient of the linear cost itself. ``w`` is unique up
    to ``(t, -t)``; da and db are returned centred (mean zero), as POT does.
    The smaller of the two ``(n|m, n|m)`` systems is solved.
    """
    n, m = f_hat.shape[-1], g_hat.shape[-1]
    if n < m:
        grad_b, grad_a, grad_cost = implicit_gradients(b, a, cost.mT, g_hat, f_hat, reg)
        return grad_a, grad_b, grad_cost.mT
    log_kernel = (f_hat.unsqueeze(-1) + g_hat.unsqueeze(-2) - cost) / reg
    kernel = torch.exp(log_kernel)
    weighted = kernel * log_kernel
    c_f = -matvec_rows(b, weighted)
    c_g = -matvec_cols(a, weighted)
    # (I - E^T diag(a) E diag(b)) w_g = c_g - E^T (a c_f); its null vector 1
    # is removed by adding 1 b^T (b^T w_g = 0 then follows from b^T rhs = 0).
    coupling = (kernel.mT @ (a.unsqueeze(-1) * kernel)) * b.unsqueeze(-2)
    system = torch.eye(m, dtype=a.dtype, device=a.device) - coupling + b.unsqueeze(-2)
    w_g = torch.linalg.solve(system, c_g - matvec_cols(a * c_f, kernel))
    w_f = c_f - matvec_rows(b * w_g, kernel)
    plan = a.unsqueeze(-1) * kernel * b.unsqueeze(-2)
    grad_cost = plan * (1 + log_kernel + w_f.unsqueeze(-1) + w_g.unsqueeze(-2))
    grad_a = reg * w_f + f_hat
    grad_b = reg * w_g + g_hat
    return grad_a - grad_a.mean(-1, keepdim=True), grad_b - grad_b.mean(-1, keepdim=True), grad_cost


class _LinearCost(torch.autograd.Function):
    """Attaches the implicit gradient of ``<P, C>`` to the value computed by the solver."""

    @staticmethod
    def forward(ctx, a, b, cost, value, f_hat, g_hat, reg):
        ctx.save_for_backward(a, b, cost, f_hat, g_hat)
        ctx.reg = reg
        return value.clone()

    @staticmethod
    def backward(ctx, grad_value):
        a, b, cost, f_hat, g_hat = ctx.saved_tensors
        grad_a, grad_b, grad_cost = implicit_gradients(a, b, cost, f_hat, g_hat, ctx.reg)
        scale = grad_value.unsqueeze(-1)
        grad_cost = scale.unsqueeze(-1) * grad_cost
        if cost.dim() == 2:
            grad_cost = grad_cost.sum(0)
        return scale * grad_a, scale * grad_b, grad_cost, None, None, None, None


def _check_dense(a, b, cost):
    for name, x in (("a", a), ("b", b), ("cost", cost)):
        check_tensor(name, x)
    if a.dim() != 2:
        raise ValueError(f"a must have shape (B, n), got {tuple(a.shape)}")
    if b.dim() != 2 or b.shape[0] != a.shape[0]:
        raise ValueError(f"b must have shape (B, m) with B = {a.shape[0]} (from a), got {tuple(b.shape)}")
    batch, n = a.shape
    m = b.shape[1]
    if batch == 0 or n == 0 or m == 0:
        raise ValueError(f"a and b must be non-empty, got shapes {tuple(a.shape)} and {tuple(b.shape)}")
    if tuple(cost.shape) not in ((n, m), (batch, n, m)):
        raise ValueError(
            f"cost must have shape (n, m) = {(n, m)} or (B, n, m) = {(batch, n, m)}, got {tuple(cost.shape)}"
        )
    check_same_device(a=a, b=b, cost=cost)
    dtype = common_dtype(a, b, cost)
    a, b, cost = a.to(dtype), b.to(dtype), cost.to(dtype)
    check_histograms("a", a, "b", b, n_batch_dims=1)
    check_finite("cost", cost)
    return a, b, cost


def _check_options(reg, max_iter, tol, method, epsilon_scaling):
    reg = check_reg(reg)
    max_iter, tol = check_iterations(max_iter, tol)
    check_method(method)
    if epsilon_scaling is not None:
        if isinstance(epsilon_scaling, bool) or not isinstance(epsilon_scaling, (int, float)):
            raise TypeError(f"epsilon_scaling must be None or a float, got {type(epsilon_scaling).__name__}")
        if not 0 < epsilon_scaling < 1:
            raise ValueError(f"epsilon_scaling must be in (0, 1), got {epsilon_scaling}")
    return reg, max_iter, tol


def _sinkhorn_returned(kw):
    """The shapes and dtypes of :func:`sinkhorn`'s results (for its op under ``torch.compile``)."""
    batch, n, m = kw["a"].shape[0], kw["a"].shape[-1], kw["b"].shape[-1]
    dtype = common_dtype(kw["a"], kw["b"], kw["cost"])
    plan = [((batch, n, m), dtype)] if kw.get("return_plan") else []
    return [((batch,), dtype)] + plan + [((batch, n), dtype), ((batch, m), dtype), ((batch,), torch.int64)]


def _sinkhorn_result(kw, tensors) -> SinkhornResult:
    cost, *plan, f, g, n_iter = tensors
    return SinkhornResult(cost, plan[0] if plan else None, f, g, n_iter)


@_ops.opaque_under_compile(_ops.Results(("a", "b", "cost"), _sinkhorn_returned, _sinkhorn_result))
def sinkhorn(a, b, cost, reg, *, max_iter=1000, tol=1e-9, method="auto", epsilon_scaling=None,
             return_plan=False) -> SinkhornResult:
    r"""Entropic optimal transport between batches of histograms.

    Solves, for every problem ``k`` of the batch,

    .. math::
        \min_{P \ge 0,\ P 1 = a_k,\ P^T 1 = b_k} \langle P, C_k \rangle
        + \mathrm{reg} \sum_{ij} P_{ij} \log P_{ij}

    with Sinkhorn iterations run on the whole batch at once, on the inputs'
    device.

    Parameters
    ----------
    a : Tensor, shape (B, n)
        Source histograms (non-negative).
    b : Tensor, shape (B, m)
        Target histograms, same total mass as ``a`` per problem.
    cost : Tensor, shape (n, m) or (B, n, m)
        Cost matrix, shared by the batch or one per problem.
    reg : float
        Entropic regularisation (> 0).
    max_iter : int, optional
        Maximum number of iterations (POT's ``numItermax``).
    tol : float, optional
        Stop a problem when ``||P^T 1 - b||_2 < tol``, checked every 10
        iterations exactly as POT does (POT's ``stopThr``).
    method : {"auto", "sinkhorn", "stabilized", "log"}, optional
        How the iteration is evaluated; all give the same iterates up to
        rounding where they work:

        * ``"sinkhorn"``: POT's matrix scaling ``v = b / K^T u, u = a / K v``
          with one Gibbs kernel ``K = exp(-C / reg)``: a GEMM per half-step
          when ``cost`` is shared (bmm otherwise) and no exp/log. Needs
          ``(max C - min C) / reg`` below about 600 in float64 and 64 in
          float32 (ValueError otherwise).
        * ``"stabilized"``: log-domain potentials with a per-problem kernel
          re-centred on them at every convergence check (absorption, as in
          POT's ``sinkhorn_stabilized``); any ``reg`` in float32 and float64,
          one bmm per half-step. In float32 with a very small ``reg`` its
          first iterations may clamp an underflow (finite, slightly inexact
          steps); the converged result is unaffected.
        * ``"log"``: exact log-domain updates, one ``logsumexp`` over
          ``(B, n, m)`` per half-step (slowest, no approximations).
        * ``"auto"``: ``"sinkhorn"`` when its range condition holds and there
          is no ``epsilon_scaling``, else ``"stabilized"``.
    epsilon_scaling : float in (0, 1), optional
        Not in POT's ``sinkhorn``: start from ``reg = max C - min C`` and
        multiply it by this factor every iteration until it reaches ``reg``
        (warm-started potentials; helps small ``reg`` converge). These
        iterations count in ``n_iter`` (at most ``max_iter - 1`` of them) and
        are not checked for convergence. Not with ``method="sinkhorn"``.
    return_plan : bool, optional
        Also return the transport plan ``(B, n, m)``.

    Returns
    -------
    SinkhornResult
        ``(cost, plan, f, g, n_iter)``; see :class:`SinkhornResult`.

    Notes
    -----
    POT parity: the iterates, the stopping rule (``||P^T 1 - b||_2 < tol``
    checked at iterations 0, 10, 20, ...), ``cost`` (``ot.sinkhorn2``) and
    ``plan`` (``ot.sinkhorn``) are POT's, per problem; with the same ``tol``
    and ``max_iter`` they agree to rounding (``method="sinkhorn"`` for
    ``ot.sinkhorn``'s default, ``"log"`` for ``method="sinkhorn_log"``).
    Differences: batched; each problem stops on its own (converged problems
    stop changing); no "numerical errors" early exit, as the iterations do not
    overflow; ``n_iter`` counts iterations (POT's ``niter + 1``).

    Gradients: ``cost`` is differentiable with respect to ``a``, ``b`` and
    ``cost`` (CPU and CUDA), by implicit differentiation at the fixed point
    rather than by backpropagating through the iterations: the exact
    gradient of ``<P, C>`` at convergence. It is the envelope-theorem
    gradient of the entropic objective (``P`` for ``cost``, the potentials for
    ``a`` and ``b``) plus the derivative of the entropy term, and costs one
    batched ``(min(n, m))^2`` linear solve. Gradients for ``a`` and ``b`` are
    centred (mean zero), as POT does: histograms live on the simplex, so only
    mass-preserving directions are meaningful. ``plan``, ``f`` and ``g`` are not
    differentiable.

    float16/bfloat16 inputs are computed and returned in float32; mixed
    float32/float64 inputs in float64.

    See Also
    --------
    ot.sinkhorn, ot.sinkhorn2, ot.bregman.sinkhorn_log, ot.bregman.sinkhorn_stabilized

    Examples
    --------
    >>> import torch
    >>> from morphaug.ot import sinkhorn
    >>> x = torch.linspace(0, 1, 64, dtype=torch.float64)
    >>> cost = (x[:, None] - x[None, :]) ** 2
    >>> a = torch.softmax(torch.randn(8, 64, dtype=torch.float64), -1)
    >>> b = torch.softmax(torch.randn(8, 64, dtype=torch.float64), -1)
    >>> result = sinkhorn(a, b, cost, reg=1e-2, return_plan=True)
    >>> result.cost.shape, result.plan.shape
    (torch.Size([8]), torch.Size([8, 64, 64]))
    >>> torch.allclose(result.plan.sum(-2), b, atol=1e-8)
    True
    """
    reg, max_iter, tol = _check_options(reg, max_iter, tol, method, epsilon_scaling)
    a, b, cost = _check_dense(a, b, cost)
    with torch.no_grad():
        f_hat, g_hat, n_iter, value = solve(a.detach(), b.detach(), cost.detach(), reg, max_iter, tol, method,
                                            epsilon_scaling)
        f, g = f_hat + reg * a.log(), g_hat + reg * b.log()
        plan = transport_plan(f, g, cost.detach(), reg) if return_plan else None
    value = _LinearCost.apply(a, b, cost, value, f_hat, g_hat, reg)
    return SinkhornResult(value, plan, f, g, n_iter)


class SinkhornLoss(nn.Module):
    """:func:`sinkhorn` transport cost as a loss module.

    ``SinkhornLoss(reg, ...)(a, b, cost)`` returns ``sinkhorn(a, b, cost,
    reg, ...).cost`` reduced over the batch by ``reduction`` (``"mean"``,
    ``"sum"`` or ``"none"``), with the gradients described in :func:`sinkhorn`.
    Options are validated here, when the module is built.

    See Also
    --------
    ot.sinkhorn2

    Examples
    --------
    >>> import torch
    >>> from morphaug.ot import SinkhornLoss
    >>> x = torch.linspace(0, 1, 32, dtype=torch.float64)
    >>> cost = (x[:, None] - x[None, :]) ** 2
    >>> logits = torch.randn(4, 32, dtype=torch.float64, requires_grad=True)
    >>> target = torch.softmax(torch.randn(4, 32, dtype=torch.float64), -1)
    >>> loss = SinkhornLoss(reg=0.05)(torch.softmax(logits, -1), target, cost)
    >>> loss.backward()
    >>> logits.grad.shape
    torch.Size([4, 32])
    """

    def __init__(self, reg, *, max_iter=1000, tol=1e-9, method="auto", epsilon_scaling=None,
                 reduction="mean"):
        super().__init__()
        self.reg, self.max_iter, self.tol = _check_options(reg, max_iter, tol, method, epsilon_scaling)
        if reduction not in ("mean", "sum", "none"):
            raise ValueError(f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
        self.method = method
        self.epsilon_scaling = epsilon_scaling
        self.reduction = reduction

    def forward(self, a: torch.Tensor, b: torch.Tensor, cost: torch.Tensor) -> torch.Tensor:
        value = sinkhorn(a, b, cost, self.reg, max_iter=self.max_iter, tol=self.tol, method=self.method,
                         epsilon_scaling=self.epsilon_scaling).cost
        if self.reduction == "mean":
            return value.mean()
        if self.reduction == "sum":
            return value.sum()
        return value

    def extra_repr(self) -> str:
        return f"reg={self.reg}, method={self.method!r}, reduction={self.reduction!r}"
