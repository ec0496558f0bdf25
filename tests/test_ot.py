"""morphaug.ot against POT: dense Sinkhorn, grid Sinkhorn, convolutional barycenters."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from conftest import assert_parity
from hypothesis import given, settings
from hypothesis import strategies as st

from morphaug.ot import SinkhornLoss, grid_sinkhorn, sinkhorn, wasserstein_barycenter



def _pot():
    """POT, imported by the tests that compare with it: the others run where it is missing."""
    return pytest.importorskip("ot", exc_type=ImportError)

F64 = torch.float64
NO_CUDA_KERNELS = True  # the OT loops are native on CPU only (conftest's backend fixture)
POT_METHOD = {"auto": "sinkhorn", "sinkhorn": "sinkhorn", "log": "sinkhorn_log", "stabilized": "sinkhorn_log"}


def histograms(generator, batch, n, zeros=0, power=1.0, dtype=F64):
    """Random probability histograms ``(batch, n)``; ``zeros`` bins of zero mass in the first one."""
    x = torch.rand(batch, n, generator=generator, dtype=F64) ** power + 1e-3
    x[0, :zeros] = 0
    return (x / x.sum(-1, keepdim=True)).to(dtype)


def line_cost(generator, n, m, dtype=F64):
    """Squared distances between random points of [0, 1] (n) and [0.3, 1.3] (m)."""
    x = torch.rand(n, generator=generator, dtype=F64)
    y = torch.rand(m, generator=generator, dtype=F64) + 0.3
    return ((x[:, None] - y[None, :]) ** 2).to(dtype)


def pot_solve(a, b, cost, reg, method, **kwargs):
    """Per-problem POT plans, costs and iteration counts (numpy backend)."""
    plans, costs, n_iters = [], [], []
    for k in range(a.shape[0]):
        c = cost[k] if cost.dim() == 3 else cost
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # log(0) on empty bins, non-convergence
            plan, log = _pot().sinkhorn(a[k].numpy(), b[k].numpy(), c.numpy(), reg, method=method, log=True,
                                    **kwargs)
            costs.append(_pot().sinkhorn2(a[k].numpy(), b[k].numpy(), c.numpy(), reg, method=method, **kwargs))
        plans.append(plan)
        n_iters.append(log["niter"] + 1)
    return np.stack(plans), np.array(costs), n_iters


# --------------------------------------------------------------------------- dense parity


@pytest.mark.usefixtures("backend")  # the Sinkhorn-Knopp loop in torch and native
@settings(max_examples=25, deadline=None)
@given(batch=st.integers(1, 3), n=st.integers(1, 9), m=st.integers(1, 9),
       reg=st.sampled_from([0.03, 0.1, 0.5]),
       method=st.sampled_from(["auto", "sinkhorn", "stabilized", "log"]),
       zeros=st.integers(0, 2), seed=st.integers(0, 2**16))
def test_sinkhorn_matches_pot(batch, n, m, reg, method, zeros, seed):
    generator = torch.Generator().manual_seed(seed)
    a = histograms(generator, batch, n, zeros=min(zeros, n - 1))
    b = histograms(generator, batch, m)
    cost = line_cost(generator, n, m)
    result = sinkhorn(a, b, cost, reg, method=method, return_plan=True)
    plans, costs, n_iters = pot_solve(a, b, cost, reg, POT_METHOD[method])
    assert_parity(result.plan.numpy(), plans, exact=False, rtol=0, atol=1e-6)
    assert_parity(result.cost.numpy(), costs, exact=False, rtol=0, atol=1e-6)
    assert result.n_iter.tolist() == n_iters  # same iterates as POT, so the same stopping iteration
    plan = torch.exp((result.f[..., :, None] + result.g[..., None, :] - cost) / reg)
    torch.testing.assert_close(plan, result.plan, atol=1e-12, rtol=0)


@pytest.mark.parametrize("method", ["auto", "stabilized", "log"])
def test_small_reg_matches_pot_log(method):
    """reg = 1e-3 on unit costs: beyond plain scaling in float64; POT's sinkhorn_log is the reference."""
    generator = torch.Generator().manual_seed(1)
    a, b = histograms(generator, 2, 12, zeros=1), histograms(generator, 2, 10)
    cost = line_cost(generator, 12, 10)
    result = sinkhorn(a, b, cost, 1e-3, method=method, max_iter=300, return_plan=True)
    plans, costs, n_iters = pot_solve(a, b, cost, 1e-3, "sinkhorn_log", numItermax=300)
    assert_parity(result.plan.numpy(), plans, exact=False, rtol=0, atol=1e-6)
    assert_parity(result.cost.numpy(), costs, exact=False, rtol=0, atol=1e-6)
    assert result.n_iter.tolist() == n_iters
    for k in range(2):  # log-domain potentials start from POT's: same constant, -inf on empty bins
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _, log = _pot().sinkhorn(a[k].numpy(), b[k].numpy(), cost.numpy(), 1e-3, method="sinkhorn_log",
                                 numItermax=300, log=True)
        assert_parity(result.f[k].numpy(), 1e-3 * log["log_u"], exact=False, rtol=0, atol=1e-9)
        assert_parity(result.g[k].numpy(), 1e-3 * log["log_v"], exact=False, rtol=0, atol=1e-9)


