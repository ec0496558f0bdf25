"""The Euclidean distance transform on the torch backend, and its separable step.

:func:`edt` is the torch kernel of ``distance_transform_edt``; its separable
step (:func:`_separable_axis`) also serves the chessboard CDT
(``.cdt._chessboard_distances``). See ``.distance`` for the algorithms and
their cost.
"""

from __future__ import annotations

import math

import torch

__all__ = ["edt"]

#: Longest lines whose separable steps compare every pair of voxels at once.
_SHORT_LINE = 64
#: Most candidates of one block of a separable step (EDT, chessboard CDT; about 40 bytes each).
_ENVELOPE_BLOCK = 1 << 21


def _unravel(flat: torch.Tensor, shape) -> torch.Tensor:
    """Flat indices ``(...)`` of an array of ``shape`` as int32 coordinates ``(S, ...)``."""
    coords = []
    for n in reversed(shape):
        coords.append(flat.remainder(n))
        flat = flat.div(n, rounding_mode="floor")
    return torch.stack(coords[::-1]).to(torch.int32)


def _edt_work(spatial, sampling, dtype):
    """Dtype and 'no background' value of the squared distances."""
    if sampling is not None:
        return dtype, math.inf
    if sum(n * n for n in spatial) < 1 << 30:
        return torch.int32, 1 << 30
    return torch.int64, 1 << 62


def edt(mask: torch.Tensor, sampling, want_indices: bool, dtype: torch.dtype):
    """Squared Euclidean distances of ``mask``'s foreground and SciPy's feature transform.

    ``mask`` is a non-empty bool ``(B, C, *spatial)`` tensor, true on the
    foreground; ``sampling`` a tuple of positive floats or ``None``; ``dtype`` the dtype
    of the distances to be returned (the squared distances are computed in
    it when ``sampling`` is given, else exactly in integers).

    Returns ``(squared, indices)``: squared distances ``(B, C, *spatial)``
    (int32/int64 without sampling) and, when ``want_indices``, int32
    ``(S, B, C, *spatial)`` indices, else ``None``.
    """
    spatial = tuple(mask.shape[2:])
    rank = len(spatial)
    scale = sampling if sampling is not None else (None,) * rank
    work, inf = _edt_work(spatial, sampling, dtype)

    squared, nearest = _nearest_on_axis0(mask, scale[0], work, inf)
    feats = [nearest] if want_indices else []
    for axis in range(1, rank):
        cost = (lambda value, step, s=scale[axis]: value + _scaled_square(step, s, work))
        squared, feats = _separable_axis(squared, feats, axis, cost, inf)

    # A slice without background: SciPy leaves the features at (-1, 0, ..., 0)
    # and measures the distances to that index.
    empty = squared >= inf
    fallback = torch.zeros((), dtype=work, device=mask.device)
    for k, n in enumerate(spatial):
        steps = torch.arange(n, device=mask.device) + (1 if k == 0 else 0)
        term = _scaled_square(steps, scale[k], work).reshape((n,) + (1,) * (rank - 1 - k))
        fallback = fallback + term
    squared = torch.where(empty, fallback, squared)
    if not want_indices:
        return squared.contiguous(), None
    indices = torch.stack(feats)
    indices[0].masked_fill_(empty, -1)
    indices[1:].masked_fill_(empty, 0)
    return squared.contiguous(), indices


def _scaled_square(steps: torch.Tensor, scale, work: torch.dtype) -> torch.Tensor:
    """``(steps * scale) ** 2`` in ``work`` (SciPy's order of rounding)."""
    steps = steps.to(work)
    if scale is not None:
        steps = steps * scale
    return steps * steps


def _nearest_on_axis0(mask, scale, work, inf):
    """Squared distance to, and index of, the nearest background along axis 0.

    Two cumulative sweeps per line; a tie goes to the lower index (SciPy).
    """
    fg = mask.movedim(2, -1)
    n = fg.shape[-1]
    pos = torch.arange(n, dtype=torch.int32, device=mask.device)
    before = torch.where(fg, -2 * n - 1, pos).cummax(-1).values
    after = torch.where(fg, 3 * n, pos).flip(-1).cummin(-1).values.flip(-1)
    take_before = pos - before <= after - pos
    nearest = torch.where(take_before, before, after)
    found = (before >= 0) | (after < n)
    squared = _scaled_square((nearest - pos).abs(), scale, work)
    squared = squared.masked_fill(~found, inf)
    return squared.movedim(-1, 2), nearest.movedim(-1, 2)


