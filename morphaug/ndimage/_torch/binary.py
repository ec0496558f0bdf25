"""Binary morphology on the torch backend: masked OR steps of an :class:`Element`.

:func:`erosion` is the torch kernel that ends the binary ops' dispatch
tables (``morphaug.ndimage._binary``); a dilation passes the reflected
element and ``invert=True``. Algorithms and cost, for a batch of ``N`` voxels:

* One step ORs the input read at each element offset in turn (a view of the
  voxels whose neighbour at that offset lies inside, ANDed with the
  per-slice flags where not every slice's element holds the offset), and
  sets the voxels whose neighbour lies outside when ``border_value`` is 1:
  extra memory one bool per voxel, whatever the element's size or the rank.
  Erosion is the complement of the OR of the complement, with the
  complement border (duality), mask included, so one OR worker serves both.
* Repeated steps (:func:`_repeat`) run on the device in chunks of steps (4
  steps first, then twice as many each time, up to 64) and read back one flag
  per chunk (``morphaug._sync``, "binary fixpoint"), to stop at a fixpoint;
  ``iterations < 1`` detects a cycle (possible only when the element's centre
  is false) by Brent's method on chunk boundaries and raises. This serves
  ``iterations >= 1``, and ``iterations < 1`` when some slice's element lacks
  its centre or the element is an accelerator tensor (never read back), as
  SciPy iterates plain steps there too.
* ``iterations < 1`` with a host element whose centre every slice holds
  (:func:`_reconstruct`, any origin, mask and border value): the step is then
  extensive and monotone, and its fixpoint is the input plus the masked
  voxels that a chain of element offsets joins to a true voxel or, with
  ``border_value=1``, to the outside. The offsets ``d`` whose mirror ``-d``
  the slice's element holds too (two-way links: all of them for a symmetric
  element, such as every ``generate_binary_structure``, ball or odd box at
  origin 0) join voxels both ways: the connected components they make of the
  masked false voxels are labelled once (:class:`_Components`: min-label
  propagation with hooking and pointer jumping, in place), which settles in
  about 5 to 8 rounds whatever the length of the paths, with a host read
  after round 4 and then every 2; reaching a voxel then reaches its whole
  component at once. The other (one-way) offsets are followed from the
  voxels reached last only (the frontier, :func:`_follow`), in chunks of
  steps as above, each after one host read of whether the frontier is empty
  and of its bounding box, to which the chunk's steps are confined when no
  component labelling runs (a step then costs that box, not the volume).

  Peak extra memory, beyond the input, the mask and the result: 4 bytes per
  voxel for the labels (8 beyond ``2**31 - 2`` voxels in the batch) and
  buffers of ``2**20`` voxels (about 15 MB) for a labelling round; with
  one-way offsets, up to 4 bools per voxel more (and no labels without
  two-way links).
"""

from __future__ import annotations

import itertools

import torch

from ... import _sync
from .._elements import Element

__all__ = ["erosion"]

#: Chunk sizes (steps between two host syncs) of repeated steps, then of
#: component-labelling rounds (which settle in about 5 to 8 rounds).
_STEP_CHUNKS = (4, 8, 16, 32, 64)
_ROUND_CHUNKS = (4, 2)
#: Voxels per pass of a labelling round: bounds the size of its buffers.
_CHUNK_VOXELS = 1 << 20
#: Pointer jumps per labelling round (each halves the paths to the roots).
_JUMPS = 4


def erosion(x: torch.Tensor, element: Element, iterations: int, mask, border: bool,
            invert: bool) -> torch.Tensor:
    """The AND (``invert=False``, erosion) or the OR (``invert=True``, dilation given the
    reflected element) of ``x`` over ``element``, ``iterations`` times (below 1: to the fixpoint)."""
    # Erosion is the complement of the OR of the complement, with the complement
    # border (duality), mask included: one OR worker serves both.
    if not invert:
        return ~erosion(~x, element, iterations, mask, not border, True)
    if iterations < 1 and element.used_by_all(element.centre):
        return _reconstruct(x, element, mask, border)

    def step(state):
        out = _or(state, element.terms, border)
        return out if mask is None else torch.where(mask, out, state)

    return _repeat(step, x, iterations)