def test_shared_and_per_sample_cost():
    generator = torch.Generator().manual_seed(2)
    a, b = histograms(generator, 3, 7), histograms(generator, 3, 5)
    cost = line_cost(generator, 7, 5)
    shared = sinkhorn(a, b, cost, 0.05, return_plan=True)
    repeated = sinkhorn(a, b, cost.expand(3, 7, 5), 0.05, return_plan=True)
    torch.testing.assert_close(repeated.plan, shared.plan, atol=1e-12, rtol=0)
    torch.testing.assert_close(repeated.cost, shared.cost, atol=1e-12, rtol=0)
    per_sample = torch.stack([line_cost(generator, 7, 5) for _ in range(3)])
    for method in ["auto", "stabilized", "log"]:
        result = sinkhorn(a, b, per_sample, 0.05, method=method, return_plan=True)
        plans, costs, n_iters = pot_solve(a, b, per_sample, 0.05, POT_METHOD[method])
        assert_parity(result.plan.numpy(), plans, exact=False, rtol=0, atol=1e-6)
        assert_parity(result.cost.numpy(), costs, exact=False, rtol=0, atol=1e-6)
        assert result.n_iter.tolist() == n_iters


def test_batched_equals_single_problems_and_no_plan():
    """Each problem stops on its own: batching changes nothing, whatever the neighbours."""
    generator = torch.Generator().manual_seed(3)
    a, b = histograms(generator, 4, 8, power=4), histograms(generator, 4, 6)
    cost = line_cost(generator, 8, 6)
    batched = sinkhorn(a, b, cost, 0.02)
    assert batched.plan is None
    assert len(set(batched.n_iter.tolist())) > 1
    for k in range(4):
        single = sinkhorn(a[k:k + 1], b[k:k + 1], cost, 0.02, return_plan=True)
        torch.testing.assert_close(batched.cost[k:k + 1], single.cost, atol=1e-13, rtol=0)
        torch.testing.assert_close(batched.f[k:k + 1], single.f, atol=1e-12, rtol=0)
        assert batched.n_iter[k] == single.n_iter[0]


@pytest.mark.usefixtures("backend")
def test_max_iter_and_tol_like_pot():
    generator = torch.Generator().manual_seed(4)
    a, b = histograms(generator, 2, 9), histograms(generator, 2, 9)
    cost = line_cost(generator, 9, 9)
    for max_iter, tol in [(1, 1e-9), (7, 1e-9), (1000, 1e-3)]:
        result = sinkhorn(a, b, cost, 0.01, max_iter=max_iter, tol=tol, return_plan=True)
        plans, _, n_iters = pot_solve(a, b, cost, 0.01, "sinkhorn", numItermax=max_iter, stopThr=tol)
        assert_parity(result.plan.numpy(), plans, exact=False, rtol=0, atol=1e-6)
        assert result.n_iter.tolist() == n_iters


