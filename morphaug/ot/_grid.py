"""Entropic OT on regular grids, squared Euclidean cost, without a dense cost matrix.

On a grid the cost ``C_ij = sum_d (x_i^d - x_j^d)^2`` is a sum over axes, so
the Gibbs kernel ``exp(-C / reg)`` is a product of small per-axis kernels
``(n_d, n_d)`` and every soft-min ``LSE_j(L_j - C_ij / reg)`` is one pass per
axis (Solomon et al. 2015, POT's ``convolutional_barycenter2d``). Memory is
linear in the grid size.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence

import torch

from .. import _ops, _sync
from ._checks import (
    check_histograms,
    check_iterations,
    check_method,
    check_reg,
    check_tensor,
    common_dtype,
    non_finite,
)
from ._iterations import CHECK_EVERY, SinkhornResult, log_domain_iterations, safe_exponent

__all__ = ["grid_sinkhorn", "wasserstein_barycenter"]

GRID_METHODS = ("auto", "sinkhorn", "log")

#: Elements of the temporary ``(lines, n_d, n_d)`` of one exact per-axis logsumexp.
_CHUNK_ELEMENTS = 1 << 22


def _axis_costs(shape, spacing, dtype, device) -> list[torch.Tensor]:
    """Per-axis squared distances ``(x_k - x_l)^2`` with ``x_k = k * spacing_d``."""
    return [((torch.arange(n, dtype=dtype, device=device) * h).unsqueeze(-1)
             - torch.arange(n, dtype=dtype, device=device) * h) ** 2
            for n, h in zip(shape, spacing)]


class GridSoftMin:
    """``L -> LSE_j(L_j - C_ij / reg)`` over the trailing grid axes of ``L``.

    ``exact=False`` (``method="sinkhorn"``): ``s + log(K exp(L - s))`` with
    ``s`` the maximum over each grid, one exp and one log, and the Gibbs kernel
    applied one axis at a time by matmuls on views (no copies); exact to
    rounding while ``(max C - min C) / reg = sum_d extent_d^2 / reg <=
    safe_exponent``, as for the dense solver.
    ``exact=True`` (``method="log"``): a logsumexp per axis over
    ``(lines, n_d, n_d)``, in chunks of lines so memory stays bounded.
    """

    def __init__(self, shape, spacing, dtype, device, exact: bool):
        self.shape = tuple(shape)
        self.costs = _axis_costs(shape, spacing, dtype, device)
        self.exact = exact

    def set_reg(self, reg: float, *_) -> None:
        self.reg = reg
        self.log_kernels = [-cost / reg for cost in self.costs]
        self.kernels = None if self.exact else [torch.exp(log_k) for log_k in self.log_kernels]

    def __call__(self, log_x: torch.Tensor, weighted_axis: int | None = None) -> torch.Tensor:
        """Apply every axis; ``weighted_axis`` multiplies that axis's kernel by its cost."""
        spatial = len(self.costs)
        first = log_x.dim() - spatial
        if self.exact:
            for d, log_k in enumerate(self.log_kernels):
                if d == weighted_axis:
                    log_k = log_k + self.costs[d].log()
                log_x = _exact_axis(log_x, first + d, log_k)
            return log_x
        shift = log_x.amax(tuple(range(first, log_x.dim())), keepdim=True).nan_to_num(neginf=0.0)
        x = (log_x - shift).exp_()  # an all -inf grid stays -inf
        for d, kernel in enumerate(self.kernels):
            if d == weighted_axis:
                kernel = kernel * self.costs[d]
            x = _matmul_axis(x, first + d, kernel)
        return x.log_().add_(shift)

    # Dense-solver interface (see ``log_domain_iterations``): potentials flattened to (B, N).
    def absorb(self, *_) -> None:
        pass

    def lse_cols(self, f: torch.Tensor) -> torch.Tensor:
        return self(f.reshape(-1, *self.shape) / self.reg).flatten(1)

    lse_rows = lse_cols  # the cost is symmetric


def _matmul_axis(x: torch.Tensor, dim: int, kernel: torch.Tensor) -> torch.Tensor:
    """``sum_k x[.., k, ..] K[k, l]`` along ``dim``: a GEMM on the last axis, a batched matmul otherwise."""
    shape = x.shape
    lines = x.reshape(math.prod(shape[:dim]), shape[dim], -1)  # (P, n, Q), a view
    if lines.shape[-1] == 1:
        return (lines.squeeze(-1) @ kernel).reshape(shape)
    return (kernel.mT @ lines).reshape(shape)


