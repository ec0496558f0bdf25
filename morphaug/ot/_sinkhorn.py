"""Batched entropic optimal transport between histograms with a dense cost matrix.

:func:`sinkhorn` checks its arguments, solves every problem of the batch at
once (``_dense.solve``) and attaches the implicit gradient of the transport
cost; :class:`SinkhornLoss` wraps it as a module.
"""

from __future__ import annotations

import torch
from torch import nn

from .. import _ops
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
from ._dense import implicit_gradients, solve, transport_plan
from ._iterations import SinkhornResult

__all__ = ["sinkhorn", "SinkhornLoss"]


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