@pytest.mark.usefixtures("native_policy")
@pytest.mark.parametrize("dtype", [torch.float32, F64])
def test_native_scaling_loop_is_the_torch_loop(monkeypatch, dtype):
    """On CPU the shared-cost Sinkhorn-Knopp loop runs in C++ (op sinkhorn_scaling): the
    iterates as the torch loop (to the GEMMs' rounding: the problems are split over
    threads), problems stopping at different iterations."""
    from morphaug import _ops
    from morphaug._ops import kernels as _native

    if not _ops.built_for("sinkhorn_scaling", "cpu"):
        pytest.skip("morphaug._C is not built")
    generator = torch.Generator().manual_seed(8)
    a, b = histograms(generator, 6, 40, dtype=dtype), histograms(generator, 6, 30, dtype=dtype)
    cost = line_cost(generator, 40, 30, dtype=dtype)
    calls = []
    monkeypatch.setattr(_native, "sinkhorn_scaling", lambda *args, real=_native.sinkhorn_scaling: calls.append(1)
                        or real(*args))
    for tol in (1e-9, 1e-6) if dtype == F64 else (1e-6, 1e-4):  # tolerances above the rounding
        native = sinkhorn(a, b, cost, 0.05, tol=tol, method="sinkhorn", max_iter=300)
        monkeypatch.setenv("MORPHAUG_BACKEND", "torch")
        reference = sinkhorn(a, b, cost, 0.05, tol=tol, method="sinkhorn", max_iter=300)
        monkeypatch.delenv("MORPHAUG_BACKEND")
        assert _ops.use_native("sinkhorn_scaling", a)
        assert torch.equal(native.n_iter, reference.n_iter) and len(set(native.n_iter.tolist())) > 1
        for name in ("cost", "f", "g"):
            eps = torch.finfo(dtype).eps  # a few roundings of values below 1
            torch.testing.assert_close(getattr(native, name), getattr(reference, name), rtol=0, atol=8 * eps, msg=name)
    assert len(calls) == 2
    with pytest.raises(RuntimeError, match="share a float32 or float64 dtype"):
        _native.sinkhorn_scaling(a.double(), b.float(), cost.double(), 10, 0.0, 10)
    with pytest.raises(RuntimeError, match=r"expected a \(B, n\)"):
        _native.sinkhorn_scaling(a, b, cost.mT, 10, 0.0, 10)


# --------------------------------------------------------------------------- stability


@pytest.mark.parametrize("reg", [1e-2, 1e-3])
@pytest.mark.parametrize("method", ["auto", "stabilized", "log"])
@pytest.mark.parametrize("epsilon_scaling", [None, 0.5])
def test_float32_small_reg_is_stable(reg, method, epsilon_scaling):
    generator = torch.Generator().manual_seed(5)
    a, b = histograms(generator, 3, 30, zeros=3, power=3), histograms(generator, 3, 20, power=3)
    cost = line_cost(generator, 30, 20)
    reference = sinkhorn(a, b, cost, reg, method="log", max_iter=5000, tol=1e-7)
    result = sinkhorn(a.float(), b.float(), cost.float(), reg, method=method, max_iter=5000, tol=1e-5,
                      epsilon_scaling=epsilon_scaling, return_plan=True)
    assert result.cost.dtype == torch.float32
    for value in result:
        assert torch.isfinite(value.float()).any(-1).all()
    assert not torch.isnan(result.plan).any() and not torch.isnan(result.f).any()
    assert bool((result.n_iter < 5000).all())  # converged
    torch.testing.assert_close(result.cost.double(), reference.cost, atol=1e-4, rtol=1e-3)


def test_epsilon_scaling_converges_to_the_same_solution():
    generator = torch.Generator().manual_seed(6)
    a, b = histograms(generator, 2, 25, power=3), histograms(generator, 2, 25, power=3)
    cost = line_cost(generator, 25, 25)
    plain = sinkhorn(a, b, cost, 2e-3, method="stabilized", max_iter=20000, tol=1e-10, return_plan=True)
    scaled = sinkhorn(a, b, cost, 2e-3, method="stabilized", max_iter=20000, tol=1e-10, epsilon_scaling=0.7,
                      return_plan=True)
    torch.testing.assert_close(scaled.plan, plain.plan, atol=1e-7, rtol=0)
    assert bool((scaled.n_iter < 20000).all())


# --------------------------------------------------------------------------- gradients


def _normalised(fn):
    """gradcheck moves one entry at a time; normalising keeps each problem balanced."""
    return lambda a, b, cost: fn(a / a.sum(-1, keepdim=True), b / b.sum(-1, keepdim=True), cost)


