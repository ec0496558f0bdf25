"""Python contracts of the native kernels in ``torch.ops.morphaug`` (csrc/).

Each function takes already normalised arguments (the public functions in
``morphaug.ndimage``, ``morphaug.ot`` and ``morphaug.transforms`` validate and
normalise them, and choose the kernel in their dispatch table), runs one
kernel launch over all ``B * C`` slices on the input's device, never modifies
its inputs and returns new contiguous tensors (the grey filters, the ball
morphology and the EDT's distances: or write ``out``, see :func:`grey_box`). The
C++ launchers check their arguments again and raise RuntimeError quoting the
offending values. What each kernel takes (dtypes, rank, sizes) is its row of
``KERNELS`` (``_contracts``), which holds its function here. With
``MORPHAUG_EMULATE_CUDA=1`` (tests) the calls on CPU tensors go to
``torch.ops.morphaug_emu``: the CUDA launchers, run by the emulator of
``morphaug._C_emu``. Fake kernels: ``_fakes.py``.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import torch

from .._checks import check_mode
from ._library import ops_for

__all__ = ["edt", "expand_labels", "find_boundaries", "panoptic_confusion", "euler_number", "cdt", "distance_bf", "label", "grey_box", "grey_footprint", "grey_structure", "grey_element",
           "propagate", "fill_holes", "binary_erosion", "ball_morphology", "signed_edt", "binary_values",
           "surface_distance_lists", "skeletonize_lee", "thinning2d", "skeletonize_parallel", "label_sizes", "value_indices",
           "label_values",
           "filter_components", "pick_component", "region_stats", "region_histogram", "region_median", "REGION_TABLES",
           "sinkhorn_scaling", "watershed_ift",
           "grid_barycenter", "MODE_CODES", "BALL_METRIC_CODES"]

#: Canonical SciPy border modes (``morphaug._checks.MODES`` values) -> kernel codes.
MODE_CODES = {"reflect": 0, "mirror": 1, "nearest": 2, "wrap": 3, "constant": 4}

#: Metrics of :func:`ball_morphology` and :func:`distance_bf` -> kernel codes.
BALL_METRIC_CODES = {"euclidean": 0, "taxicab": 1, "chessboard": 2}

def edt(mask: torch.Tensor, sampling: Sequence[float] | None = None, return_indices: bool = False,
        dtype: torch.dtype = torch.float32, squared: bool = False, out: torch.Tensor | None = None):
    """Exact Euclidean distance transform of each ``(b, c)`` slice, as SciPy computes it.

    Args:
        mask: bool tensor ``(B, C, *S)``, any ``S >= 1`` spatial axes (at most
            16, each shorter than 2**24); true = foreground, whose distance to
            the nearest false voxel is measured.
        sampling: one positive spacing per spatial axis, or None (all 1).
        return_indices: also return the nearest background voxel.
        dtype: ``torch.float32`` or ``torch.float64`` distances.
        squared: return squared distances (no square root).
        out: a contiguous tensor of the mask's shape and dtype ``dtype``, on its
            device, sharing no memory with it, that the kernel writes the
            distances into (``edt.out``; not with ``return_indices``), or None.

    Returns:
        ``(distances, indices)``: distances ``(B, C, *S)`` of ``dtype`` (``out``
        where given); indices ``(S, B, C, *S)`` int32 when ``return_indices``,
        else None.

    SciPy parity: with ``dtype=torch.float64`` distances and indices are
    SciPy's bit for bit (same arithmetic and tie rule: the lower index along
    each axis, axes in order). With float32 and unit sampling, indices are
    still SciPy's and distances are the float32 rounding of SciPy's (squared
    distances exact up to 2**24); with float32 and other sampling, distances are
    within 1e-6 relative and indices may differ from SciPy's only between
    equidistant voxels. A slice without background measures to the index
    ``(-1, 0, ..., 0)``, as SciPy does.
    """
    values = None if sampling is None else [float(s) for s in sampling]
    if out is not None:
        if return_indices:
            raise ValueError("edt writes out only without return_indices")
        ops_for(mask).edt.out(mask, values, squared, out=out)
        return out, None
    distances, indices = ops_for(mask).edt(mask, values, return_indices, dtype, squared)
    return distances, (indices if return_indices else None)


def expand_labels(labels: torch.Tensor, sampling: Sequence[float], distance: float) -> torch.Tensor:
    """``skimage.segmentation.expand_labels`` of each ``(b, c)`` slice of bool or integer ``labels``
    ``(B, C, *S)`` (slices of fewer than 2**31 voxels), ``sampling`` one spacing per axis: the
    expanded labels, same shape and dtype. The EDT's passes on ``labels == 0`` carrying one feature
    index per voxel, then SciPy's test ``sqrt(squared distance) <= distance`` in double and the
    feature's label, ties included (csrc/core/expand_labels.h)."""
    return ops_for(labels).expand_labels(labels, [float(s) for s in sampling], float(distance))


def euler_number(mask: torch.Tensor, table: Sequence[int]) -> torch.Tensor:
    """``skimage.measure.euler_number`` of each ``(b, c)`` slice of a bool ``(B, C, H, W)`` or ``(B, C,
    D, H, W)`` mask before its division: ``(B, C)`` int64, the sum of ``table`` (16 or 256 int8 values)
    over the configuration code of every 2 x 2 (x 2) window of the slice padded with background
    (csrc/core/euler.h)."""
    return ops_for(mask).euler_number(mask, list(table))


#: find_boundaries' modes that the kernel takes, by their code (csrc/core/find_boundaries.h).
BOUNDARY_MODES = {"thick": 0, "inner": 1, "outer": 2}


