"""The chamfer distance transform on the torch backend (see ``.distance``).

:func:`cdt` replays SciPy's two raster passes (``NI_DistanceTransformOnePass``),
values and features alike, by sweeps along the axes (chessboard, taxicab) or
by wavefronts of rows (any neighbourhood); the chessboard metric without
indices is the exact L-infinity distance, separable (``.edt._separable_axis``).
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from .edt import _separable_axis, _unravel

__all__ = ["cdt", "taxicab_neighbourhood"]


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
#: Longest axes whose chessboard pass takes one step per slice (longer ones: a scan by levels).
_SEQUENTIAL_AXIS = 8


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
        dist = _chessboard_distances(mask)
        return dist.masked_fill_(dist >= _CDT_INF, -1), None
    taxicab = np.array_equal(structure, taxicab_neighbourhood(len(spatial)))
    if taxicab or (chessboard and _sweeps_are_cheaper(spatial)):
        # the second chessboard pass ends at the exact distances
        exact = _chessboard_distances(mask).reshape(values.shape).flip(dims) if chessboard else None
        passes = [lambda v, f: _sweep_pass(v, f, chessboard),
                  lambda v, f: _sweep_pass(v, f, chessboard, exact)]
    else:
        plan = _ChamferPlan(spatial, structure, device)
        rows = (batch, math.prod(spatial[:-1]), spatial[-1])

        def one_pass(v, f):
            v, f = v.reshape(rows), None if f is None else f.reshape(rows)
            _chamfer_pass(v, f, plan)
            return v.reshape(batch, *spatial), None if f is None else f.reshape(batch, *spatial)
        passes = [one_pass, one_pass]
    values, feats = passes[0](values, feats)
    values, feats = passes[1](values.flip(dims), None if feats is None else feats.flip(dims))
    values = values.flip(dims)

    dist = values.masked_fill(values >= _CDT_INF, -1).reshape(mask.shape)
    if feats is None:
        return dist, None
    return dist, _unravel(feats.flip(dims).reshape(mask.shape), spatial)


def _chessboard_distances(mask: torch.Tensor) -> torch.Tensor:
    """The exact L-infinity distance of ``mask``'s foreground to its slice's background,
    ``_CDT_INF`` in a slice without any: SciPy's chessboard CDT (whose two passes are exact),
    separable: the nearest background along axis 0, then ``min_j max(g(j), |i - j|)`` along
    each later axis."""
    fg = mask.movedim(2, -1)
    n = fg.shape[-1]
    pos = torch.arange(n, device=mask.device)
    before = torch.where(fg, -_CDT_INF, pos).cummax(-1).values
    after = torch.where(fg, n + _CDT_INF, pos).flip(-1).cummin(-1).values.flip(-1)
    dist = torch.minimum(pos - before, after - pos).clamp_(max=_CDT_INF).to(torch.int32).movedim(-1, 2)
    cost = (lambda value, step: torch.maximum(value, step.abs().to(value.dtype)))
    for axis in range(1, mask.ndim - 2):
        dist, _ = _separable_axis(dist, [], axis, cost, _CDT_INF)
    return dist.contiguous()


def _sweeps_are_cheaper(spatial) -> bool:
    """Whether the chessboard sweeps should beat the wavefronts of rows, on CPU timings: a
    sweep kernel about 40 us plus 3 ns per voxel it visits (the closure, the exact distances,
    the features and their pointer jumping), a wavefront about 250 us per row offset. The
    sweeps win on long or many axes, the wavefronts on large cubes (128^3: 2 s against 6.5 s)."""
    steps, visits = _closure_cost(spatial)
    size, rank = math.prod(spatial), len(spatial)
    visits += size * (8 * (size - 1).bit_length() + 40 * rank
                      + sum(20 * (n - 1).bit_length() for n in spatial[1:]))
    waves = sum(2 ** (rank - 2 - k) * (n - 1) for k, n in enumerate(spatial[:-1])) + 1
    wave_steps = 2 * waves * (3 ** (rank - 1) // 2 + 3)
    return _cost(steps, visits) < 250 * wave_steps


def _closure_cost(spatial) -> tuple[int, int]:
    """Kernels and voxel visits of :func:`_chessboard_closure` on one ``spatial`` array (estimates)."""
    n, later = spatial[0], tuple(spatial[1:])
    if not later:
        return 1, n
    method = _long_axis_method(n, later)
    if method != "scan":
        return _matrix_cost(n, later) if method == "matrix" else _steps_cost(n, later)
    padded = tuple(m + 2 if m > 1 else m for m in later)
    steps, visits = _closure_cost(padded)
    levels = (n - 1).bit_length()
    boxes = sum(3 + sum(2 + min(k + 1, (m - 1).bit_length()) for m in padded if m > 1) for k in range(levels))
    return (levels + 1) * steps + boxes, n * ((levels + 1) * visits + boxes * math.prod(padded))


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
# steps that keep ``x_0`` (the same pass one axis down, recursively); a long
# axis by a scan (:func:`_chessboard_scan`, :func:`_chessboard_matrix_scan`).
# The feature of a voxel is then the one of the neighbour SciPy picks (the
# first offset of ``H`` in flat order whose value is one less, when that
# beats the voxel's own value), followed to its root by pointer jumping.


def _sweep_pass(values: torch.Tensor, feats, chessboard: bool, swept=None):
    """One raster pass of SciPy's chamfer transform with the chessboard or taxicab
    neighbourhood, on ``values`` / ``feats`` ``(B*C, *spatial)`` (int32, not in place);
    ``swept``: the pass's values when known."""
    if swept is None and chessboard:
        swept = _chessboard_closure(values, 1)
    elif swept is None:
        swept = values
        for dim in range(1, values.ndim):
            swept = _min_plus_one(swept, dim)
    swept = swept.clamp(max=_CDT_INF)
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
    method = _long_axis_method(values.shape[dim], tuple(values.shape[dim + 1:]))
    if method == "scan":
        return _chessboard_scan(values, dim)
    if method == "matrix":
        return _chessboard_matrix_scan(values, dim)
    out = torch.empty_like(values)
    later = range(dim, values.ndim - 1)  # the later axes, in a slice along dim
    reached = values.select(dim, 0)
    for i in range(values.shape[dim]):
        if i:
            reached = torch.minimum(values.select(dim, i), _box_min(reached, later, 1) + 1)
        reached = _chessboard_closure(reached, dim)
        out.select(dim, i).copy_(reached)
    return out