def _or(x, terms, border):
    """``out[p] = any(x[p + offset] & weight for (offset, weight) in terms)``, ``border``
    where ``p + offset`` falls outside."""
    out = torch.zeros_like(x)
    for offset, weight in terms:
        pair = _pairs(x.shape, offset)
        if pair is not None:
            inside, read = pair
            target = out[inside]
            target |= x[read] if weight is None else x[read] & weight
        if border:
            for outside in _outside(x.shape, offset):
                target = out[outside]
                target |= True if weight is None else weight
    return out


def _pairs(shape, offset, rows=None):
    """``(inside, read)``: indices of the voxels ``p`` of a ``(B, C, *spatial)`` tensor whose
    neighbour ``p + offset`` lies inside it, and of those neighbours; None if there are none.

    ``rows = (start, stop)`` keeps the voxels of those rows of the first spatial axis only,
    and indexes them (``inside``) from ``start``.
    """
    start, stop = (0, shape[2]) if rows is None else rows
    inside, read = [slice(None)] * 2, [slice(None)] * 2
    for dim, (d, n) in enumerate(zip(offset, shape[2:])):
        first, last = max(0, -d), n - max(0, d)  # the voxels whose neighbour lies inside
        if dim == 0:
            first, last = max(first, start), min(last, stop)
        if first >= last:
            return None
        base = start if dim == 0 else 0
        inside.append(slice(first - base, last - base))
        read.append(slice(first + d, last + d))
    return tuple(inside), tuple(read)


def _outside(shape, offset):
    """Indices of slabs that cover the voxels ``p`` whose neighbour ``p + offset`` lies outside."""
    slabs = []
    for dim, (d, n) in enumerate(zip(offset, shape[2:]), start=2):
        if d:
            index = [slice(None)] * len(shape)
            index[dim] = slice(max(0, n - d), n) if d > 0 else slice(0, min(n, -d))
            slabs.append(tuple(index))
    return slabs


def _chunk_sizes(chunks):
    """The sizes in ``chunks``, then the last one forever."""
    return itertools.chain(chunks, itertools.repeat(chunks[-1]))


def _fixpoint_read(settled, cycled, box=None) -> list:
    """The "binary fixpoint" read (``morphaug._sync``): whether the last chunk of steps
    settled, whether it came back to an earlier state without settling, then the
    int64 values of ``box`` (where the next chunk works), if given."""
    flags = torch.stack([settled, cycled])
    return _sync.host_read(flags if box is None else torch.cat([flags.long(), box]), "binary fixpoint")


def _repeat(step, x, iterations):
    """``step`` applied ``iterations`` times, or until nothing changes if ``< 1``.

    Steps run in chunks of the sizes in ``_STEP_CHUNKS`` (the last one
    repeats); after each chunk one host sync reads whether its last step
    changed anything (a fixpoint: any further step is a no-op, so stopping
    early is exact). Without a count, a cycle (the sequence returns to an
    earlier state without settling) raises: Brent's cycle detection on chunk
    boundaries.
    """
    remaining = iterations if iterations >= 1 else None
    sizes = _chunk_sizes(_STEP_CHUNKS)
    checkpoint, since, horizon = x, 0, 1
    while True:
        count = next(sizes) if remaining is None else min(next(sizes), remaining)
        for _ in range(count - 1):
            x = step(x)
        previous, x = x, step(x)
        if remaining is not None:
            remaining -= count
            if remaining == 0:
                return x
        stable, repeated = _fixpoint_read((previous == x).all(), (checkpoint == x).all())
        if stable:
            return x
        if repeated and remaining is None:
            raise RuntimeError(
                "iterations < 1: the repeated binary operation cycles and never settles "
                "(its structure's centre is false); SciPy would loop forever"
            )
        since += 1
        if since == horizon:
            checkpoint, since, horizon = x, 0, 2 * horizon