def _background_bits(dtype: torch.dtype, background: int | None) -> int | None:
    """A background label as the kernels take it: an int64 whose low bits (the labels' width) are its
    bits (``v - 2**64`` for uint64 ``v >= 2**63``); None where ``dtype`` cannot hold it (no voxel is
    background)."""
    if background is None:
        return None
    low, high = (0, 1) if dtype == torch.bool else (torch.iinfo(dtype).min, torch.iinfo(dtype).max)
    if not low <= background <= high:
        return None
    return background - 2**64 if background >= 2**63 else background


def find_boundaries(labels: torch.Tensor, connectivity: int, mode: str, background: int) -> torch.Tensor:
    """``skimage.segmentation.find_boundaries`` of each ``(b, c)`` slice of bool or integer ``labels``
    ``(B, C, *S)`` (at most 8 axes, slices of fewer than 2**31 voxels) in ``mode`` thick, inner or
    outer: a bool tensor of their shape. ``background``: the background label (none where the dtype
    cannot hold it). SciPy's float64 store of 64-bit labels included (csrc/core/find_boundaries.h)."""
    return ops_for(labels).find_boundaries(labels, connectivity, BOUNDARY_MODES[mode],
                                           _background_bits(labels.dtype, background))


def panoptic_confusion(pred: torch.Tensor, ref: torch.Tensor, threshold: float) -> torch.Tensor:
    """``monai.metrics.compute_panoptic_quality``'s ``[tp, fp, fn, iou_sum]`` of each ``(b, c)`` slice.

    Args:
        pred, ref: instance maps ``(B, C, *S)`` of one shape and one integer or
            bool dtype (slices of fewer than 2**31 voxels), 0 the background.
        threshold: ``match_iou_threshold``, in ``[0.5, 1]``: a pair matches
            when its IoU exceeds it (each instance then matches at most one).

    Returns:
        ``(B, C, 4)`` float32: tp, fp, fn and the sum of the matched IoUs
        (float32 IoUs as MONAI's, summed exactly, then rounded).

    Each slice's ids and overlapping pairs are counted in hash tables: on CPU
    one raster pass per slice, the slices in parallel; on CUDA a warp's runs
    of equal ids count at once, then a thread per pair decides the matches.
    """
    return ops_for(pred).panoptic_confusion(pred, ref, float(threshold))


def _structure_flags(structure: np.ndarray) -> list[int]:
    """A ``(3,) * S`` structure as the kernels take it: its flags, flat in C order."""
    return np.asarray(structure, dtype=bool).astype(int).ravel().tolist()


def cdt(mask: torch.Tensor, structure: np.ndarray, return_indices: bool = False):
    """Chamfer distance transform of each ``(b, c)`` slice with SciPy's algorithm.

    Args:
        mask: bool tensor ``(B, C, *S)``, 1 to 6 spatial axes; true = foreground.
        structure: the chamfer neighbourhood, a bool ``(3,) * S`` array (the
            metric as ``distance_transform_cdt`` parses it: taxicab, the faces;
            chessboard, the full cube).
        return_indices: also return the voxel each distance is measured to.

    Returns:
        ``(distances, indices)``: int32 distances ``(B, C, *S)``, -1 where no
        background is reachable (a slice without background); indices
        ``(S, B, C, *S)`` int32 when ``return_indices`` (a voxel's own index
        where unreachable), else None.

    SciPy parity: distances and indices are ``distance_transform_cdt``'s bit
    for bit (its forward and backward raster passes, neighbours in its order).
    Taxicab and chessboard distances without indices take separable passes
    instead, on CPU and CUDA alike (the exact L1 and L-infinity distances,
    which SciPy's taxicab and chessboard chamfers are; lines in parallel),
    with the same values, -1 included; ``cdt_path`` in csrc/launch.h makes
    that choice for both. Otherwise the raster passes: on CPU the slices in
    parallel, on CUDA a block per slice, rows in sequence.
    """
    flags = _structure_flags(structure)
    distances, indices = ops_for(mask).cdt(mask, flags, return_indices)
    return distances, (indices if return_indices else None)


def distance_bf(mask: torch.Tensor, metric: str, sampling: Sequence[float] | None, return_indices: bool,
                dtype: torch.dtype):
    """SciPy's brute-force distance transform of each ``(b, c)`` slice.

    Args:
        mask: bool tensor ``(B, C, *S)``, 1 to 6 spatial axes; true = foreground.
        metric: ``'euclidean'``, ``'taxicab'`` or ``'chessboard'``.
        sampling: per-axis spacing (Euclidean only), or None.
        return_indices: also return the voxel each distance is measured to.
        dtype: the distances', float32 or float64 (Euclidean) or int32.

    Returns:
        ``(distances, indices)``: distances ``(B, C, *S)``, where a slice holds no
        background sqrt of float64's largest value (Euclidean; inf in float32) or
        -1; indices ``(S, B, C, *S)`` int32 when ``return_indices`` (0 where
        unreached), else None.

    SciPy parity: every foreground voxel is compared with the background voxels
    beside foreground (SciPy's candidates, which hold every nearest one) in
    SciPy's double arithmetic (Euclidean), and a tie goes to the candidate of
    the largest flat index, as in SciPy: distances and indices bit for bit.
    On CPU each slice's candidates are listed, then its voxels compare in
    parallel; on CUDA a block stages its slice's candidates through shared
    memory.
    """
    values = None if sampling is None else [float(s) for s in sampling]
    distances, indices = ops_for(mask).distance_bf(mask, BALL_METRIC_CODES[metric], values, return_indices, dtype)
    return distances, (indices if return_indices else None)