def _chessboard_scan(values: torch.Tensor, dim: int) -> torch.Tensor:
    """:func:`_chessboard_closure` along a long axis ``dim`` in ``log2 n`` steps.

    With ``C`` the pass over the later axes and ``B`` their 3-box minimum, the
    slices follow ``h[i] = min(C v[i], C B h[i-1] + 1)``, a min-plus linear
    recurrence: a Hillis-Steele scan, ``h[i] = min(h[i], C B^s h[i-s] + s)`` for
    ``s = 1, 2, 4, ...``, with ``B^s`` the box of radius ``s``. ``(C B)^s = C B^s``
    on ``C``-closed slices in an unbounded grid, not at the borders: between two
    boxes, a path of ``(C B)^s`` may take a step of ``C`` that it could take neither
    first nor last inside the array (later axes (3, 5), ``s = 3``, from (0, 0) to
    (2, 4)). Each later axis gets one unreached voxel on both sides, which restores it
    where the later axes longer than one voxel are of one length (:func:`_scan_is_exact`):
    checked, not proven, exhaustively (one input per voxel, the pass being min-plus linear)
    against the step-by-step pass with scans forced on every axis, and by the tests. An
    axis of one voxel takes no step of either and gets none (it would let paths through it).
    """
    later = range(dim + 1, values.ndim)
    padded = [d for d in later if values.shape[d] > 1]
    sizes = [values.shape[d] for d in padded]
    for d in padded:
        border = _CDT_INF * values.new_ones(values.shape[:d] + (1,) + values.shape[d + 1:])
        values = torch.cat([border, values, border], d)
    reached = _chessboard_closure(values, dim + 1)
    n, step = values.shape[dim], 1
    while step < n:
        moved = _box_min(reached.narrow(dim, 0, n - step), later, step)
        moved = _chessboard_closure(moved, dim + 1).add_(step).clamp_(max=_CDT_INF)
        reached = torch.cat([reached.narrow(dim, 0, step),
                             torch.minimum(reached.narrow(dim, step, n - step), moved)], dim)
        step *= 2
    for d, size in zip(padded, sizes):
        reached = reached.narrow(d, 1, size)
    return reached.contiguous()


