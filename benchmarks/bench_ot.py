"""morphaug.ot against POT (numpy backend), the tool a user would loop over today.

Rows (float64, default settings unless said):

* ``sinkhorn`` on 64 pairs of 256-bin histograms on ``[0, 1]``, shared
  squared-distance cost, ``reg=1e-2``, 100 iterations, against a loop of
  ``ot.sinkhorn2`` and a loop of ``ot.sinkhorn2(method="sinkhorn_log")``
  (same ``numItermax``/``stopThr``: the same iterations run on both sides).
* ``wasserstein_barycenter`` of 2 histograms on a 128x128 grid,
  ``reg=4e-3``, against ``ot.bregman.convolutional_barycenter2d`` (one
  problem, and a batch of 8 against a loop), both to POT's default
  convergence.
* on CUDA: the 4096-pair case of the first row.

A POT loop slower than a few seconds is timed on the first pairs and scaled
to the whole batch (it is a loop of independent calls); the note says so.
Every row notes the max absolute difference from POT on the pairs POT ran.
Without POT (the GPU machine has none), the ``sinkhorn`` rows compare with a
NumPy loop of the same Sinkhorn-Knopp iterations and stopping rule
(:func:`_numpy_sinkhorn2`) and the other rows are left out.
"""

from __future__ import annotations

import time

import numpy as np
import torch

from morphaug.ot import sinkhorn, wasserstein_barycenter
from _timing import Row, synchronize, timeit

try:
    import ot
except ImportError:  # the reference is optional
    ot = None


def _histograms(generator, batch, *shape):
    x = torch.rand(batch, *shape, generator=generator, dtype=torch.float64) + 1e-3
    return x / x.flatten(1).sum(-1).reshape(batch, *[1] * len(shape))


def _time_loop(call, count: int, budget_s: float):
    """Run ``call(k)`` for ``k < count`` until ``budget_s`` is spent; ``(results, seconds for all)``."""
    results = []
    start = time.perf_counter()
    while len(results) < count and (not results or time.perf_counter() - start < budget_s):
        results.append(call(len(results)))
    elapsed = time.perf_counter() - start
    return results, elapsed * count / len(results)


def _numpy_sinkhorn2(a, b, cost, reg, iterations, tol=1e-9):
    """One problem of POT's default ``sinkhorn2`` (Sinkhorn-Knopp, numpy): the
    same scaling updates, marginal-error check every 10 iterations, and
    transport cost, for machines without POT."""
    kernel = np.exp(-cost / reg)
    u = np.full(a.shape, 1.0 / a.size)
    for it in range(iterations):
        v = b / (kernel.T @ u)
        u = a / (kernel @ v)
        if it % 10 == 0 and np.linalg.norm(v * (kernel.T @ u) - b) < tol:
            break
    return float(np.sum(u[:, None] * kernel * v[None, :] * cost))


def _sinkhorn_rows(device, batch, bins, quick) -> list[Row]:
    generator = torch.Generator().manual_seed(0)
    a, b = _histograms(generator, batch, bins), _histograms(generator, batch, bins)
    x = torch.linspace(0, 1, bins, dtype=torch.float64)
    cost = (x[:, None] - x[None, :]) ** 2
    reg, iterations = 1e-2, 100
    a_dev, b_dev, cost_dev = a.to(device), b.to(device), cost.to(device)

    def ours():
        return sinkhorn(a_dev, b_dev, cost_dev, reg, max_iter=iterations).cost

    value = ours()
    ours_s = timeit(ours, device, repeat=1 if quick else 5)
    a_np, b_np, cost_np = a.numpy(), b.numpy(), cost.numpy()
    rows = []
    if ot is None:
        references = [(lambda k: _numpy_sinkhorn2(a_np[k], b_np[k], cost_np, reg, iterations),
                       "numpy Sinkhorn-Knopp loop (POT not installed)", 20.0)]
    else:
        references = [
            (lambda k, method=method: ot.sinkhorn2(a_np[k], b_np[k], cost_np, reg, method=method,
                                                   numItermax=iterations), label, budget)
            for method, label, budget in [("sinkhorn", "ot.sinkhorn2 loop", 20.0),
                                          ("sinkhorn_log", "ot.sinkhorn2(method='sinkhorn_log') loop", 5.0)]]
    for call, label, budget in references:
        values, reference_s = _time_loop(call, batch, 0.1 if quick else budget)
        error = np.abs(value[:len(values)].cpu().numpy() - np.array(values)).max()
        note = f"max |diff| {error:.1e}"
        if len(values) < batch:
            note += f"; reference timed on {len(values)} pairs, scaled"
        rows.append(Row(f"sinkhorn reg={reg} {iterations} it", f"{batch}x{bins} float64, shared cost",
                        device.type, ours_s, label, reference_s, note))
    return rows


def _barycenter_rows(device, batch, size, quick) -> list[Row]:
    if ot is None:
        return []
    generator = torch.Generator().manual_seed(1)
    hists = _histograms(generator, batch * 2, size, size).reshape(batch, 2, size, size) ** 2
    hists = hists / hists.sum((-2, -1), keepdim=True)
    reg = 4e-3
    hists_dev = hists.to(device)

    def ours():
        return wasserstein_barycenter(hists_dev, reg)

    bary = ours()
    synchronize(device)
    ours_s = timeit(ours, device, repeat=1 if quick else 3)
    values, reference_s = _time_loop(
        lambda k: ot.bregman.convolutional_barycenter2d(hists[k].numpy(), reg, warn=False),
        batch, 0.1 if quick else 60.0)
    error = np.abs(bary[:len(values)].cpu().numpy() - np.stack(values)).max()
    label = "ot.bregman.convolutional_barycenter2d" + (" loop" if batch > 1 else "")
    return [Row(f"wasserstein_barycenter reg={reg}", f"{batch}x2x{size}x{size} float64", device.type, ours_s,
                label, reference_s, f"max |diff| {error:.1e}")]


def run(device: torch.device, quick: bool) -> list[Row]:
    if quick:
        return _sinkhorn_rows(device, 4, 32, quick) + _barycenter_rows(device, 2, 16, quick)
    rows = _sinkhorn_rows(device, 64, 256, quick)
    rows += _barycenter_rows(device, 1, 128, quick) + _barycenter_rows(device, 8, 128, quick)
    if device.type == "cuda":
        rows += _sinkhorn_rows(device, 4096, 256, quick)
    return rows
