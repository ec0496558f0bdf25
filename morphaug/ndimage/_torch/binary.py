"""Binary morphology on the torch backend: masked OR steps of an :class:`Element`.

:func:`erosion` is the torch kernel that ends the binary ops' dispatch
tables (``morphaug.ndimage._binary``); a dilation passes the reflected
element and ``invert=True``. Algorithms and cost:

* One step pads the input once with ``border_value`` and ORs the shifted
  views of that padded tensor, one element position at a time (ANDed with
  the per-sample flags where not every sample's element holds it): extra
  memory O(input) whatever the element size. Erosion is the complement of
  the OR of the complement, with the complement border (duality), mask
  included, so one OR worker serves both.
* Repeated steps (:func:`_repeat`) run on the device in chunks of steps (4
  steps first, then twice as many each time, up to 64) and read back one flag
  per chunk (``morphaug._sync``, "binary fixpoint"), to stop at a fixpoint;
  ``iterations < 1`` detects a cycle (possible only when the element's centre
  is false) by Brent's method on chunk boundaries and raises.
* ``iterations < 1`` with an element that holds its centre and is symmetric
  in every sample (:meth:`Element.symmetric`, read on the host): the
  fixpoint is found by labelling connected components (:func:`_propagate`:
  min-label propagation with hooking and pointer jumping, int64 labels, a few
  int64 copies of the input in memory), which settles in about 5 to 7 rounds
  whatever the length of the paths, with a host sync after round 4 and then
  every 2 rounds. Other elements, and any element given as an accelerator
  tensor (never read back), iterate plain steps, as SciPy does.
"""

from __future__ import annotations

import itertools

import torch

from ... import _sync
from .._elements import Element
from .._shift import pad, shifted

__all__ = ["erosion"]

#: Chunk sizes (steps between two host syncs) of repeated steps, then of
#: component-labelling rounds (which settle in about 5 to 7 rounds).
_STEP_CHUNKS = (4, 8, 16, 32, 64)
_ROUND_CHUNKS = (4, 2)


def erosion(x: torch.Tensor, element: Element, iterations: int, mask, border: bool,
            invert: bool) -> torch.Tensor:
    """The AND (``invert=False``, erosion) or the OR (``invert=True``, dilation given the
    reflected element) of ``x`` over ``element``, ``iterations`` times (below 1: to the fixpoint)."""
    # Erosion is the complement of the OR of the complement, with the complement
    # border (duality), mask included: one OR worker serves both.
    if not invert:
        return ~erosion(~x, element, iterations, mask, not border, True)
    if iterations < 1 and element.symmetric():
        return _propagate(x, element, mask, border)

    def step(state):
        return _dilation_step(state, element, mask, border)

    return _repeat(step, x, iterations, _STEP_CHUNKS)


def _dilation_step(x, element, mask, border):
    """One OR step: ``out[p] = any(x[p + j - centre] for j in element)``, masked."""
    axes = element.axes
    padded = pad(x, axes, element.pads, ["constant"] * len(axes), border)
    out = torch.zeros_like(x)
    for position, weight in element.terms:
        view = shifted(padded, axes, position, x.shape)
        out |= view if weight is None else view & weight
    return out if mask is None else torch.where(mask, out, x)


def _repeat(step, x, iterations, chunks):
    """``step`` applied ``iterations`` times, or until nothing changes if ``< 1``.

    Steps run in chunks of the sizes in ``chunks`` (the last one repeats);
    after each chunk one host sync reads whether its last step changed
    anything (a fixpoint: any further step is a no-op, so stopping early is
    exact). Without a count, a cycle (the sequence returns to an earlier state
    without settling) raises: Brent's cycle detection on chunk boundaries.
    """
    remaining = iterations if iterations >= 1 else None
    sizes = itertools.chain(chunks, itertools.repeat(chunks[-1]))
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
        stable, repeated = _sync.host_read(torch.stack([(previous == x).all(), (checkpoint == x).all()]),
                                           "binary fixpoint")
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


def _propagate(x, element, mask, border):
    """Fixpoint of the masked OR step for a centred, symmetric element.

    The step is then extensive and monotone, and its offsets join voxels
    both ways, so the fixpoint is ``x`` plus the masked voxels whose
    connected component (masked voxels joined by element offsets) holds a
    seed: a masked voxel that one OR step makes true. Components are found
    by min-label propagation with hooking and pointer jumping, which settles
    in a few rounds (about logarithmic in the component size in practice),
    not one round per voxel of the longest path. Labels are slots of a table:
    0 means seeded, ``i + 1`` voxel ``i``, ``n + 1`` outside the mask; a
    voxel's label is always a slot of its own component (or 0) whose label is
    no larger, so reading the table through itself (pointer jumping) is safe.
    """
    n = x.numel()
    outside = n + 1
    if mask is None:
        mask = torch.ones_like(x)
    seeds = mask & _dilation_step(x, element, None, border)
    slots = torch.arange(1, n + 1, device=x.device).view(x.shape)
    labels = torch.where(seeds, 0, torch.where(mask, slots, outside))
    axes = element.axes
    modes = ["constant"] * len(axes)
    ends = (labels.new_zeros(1), labels.new_full((1,), outside))

    def round_(labels):
        padded = pad(labels, axes, element.pads, modes, outside)
        low = labels
        for position, weight in element.terms:
            view = shifted(padded, axes, position, x.shape)
            low = torch.minimum(low, view if weight is None else torch.where(weight, view, outside))
        low = torch.where(mask, low, outside).flatten()
        table = torch.cat([ends[0], low, ends[1]])
        table.scatter_reduce_(0, labels.flatten(), low, "amin")  # hook each root
        table = table.take(table)  # pointer jumping, twice
        table = table.take(table)
        return table[1:-1].view(x.shape)

    labels = _repeat(round_, labels, 0, _ROUND_CHUNKS)
    return torch.where(mask, labels == 0, x)