def _settle(advance, chunks):
    """Calls ``advance(last)``, which updates its state in place, in chunks of calls of
    the sizes in ``chunks``, with one host read after each, until a call changes
    nothing (the later ones would not either): the last call of a chunk (``last``
    true) returns whether it changed anything, a device bool."""
    for count in _chunk_sizes(chunks):
        for call in range(count):
            changed = advance(call == count - 1)
        settled, _ = _fixpoint_read(~changed, torch.zeros_like(changed))
        if settled:
            return


def _reconstruct(x, element, mask, border):
    """The fixpoint of the masked OR step when every slice's element holds its centre:
    two-way links by components, one-way offsets from the frontier (module docstring)."""
    if not x.numel():
        return x.clone()
    two_way, one_way = element.links()
    components = _Components(x, mask, two_way) if two_way else None
    new = _or(x, element.terms, border).masked_fill_(x, False)  # one step from the input and the border
    if mask is not None:
        new &= mask
    if components is not None:
        new = components.spread(new)
    if not one_way:  # nothing to follow one way: the components of the first step are all
        return new.logical_or_(x)
    return _follow(x, mask, new, one_way, components)


def _follow(x, mask, frontier, links, components):
    """``x`` and every voxel reached from ``frontier`` (the open voxels reached last, which
    it includes) through the one-way ``links`` (terms), and ``components`` if any.

    Steps run in chunks of the sizes in ``_STEP_CHUNKS``, each after one host read of
    whether the frontier is empty (a fixpoint) and of its bounding box over the batch.
    Without components the chunk then steps on that box only, grown by the links'
    reach times the chunk's size (no voxel outside it can change meanwhile); with
    components a step reaches whole components, anywhere, so it steps everywhere.
    """
    shape = x.shape[2:]
    reach = torch.tensor([offset for offset, _ in links])  # on the host: shapes, not data
    below, above = reach.clamp(min=0).amax(0).tolist(), (-reach).clamp(min=0).amax(0).tolist()
    open_ = ~x if mask is None else mask & ~x  # the voxels that may still turn true
    open_ &= ~frontier
    reached = x | frontier
    corner = [0] * len(shape)  # where the frontier's box starts in the volume
    for count in _chunk_sizes(_STEP_CHUNKS):
        empty = ~frontier.any()
        settled, _, *box = _fixpoint_read(empty, torch.zeros_like(empty), _bounds(frontier))
        if settled:
            return reached
        if components is None:
            start = [max(0, c + first - count * b) for c, first, b in zip(corner, box, below)]
            stop = [min(n, c + last + 1 + count * a)
                    for c, last, a, n in zip(corner, box[len(shape):], above, shape)]
            frontier, corner = _moved(frontier, corner, start, stop), start
        region = (slice(None), slice(None)) + tuple(slice(c, c + n) for c, n in zip(corner, frontier.shape[2:]))
        open_in, reached_in = open_[region], reached[region]
        for _ in range(count):
            frontier = _or(frontier, links, False).logical_and_(open_in)
            if components is not None:  # (the region is the whole volume)
                frontier = components.spread(frontier).logical_and_(open_in)
            reached_in |= frontier
            open_in &= ~frontier


def _bounds(frontier):
    """The first and the last index along each spatial axis of the true voxels of
    ``frontier (B, C, *spatial)``, over the batch, as one int64 tensor ``(2 S,)``
    (firsts, then lasts; meaningless when none is true)."""
    firsts, lasts = [], []
    for dim in range(2, frontier.ndim):
        line = frontier.any(dim=tuple(d for d in range(frontier.ndim) if d != dim)).to(torch.uint8)
        firsts.append(line.argmax())
        lasts.append(line.numel() - 1 - line.flip(0).argmax())
    return torch.stack(firsts + lasts)


