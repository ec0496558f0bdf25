"""Distance transforms on the torch backend: EDT, CDT and brute force.

:func:`edt`, :func:`cdt` and :func:`bf` are the torch kernels of
``morphaug.ndimage._distance``'s dispatch tables. Each takes a non-empty bool
``(B, C, *spatial)`` foreground mask and returns the distances and, when
asked, SciPy's feature transform as int32 ``(S, B, C, *spatial)`` indices.

Algorithms and cost (torch backend)
-----------------------------------
* EDT is separable: the nearest background along axis 0 by two cumulative
  sweeps, then per axis ``d`` the exact ``g'(i) = min_j g(j) + (s_d (i - j))^2``
  over each line. Its first argmin never decreases with ``i``, so lines
  longer than ``_SHORT_LINE`` take a divide and conquer by levels
  (:func:`_first_argmin`): ``log2 n_d`` steps, work ``O(N log n_d)``;
  shorter lines compare every pair at once (work ``O(N n_d)``). Memory
  ``O(N)`` plus one block of at most about ``_ENVELOPE_BLOCK`` candidates
  (a line at least).
* CDT with the chessboard metric and no indices: the exact L-infinity
  distance (SciPy's two passes compute it), separable in the same way, with
  ``min_j max(g(j), |i - j|)`` along the axes after the first.
* Any other CDT replays SciPy's two raster passes (``NI_DistanceTransformOnePass``),
  values and features alike, in one of two ways (the results are the same):

  - Sweeps along the axes, for the taxicab and chessboard neighbourhoods (see
    the comment above :func:`_sweep_pass`). Taxicab: one cumulative minimum
    per axis and pass, ``O(S)`` kernels of work ``O(N)``. Chessboard: along
    each axis ``k < S - 1``, one step per slice of the axes up to ``k``
    (``sum_k n_0 ... n_k`` steps, each a 3-box minimum over the later axes),
    taken when that is fewer steps than the wavefronts below need (high
    ranks: an 8-D ``2^8`` input takes about 9000 small kernels where the
    wavefronts take 5 to 8 million). Features: the neighbour SciPy picks at each
    voxel, ``O(S)`` kernels, then pointer jumping, ``log2 N`` gathers.
  - Wavefronts of rows, for any neighbourhood. Rows along the last axis are
    independent inside one wavefront of rows (rows whose weighted row
    coordinates sum to the same value), so the scan is a Python loop over
    wavefronts, vectorised over the batch and all rows of a wavefront; inside
    a row the update ``v[j] = min(a[j], v[j-1] + 1)`` is one cumulative
    minimum. A 2-D input takes ``n_0`` steps per pass, a 3-D one ``2 n_0 +
    n_1`` with the chessboard metric: ``O(sum of the sides)`` steps of one
    small kernel per row offset of the neighbourhood (``(3^(S-1) - 1) / 2``
    for the chessboard), work ``O(N)`` per offset.
* BF compares every voxel with every background voxel of its slice, in
  blocks of at most ``_CHUNK_ELEMENTS``: work ``O(B C N^2)``.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

__all__ = ["bf", "cdt", "edt", "taxicab_neighbourhood"]


#: Most elements of one block of candidate distances (BF pairs).
_CHUNK_ELEMENTS = 1 << 24
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


# --------------------------------------------------------------------------
# EDT (torch backend)


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


def _first_min(values: torch.Tensor):
    """Minimum over the last dim and the index of its first occurrence.

    ``argmin`` + ``gather`` rather than ``min(dim)``, which is far slower on
    small CPU tensors when the cores are busy.
    """
    index = values.argmin(-1, keepdim=True)
    return values.gather(-1, index)[..., 0], index[..., 0]


# --------------------------------------------------------------------------
# CDT (torch backend)


class _ChamferPlan:
    """What one raster pass needs: offsets in SciPy's order and the row wavefronts.

    The spatial array is seen as rows along the last axis. SciPy's pass reads,
    in raster order, the neighbours in the first half of the structure (flat
    order), i.e. rows earlier in raster order plus the previous voxel of the
    same row. Row ``r`` only depends on rows with a smaller weighted sum
    ``t(r) = sum_k w_k r_k``, so the rows of one wavefront (one ``t``) are
    updated together: ``w = (2^(R-1), ..., 2, 1)`` for the chessboard metric
    on ``R`` row axes, ``(1, ..., 1)`` for taxicab.
    """

    def __init__(self, spatial, structure: np.ndarray, device):
        row_shape = spatial[:-1]
        rank_rows = len(row_shape)
        n_rows = int(np.prod(row_shape, dtype=np.int64))
        first_half = [
            tuple(int(v) for v in np.unravel_index(flat, structure.shape))
            for flat in range(structure.size // 2) if structure.flat[flat]
        ]
        offsets = [tuple(k - 1 for k in o) for o in first_half]
        self.in_row = (0,) * (len(spatial) - 1) + (-1,) in offsets
        groups: dict[tuple, list[int]] = {}
        for o in offsets:
            if any(o[:-1]):
                groups.setdefault(o[:-1], []).append(o[-1])
        self.lasts = list(groups.values())

        # t(r) - t(r + o) >= 1 for every offset o: w_k exceeds what the later
        # axes can add for the offsets whose first nonzero (-1) is on axis k.
        weights = [0] * rank_rows
        for k in range(rank_rows - 1, -1, -1):
            later = [sum(w * v for w, v in zip(weights[k + 1:], o[k + 1:]))
                     for o in groups if o[k] != 0 and not any(o[:k])]
            weights[k] = 1 + max([0] + later) if later else 0
        coords = np.indices(row_shape).reshape(rank_rows, n_rows)
        wave = np.asarray(weights, dtype=np.int64) @ coords if rank_rows else np.zeros(1, np.int64)
        order = np.argsort(wave, kind="stable")
        self.bounds = np.searchsorted(wave[order], np.arange(wave.max() + 2)).tolist()

        neighbours, valid = [], []
        for o_row in groups:
            target = coords[:, order] + np.asarray(o_row)[:, None]
            inside = np.all((target >= 0) & (target < np.asarray(row_shape)[:, None]), axis=0)
            clipped = np.clip(target, 0, np.asarray(row_shape)[:, None] - 1)
            neighbours.append(np.ravel_multi_index(tuple(clipped), row_shape))
            valid.append(inside)
        self.order = torch.as_tensor(order, device=device)
        self.neighbours = torch.as_tensor(np.array(neighbours, dtype=np.int64).reshape(
            len(groups), n_rows), device=device)
        self.valid = torch.as_tensor(np.array(valid, dtype=bool).reshape(
            len(groups), n_rows), device=device)


_CDT_INF = 1 << 30


def cdt(mask: torch.Tensor, structure: np.ndarray, want_indices: bool):
    """SciPy's chamfer distance transform of ``mask``'s foreground.

    ``mask`` is a non-empty bool ``(B, C, *spatial)`` tensor, true on the
    foreground; ``structure`` a bool NumPy array ``(3,) * S``. Runs SciPy's forward
    raster pass, then the same pass on the array reversed along every axis
    (``NI_DistanceTransformOnePass`` twice): by per-axis sweeps for the
    chessboard and taxicab neighbourhoods (:func:`_sweep_pass`), by wavefronts
    of rows for any other (:func:`_chamfer_pass`).

    Returns int32 distances ``(B, C, *spatial)`` (``-1``: unreached) and,
    when ``want_indices``, int32 indices ``(S, B, C, *spatial)``, else ``None``.
    """
    spatial = tuple(mask.shape[2:])
    batch = mask.shape[0] * mask.shape[1]
    device = mask.device
    values = torch.where(mask, _CDT_INF, 0).to(torch.int32).reshape(batch, *spatial)
    feats = None
    if want_indices:
        feats = torch.arange(math.prod(spatial), dtype=torch.int32, device=device)
        feats = feats.reshape(1, *spatial).expand(batch, *spatial).clone()
    dims = tuple(range(1, values.ndim))
    chessboard = bool(structure.all())
    if chessboard and not want_indices:
        return _chessboard_distances(mask), None
    taxicab = np.array_equal(structure, taxicab_neighbourhood(len(spatial)))
    if taxicab or (chessboard and _sweeps_are_cheaper(spatial)):
        one_pass = (lambda v, f: _sweep_pass(v, f, chessboard))
    else:
        plan = _ChamferPlan(spatial, structure, device)
        rows = (batch, math.prod(spatial[:-1]), spatial[-1])

        def one_pass(v, f):
            v, f = v.reshape(rows), None if f is None else f.reshape(rows)
            _chamfer_pass(v, f, plan)
            return v.reshape(batch, *spatial), None if f is None else f.reshape(batch, *spatial)
    values, feats = one_pass(values, feats)
    values, feats = one_pass(values.flip(dims), None if feats is None else feats.flip(dims))
    values = values.flip(dims)

    dist = values.masked_fill(values >= _CDT_INF, -1).reshape(mask.shape)
    if feats is None:
        return dist, None
    return dist, _unravel(feats.flip(dims).reshape(mask.shape), spatial)


def _chessboard_distances(mask: torch.Tensor) -> torch.Tensor:
    """The exact L-infinity distance of ``mask``'s foreground to its slice's background, -1 in a
    slice without any: SciPy's chessboard CDT (whose two passes are exact), separable: the
    nearest background along axis 0, then ``min_j max(g(j), |i - j|)`` along each later axis."""
    fg = mask.movedim(2, -1)
    n = fg.shape[-1]
    pos = torch.arange(n, device=mask.device)
    before = torch.where(fg, -_CDT_INF, pos).cummax(-1).values
    after = torch.where(fg, n + _CDT_INF, pos).flip(-1).cummin(-1).values.flip(-1)
    dist = torch.minimum(pos - before, after - pos).clamp_(max=_CDT_INF).to(torch.int32).movedim(-1, 2)
    cost = (lambda value, step: torch.maximum(value, step.abs().to(value.dtype)))
    for axis in range(1, mask.ndim - 2):
        dist, _ = _separable_axis(dist, [], axis, cost, _CDT_INF)
    return dist.masked_fill(dist >= _CDT_INF, -1).contiguous()


def _sweeps_are_cheaper(spatial) -> bool:
    """Whether the chessboard sweeps take fewer steps than the wavefronts of rows: a sweep
    step per slice at each depth ``k`` (a box-min over the ``S - k - 1`` later axes, then
    the next depth), against a gather per wave and row offset (``(3^(S-1) - 1) / 2``)."""
    rank = len(spatial)
    sweeps = sum(math.prod(spatial[:k + 1]) * (rank - k) for k in range(rank - 1))
    waves = sum(2 ** (rank - 2 - k) * (n - 1) for k, n in enumerate(spatial[:-1])) + 1
    return sweeps < waves * (3 ** (rank - 1) // 2 + 1)


def taxicab_neighbourhood(rank: int) -> np.ndarray:
    """The taxicab chamfer neighbourhood: the centre and the faces of the ``(3,) * rank``
    cube, built without an index grid (``3**rank`` values, ``2 * rank + 1`` true)."""
    cross = np.zeros((3,) * rank, dtype=bool)
    centre = (1,) * rank
    cross[centre] = True
    for axis in range(rank):
        for side in (0, 2):
            cross[centre[:axis] + (side,) + centre[axis + 1:]] = True
    return cross


# --------------------------------------------------------------------------
# CDT with the chessboard or taxicab neighbourhood: sweeps along the axes
#
# SciPy's raster pass gives each voxel the shortest path, from its own value,
# over the first-half offsets ``H`` (those before the centre in flat order),
# inside the array. A step of ``H`` advances by one along the first axis it
# changes, ``k``, and (chessboard) by -1, 0 or 1 along each later axis.
# Taxicab: the steps are unit steps, which a shortest path may take in any
# order, so the pass is one sweep ``w[i] = min(v[i], w[i-1] + 1)`` per axis.
# Chessboard: along axis 0 the slices ``x_0 = i`` are reached in turn, each
# from the 3-box minimum of the previous one plus 1, then closed under the
# steps that keep ``x_0`` (the same pass one axis down, recursively).
# The feature of a voxel is then the one of the neighbour SciPy picks (the
# first offset of ``H`` in flat order whose value is one less, when that
# beats the voxel's own value), followed to its root by pointer jumping.


def _sweep_pass(values: torch.Tensor, feats, chessboard: bool):
    """One raster pass of SciPy's chamfer transform with the chessboard or taxicab
    neighbourhood, on ``values`` / ``feats`` ``(B*C, *spatial)`` (int32, not in place)."""
    if chessboard:
        swept = _chessboard_closure(values, 1)
    else:
        swept = values
        for dim in range(1, values.ndim):
            swept = _min_plus_one(swept, dim)
    swept = swept.clamp_(max=_CDT_INF)
    if feats is None:
        return swept, None
    parent = _first_parent(swept, values, chessboard)
    for _ in range(max(parent.shape[1] - 1, 1).bit_length()):  # chains of distinct voxels
        parent = parent.gather(1, parent)
    return swept, feats.flatten(1).gather(1, parent).reshape(feats.shape)


def _min_plus_one(values: torch.Tensor, dim: int) -> torch.Tensor:
    """``w[i] = min(v[i], w[i-1] + 1)`` along ``dim``: ``min_{k<=i} (v[k] - k) + i``."""
    lines = _around(values, dim)
    pos = torch.arange(lines.shape[1], dtype=values.dtype, device=values.device)[:, None]
    return ((lines - pos).cummin(1).values + pos).reshape(values.shape)


def _around(values: torch.Tensor, dim: int) -> torch.Tensor:
    """``values`` as ``(before, n, after)`` around ``dim``: elementwise ops on many small
    axes are much slower than on three."""
    return values.reshape(math.prod(values.shape[:dim]), values.shape[dim], -1)


def _chessboard_closure(values: torch.Tensor, dim: int) -> torch.Tensor:
    """The chessboard pass over the axes from ``dim`` on (the earlier ones held fixed)."""
    if dim == values.ndim - 1:
        return _min_plus_one(values, dim)
    out = torch.empty_like(values)
    later = range(dim, values.ndim - 1)  # the later axes, in a slice along dim
    reached = values.select(dim, 0)
    for i in range(values.shape[dim]):
        if i:
            reached = torch.minimum(values.select(dim, i), _box_min(reached, later) + 1)
        reached = _chessboard_closure(reached, dim)
        out.select(dim, i).copy_(reached)
    return out


def _box_min(values: torch.Tensor, dims) -> torch.Tensor:
    """The minimum over the 3-box along ``dims``; outside the array counts as unreached."""
    for dim in dims:
        lines = _around(values, dim)
        n = lines.shape[1]
        border = lines.new_full((lines.shape[0], 1, lines.shape[2]), _CDT_INF)
        padded = torch.cat([border, lines, border], 1)
        lines = torch.minimum(torch.minimum(padded[:, :n], padded[:, 1:n + 1]), padded[:, 2:])
        values = lines.reshape(values.shape)
    return values


def _first_parent(swept: torch.Tensor, values: torch.Tensor, chessboard: bool) -> torch.Tensor:
    """Flat index ``(B*C, N)`` of the voxel whose feature each voxel takes in the pass.

    SciPy keeps a voxel's own feature unless a neighbour ``x + o``, ``o`` in
    ``H``, improves on its own value; it then takes the first such ``o`` in flat
    (lexicographic) order among those whose swept value is one less. ``o`` is
    found one coordinate at a time: while the coordinates so far are 0, the
    next is -1 if some offset starting so holds that value, else 0; after a -1,
    the chessboard's next is the smallest of -1, 0, 1 whose box over the later
    axes still holds it, the taxicab's is 0.
    """
    batch, spatial = swept.shape[0], tuple(swept.shape[1:])
    device = swept.device
    target = (swept - 1).flatten(1)
    boxes = [swept]  # boxes[k]: the minimum over the 3-box of the axes after k
    for axis in range(len(spatial) - 1, 0, -1):
        boxes.insert(0, _box_min(boxes[0], [axis + 1]) if chessboard else swept)
    own = torch.arange(math.prod(spatial), device=device)
    # the neighbour chosen so far: its coordinates (S, B*C, N) and flat index
    coords = _unravel(own, spatial).long()[:, None].expand(-1, batch, -1).clone()
    at = own.expand(batch, -1)
    zero = torch.ones_like(at, dtype=torch.bool)  # whether the offset so far is 0

    def holds(box, axis, stride, step):
        """Whether ``box`` (flat) at the neighbour so far, moved by ``step`` along ``axis``,
        holds the target (false outside the array)."""
        moved = coords[axis] + step
        inside = (moved >= 0) & (moved < spatial[axis])
        return inside & (box.gather(1, (at + step * stride).clamp(0, own.numel() - 1)) == target)

    for axis, (box, stride) in enumerate(zip(boxes, _strides(spatial))):
        box = box.flatten(1)
        back = holds(box, axis, stride, -1)
        if chessboard:
            step = torch.where(back, -1, torch.where(zero | holds(box, axis, stride, 0), 0, 1))
        else:
            step = torch.where(zero & back, -1, 0)
        coords[axis] += step
        at = at + step * stride
        zero = zero & (step == 0)
    return torch.where((swept < values).flatten(1), at, own)


def _strides(shape) -> list[int]:
    """C-order strides of ``shape``, in elements."""
    return [math.prod(shape[k + 1:]) for k in range(len(shape))]


def _chamfer_pass(values: torch.Tensor, feats, plan: _ChamferPlan) -> None:
    """One raster pass of SciPy's chamfer transform, in place, wavefront by wavefront.

    ``values`` (int32, ``_CDT_INF`` for unreached) and ``feats`` (int32 flat
    indices, or ``None``) are ``(B*C, rows, m)``. At each voxel SciPy keeps
    the first minimum of [its own value, then ``neighbour + 1`` for each
    offset in flat order]; the previous voxel of the row comes last.
    """
    m = values.shape[-1]
    pos = torch.arange(m, device=values.device)
    for start, stop in zip(plan.bounds[:-1], plan.bounds[1:]):
        if start == stop:
            continue
        rows = plan.order[start:stop]
        best = values.index_select(1, rows)
        best_f = feats.index_select(1, rows) if feats is not None else None
        for group, lasts in enumerate(plan.lasts):
            source = plan.neighbours[group, start:stop]
            inside = plan.valid[group, start:stop][None, :, None]
            nv = values.index_select(1, source).masked_fill(~inside, _CDT_INF)
            nv = F.pad(nv, (1, 1), value=_CDT_INF) + 1
            nf = F.pad(feats.index_select(1, source), (1, 1)) if feats is not None else None
            for last in lasts:  # a neighbour wins only when strictly better
                candidate = nv[..., 1 + last:1 + last + m]
                if nf is None:
                    best = torch.minimum(best, candidate)
                    continue
                better = candidate < best
                best = torch.where(better, candidate, best)
                best_f = torch.where(better, nf[..., 1 + last:1 + last + m], best_f)
        if plan.in_row and feats is None:
            # v[j] = min(a[j], v[j-1] + 1) = min_{k<=j} (a[k] - k) + j
            best = (best - pos).cummin(-1).values + pos
        elif plan.in_row:
            # The winner for j is the largest k <= j minimising a[k] - k (a[j]
            # wins ties against the previous voxel): encode k in the key.
            key = (best.long() - pos) * m + (m - 1 - pos)
            winner = (m - 1) - key.cummin(-1).values.remainder(m)
            best = best.gather(-1, winner) + (pos - winner)
            best_f = best_f.gather(-1, winner)
        values.index_copy_(1, rows, best.to(torch.int32))
        if feats is not None:
            feats.index_copy_(1, rows, best_f)


# --------------------------------------------------------------------------
# BF (torch backend)


def bf(mask: torch.Tensor, metric: str, sampling, want_indices: bool, dtype):
    """Brute-force distance transform of ``mask``'s foreground, SciPy's ties.

    ``mask`` is a non-empty bool ``(B, C, *spatial)`` tensor, true on the
    foreground; ``metric`` is ``'euclidean'``, ``'taxicab'`` or ``'chessboard'``;
    ``sampling`` (euclidean only) a tuple of positive floats or ``None``;
    ``dtype`` the distances' dtype. Every voxel is compared with every
    background voxel of its slice in blocks of at most ``_CHUNK_ELEMENTS``;
    a tie goes to the largest flat index (SciPy walks its list of border
    voxels backwards and keeps the first minimum).

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
    if metric == "euclidean" and sampling is not None:
        work, inf = dtype, math.inf
    else:
        work, inf = torch.int64, 1 << 62

    best = torch.full((batch, size), inf, dtype=work, device=device)
    arg = torch.zeros((batch, size), dtype=torch.int64, device=device)
    block_c = max(1, min(size, _CHUNK_ELEMENTS // max(batch, 1)))
    block_q = max(1, _CHUNK_ELEMENTS // max(batch * block_c, 1))
    for q0 in range(0, size, block_q):
        q1 = min(size, q0 + block_q)
        for c0 in range(0, size, block_c):
            c1 = min(size, c0 + block_c)
            pair = _bf_pair_distances(coords, (q0, q1), (c0, c1), metric, sampling, work)
            value = torch.where(background[:, None, c0:c1], pair, inf)
            # last minimum of the block = first minimum of the reversed block
            value, where = _first_min(value.flip(-1))
            where = (c1 - 1) - where
            better = value <= best[:, q0:q1]  # later blocks hold larger indices
            best[:, q0:q1] = torch.where(better, value, best[:, q0:q1])
            arg[:, q0:q1] = torch.where(better, where, arg[:, q0:q1])

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


def _bf_pair_distances(coords, queries, candidates, metric, sampling, work):
    """Distances ``(Q, C)`` between two ranges of flat positions (SciPy's arithmetic)."""
    total = None
    for k, c in enumerate(coords):
        diff = c[queries[0]:queries[1], None] - c[None, candidates[0]:candidates[1]]
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