def _chessboard_matrix_scan(values: torch.Tensor, dim: int) -> torch.Tensor:
    """:func:`_chessboard_closure` along a long axis ``dim`` by min-plus matrix powers.

    The step from one slice to the next, ``h -> C B h + 1`` (``C`` the pass over the
    later axes, ``B`` their 3-box minimum), is min-plus linear: a matrix ``T`` of the
    slice's ``m`` voxels, read off the step applied to ``m`` unit slices. The slices
    follow ``h[i] = min(C v[i], T h[i-1])``: a Hillis-Steele scan,
    ``h[i] = min(h[i], T^s h[i-s])`` for ``s = 1, 2, 4, ...``, with ``T^s`` by
    squaring. Exact on any later axes (the borders are in ``T``); ``m^2`` work per
    voxel and level, so for small slices (:func:`_long_axis_method`).
    """
    later = tuple(values.shape[dim + 1:])
    m, n = math.prod(later), values.shape[dim]
    units = torch.full((m, m), _CDT_INF, dtype=values.dtype, device=values.device)
    units = units.fill_diagonal_(0).reshape(m, *later)
    step = _chessboard_closure(_box_min(units, range(1, units.ndim), 1), 1)
    power = (step.reshape(m, m).t().long() + 1).clamp_(max=_CDT_INF)  # power[a, b]: from b to a
    reached = _chessboard_closure(values, dim + 1).long().reshape(-1, n, m)
    s = 1
    while s < n:
        moved = _min_plus_apply(power, reached[:, :n - s])
        reached = torch.cat([reached[:, :s], torch.minimum(reached[:, s:], moved)], 1)
        power = _min_plus_apply(power, power.t()).t()
        s *= 2
    return reached.clamp_(max=_CDT_INF).to(values.dtype).reshape(values.shape)


def _min_plus_apply(matrix: torch.Tensor, vectors: torch.Tensor) -> torch.Tensor:
    """``out[..., a] = min_b matrix[a, b] + vectors[..., b]``, clamped to ``_CDT_INF``
    (int64): one elementwise minimum per ``b`` (a reduction over a short last axis is
    many times slower)."""
    rows = vectors.reshape(-1, vectors.shape[-1])
    out = rows[:, :1] + matrix[:, 0]
    for b in range(1, matrix.shape[1]):
        torch.minimum(out, rows[:, b:b + 1] + matrix[:, b], out=out)
    return out.clamp_(max=_CDT_INF).reshape(vectors.shape)


def _long_axis_method(n: int, later: tuple) -> str:
    """How the chessboard pass crosses an axis of ``n`` slices of shape ``later``:
    ``"steps"`` (one slice after the other), ``"scan"`` (:func:`_chessboard_scan`, where
    known exact) or ``"matrix"`` (:func:`_chessboard_matrix_scan`, where cheaper than
    the steps by the cost model of :func:`_sweeps_are_cheaper`)."""
    if n <= _SEQUENTIAL_AXIS or not later:
        return "steps"
    if _scan_is_exact(later):
        return "scan"
    return "matrix" if _cost(*_matrix_cost(n, later)) < _cost(*_steps_cost(n, later)) else "steps"


def _cost(kernels: int, visits: int) -> float:
    """Microseconds of ``kernels`` torch kernels visiting ``visits`` voxels (CPU timings)."""
    return 40 * kernels + 0.003 * visits


def _steps_cost(n: int, later: tuple) -> tuple[int, int]:
    """Kernels and voxel visits of the pass over ``n`` slices ``later``, one after the other."""
    steps, visits = _closure_cost(later)
    return n * (steps + len(later) + 2), n * (visits + (len(later) + 2) * math.prod(later))


def _matrix_cost(n: int, later: tuple) -> tuple[int, int]:
    """Kernels and voxel visits of :func:`_chessboard_matrix_scan` (estimates)."""
    m, levels = math.prod(later), (n - 1).bit_length()
    steps, visits = _closure_cost(later)
    return steps * 2 + levels * (4 * m + 6), n * visits + m * visits + levels * (n + m) * m * m


def _scan_is_exact(later) -> bool:
    """Whether :func:`_chessboard_scan` is known exact before these later axes: those longer
    than one voxel all of one length. Checked exhaustively for every shape up to 40x10,
    12x8x8 and 12x4x4x4, and 10x10x10, 10x5x5x5; unequal lengths fail from (12, 2, 8) on."""
    return len({n for n in later if n > 1}) <= 1


def _box_min(values: torch.Tensor, dims, radius: int) -> torch.Tensor:
    """The minimum over the box of ``radius`` along ``dims``; outside the array counts as
    unreached. Per axis, windows of doubling widths, then two that cover ``2 radius + 1``."""
    for dim in dims:
        lines = _around(values, dim)
        n = lines.shape[1]
        r = min(radius, n - 1)
        if r == 0:
            continue
        border = lines.new_full((lines.shape[0], r, lines.shape[2]), _CDT_INF)
        window = torch.cat([border, lines, border], 1)  # window[:, j]: the minimum of j .. j + width - 1
        width = 1
        while 2 * width <= 2 * r + 1:
            window = torch.minimum(window[:, :-width], window[:, width:])
            width *= 2
        lines = torch.minimum(window[:, :n], window[:, 2 * r + 1 - width:2 * r + 1 - width + n])
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
        boxes.insert(0, _box_min(boxes[0], [axis + 1], 1) if chessboard else swept)
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