def _moved(frontier, corner, start, stop):
    """``frontier``, whose box starts at ``corner`` in the volume, on the box ``start`` to
    ``stop`` instead, which holds all of its true voxels."""
    size = [b - a for a, b in zip(start, stop)]
    if list(corner) == start and list(frontier.shape[2:]) == size:
        return frontier
    moved = frontier.new_zeros(frontier.shape[:2] + tuple(size))
    source, target = [slice(None)] * 2, [slice(None)] * 2
    for c, n, a, b in zip(corner, frontier.shape[2:], start, stop):
        first, last = max(c, a), min(c + n, b)
        source.append(slice(first - c, last - c))
        target.append(slice(first - a, last - a))
    moved[tuple(target)] = frontier[tuple(source)]
    return moved


class _Components:
    """The connected components of the voxels where ``mask`` (None: everywhere) is true
    and ``x (B, C, *spatial)`` false, joined by ``links`` (two-way terms), labelled once;
    :meth:`spread` reaches whole components.

    Labels are slots of one table: 0 means reached, ``i + 1`` voxel ``i`` (flat
    index in the batch), ``n + 1`` outside the domain. A voxel's label is always a
    slot of its own component (or 0) whose label is no larger, so updating the
    table in place, a chunk of voxels at a time, in any order, is safe; once no
    voxel has a smaller label next to it, every component holds one label, the
    slot of its root.
    """

    def __init__(self, x, mask, links):
        n = x.numel()
        self.links = links
        self.outside = n + 1
        dtype = torch.int32 if n + 1 < 2 ** 31 else torch.int64
        self.table = torch.empty(n + 2, dtype=dtype, device=x.device)
        self.table[:1].fill_(0)  # fills: assigning a Python number copies it from the host, a sync
        self.table[-1:].fill_(self.outside)
        self.labels = self.table[1:-1].view(x.shape)
        torch.arange(1, n + 1, out=self.table[1:-1])
        rows = max(1, _CHUNK_VOXELS * x.shape[2] // max(n, 1))
        self.chunks = [(start, min(start + rows, x.shape[2])) for start in range(0, x.shape[2], rows)]
        for start, stop in self.chunks:
            outside = x[:, :, start:stop] if mask is None else x[:, :, start:stop] | ~mask[:, :, start:stop]
            self.labels[:, :, start:stop].masked_fill_(outside, self.outside)
        _settle(self._round, _ROUND_CHUNKS)

    def _round(self, check):
        """Each voxel's root takes the smallest label next to the voxel (hooking); then
        each voxel points to its label's label, ``_JUMPS`` times (pointer jumping). With ``check``,
        returns whether some voxel had a smaller label next to it (a device bool)."""
        labels, table = self.labels, self.table
        changed = torch.zeros((), dtype=torch.bool, device=labels.device)
        for start, stop in self.chunks:
            current = labels[:, :, start:stop]
            index = current.clone()  # the slots the voxels point to (the table changes below)
            low = index.clone()
            for offset, weight in self.links:
                pair = _pairs(labels.shape, offset, (start, stop))
                if pair is None:
                    continue
                inside, read = pair
                neighbour = labels[read] if weight is None else torch.where(weight, labels[read], self.outside)
                target = low[inside]
                torch.minimum(target, neighbour, out=target)
            low.masked_fill_(index == self.outside, self.outside)  # outside the domain: kept
            if check:
                changed |= (low < index).any()
            table.scatter_reduce_(0, index.view(-1), low.view(-1), "amin")
            self._jump(current, _JUMPS)
        return changed

    def _jump(self, current, times):
        """Points each voxel of the view ``current`` to its label's label, ``times`` times."""
        for _ in range(times):
            current.copy_(self.table.index_select(0, current.flatten()).view(current.shape))

    def spread(self, new):
        """Marks the components of the voxels of ``new`` reached; then overwrites ``new``
        with every voxel reached so far, and returns it."""
        labels = self.labels
        for start, stop in self.chunks:
            current = labels[:, :, start:stop]
            self.table.scatter_reduce_(0, current.clone().view(-1),
                                       current.masked_fill(new[:, :, start:stop], 0).reshape(-1), "amin")
        for start, stop in self.chunks:
            self._jump(labels[:, :, start:stop], 1)
        return torch.eq(labels, 0, out=new)