def _exact_axis(log_x: torch.Tensor, dim: int, log_k: torch.Tensor) -> torch.Tensor:
    """Exact ``LSE_k(log_x[.., k, ..] + log_k[k, l])`` along ``dim``, in chunks of lines (bounded memory)."""
    lines = log_x.movedim(dim, -1)
    flat = lines.reshape(-1, lines.shape[-1])
    step = max(1, _CHUNK_ELEMENTS // log_k.numel())
    out = torch.cat([torch.logsumexp(chunk.unsqueeze(-1) + log_k, dim=-2) for chunk in flat.split(step)])
    return out.reshape(lines.shape).movedim(-1, dim)


def _check_spacing(spacing, shape) -> list[float]:
    if spacing is None:
        return [1.0 / (n - 1) if n > 1 else 1.0 for n in shape]
    values = [spacing] * len(shape) if isinstance(spacing, numbers.Real) else spacing
    if not isinstance(values, Sequence) or len(values) != len(shape) or not all(
            isinstance(h, numbers.Real) and not isinstance(h, bool) for h in values):
        raise ValueError(f"spacing must be a number or {len(shape)} numbers (one per spatial axis), "
                         f"got {spacing!r}")
    if not all(0 < float(h) < float("inf") for h in values):
        raise ValueError(f"spacing must be positive and finite, got {spacing!r}")
    return [float(h) for h in values]


def _grid_soft_min(shape, spacing, reg, dtype, device, method) -> GridSoftMin:
    check_method(method, GRID_METHODS)
    span = sum(((n - 1) * h) ** 2 for n, h in zip(shape, spacing))  # max C - min C
    fits = span / reg <= safe_exponent(dtype)
    if method == "sinkhorn" and not fits:
        raise ValueError(
            f"method='sinkhorn' needs (grid diameter)^2 / reg <= {safe_exponent(dtype):.0f} in {dtype}, "
            f"got {span / reg:.4g}; use method='log'"
        )
    return GridSoftMin(shape, spacing, dtype, device, exact=method == "log" or not fits)


def _grid_sinkhorn_returned(kw):
    """The shapes and dtypes of :func:`grid_sinkhorn`'s results (for its op under ``torch.compile``)."""
    a = kw["a"]
    dtype = common_dtype(a, kw["b"])
    return [((a.shape[0],), dtype), (tuple(a.shape), dtype), (tuple(a.shape), dtype), ((a.shape[0],), torch.int64)]


@_ops.opaque_under_compile(_ops.Results(
    ("a", "b"), _grid_sinkhorn_returned, lambda kw, t: SinkhornResult(t[0], None, t[1], t[2], t[3])))
def grid_sinkhorn(a, b, reg, *, max_iter=1000, tol=1e-9, method="auto", spacing=None) -> SinkhornResult:
    r"""Entropic OT between histograms on a regular grid, squared Euclidean cost.

    :func:`sinkhorn` with ``C_ij = |x_i - x_j|^2`` between grid points, never
    formed: the Gibbs kernel is applied one axis at a time (separable
    convolutions), so memory is linear in the grid size.

    Parameters
    ----------
    a, b : Tensor, shape ``(B, *spatial)``
        Histograms on a grid with any number of spatial axes (2D images, 3D
        volumes); non-negative, same total mass per problem.
    reg : float
        Entropic regularisation (> 0), in units of squared grid coordinates.
    max_iter, tol : optional
        As in :func:`sinkhorn` (POT's ``numItermax``, ``stopThr``; the same
        stopping rule, ``||P^T 1 - b||_2 < tol`` every 10 iterations).
    method : {"auto", "sinkhorn", "log"}, optional
        ``"sinkhorn"``: per-axis kernel matmuls on max-shifted exponentials
        (needs ``(grid diameter)^2 / reg`` below about 600 in float64 and 64
        in float32, the dense solver's condition); ``"log"``: exact per-axis
        logsumexps (slower, any ``reg``); ``"auto"``: ``"sinkhorn"`` when it
        applies.
    spacing : float or sequence of float, optional
        Grid step per axis. Default: each axis spans ``[0, 1]``
        (``linspace(0, 1, n)``), the coordinates of POT's
        ``convolutional_barycenter2d``.

    Returns
    -------
    SinkhornResult
        ``cost (B,)`` (``<P, C>``), ``plan=None`` (it would be dense),
        potentials ``f, g`` of shape ``(B, *spatial)`` and ``n_iter (B,)``.

    Notes
    -----
    Equal to :func:`sinkhorn` on the flattened grid with the explicit cost
    (up to rounding). Not differentiable: the result does not require grad.

    See Also
    --------
    ot.sinkhorn2, ot.bregman.convolutional_barycenter2d

    Examples
    --------
    >>> import torch
    >>> from morphaug.ot import grid_sinkhorn
    >>> a = torch.softmax(torch.randn(4, 16 * 16, dtype=torch.float64), -1).reshape(4, 16, 16)
    >>> b = torch.softmax(torch.randn(4, 16 * 16, dtype=torch.float64), -1).reshape(4, 16, 16)
    >>> result = grid_sinkhorn(a, b, reg=0.05)
    >>> result.cost.shape, result.f.shape
    (torch.Size([4]), torch.Size([4, 16, 16]))
    """
    reg = check_reg(reg)
    max_iter, tol = check_iterations(max_iter, tol)
    check_tensor("a", a)
    check_tensor("b", b)
    if a.dim() < 2:
        raise ValueError(f"a must have shape (B, *spatial) with at least one spatial axis, "
                         f"got {tuple(a.shape)}")
    if b.shape != a.shape:
        raise ValueError(f"b must have the shape of a, {tuple(a.shape)}, got {tuple(b.shape)}")
    if b.device != a.device:
        raise ValueError(f"b is on {b.device} but a is on {a.device}")
    if a.numel() == 0:
        raise ValueError(f"a must be non-empty, got shape {tuple(a.shape)}")
    dtype = common_dtype(a, b)
    a, b = a.detach().to(dtype), b.detach().to(dtype)
    check_histograms("a", a, "b", b, n_batch_dims=1)
    shape = a.shape[1:]
    soft_min = _grid_soft_min(shape, _check_spacing(spacing, shape), reg, dtype, a.device, method)
    flat_a, flat_b = a.flatten(1), b.flatten(1)
    f_hat, g_hat, n_iter = log_domain_iterations(soft_min, flat_a, flat_b, reg, max_iter, tol, annealing=[])
    f = (f_hat + reg * flat_a.log()).reshape(a.shape)
    g = (g_hat + reg * flat_b.log()).reshape(a.shape)
    # <P, C> = sum_d sum_i exp(f_i / reg + LSE_j(g_j / reg - C_ij / reg + log C^d_ij)).
    value = sum(torch.exp(f / reg + soft_min(g / reg, weighted_axis=d)).flatten(1).sum(-1)
                for d in range(len(shape)))
    return SinkhornResult(value, None, f, g, n_iter)


def _check_weights(weights, batch: int, n_hists: int, dtype, device) -> torch.Tensor:
    if weights is None:
        return torch.full((1, n_hists), 1.0 / n_hists, dtype=dtype, device=device)
    check_tensor("weights", weights)
    if weights.device != device:
        raise ValueError(f"weights is on {weights.device} but hists is on {device}")
    if tuple(weights.shape) not in ((n_hists,), (batch, n_hists)):
        raise ValueError(f"weights must have shape (N,) = {(n_hists,)} or (B, N) = {(batch, n_hists)}, "
                         f"got {tuple(weights.shape)}")
    weights = weights.detach().to(dtype).reshape(-1, n_hists)
    not_one = ~torch.isclose(weights.sum(-1), torch.ones((), dtype=dtype, device=device), atol=1e-6).all()
    problems = torch.stack([non_finite(weights), (weights < 0).any(), not_one])
    bad, negative, unnormalised = _sync.host_read(problems, "ot arguments")
    if bad:
        raise ValueError("weights contains non-finite values (nan or inf)")
    if negative:
        raise ValueError("weights has negative entries")
    if unnormalised:
        raise ValueError(f"weights must sum to 1 (barycentric coordinates), "
                         f"got sums {weights.sum(-1).tolist()}")
    return weights


@_ops.opaque_under_compile(_ops.Results(
    ("hists",), lambda kw: [((kw["hists"].shape[0], *kw["hists"].shape[2:]), common_dtype(kw["hists"]))],
    lambda kw, t: t[0]))
def wasserstein_barycenter(hists, reg, weights=None, *, max_iter=10000, tol=1e-4, method="auto",
                           spacing=None) -> torch.Tensor:
    r"""Entropic Wasserstein barycenters of histograms on a regular grid, batched.

    For every problem ``k``, the histogram ``p`` minimising
    ``sum_i weights[k, i] * W_reg(p, hists[k, i])`` for the squared Euclidean
    cost on the grid, by Solomon et al.'s convolutional iterations with the
    Gibbs kernel applied one axis at a time (memory linear in the grid size).

    Parameters
    ----------
    hists : Tensor, shape ``(B, N, *spatial)``
        ``N`` non-negative histograms per problem, equal total mass within a
        problem (POT assumes probability histograms); 1, 2 or 3 (any number
        of) spatial axes.
    reg : float
        Entropic regularisation (> 0), in units of squared grid coordinates.
    weights : Tensor, shape (N,) or (B, N), optional
        Barycentric coordinates (non-negative, summing to 1), shared or per
        problem. Default: uniform.
    max_iter, tol : optional
        POT's ``numItermax`` and ``stopThr`` (same defaults and the same
        criterion: the sum over the grid of the standard deviation across the
        ``N`` histograms of ``V * K U``, checked at iterations 9, 19, ...).
    method : {"auto", "sinkhorn", "log"}, optional
        As in :func:`grid_sinkhorn`; ``"sinkhorn"`` is POT's
        ``method="sinkhorn"``, ``"log"`` its ``"sinkhorn_log"``.
    spacing : float or sequence of float, optional
        Grid step per axis. Default: each axis spans ``[0, 1]``, as in POT.

    Returns
    -------
    Tensor, shape ``(B, *spatial)``
        The barycenters.

    Notes
    -----
    POT parity: ``ot.bregman.convolutional_barycenter2d(hists[k], reg,
    weights)`` per problem, to rounding, except that POT adds ``1e-30``
    inside a logarithm (``stabThr``) where we compute exactly: it only moves
    values below about ``1e-30``. Differences: batched, any number of spatial
    axes, per-problem weights, each problem stops on its own. Not
    differentiable.

    See Also
    --------
    ot.bregman.convolutional_barycenter2d

    Examples
    --------
    >>> import torch
    >>> from morphaug.ot import wasserstein_barycenter
    >>> hists = torch.rand(8, 2, 32, 32, dtype=torch.float64)
    >>> hists = hists / hists.sum((-2, -1), keepdim=True)
    >>> bary = wasserstein_barycenter(hists, reg=1e-2)
    >>> bary.shape
    torch.Size([8, 32, 32])
    """
    reg = check_reg(reg)
    max_iter, tol = check_iterations(max_iter, tol)
    check_tensor("hists", hists)
    if hists.dim() < 3 or hists.shape[1] == 0 or hists.numel() == 0:
        raise ValueError(f"hists must have shape (B, N, *spatial) with N >= 1 and non-empty, "
                         f"got {tuple(hists.shape)}")
    dtype = common_dtype(hists)
    hists = hists.detach().to(dtype)
    batch, n_hists, *shape = hists.shape
    check_histograms("hists", hists, "hists (first histogram of the problem)",
                     hists[:, :1].expand_as(hists), n_batch_dims=2)
    weights = _check_weights(weights, batch, n_hists, dtype, hists.device)
    soft_min = _grid_soft_min(shape, _check_spacing(spacing, shape), reg, dtype, hists.device, method)
    soft_min.set_reg(reg)
    return _BARYCENTER(hists, hists.log(), weights.expand(batch, n_hists), soft_min, max_iter, tol)


def _barycenter_native(log_hists, weights, soft_min, max_iter, tol):
    return torch.exp(_ops.kernels.grid_barycenter(log_hists, weights, soft_min.kernels, max_iter, tol,
                                                  CHECK_EVERY))


def _barycenter_torch(log_hists, weights, soft_min, max_iter, tol):
    """POT's convolutional barycenter iteration, each problem stopping on its own."""
    batch, n_hists, *shape = log_hists.shape
    dtype = log_hists.dtype
    weights = weights.reshape(*weights.shape, *[1] * len(shape))
    active = torch.ones(batch, dtype=torch.bool, device=log_hists.device)
    log_bar = torch.full((batch, *shape), -math.log(math.prod(shape)), dtype=dtype, device=log_hists.device)
    log_ku = soft_min(torch.zeros_like(log_hists))  # POT starts from U = 1
    all_active = True
    for it in range(max_iter):
        log_v = log_bar.unsqueeze(1) - log_ku
        log_u = soft_min(log_v).neg_().add_(log_hists)
        if all_active:
            log_ku = soft_min(log_u)
            log_bar = (weights * log_ku).sum(1)
        else:  # converged problems stop changing
            keep = active.reshape(batch, *[1] * (1 + len(shape)))
            log_ku = torch.where(keep, soft_min(log_u), log_ku)
            log_bar = torch.where(keep[:, 0], (weights * log_ku).sum(1), log_bar)
        if it % CHECK_EVERY == CHECK_EVERY - 1:
            marginals = torch.exp(log_v + log_ku)  # std over N (ddof 0), written out: torch.std is slow here
            deviation = marginals - marginals.mean(1, keepdim=True)
            spread = deviation.square().mean(1).sqrt().flatten(1).sum(-1)
            active = active & ~(spread < tol)
            n_active = _sync.host_read(active.sum(), "ot convergence")
            if n_active == 0:
                break
            all_active = n_active == batch
    return torch.exp(log_bar)


#: The convolutional iteration in C++ (the same iterates) for the Gibbs kernels' soft-min.
_BARYCENTER = _ops.Table("wasserstein_barycenter (method 'sinkhorn', or 'auto' choosing it)", [
    _ops.Case("the Gibbs kernels' soft-min (not the exact one)", "grid_barycenter",
              lambda log_hists, weights, soft_min, max_iter, tol: not soft_min.exact, _barycenter_native),
], _barycenter_torch)