def label(mask: torch.Tensor, structure: np.ndarray, dtype: torch.dtype = torch.int32):
    """SciPy's ``label`` of each ``(b, c)`` slice: its connected components, numbered.

    Args:
        mask: bool tensor ``(B, C, *S)``, 1 to 8 spatial axes; true = foreground.
        structure: bool ``(3,) * S`` array, centrosymmetric: which neighbours
            connect (its centre is not read).
        dtype: ``torch.int32`` (slices of fewer than ``2**31`` voxels) or
            ``torch.int64`` labels.

    Returns:
        ``(labels, counts)``: labels ``(B, C, *S)`` of ``dtype``, 0 on the
        background and ``1 .. n`` on the components in raster order of their
        first voxel, as SciPy numbers them (identical labels); counts: the
        ``n`` of each slice, int64 ``(B, C)``.

    Union-find with roots kept at each component's minimum raster index,
    then the roots numbered in raster order. On CPU a raster scan per chunk
    of rows (slices and chunks in parallel) over the rows' foreground runs
    (over voxels for a structure without the link along the last axis), and
    a merge of the chunks; on
    CUDA a union-find with path compression per tile in shared memory, a
    merge of the tiles with atomics, and the roots numbered by a device scan
    of their counts per 256 voxels: no host sync.
    """
    flags = _structure_flags(structure)
    return ops_for(mask).label(mask, flags, dtype)


def label_values(values: torch.Tensor, structure: np.ndarray, background: int | None,
                 dtype: torch.dtype = torch.int64):
    """scikit-image's ``measure.label`` of each ``(b, c)`` slice of an integer ``values`` map (any
    integer dtype but bool): :func:`label`'s ``(labels, counts)`` and numbering, neighbours joined when
    they hold equal values. ``background``: the value labelled 0; None, or a value the dtype cannot
    hold: every voxel is labelled.
    :func:`label`'s union-find: on CPU runs of one value, on CUDA tile unions of equal neighbours."""
    flags = _structure_flags(structure)
    return ops_for(values).label_values(values, flags, _background_bits(values.dtype, background), dtype)


def _mode_codes(mode: Sequence[str]) -> list[int]:
    """Canonical SciPy border modes as kernel codes (:data:`MODE_CODES`)."""
    return [check_mode(m, modes=MODE_CODES) for m in mode]


def _into(op, args: list, out: torch.Tensor | None) -> torch.Tensor:
    """``op(*args)``, a new tensor, or its ``.out`` variant writing ``out``, returned."""
    if out is None:
        return op(*args)
    op.out(*args, out=out)
    return out


def grey_box(input: torch.Tensor, size: Sequence[int], origin: Sequence[int],
             mode: Sequence[str], cval, maximum: bool, out: torch.Tensor | None = None) -> torch.Tensor:
    """The minimum (``grey_erosion``) or maximum filter of each ``(b, c)`` slice by a box.

    Elements are in erosion form: ``grey_dilation`` is the maximum filter by
    the reflected element, which its caller passes (SciPy's reflection is
    written once, in ``morphaug.ndimage._grey_filter``).

    Args:
        input: real tensor ``(B, C, *S)`` (bool, integer, float16, bfloat16,
            float32 or float64), at most 16 spatial axes.
        size: box length per spatial axis, >= 1 (1 leaves that axis alone).
        origin: per spatial axis, as grey_erosion takes it:
            ``-(size // 2) <= origin <= (size - 1) // 2``.
        mode: canonical SciPy border mode per spatial axis: ``"reflect"``,
            ``"mirror"``, ``"nearest"``, ``"wrap"`` or ``"constant"``.
        cval: fill value of ``"constant"`` borders, a Python scalar already
            representable in the input dtype (``_shift.cast_cval``).
        maximum: the maximum filter instead of the minimum.
        out: a contiguous tensor of the input's shape and dtype, on its device,
            sharing no memory with it, that receives the result (no new
            tensor is made); or None.

    Returns:
        a new contiguous tensor of the input's dtype and shape, or ``out``.

    SciPy parity: exact (it selects input values, and the minimum over a box
    is the minimum over its axes in any order). On CPU the last axis and up to
    two before it of extent at most 8 take one fused pass, reading the input
    and writing the output once: on cache-sized tiles of rows, along the last
    axis, then the rows, then a ring of planes, each step the extremum of a
    few shifted ranges of values (windows wider than 8 on the last axis:
    windows of 2, 4, ... values); each axis before them takes a pass of its
    own, in cache-sized tiles of neighbouring lanes: the extremum of the rows
    of each window (extents up to 8) or van Herk / Gil-Werman lines (3
    comparisons per value whatever the size). On CUDA a van Herk pass per
    axis, a thread per line. A NaN anywhere in a window gives NaN, as on the
    torch backend (SciPy's result depends on where the NaN sits).
    """
    codes = _mode_codes(mode)
    return _into(ops_for(input).grey_box, [input, list(size), list(origin), codes, cval, maximum], out)


def grey_footprint(input: torch.Tensor, footprint: np.ndarray, origin: Sequence[int],
                   mode: Sequence[str], cval, maximum: bool,
                   out: torch.Tensor | None = None) -> torch.Tensor:
    """The minimum or maximum filter of each ``(b, c)`` slice by one flat footprint (erosion form).

    Args:
        input: real tensor ``(B, C, *S)``, dtypes as for :func:`grey_box`.
        footprint: bool array with one dimension per spatial axis (extent 1
            on axes left alone) and at least one true value, shared by every
            slice, as grey_erosion takes it.
        origin, mode, cval, maximum, out: as for :func:`grey_box`, with the
            footprint's extent per axis in place of ``size``.

    Returns:
        a new contiguous tensor of the input's dtype and shape, or ``out``.

    SciPy parity: exact (it selects input values). On CPU the footprint is
    split into runs of true values along its last axis; each distinct run
    length takes one running extreme per border-extended line, and each run
    one shifted read of it (the torch backend's row-segment path). On CUDA a
    thread per output voxel reads a border-extended copy of the input at each
    true position. A NaN anywhere in a window gives NaN, as on the torch
    backend.
    """
    codes = _mode_codes(mode)
    flags = np.asarray(footprint, dtype=bool)
    return _into(ops_for(input).grey_footprint, [input, list(flags.shape), flags.astype(int).ravel().tolist(),
                                                 list(origin), codes, cval, maximum], out)