@pytest.mark.parametrize("per_sample", [False, True])
@pytest.mark.parametrize("shape", [(4, 3), (3, 5)])
def test_gradcheck(per_sample, shape):
    generator = torch.Generator().manual_seed(7)
    n, m = shape
    a, b = histograms(generator, 2, n), histograms(generator, 2, m)
    cost = line_cost(generator, n, m)
    if per_sample:
        cost = cost + 0.2 * torch.rand(2, n, m, generator=generator, dtype=F64)
    inputs = tuple(x.clone().requires_grad_() for x in (a, b, cost))
    fn = _normalised(lambda a, b, c: sinkhorn(a, b, c, 0.1, tol=1e-14, max_iter=100000).cost)
    assert torch.autograd.gradcheck(fn, inputs, eps=1e-6, atol=1e-6, rtol=1e-4)


def test_gradients_match_pot_autodiff():
    """POT's sinkhorn2 on torch tensors backpropagates through its iterations: at convergence
    that is the exact gradient, which implicit differentiation gives without unrolling."""
    generator = torch.Generator().manual_seed(8)
    a, b = histograms(generator, 1, 6), histograms(generator, 1, 5)
    cost = line_cost(generator, 6, 5)
    ours = [x.clone().requires_grad_() for x in (a, b, cost)]
    sinkhorn(*ours, 0.05, tol=1e-13, max_iter=100000).cost.sum().backward()
    theirs = [x[0].clone().requires_grad_() for x in (a, b)] + [cost.clone().requires_grad_()]
    _pot().sinkhorn2(*theirs, 0.05, method="sinkhorn_log", numItermax=5000, stopThr=1e-13).backward()
    torch.testing.assert_close(ours[2].grad, theirs[2].grad, atol=1e-8, rtol=0)
    for mine, pot in zip(ours[:2], theirs[:2]):
        torch.testing.assert_close(mine.grad[0], pot.grad - pot.grad.mean(), atol=1e-8, rtol=0)
        assert abs(float(mine.grad.sum())) < 1e-12  # centred, as POT's envelope gradients


def test_gradient_into_an_empty_bin():
    """Moving mass into a bin of zero mass: a one-sided derivative, finite, checked by differences."""
    generator = torch.Generator().manual_seed(20)
    a, b = histograms(generator, 2, 5, zeros=2), histograms(generator, 2, 4)
    a[1, 1] = 0
    a = a / a.sum(-1, keepdim=True)
    cost = line_cost(generator, 5, 4)
    leaf = a.clone().requires_grad_()
    options = {"tol": 1e-14, "max_iter": 100000}
    sinkhorn(leaf, b, cost, 0.1, **options).cost.sum().backward()
    direction = torch.zeros_like(a)
    direction[:, 1], direction[:, 3] = 1.0, -1.0  # into bin 1 (empty in both problems), out of bin 3
    step = 1e-6
    difference = (sinkhorn(a + step * direction, b, cost, 0.1, **options).cost
                  - sinkhorn(a, b, cost, 0.1, **options).cost) / step
    torch.testing.assert_close((leaf.grad * direction).sum(-1), difference, atol=1e-5, rtol=1e-4)


def test_sinkhorn_loss():
    generator = torch.Generator().manual_seed(9)
    a, b = histograms(generator, 3, 6), histograms(generator, 3, 4)
    cost = line_cost(generator, 6, 4)
    expected = sinkhorn(a, b, cost, 0.1).cost
    for reduction, value in [("mean", expected.mean()), ("sum", expected.sum()), ("none", expected)]:
        torch.testing.assert_close(SinkhornLoss(0.1, reduction=reduction)(a, b, cost), value)
    logits = torch.randn(3, 6, generator=generator, dtype=F64, requires_grad=True)
    SinkhornLoss(0.1)(torch.softmax(logits, -1), b, cost).backward()
    assert torch.isfinite(logits.grad).all() and logits.grad.abs().sum() > 0
    assert "reg=0.1" in repr(SinkhornLoss(0.1))


def test_plan_and_potentials_do_not_require_grad():
    generator = torch.Generator().manual_seed(10)
    a = histograms(generator, 2, 4).requires_grad_()
    b = histograms(generator, 2, 4)
    result = sinkhorn(a, b, line_cost(generator, 4, 4), 0.1, return_plan=True)
    assert result.cost.requires_grad
    assert not any(x.requires_grad for x in (result.plan, result.f, result.g))