def _separable_axis(values, feats, axis, cost, inf):
    """One separable step along spatial ``axis``: ``min_j cost(g(j), i - j)`` (see
    :func:`_first_argmin`), integer results clamped to ``inf``.

    ``feats`` holds the feature coordinates of the axes before ``axis``;
    they are gathered from the winning ``j`` (the first minimum: a tie goes
    to the lower index, as in SciPy) and ``j`` becomes coordinate ``axis``.
    Lines go by blocks of about ``_ENVELOPE_BLOCK`` candidates (one line at least).
    """
    dim = axis + 2
    moved = values.movedim(dim, -1)
    shape = moved.shape
    n = shape[-1]
    g = moved.reshape(-1, n)
    old = [f.movedim(dim, -1).reshape(-1, n) for f in feats]
    out = torch.empty_like(g)
    new = [torch.empty(g.shape, dtype=torch.int32, device=g.device) for _ in range(len(feats) + 1)] if feats else []
    pos = torch.arange(n, device=g.device)
    block = max(1, _ENVELOPE_BLOCK // (n * n if n <= _SHORT_LINE else 2 * n))
    for l0 in range(0, g.shape[0], block):
        lines = slice(l0, l0 + block)
        arg = _first_argmin(g[lines], cost)
        out[lines] = cost(g[lines].gather(1, arg), pos - arg)
        for f_old, f_new in zip(old, new):
            f_new[lines] = f_old[lines].gather(1, arg)
        if feats:
            new[-1][lines] = arg
    if not out.is_floating_point():
        out.clamp_(max=inf)
    out = out.reshape(shape).movedim(-1, dim)
    return out, [f.reshape(shape).movedim(-1, dim) for f in new]


def _first_argmin(g: torch.Tensor, cost) -> torch.Tensor:
    """The first ``j`` minimising ``cost(g[l, j], i - j)``: int64 ``(L, n)`` for ``g (L, n)``.

    ``cost`` is ``g[j] + (s (i - j))^2`` (the EDT) or ``max(g[j], |i - j|)``
    (the chessboard distance), in exact arithmetic (or rounded once, for the
    EDT with sampling). The first argmin ``a(i)`` of either never decreases
    with ``i`` (the first matrix is Monge, also without the columns where
    ``g`` is infinite; the second is a maximum with a 1-Lipschitz function
    of ``i``): divide and conquer, by levels, for lines longer than
    ``_SHORT_LINE`` (shorter ones take every candidate at once). Level ``s`` (powers of two,
    largest first) finds ``a(i)`` for the rows ``i + 1 = s, 3s, 5s, ...``
    between those of the levels before, ``a(i - s) <= a(i) <= a(i + s)``.
    The candidate ranges of one level overlap only at their ends: fewer than
    ``n + n / s`` candidates per line and level, ``log2 n`` levels.
    """
    lines, n = g.shape
    device = g.device
    if n <= _SHORT_LINE:  # every candidate at once: cheaper than the levels' bookkeeping
        step = torch.arange(n, device=device)
        return cost(g[:, None, :], step[:, None] - step).argmin(-1)  # the first minimum
    # known[:, m] = a(m - 1); column 0 is the lower bound 0 of the row before the line
    known = torch.zeros((lines, n + 1), dtype=torch.int64, device=device)
    last = torch.full((lines, 1), n - 1, dtype=torch.int64, device=device)  # bound of the row after it
    level = 1 << (n.bit_length() - 1)
    while level:
        rows = torch.arange(level, n + 1, 2 * level, device=device)  # m = i + 1
        lo = known[:, rows - level]
        hi = torch.where(rows + level <= n, known[:, (rows + level).clamp(max=n)], last)
        known[:, rows] = _ranged_first_argmin(g, rows - 1, lo, hi, cost)
        level //= 2
    return known[:, 1:]


def _ranged_first_argmin(g, rows, lo, hi, cost):
    """Per line ``l`` and query ``q``, the first ``j`` in ``lo[l, q] .. hi[l, q]`` minimising
    ``cost(g[l, j], rows[q] - j)``, where the ranges of a line follow each other and
    overlap at their ends at most: the candidates as one flat list per line, in chunks."""
    lines, n = g.shape
    count = hi - lo + 1
    start = count.cumsum(1) - count  # each query's first position in its line's list
    length = (start[:, -1:] + count[:, -1:])
    first_j = lo - start  # j = first_j[q] + p at position p of query q
    row_j = rows - first_j  # i - j = row_j[q] - p
    total = n - 1 + rows.numel()  # the most candidates a line can have
    chunk = max(1, _ENVELOPE_BLOCK // lines)
    spans = [(p0, min(total, p0 + chunk)) for p0 in range(0, total, chunk)]

    def candidates(p0, p1):
        """Positions ``p0 .. p1`` of the lists: their query, ``j`` (the last voxel past the
        end of a list), whether they are in the list, and their value."""
        # the query of each position: those starting at p0 or before, then one more at each start
        starts = torch.zeros((lines, p1 - p0), dtype=torch.int64, device=g.device)
        starts.scatter_add_(1, (start - p0).clamp(0, p1 - p0 - 1), ((start > p0) & (start < p1)).long())
        query = starts.cumsum_(1).add_((start <= p0).sum(1, keepdim=True) - 1)
        p = torch.arange(p0, p1, device=g.device)
        j = first_j.gather(1, query).add_(p).clamp_(max=n - 1)
        value = cost(g.gather(1, j), row_j.gather(1, query).sub_(p))
        return query, j, p < length, value

    worst = math.inf if g.is_floating_point() else torch.iinfo(g.dtype).max
    best = torch.full(lo.shape, worst, dtype=g.dtype, device=g.device)
    first = torch.full(lo.shape, n, dtype=torch.int64, device=g.device)
    kept = candidates(*spans[0]) if len(spans) == 1 else None  # else each chunk is computed twice
    for span in spans:
        query, _, inside, value = kept or candidates(*span)
        best.scatter_reduce_(1, query, value.masked_fill(~inside, worst), "amin")
    for span in spans:
        query, j, inside, value = kept or candidates(*span)
        winner = inside & (value == best.gather(1, query))
        first.scatter_reduce_(1, query, j.masked_fill(~winner, n), "amin")
    return first