def grey_structure(input: torch.Tensor, structure: np.ndarray, footprint: np.ndarray | None,
                   origin: Sequence[int], mode: Sequence[str], cval, maximum: bool,
                   out: torch.Tensor | None = None) -> torch.Tensor:
    """The minimum or maximum filter of each ``(b, c)`` slice by one non-flat element (erosion form).

    Args:
        input: real tensor ``(B, C, *S)``, dtypes as for :func:`grey_box` (float16
            and bfloat16 with their own rounding, as on the torch backend).
        structure: float64 array with one dimension per spatial axis (extent 1
            on axes left alone), shared by every slice: the minimum subtracts
            it, the maximum adds it (``grey_dilation`` passes it reflected).
        footprint: bool array of the structure's shape with at least one true
            value (which positions take part), or None for all of them.
        origin, mode, cval, maximum, out: as for :func:`grey_box`, with the
            element's extent per axis in place of ``size``.

    Returns:
        a new contiguous tensor of the input's dtype and shape, or ``out``.

    SciPy parity: the torch backend's arithmetic, value for value (see
    ``morphaug.ndimage._grey_filter``): SciPy's, with float64 at the element's first
    true position and the structure cast to the input dtype elsewhere;
    integer and bool inputs accumulate in float64 and saturate where SciPy
    would wrap. A NaN anywhere in a window gives NaN. Direct loops: every
    true position is one shifted read of a border-extended copy of the input.
    """
    codes = _mode_codes(mode)
    values = np.asarray(structure, dtype=np.float64)
    flags = np.ones(values.shape, bool) if footprint is None else np.asarray(footprint, dtype=bool)
    return _into(ops_for(input).grey_structure, [input, list(values.shape), values.ravel().tolist(),
                                                 flags.astype(int).ravel().tolist(), list(origin), codes,
                                                 cval, maximum], out)


def grey_element(input: torch.Tensor, footprint: torch.Tensor | None, structure: torch.Tensor | None,
                 origin: Sequence[int], mode: Sequence[str], cval, maximum: bool,
                 out: torch.Tensor | None = None) -> torch.Tensor:
    """The minimum or maximum filter of each ``(b, c)`` slice by its own element (erosion form).

    Args:
        input: real tensor ``(B, C, *S)``, dtypes as for :func:`grey_box`.
        footprint: bool ``(B|1, C|1, *k)`` on the input's device (one dimension per spatial
            axis, extent 1 on axes left alone): slice ``(b, c)`` takes row ``(b, c)`` (row 0
            along an axis of 1); or None: every position of the box.
        structure: float64 tensor of the same kind (its own ``(B|1, C|1)``, the same ``k``),
            as :func:`grey_structure` takes it per slice; or None: flat.
        origin, mode, cval, maximum, out: as for :func:`grey_box`, with ``k`` in place of
            ``size``.

    Returns:
        a new contiguous tensor of the input's dtype and shape, or ``out``.

    SciPy parity: per slice, :func:`grey_footprint`'s (flat) or :func:`grey_structure`'s
    (non-flat: float64 at the first true position of the slice's footprint); a slice whose
    footprint is all false gets the identity (``+inf`` / the dtype's maximum for a minimum), as
    on the torch backend. The elements are never read on the host: on CUDA a thread per output
    voxel visits every position of the box over a border-extended copy of the input, reading
    its slice's flags and weights on the device, in one launch after the copy; on the CPU each
    slice's true positions are listed first, then read as :func:`grey_structure` reads its own.
    """
    codes = _mode_codes(mode)
    return _into(ops_for(input).grey_element, [input, footprint, structure, list(origin), codes, cval, maximum],
                 out)


def propagate(input: torch.Tensor, mask: torch.Tensor | None, weights: torch.Tensor,
              offsets: Sequence[Sequence[int]], border: bool) -> torch.Tensor:
    """``binary_dilation(input, element, iterations=-1, mask, border_value=border)`` per slice.

    Args:
        input: bool tensor ``(B, C, *S)``, the seeds.
        mask: bool tensor of the input's shape (where voxels may turn true),
            or None for everywhere.
        weights: bool ``(B, C, n)``: which of the ``n`` offsets each slice's
            element holds.
        offsets: ``n`` displacements from the element's centre, each with one
            value per spatial axis (0 on axes the element does not filter).
        border: ``border_value``: whether the outside of the volume is true.

    Returns:
        a new bool tensor of the input's shape.

    Contract: every slice's element must hold its centre; the masked step is
    then extensive and monotone, and its fixpoint is the input plus the mask
    voxels that a path of element offsets, inside the mask, leads to from a
    true voxel or (``border``) from the outside (a voxel ``p`` reads ``p +
    d``; one way only where the element lacks ``-d``). The kernel trusts
    this: on CPU it floods each slice once (depth-first, slices in
    parallel); on CUDA, where the element must step at most one voxel along
    each axis and be centrosymmetric in every slice (the contract,
    ``_contracts``), it labels the components of ``input | mask`` and keeps
    those that hold a seed or (``border``) touch a face an offset leads out
    of, in a fixed sequence of launches with no host sync; SciPy's result
    exactly, with no pass per iteration.
    """
    flat = [int(v) for offset in offsets for v in offset]
    return ops_for(input).propagate(input, mask, weights, flat, bool(border))