# --------------------------------------------------------------------------- grids


def grid_cost(shape, spacing=None):
    axes = [torch.arange(n, dtype=F64) * (spacing[d] if spacing else 1.0 / max(n - 1, 1))
            for d, n in enumerate(shape)]
    points = torch.stack([x.flatten() for x in torch.meshgrid(*axes, indexing="ij")], -1)
    return ((points[:, None] - points[None]) ** 2).sum(-1)


@pytest.mark.parametrize("shape, spacing, reg, method", [
    ((5, 6), None, 0.05, "auto"),
    ((5, 6), None, 2e-3, "auto"),  # beyond a fixed kernel in float64 for the dense solver
    ((4, 3, 5), None, 0.05, "log"),
    ((7,), 0.5, 1.0, "auto"),
    ((3, 4), (0.3, 0.2), 0.02, "sinkhorn"),
])
def test_grid_sinkhorn_matches_dense(shape, spacing, reg, method):
    generator = torch.Generator().manual_seed(11)
    size = int(np.prod(shape))
    a, b = histograms(generator, 2, size, zeros=2), histograms(generator, 2, size, power=3)
    result = grid_sinkhorn(a.reshape(2, *shape), b.reshape(2, *shape), reg, method=method, spacing=spacing,
                           max_iter=400)
    dense = sinkhorn(a, b, grid_cost(shape, spacing if not isinstance(spacing, float) else [spacing]), reg,
                     method="log", max_iter=400)
    assert result.plan is None and result.f.shape == (2, *shape)
    torch.testing.assert_close(result.cost, dense.cost, atol=1e-10, rtol=0)
    assert result.n_iter.tolist() == dense.n_iter.tolist()
    gauge = (result.f.flatten(1) - dense.f)[:, -1:]  # potentials agree up to (f + t, g - t)
    torch.testing.assert_close(result.f.flatten(1) - gauge, dense.f, atol=1e-9, rtol=0)
    torch.testing.assert_close(result.g.flatten(1) + gauge, dense.g, atol=1e-9, rtol=0)


def barycenter_inputs(generator, batch, n_hists, shape, dtype=F64):
    hists = torch.rand(batch, n_hists, *shape, generator=generator, dtype=F64) ** 4
    hists[0, 0, :2] = 0
    return (hists / hists.flatten(2).sum(-1)[..., None, None]).to(dtype)


@pytest.mark.parametrize("reg, method, weights", [
    (1e-2, "auto", None),
    (4e-3, "auto", [0.3, 0.7]),
    (1e-2, "log", None),
    (2e-2, "sinkhorn", "per-sample"),
])
def test_barycenter_matches_pot(reg, method, weights):
    generator = torch.Generator().manual_seed(12)
    hists = barycenter_inputs(generator, 3, 2, (12, 15))
    if weights == "per-sample":
        weights = torch.tensor([[0.5, 0.5], [0.2, 0.8], [1.0, 0.0]], dtype=F64)
    elif weights is not None:
        weights = torch.tensor(weights, dtype=F64)
    result = wasserstein_barycenter(hists, reg, weights, method=method, max_iter=300)
    for k in range(3):
        w = None if weights is None else (weights[k] if weights.dim() == 2 else weights).numpy()
        expected = _pot().bregman.convolutional_barycenter2d(hists[k].numpy(), reg, w, method=POT_METHOD[method],
                                                         numItermax=300, warn=False)
        assert_parity(result[k].numpy(), expected, exact=False, rtol=0, atol=1e-5)
    torch.testing.assert_close(result.sum((-2, -1)), torch.ones(3, dtype=F64), atol=1e-4, rtol=0)


