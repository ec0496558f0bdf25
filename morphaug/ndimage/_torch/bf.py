"""The brute-force distance transform on the torch backend (see ``.distance``)."""

from __future__ import annotations

import math

import numpy as np
import torch

from .edt import _scaled_square, _unravel

__all__ = ["bf"]

#: Most elements of one block of candidate distances (BF pairs).
_CHUNK_ELEMENTS = 1 << 24


def bf(mask: torch.Tensor, metric: str, sampling, want_indices: bool, dtype):
    """Brute-force distance transform of ``mask``'s foreground, SciPy's ties.

    ``mask`` is a non-empty bool ``(B, C, *spatial)`` tensor, true on the
    foreground; ``metric`` is ``'euclidean'``, ``'taxicab'`` or ``'chessboard'``;
    ``sampling`` (euclidean only) a tuple of positive floats or ``None``;
    ``dtype`` the distances' dtype. Every voxel is compared with its slice's
    candidates (:func:`_candidates`) in blocks of at most ``_CHUNK_ELEMENTS``
    pairs; a tie goes to the largest flat index (SciPy walks its list of
    border voxels backwards and keeps the first minimum). A background voxel
    is at 0 from itself.

    Returns distances ``(B, C, *spatial)`` and, when ``want_indices``, int32
    indices ``(S, B, C, *spatial)``, else ``None``.
    """
    spatial = tuple(mask.shape[2:])
    device = mask.device
    batch = mask.shape[0] * mask.shape[1]
    size = math.prod(spatial)
    background = ~mask.reshape(batch, size)
    grids = torch.meshgrid(*[torch.arange(n, device=device) for n in spatial], indexing="ij")
    coords = [g.reshape(-1) for g in grids]
    columns, usable = _candidates(mask, background)
    listed = [c[columns] for c in coords]  # (batch, M): the candidates' coordinates
    if metric == "euclidean" and sampling is not None:
        work, inf = dtype, math.inf
    else:
        work, inf = torch.int64, 1 << 62

    best = torch.full((batch, size), inf, dtype=work, device=device)
    arg = torch.zeros((batch, size), dtype=torch.int64, device=device)
    count = columns.shape[1]
    block_c = max(1, min(count, _CHUNK_ELEMENTS // max(batch, 1)))
    block_q = max(1, _CHUNK_ELEMENTS // max(batch * block_c, 1))
    for q0 in range(0, size, block_q):
        q1 = min(size, q0 + block_q)
        for c0 in range(0, count, block_c):
            c1 = min(count, c0 + block_c)
            pair = _bf_pair_distances([c[q0:q1] for c in coords], [c[:, c0:c1] for c in listed], metric,
                                      sampling, work)
            value = torch.where(usable[:, None, c0:c1], pair, inf)
            # last minimum of the block = first minimum of the reversed block
            value, where = _first_min(value.flip(-1))
            where = columns[:, c0:c1].gather(1, (c1 - c0 - 1) - where)
            better = value <= best[:, q0:q1]  # later blocks hold larger indices
            best[:, q0:q1] = torch.where(better, value, best[:, q0:q1])
            arg[:, q0:q1] = torch.where(better, where, arg[:, q0:q1])
    best.masked_fill_(background, 0)
    arg = torch.where(background, torch.arange(size, device=device), arg)

    empty = best >= inf  # a slice without background
    if metric == "euclidean":
        # SciPy: sqrt(DBL_MAX), which overflows to inf in float32
        unreached = math.sqrt(np.finfo(np.float64).max)
        if unreached > torch.finfo(dtype).max:
            unreached = math.inf
        dist = best.to(dtype).sqrt_().masked_fill_(empty, unreached)
    else:
        dist = best.masked_fill(empty, -1).to(torch.int32)
    dist = dist.reshape(mask.shape)
    if not want_indices:
        return dist, None
    return dist, _unravel(arg.masked_fill(empty, 0).reshape(mask.shape), spatial)


def _candidates(mask: torch.Tensor, background: torch.Tensor):
    """Each slice's candidate columns ``(B*C, M)`` (flat indices, increasing) and which are usable.

    On the CPU, SciPy's candidates: the background voxels with a foreground voxel among their 3^S
    neighbours, which hold every nearest one (``M`` the most in a slice, read for free). Elsewhere
    every background voxel (every column, the foreground's unusable): counting them would be a
    host read."""
    batch, size = background.shape
    if mask.device.type != "cpu":
        return torch.arange(size, device=mask.device).expand(batch, size), background
    near = mask
    for dim in range(2, mask.ndim):  # the 3^S box dilation, an axis at a time
        n = mask.shape[dim]
        if n > 1:
            grown = near.clone()
            grown.narrow(dim, 1, n - 1).logical_or_(near.narrow(dim, 0, n - 1))
            grown.narrow(dim, 0, n - 1).logical_or_(near.narrow(dim, 1, n - 1))
            near = grown
    beside = near.reshape(batch, size) & background
    counts = beside.sum(1)
    most = max(int(counts.max()), 1)
    columns = torch.argsort((~beside).to(torch.uint8), dim=1, stable=True)[:, :most]
    return columns, torch.arange(most) < counts[:, None]


def _bf_pair_distances(queries, candidates, metric, sampling, work):
    """Distances ``(B*C, Q, M)`` between query coordinates (per axis ``(Q,)``) and each slice's
    candidates' (per axis ``(B*C, M)``), in SciPy's arithmetic."""
    total = None
    for k, (q, c) in enumerate(zip(queries, candidates)):
        diff = q[None, :, None] - c[:, None, :]
        if metric == "euclidean":
            term = _scaled_square(diff, sampling[k] if sampling is not None else None, work)
        else:
            term = diff.abs()
        if total is None:
            total = term
        elif metric == "chessboard":
            total = torch.maximum(total, term)
        else:
            total = total + term
    return total.to(work)


def _first_min(values: torch.Tensor):
    """Minimum over the last dim and the index of its first occurrence.

    ``argmin`` + ``gather`` rather than ``min(dim)``, which is far slower on
    small CPU tensors when the cores are busy.
    """
    index = values.argmin(-1, keepdim=True)
    return values.gather(-1, index)[..., 0], index[..., 0]