def fill_holes(input: torch.Tensor, weights: torch.Tensor,
               offsets: Sequence[Sequence[int]]) -> torch.Tensor:
    """``binary_fill_holes`` of each slice of a bool ``(B, C, *S)`` tensor.

    ``~propagate(zeros, mask=~input, weights, offsets, border=True)`` in one
    pass, with the same arguments and contract as :func:`propagate` (an
    element that holds its centre per slice). Returns a new bool tensor.

    On the CPU, when every slice has the same element, within ``(3,) * S``
    and with a step along the last axis (the cross and the full box among
    them), the background is labelled by :func:`label`'s run scan instead,
    and its components that no step leads out of the slice from are filled.
    On CUDA the background is labelled likewise, whatever the elements (the
    contract of :func:`propagate` on CUDA).
    """
    flat = [int(v) for offset in offsets for v in offset]
    return ops_for(input).fill_holes(input, weights, flat)


def binary_erosion(input: torch.Tensor, mask: torch.Tensor | None, hit: torch.Tensor, miss: torch.Tensor,
                   offsets: Sequence[Sequence[int]], iterations: int, border: bool, invert: bool) -> torch.Tensor:
    """``iterations`` steps of SciPy's ``_binary_erosion`` by any element, per ``(b, c)`` slice.

    Args:
        input: bool tensor ``(B, C, *S)``.
        mask: bool tensor of the input's shape (where a step may change a voxel), or None.
        hit, miss: bool ``(B, C, n)``: which of the ``n`` offsets each slice's element reads
            as foreground (``hit``) and as background (``miss``).
        offsets: ``n`` displacements, one value per spatial axis (0 on axes not filtered).
        iterations: steps, >= 1.
        border: the value of the voxels outside the slice.
        invert: complement each step's result (where the mask holds).

    Returns:
        a new bool tensor: each step is ``r xor invert`` where the mask holds, else its input,
        ``r(p)`` the AND over hit offsets ``d`` of ``v(p + d)`` and over miss offsets of
        ``not v(p + d)``. Erosion: hit = the element; dilation: miss = the reflected element
        with ``invert``; hit-or-miss: both elements, ``border=False``.

    On CPU each step ANDs the flagged offsets' shifted rows of bytes into one row (rows in
    parallel), and the steps stop at a fixpoint; on CUDA one launch per step (no host read), a
    thread per voxel, the offsets in shared memory.
    """
    flat = [int(v) for offset in offsets for v in offset]
    return ops_for(input).binary_erosion(input, mask, hit, miss, flat, int(iterations), bool(border), bool(invert))