@pytest.mark.usefixtures("native_policy")
@pytest.mark.parametrize("dtype", [torch.float32, F64])
@pytest.mark.parametrize("shape", [(12, 15), (5, 7, 6)])
def test_native_barycenter_loop_is_the_torch_loop(monkeypatch, dtype, shape):
    """On CPU the barycenter iteration of method "sinkhorn" runs in C++ (op grid_barycenter):
    the torch loop's iterates to the GEMMs' rounding, each problem stopping on its own."""
    from morphaug import _ops
    from morphaug._ops import kernels as _native

    if not _ops.built_for("grid_barycenter", "cpu"):
        pytest.skip("morphaug._C is not built")
    generator = torch.Generator().manual_seed(5)
    hists = torch.rand(3, 3, *shape, generator=generator, dtype=F64) ** 4
    hists = (hists / hists.flatten(2).sum(-1).view(3, 3, *[1] * len(shape))).to(dtype)
    hists[1] = hists[1, :1]  # equal histograms: converged at the first check
    weights = torch.tensor([[0.2, 0.3, 0.5], [0.6, 0.2, 0.2], [1 / 3, 1 / 3, 1 / 3]], dtype=dtype)
    reg = 2e-2 if dtype == F64 else 5e-2  # float32: (grid diameter)^2 / reg <= 64
    calls = []
    monkeypatch.setattr(_native, "grid_barycenter", lambda *args, real=_native.grid_barycenter: calls.append(1)
                        or real(*args))
    native = wasserstein_barycenter(hists, reg, weights, method="sinkhorn", tol=1e-6)
    monkeypatch.setenv("MORPHAUG_BACKEND", "torch")
    reference = wasserstein_barycenter(hists, reg, weights, method="sinkhorn", tol=1e-6)
    assert calls == [1]
    eps = torch.finfo(dtype).eps
    torch.testing.assert_close(native, reference, rtol=64 * eps, atol=64 * eps * float(reference.max()))
    with pytest.raises(RuntimeError, match="one kernel per spatial axis"):
        _native.grid_barycenter(hists.log(), weights, [torch.ones(shape[0], shape[0], dtype=dtype)], 10, 0.0, 10)
    with pytest.raises(RuntimeError, match=r"weights must be \(B, N\)"):
        _native.grid_barycenter(hists.log(), weights[:2], [torch.ones(n, n, dtype=dtype) for n in shape], 10, 0.0, 10)


def test_barycenter_any_number_of_axes():
    """A singleton axis costs nothing: the 3-D barycenter of (1, H, W) grids is the 2-D one."""
    generator = torch.Generator().manual_seed(13)
    hists = barycenter_inputs(generator, 2, 3, (8, 9))
    flat = wasserstein_barycenter(hists, 1e-2, max_iter=100, tol=0)
    volume = wasserstein_barycenter(hists.unsqueeze(2), 1e-2, max_iter=100, tol=0)
    torch.testing.assert_close(volume[:, 0], flat, atol=1e-12, rtol=0)


def test_barycenter_float32_small_reg():
    generator = torch.Generator().manual_seed(14)
    hists = barycenter_inputs(generator, 2, 2, (16, 16))
    reference = wasserstein_barycenter(hists, 2e-3, method="log")
    result = wasserstein_barycenter(hists.float(), 2e-3)  # auto falls back to exact log-domain passes
    assert result.dtype == torch.float32 and torch.isfinite(result).all()
    torch.testing.assert_close(result.double(), reference, atol=1e-5, rtol=0)


# --------------------------------------------------------------------------- devices, dtypes, inputs


def test_device_parity(device):
    generator = torch.Generator().manual_seed(15)
    a, b = histograms(generator, 3, 10, zeros=1), histograms(generator, 3, 8)
    cost = line_cost(generator, 10, 8)
    for method in ["auto", "stabilized", "log"]:
        expected = sinkhorn(a, b, cost, 0.01, method=method, return_plan=True)
        inputs = [x.to(device).requires_grad_() for x in (a, b, cost)]
        result = sinkhorn(*inputs, 0.01, method=method, return_plan=True)
        assert result.plan.device == device
        torch.testing.assert_close(result.plan.cpu(), expected.plan, atol=1e-9, rtol=0)
        assert result.n_iter.tolist() == expected.n_iter.tolist()
        result.cost.sum().backward()
        assert all(torch.isfinite(x.grad).all() for x in inputs)
    grids = barycenter_inputs(generator, 2, 2, (10, 11))
    torch.testing.assert_close(wasserstein_barycenter(grids.to(device), 1e-2).cpu(),
                               wasserstein_barycenter(grids, 1e-2), atol=1e-10, rtol=0)
    result = grid_sinkhorn(grids[:, 0].to(device), grids[:, 1].to(device), 1e-2)
    torch.testing.assert_close(result.cost.cpu(), grid_sinkhorn(grids[:, 0], grids[:, 1], 1e-2).cost,
                               atol=1e-10, rtol=0)


def test_dtypes():
    generator = torch.Generator().manual_seed(16)
    a, b = histograms(generator, 2, 5), histograms(generator, 2, 4)
    cost = line_cost(generator, 5, 4)
    assert sinkhorn(a.half(), b.half(), cost.half(), 0.1).cost.dtype == torch.float32
    mixed = sinkhorn(a.float(), b, cost.float(), 0.1)
    assert mixed.cost.dtype == F64 and mixed.f.dtype == F64
    hists = barycenter_inputs(generator, 1, 2, (4, 4), torch.float32)
    assert wasserstein_barycenter(hists, 0.1).dtype == torch.float32


def test_inputs_are_not_modified():
    generator = torch.Generator().manual_seed(17)
    a, b = histograms(generator, 2, 5, zeros=1), histograms(generator, 2, 4)
    cost = line_cost(generator, 5, 4)
    hists = barycenter_inputs(generator, 2, 2, (5, 6))
    weights = torch.tensor([0.4, 0.6], dtype=F64)
    tensors = [a, b, cost, hists, weights]
    copies = [x.clone() for x in tensors]
    versions = [x._version for x in tensors]
    for method in ["auto", "stabilized", "log"]:
        sinkhorn(a, b, cost, 1e-3, method=method, max_iter=30, return_plan=True)
    sinkhorn(a, b, cost, 1e-2, epsilon_scaling=0.5, max_iter=30)
    grid_sinkhorn(hists[:, 0], hists[:, 1], 1e-2, max_iter=30)
    wasserstein_barycenter(hists, 1e-2, weights, max_iter=30)
    for x, copy, version in zip(tensors, copies, versions):
        assert torch.equal(x, copy) and x._version == version


# --------------------------------------------------------------------------- errors


def _valid():
    generator = torch.Generator().manual_seed(18)
    return histograms(generator, 2, 4), histograms(generator, 2, 3), line_cost(generator, 4, 3)


@pytest.mark.parametrize("change, error, match", [
    (lambda a, b, c: (a.numpy(), b, c), TypeError, "a must be a torch.Tensor"),
    (lambda a, b, c: (a, b.long(), c), TypeError, "b must be a floating-point"),
    (lambda a, b, c: (a[0], b, c), ValueError, r"a must have shape \(B, n\)"),
    (lambda a, b, c: (a, b[:1], c), ValueError, r"b must have shape \(B, m\)"),
    (lambda a, b, c: (a, b, c.T), ValueError, "cost must have shape"),
    (lambda a, b, c: (a, b, c.expand(3, 4, 3)), ValueError, "cost must have shape"),
    (lambda a, b, c: (a[:, :0], b, c[:0]), ValueError, "non-empty"),
    (lambda a, b, c: (a * torch.tensor([-1.0, 1, 1, 1], dtype=F64), b, c), ValueError, "a has negative"),
    (lambda a, b, c: (a, b * 2, c), ValueError, "same total mass"),
    (lambda a, b, c: (a * 0, b * 0, c), ValueError, "zero total mass"),
    (lambda a, b, c: (a.index_fill(1, torch.tensor([0]), float("nan")), b, c), ValueError,
     "a contains non-finite"),
    (lambda a, b, c: (a, b, c.index_fill(0, torch.tensor([1]), float("inf"))), ValueError,
     "cost contains non-finite"),
])
def test_sinkhorn_bad_arrays(change, error, match):
    with pytest.raises(error, match=match):
        sinkhorn(*change(*_valid()), 0.1)