def ball_morphology(mask: torch.Tensor, radius: torch.Tensor, metric: torch.Tensor,
                    erode: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """Binary dilation or erosion of each ``(b, c)`` slice by the metric ball of its own radius.

    Args:
        mask: bool tensor ``(B, C, *S)``.
        radius: int64 ``(B, C)`` (0: unchanged); on CPU each in
            ``0 ..`` the largest radius of its contract in ``KERNELS`` (int16 values, checked), on CUDA never
            read on the host (int32 values): negative radii count as 0 and
            radii are clamped to ``2**15 - 1``.
        metric: int64 ``(B, C)`` codes of :data:`BALL_METRIC_CODES`:
            euclidean (the ball ``x^2 + ... <= r^2``), taxicab
            (``|x| + ... <= r``) or chessboard (the cube of side ``2r + 1``).
        erode: bool ``(B, C)``: erosion, else dilation.
        out: as for :func:`grey_box` (a bool tensor), or None.

    Returns:
        a new bool tensor (or ``out``): ``scipy.ndimage.binary_dilation(mask,
        ball)`` or ``binary_erosion(mask, ball)`` per slice, ``border_value=0``.

    Separable passes with windows of ``2r + 1`` voxels over int16 values
    capped just above ``r`` (the threshold ``distance <= r`` of a distance
    transform, without computing larger distances): cheaper than a full
    distance transform for the small radii of augmentation. On CPU, radius 1
    is the OR / AND of shifted ranges of bytes instead: of the face
    neighbours in the Euclidean and taxicab metrics (the cross,
    ``binary_dilation``'s default), of 3 values along each axis in turn in
    the chessboard metric (the box of 3).
    """
    return _into(ops_for(mask).ball_morphology, [mask, radius, metric, erode], out)


def signed_edt(mask: torch.Tensor) -> torch.Tensor:
    """Signed Euclidean distance of each ``(b, c)`` slice to its boundary voxels.

    Args:
        mask: bool tensor ``(B, C, *S)``, any ``S >= 1`` spatial axes (at most
            16) whose squared distances fit the kernel (its contract in ``KERNELS``); unit sampling.

    Returns:
        float32 ``(B, C, *S)``: the distance to the nearest boundary voxel (a
        mask voxel with a face neighbour outside the mask; the volume's border
        is not one), negative strictly inside the mask, ``+0`` on the boundary,
        positive outside; ``+D`` (empty slice) or ``-D`` (full slice) with
        ``D = sqrt(sum(n_k ** 2))``. The float32 rounding of SciPy's values
        (a boundary erosion and one EDT per slice), bit for bit.
    """
    return ops_for(mask).signed_edt(mask)


def binary_values(input: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """A binary input as a bool mask, and whether it is binary, in one pass.

    Args:
        input: real ``(B, C, *S)`` tensor, any dtype but complex, any strides (read in place).

    Returns:
        ``(mask, others)``: ``mask`` bool ``(B, C, *S)``, true where ``input == 1``; ``others``
        int64 scalar tensor, how many voxels hold neither 0 nor 1.
    """
    return ops_for(input).binary_values(input)


def surface_distance_lists(pred: torch.Tensor, ref: torch.Tensor, sampling: Sequence[float] | None, reach: int,
                           budget: float, symmetric: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """MONAI's surface distance lists: the surface voxels of ``pred`` and ``ref``, each with its distance to the other's.

    Args:
        pred, ref: bool ``(B, C, *S)``, 1 to 3 spatial axes.
        sampling: one positive spacing per spatial axis, or None (all 1).
        reach: the largest offset, along each spatial axis but the last, that the search visits.
        budget: the line offsets that the searches of the voxels measuring to one slice may visit
            in all, per voxel of the slice (``inf``: no limit); past that its distance transform
            costs less, and its voxels left get ``-1``.
        symmetric: list the surface voxels of both; else of ``pred`` only.

    Returns:
        ``(sources, distances, counts)``: ``sources`` int64 ``(K,)``, the flat indices into
        ``(2, B, C, *S)`` (``pred``, then ``ref``) of the listed surface voxels
        (``mask & ~binary_erosion(mask)``: the cross, border 0) in raster order; ``distances``
        float32 ``(K,)``, the distance of each to the nearest surface voxel of the other mask's
        slice, as ``distance_transform_edt`` of that surface's complement gives it in float32,
        bit for bit, ``-1`` where the search had to stop (the nearest one may lie beyond
        ``reach``, or the slice's budget was spent), ``+inf`` where that surface is empty;
        ``counts`` int64 ``(2, B, C)``, the surface voxels of every slice.

    Each source visits the lines of the other surface near it, nearest first, from the voxel
    nearest to the previous source, and stops once no line left can be nearer: work per
    source grows with the square of its distance (in voxels), not with the volume.
    """
    values = None if sampling is None else [float(s) for s in sampling]
    return ops_for(pred).surface_distance_lists(pred, ref, values, reach, float(budget), symmetric)


def value_indices(values: torch.Tensor, lowest: int, span: int, ignore: int | None):
    """``scipy.ndimage.value_indices`` of the whole ``(B, C, *S)`` array, on the CPU.

    Args:
        values: int8, uint8, int16, int32 or int64 tensor ``(B, C, *S)`` (the
            comparable keys of any integer dtype), each value in
            ``lowest .. lowest + span - 1`` (a RuntimeError otherwise).
        lowest, span: that range.
        ignore: a value left out, or None.

    Returns:
        ``(counts, coords)``: int64 ``counts`` ``(span,)``, ``counts[j]`` the
        voxels of value ``lowest + j`` (0 for ``ignore``); int64 ``coords``
        ``(2 + S, total)``, the coordinates of the other voxels grouped by
        value in increasing order, each group in C order (SciPy's order).

    A stable counting sort: the voxels in chunks, each chunk's values counted
    (chunks in parallel), the counts summed value by value and chunk by chunk
    into each chunk's first slots, then each chunk writing its voxels'
    coordinates, carried from voxel to voxel.
    """
    return ops_for(values).value_indices(values, lowest, span, ignore)


def skeletonize_lee(mask: torch.Tensor, euler_changes: Sequence[int]) -> torch.Tensor:
    """scikit-image's ``skeletonize(method="lee")`` of each ``(b, c)`` slice, bit for bit.

    Args:
        mask: bool ``(B, C, D, H, W)``; a 2-D image as ``D = 1`` (scikit-image then visits the
            four in-plane border directions only).
        euler_changes: 128 ints, the change of 8 x the Euler characteristic of a 2 x 2 x 2 window
            (``morphaug.measure``'s table) when its corner 0 goes, by the code of its other corners.

    Returns:
        bool ``(B, C, D, H, W)``, the skeletons.

    Lee, Kashyap and Chu's sequential thinning, slices in parallel: per border direction the
    candidates are listed in raster order, then re-checked and deleted one by one, visiting the
    surface (a raster-ordered list of the foreground voxels with a background face neighbour)
    rather than the whole volume.
    """
    return ops_for(mask).skeletonize_lee(mask, list(euler_changes))


def thinning2d(mask: torch.Tensor, tables: Sequence[int], iterations: int):
    """scikit-image's 2-D table thinnings (``skeletonize`` "zhang", ``thin``) of each ``(b, c)`` slice.

    Args:
        mask: bool ``(B, C, H, W)``.
        tables: 512 flags (0 / 1): per sub-iteration (0, then 1), whether it deletes a foreground
            pixel of each 8-neighbour code (bits NW, N, NE, E, SE, S, SW, W; outside = background).
        iterations: the most iterations (two sub-iterations each), at least 1.

    Returns:
        ``(thinned, deleted)``: bool ``(B, C, H, W)``, and an int64 scalar on the mask's device, the
        pixels the last iteration of each slice deleted, summed: 0 when every slice reached its
        fixpoint (an iteration that deleted nothing).

    The CPU kernel thins each slice to its fixpoint (or ``iterations``) visiting its border pixels
    only, slices in parallel; the CUDA launcher runs one launch per sub-iteration over the batch,
    slices at their fixpoint skipped.
    """
    return ops_for(mask).thinning2d(mask, list(tables), iterations)


def skeletonize_parallel(mask: torch.Tensor, active: torch.Tensor, euler_changes: Sequence[int],
                         rounds: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Rounds of ``skeletonize(method="parallel")`` (``morphaug.morphology._parallel``) on each ``(b, c)``
    slice, the same voxels as its torch code.

    Args:
        mask: bool ``(B, C, D, H, W)``; a 2-D image as ``D = 1`` (its four in-plane border directions).
        active: bool ``(B, C)``: the slices to thin; the others are returned as they are.
        euler_changes: 128 ints, as :func:`skeletonize_lee` takes them.
        rounds: the most rounds of the border directions to run; below 1 (the CPU only): until a
            round deletes nothing.

    Returns:
        ``(thinned, still)``: bool ``(B, C, D, H, W)``, and bool ``(B, C)``: whether each slice's
        last round deleted something (false once it stopped at its fixpoint).

    The CPU thins every slice to its fixpoint visiting its surface; CUDA runs the rounds for the
    whole batch, a launch per direction and per subfield, slices at their fixpoint skipped.
    """
    return ops_for(mask).skeletonize_parallel(mask, active, list(euler_changes), rounds)


def label_sizes(labels: torch.Tensor, width: int) -> torch.Tensor:
    """The voxels of each label of each ``(b, c)`` slice: ``scipy.ndimage.sum_labels(ones, labels,
    range(width))`` per slice.

    Args:
        labels: int32 or int64 ``(B, C, *S)``, every value in ``[0, width)`` (checked).
        width: the columns of the table.

    Returns:
        int64 ``(B, C, width)``: column ``v`` the count of value ``v`` (column 0: the background).
    """
    return ops_for(labels).label_sizes(labels, width)


#: The tables of :func:`region_stats`, flag ``1 << i`` for entry ``i``; its results come in this
#: order, ``bounds`` as two (``lower``, ``upper``).
REGION_TABLES = ("count", "sum", "whole", "low", "high", "low_at", "high_at", "moments", "bounds", "squares")
#: The tables each table needs besides itself.
_REGION_NEEDS = {"low_at": {"low"}, "high_at": {"high"}, "squares": {"sum"}}


def region_stats(input: torch.Tensor, labels: torch.Tensor | None, table: torch.Tensor | None, rule: Sequence[int],
                 slots: int, names) -> dict:
    """The segmented reductions of the measurements (``morphaug.ndimage._regions``): one pass over the
    voxels fills every table ``names`` asks for (a second the positions and centred squares).

    Args:
        input: ``(B, C, *S)`` values, any real dtype (wide unsigned included).
        labels: integer or bool ``(B or 1, C or 1, *S)``, or None (``rule`` mode 0).
        table: the sorted int64 label keys of mode 2, on the input's device, or None.
        rule: ``(mode, low, high, first)``: each voxel's column of its slice's row, by the key of its label
            (``_comparable``'s, as an int64): mode 0 column 0; 1 the key clamped to ``[low, high]`` less
            ``first``; 2 the first entry of ``table`` equal to the key, else column ``table.numel()``.
        slots: the columns of a row.
        names: entries of :data:`REGION_TABLES`; ``count`` always comes.

    Returns:
        ``{name: (B * C, slots[, S]) tensor}``: ``count``, ``whole`` (wrapping integer sums), ``low``,
        ``high`` (int64 keys: ``_comparable``'s for integers, the order-preserving image of the float64
        bits for floats, NaN the least for ``low`` and the greatest for ``high``), ``low_at``, ``high_at``
        (flat spatial index of the first voxel in C order at the extremum), ``lower``, ``upper`` (the
        least and greatest coordinate per axis) int64; ``sum``, ``moments`` (value times coordinate, per
        axis) and ``squares`` (the squares of the value less its column's mean) float64. Empty
        columns hold the fills: 0, the greatest key (``low``, positions, ``lower``), the least
        (``high``, ``upper``).
    """
    wanted = {"count", *names}
    wanted |= set().union(*(_REGION_NEEDS.get(name, set()) for name in wanted))
    what = sum(1 << i for i, name in enumerate(REGION_TABLES) if name in wanted)
    results = ops_for(input).region_stats(input, labels, table, list(rule), slots, what)
    order = [part for name in REGION_TABLES if name in wanted
             for part in (("lower", "upper") if name == "bounds" else (name,))]
    return dict(zip(order, results))


def region_histogram(input: torch.Tensor, labels: torch.Tensor | None, table: torch.Tensor | None,
                     rule: Sequence[int], slots: int, edges: Sequence[float]) -> torch.Tensor:
    """The histogram of each region of ``morphaug.ndimage.histogram``: one pass over the voxels counts
    each voxel in its column (``region_stats``' ``labels``, ``table``, ``rule`` and ``slots``) and
    its bin (``np.histogram``'s over the increasing ``edges``: the last bin closed, values outside
    them and NaN in none).

    Returns:
        int64 ``(B * C, slots, len(edges) - 1)`` counts.

    CPU: slices, or chunks of them with tables of their own, in parallel; CUDA: a thread per voxel,
    block tables in shared memory when the slots and bins are few, else global atomics.
    """
    return ops_for(input).region_histogram(input, labels, table, list(rule), slots, [float(e) for e in edges])


def region_median(input: torch.Tensor, labels: torch.Tensor | None, table: torch.Tensor | None,
                  rule: Sequence[int], slots: int) -> list[torch.Tensor]:
    """The middle values of each region of ``morphaug.ndimage.median``, in ``region_stats``' columns
    (``labels``, ``table``, ``rule``, ``slots`` as it takes them).

    Returns:
        ``[count, low, high, least]``: int64 ``(B * C, slots)`` counts and the keys (``region_stats``',
        NaN the greatest) of the lower and upper middle values in sorted order, and int64 ``(B * C,)``
        the key of the least value of each slice's least label (0 without labels).

    CPU: a task per slice, its voxels bucketed by column (a counting sort), each column's middles
    by a selection. CUDA: a radix select of both middles of every column at once, 8 bits a pass over
    the voxels (the dtype's width: float32 in 4 passes, after one counting the columns), the digit
    counts in shared memory for up to 8 columns.
    """
    return ops_for(input).region_median(input, labels, table, list(rule), slots)


def _hop_structure(rank: int, connectivity: int) -> list[int]:
    """``generate_binary_structure(rank, connectivity)``'s flags in C order, plain ints (constants while
    Dynamo traces)."""
    return [int(sum(map(abs, step)) <= connectivity) for step in itertools.product((-1, 0, 1), repeat=rank)]


def filter_components(mask: torch.Tensor, connectivity: int, keep: int, min_size: int) -> torch.Tensor:
    """The voxels of the components that a component filter removes, in some channel.

    Args:
        mask: bool ``(B, C, *S)``, 1 to 8 spatial axes, slices under ``2**31`` voxels.
        connectivity: neighbours within this many orthogonal hops are joined
            (``generate_binary_structure(S, connectivity)``, as :func:`label` takes it).
        keep: with ``keep >= 1``, the components of a slice not among its ``keep`` largest
            go (the higher label first among equal sizes); 0: no such rule.
        min_size: the components of fewer voxels go (0: none).

    Returns:
        bool ``(B, 1, *S)``: the removed voxels of any channel.

    CPU: each slice goes through :func:`label`'s run scan, its runs keeping
    their labels (none written), and is counted and marked a run at a time: no
    ``(B, C, *S)`` labels. CUDA: :func:`label`'s union-find parents (int32), each
    component's size counted into its root's entry, one launch per kept rank
    (each slice's greatest key below the last), one marking the removed voxels.
    """
    return ops_for(mask).filter_components(mask, _hop_structure(mask.ndim - 2, connectivity), keep, min_size)


def pick_component(mask: torch.Tensor, connectivity: int, draw: torch.Tensor, max_size: int) -> torch.Tensor:
    """The voxels of one drawn component of each mask (``RandRemoveComponent``).

    Args:
        mask: bool ``(B, C, *S)``, 1 to 8 spatial axes, slices under ``2**31`` voxels.
        connectivity: neighbours within this many orthogonal hops are joined (as :func:`filter_components`).
        draw: float32 ``(B, C)`` on the mask's device: each slice loses the eligible component of
            rank ``floor(draw * n)`` (at most ``n - 1``) among its ``n`` eligible ones in label
            order; a negative draw: none.
        max_size: the components of fewer voxels are eligible.

    Returns:
        bool ``(B, C, *S)``: each slice's drawn component.

    CPU: a task per slice through :func:`label`'s run scan, the drawn label's runs marked (no
    labels written). CUDA: :func:`label`'s union-find parents with each component's size in its
    root's entry (as :func:`filter_components`), the eligible roots tallied per chunk of voxels and
    summed along the slice, the drawn root found by a block-wide count in its chunk.
    """
    return ops_for(mask).pick_component(mask, _hop_structure(mask.ndim - 2, connectivity), draw, max_size)


def watershed_ift(input: torch.Tensor, markers: torch.Tensor, offsets: Sequence[int], dtype: torch.dtype):
    """SciPy's ``watershed_ift`` of each slice of uint8 / uint16 ``input`` from signed ``markers`` (read as C int),
    ``offsets`` the structure's flat neighbour offsets (at most 80): ``dtype`` labels, ties as SciPy's. Sequential
    per slice, slices in parallel: CPU threads; on CUDA a thread per slice over device scratch (12 bytes a voxel,
    8 a level of the input dtype: 512 KiB a uint16 slice), every slice in one launch, no host read."""
    return ops_for(input).watershed_ift(input, markers, [int(o) for o in offsets], dtype)


def sinkhorn_scaling(a: torch.Tensor, b: torch.Tensor, kernel: torch.Tensor, max_iter: int, tol: float,
                     check_every: int):
    """POT's Sinkhorn-Knopp scaling on a batch of problems with one shared kernel, the loop native.

    Args:
        a, b: ``(B, n)`` and ``(B, m)`` histograms, float32 or float64.
        kernel: ``(n, m)`` Gibbs kernel ``exp((min C - C) / reg)``, same dtype.
        max_iter, tol, check_every: each problem stops once the plan's column
            mass is within ``tol`` of ``b`` (2-norm), checked at iterations 0,
            ``check_every``, ...; a stopped problem keeps its state.

    Returns:
        ``(q_f, q_g, u, scale, n_iter)``: ``K v``, ``K^T u``, ``u`` divided by
        its row maximum ``scale (B, 1)``, and the iterations each problem ran.
        The iterates of ``morphaug.ot``'s torch loop (``scaling_iterations``),
        to the rounding of the GEMMs: each thread iterates its own share of
        the problems, with single-threaded GEMMs.
    """
    return ops_for(a).sinkhorn_scaling(a, b, kernel, max_iter, tol, check_every)


def grid_barycenter(log_hists: torch.Tensor, weights: torch.Tensor, kernels: Sequence[torch.Tensor],
                    max_iter: int, tol: float, check_every: int) -> torch.Tensor:
    """Convolutional Wasserstein barycenters, the iteration native (``morphaug.ot._grid``).

    Args:
        log_hists: ``(B, N, *S)`` log of the histograms, float32 or float64.
        weights: ``(B, N)`` barycentric weights, same dtype.
        kernels: one Gibbs kernel ``exp(-C_d / reg)`` ``(n_d, n_d)`` per spatial axis.
        max_iter, tol, check_every: POT's stopping rule, each problem on its own.

    Returns:
        ``(B, *S)``: the log of the barycenters; the iterates of the torch
        loop (``GridSoftMin`` with ``exact=False``) to the rounding of the
        GEMMs, each thread taking whole grids.
    """
    return ops_for(log_hists).grid_barycenter(log_hists, weights, list(kernels), max_iter, tol, check_every)