@pytest.mark.parametrize("kwargs, error, match", [
    ({"reg": 0.0}, ValueError, "reg must be positive"),
    ({"reg": -1.0}, ValueError, "reg must be positive"),
    ({"reg": float("nan")}, ValueError, "reg must be positive"),
    ({"reg": "0.1"}, TypeError, "reg must be a real number"),
    ({"max_iter": 0}, ValueError, "max_iter must be >= 1"),
    ({"max_iter": 2.5}, TypeError, "max_iter must be an int"),
    ({"tol": -1.0}, ValueError, "tol must be a finite number >= 0"),
    ({"method": "sinkhorn_log"}, ValueError, "method must be one of"),
    ({"epsilon_scaling": 1.5}, ValueError, "epsilon_scaling must be in"),
    ({"epsilon_scaling": "fast"}, TypeError, "epsilon_scaling must be None or a float"),
    ({"method": "sinkhorn", "epsilon_scaling": 0.5}, ValueError, "epsilon_scaling needs"),
    ({"reg": 1e-4, "method": "sinkhorn"}, ValueError, "method='sinkhorn' needs"),
])
def test_sinkhorn_bad_options(kwargs, error, match):
    a, b, cost = _valid()
    options = {"reg": 0.1, **kwargs}
    with pytest.raises(error, match=match):
        sinkhorn(a, b, cost, **options)
    if kwargs.get("method") != "sinkhorn":  # the 'sinkhorn' cases depend on the data, not only the options
        with pytest.raises(error, match=match):
            SinkhornLoss(**options)


def test_sinkhorn_loss_bad_reduction():
    with pytest.raises(ValueError, match="reduction must be"):
        SinkhornLoss(0.1, reduction="max")


@pytest.mark.cuda
def test_mixed_devices():
    a, b, cost = _valid()
    with pytest.raises(ValueError, match="cost is on"):
        sinkhorn(a, b, cost.cuda(), 0.1)


def test_grid_errors():
    generator = torch.Generator().manual_seed(19)
    hists = barycenter_inputs(generator, 2, 2, (4, 5))
    a, b = hists[:, 0], hists[:, 1]
    cases = [
        (lambda: grid_sinkhorn(a[0, 0], b[0, 0], 0.1), ValueError, "at least one spatial axis"),
        (lambda: grid_sinkhorn(a, b[:, :3], 0.1), ValueError, "b must have the shape of a"),
        (lambda: grid_sinkhorn(a, b * 3, 0.1), ValueError, "same total mass"),
        (lambda: grid_sinkhorn(-a, -b, 0.1), ValueError, "a has negative"),
        (lambda: grid_sinkhorn(a, b, 0.0), ValueError, "reg must be positive"),
        (lambda: grid_sinkhorn(a, b, 0.1, method="stabilized"), ValueError, "method must be one of"),
        (lambda: grid_sinkhorn(a, b, 1e-4, method="sinkhorn"), ValueError, "method='sinkhorn' needs"),
        (lambda: grid_sinkhorn(a, b, 0.1, spacing=(1.0,)), ValueError, "spacing must be a number or 2"),
        (lambda: grid_sinkhorn(a, b, 0.1, spacing=0.0), ValueError, "spacing must be positive"),
        (lambda: grid_sinkhorn(a, [b], 0.1), TypeError, "b must be a torch.Tensor"),
        (lambda: wasserstein_barycenter(hists * 0, 0.1), ValueError, "zero total mass"),
        (lambda: wasserstein_barycenter(hists[0, 0], 0.1), ValueError, r"hists must have shape \(B, N"),
        (lambda: wasserstein_barycenter(hists.int(), 0.1), TypeError, "hists must be a floating-point"),
        (lambda: wasserstein_barycenter(hists * torch.tensor([1.0, 2.0], dtype=F64)[:, None, None], 0.1),
         ValueError, "same total mass"),
        (lambda: wasserstein_barycenter(hists.index_fill(2, torch.tensor([0]), float("inf")), 0.1),
         ValueError, "hists contains non-finite"),
        (lambda: wasserstein_barycenter(hists, 0.1, torch.tensor([0.5, 0.5, 0.0], dtype=F64)), ValueError,
         r"weights must have shape \(N,\)"),
        (lambda: wasserstein_barycenter(hists, 0.1, torch.tensor([1.5, -0.5], dtype=F64)), ValueError,
         "weights has negative"),
        (lambda: wasserstein_barycenter(hists, 0.1, torch.tensor([0.5, 0.6], dtype=F64)), ValueError,
         "weights must sum to 1"),
        (lambda: wasserstein_barycenter(hists, 0.1, torch.tensor([float("nan"), 0.5], dtype=F64)), ValueError,
         "weights contains non-finite"),
        (lambda: wasserstein_barycenter(hists, 0.1, max_iter=-1), ValueError, "max_iter must be >= 1"),
    ]
    for call, error, match in cases:
        with pytest.raises(error, match=match):
            call()
