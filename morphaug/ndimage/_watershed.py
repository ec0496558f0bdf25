"""SciPy's ``watershed_ift``: the image foresting transform from markers, on ``(B, C, *spatial)`` tensors.

SciPy's result depends on the order of its priority queue wherever paths
tie, and that order is a detail of its C code (``NI_WatershedIFT`` in
``scipy/ndimage/src/ni_measure.c``): one doubly linked list per cost level,
object markers and their floods pushed at the front, background ones at the
back, neighbours taken by flat offsets that wrap from the end of a row to
the start of the next, and a node that is alone in its list left behind as
that list's head when it moves to a cheaper one. The native kernel
``watershed_ift`` (csrc/core/watershed_ift.h) runs that algorithm step for
step: sequential within a slice, slices in parallel (CPU threads, a CUDA
thread per slice). Without it (the torch backend, or more than four spatial
axes) :func:`_flood` replays it in Python on the host, one slice after the
other.
"""

from __future__ import annotations

import numpy as np
import torch

from .. import _ops, _sync
from ._errors import ArgumentError, DtypeError
from ._normalize import check_dense, check_input, check_output, finish_output, tensor_argument
from ._structure import generate_binary_structure

__all__ = ["watershed_ift"]

_MARKERS = (torch.int8, torch.int16, torch.int32, torch.int64)


def _structure(structure, rank: int) -> np.ndarray:
    """``structure`` as SciPy checks it: a ``(3,) * rank`` array, nonzero is true; None is the cross."""
    if structure is None:
        return generate_binary_structure(rank, 1).numpy()
    if isinstance(structure, torch.Tensor):
        check_dense(structure, "structure")
        values = structure.tolist() if structure.device.type == "cpu" else tensor_argument(structure)
        structure = np.asarray(values).reshape(structure.shape)
    array = np.asarray(structure)
    if array.dtype.kind not in "biuf":
        raise TypeError(f"structure must be a real array, got dtype {array.dtype}")
    if array.ndim != rank:  # SciPy: RuntimeError
        raise ArgumentError(f"structure must have one dimension per spatial axis of input ({rank}), "
                            f"got shape {array.shape}")
    if array.shape != (3,) * rank:  # SciPy: RuntimeError
        raise ArgumentError(f"structure dimensions must be equal to 3, got shape {array.shape}")
    return array != 0


def _offsets(structure: np.ndarray, spatial) -> list[int]:
    """The flat offsets of the structure's neighbours in C order, the centre left out."""
    strides = np.cumprod((1,) + tuple(spatial)[:0:-1])[::-1]
    return [int(np.dot(np.asarray(at) - 1, strides)) for at in np.argwhere(structure)
            if any(c != 1 for c in at)]


def _flood(image: list[int], seeds: list[int], labels: list[int], offsets: list[int]) -> list[int]:
    """SciPy's ``NI_WatershedIFT`` on one slice: ``image`` the flat values, ``seeds`` the markers
    as C ``int``, ``labels`` the output's initial values (the markers as the output's dtype),
    updated and returned."""
    size = len(image)
    top = max(image, default=0)
    cost = [top + 1] * size
    done = [False] * size
    after, before = [-1] * size, [-1] * size  # -1: NULL
    first, last = [-1] * (top + 1), [-1] * (top + 1)
    for node, seed in enumerate(seeds):
        if seed == 0:
            continue
        cost[node] = 0
        if first[0] < 0:
            first[0] = last[0] = node
        elif seed > 0:  # object markers at the front of level 0
            after[node], before[first[0]] = first[0], node
            first[0] = node
        else:  # background markers at its back
            before[node], after[last[0]] = last[0], node
            last[0] = node
    for level in range(top + 1):
        while first[level] >= 0:
            v = first[level]
            first[level] = after[v]
            if first[level] >= 0:
                before[first[level]] = -1
            before[v] = after[v] = -1
            done[v] = True
            v_cost, v_value = cost[v], image[v]
            for offset in offsets:
                p = v + offset
                if p < 0 or p >= size or done[p]:
                    continue
                weight = abs(image[p] - v_value)
                new = v_cost if v_cost > weight else weight
                old = cost[p]
                if new >= old:
                    continue
                cost[p] = new
                label = labels[p] = labels[v]
                if after[p] >= 0 or before[p] >= 0:  # unlinked from its list (alone there, it stays head)
                    previous, following = before[p], after[p]
                    if first[old] == p:
                        first[old] = following
                    if last[old] == p:
                        last[old] = previous
                    if previous >= 0:
                        after[previous] = following
                    if following >= 0:
                        before[following] = previous
                if label < 0:  # background floods at the back of their level
                    before[p], after[p] = last[new], -1
                    if last[new] >= 0:
                        after[last[new]] = p
                    last[new] = p
                    if first[new] < 0:
                        first[new] = p
                else:
                    after[p], before[p] = first[new], -1
                    if first[new] >= 0:
                        before[first[new]] = p
                    first[new] = p
                    if last[new] < 0:
                        last[new] = p
    return labels


def _rows(tensor: torch.Tensor) -> list[list[int]]:
    """Each slice of ``tensor`` as a flat list of ints, on the host."""
    flat = tensor.reshape(tensor.shape[0] * tensor.shape[1], -1)
    return flat.tolist() if flat.device.type == "cpu" else _sync.host_read(flat, "watershed_ift")


def _host_flood(input: torch.Tensor, markers: torch.Tensor, offsets: list[int], dtype: torch.dtype) -> torch.Tensor:
    """:func:`_flood` of every slice, on the host (a read of an accelerator's input and markers)."""
    seeds = markers.to(torch.int32)  # a C int, as SciPy reads them
    images, marks, starts = _rows(input), _rows(seeds), _rows(seeds.to(dtype))
    flooded = [_flood(image, mark, start, offsets) for image, mark, start in zip(images, marks, starts)]
    return _sync.to_device(torch.tensor(flooded, dtype=dtype).view(input.shape), input.device)


_WATERSHED = _ops.Table("watershed_ift", [
    _ops.Case("every call (at most four spatial axes)", "watershed_ift", lambda input, markers, offsets, dtype: True,
              _ops.kernels.watershed_ift),
], _host_flood)


def _output_dtype(output, markers: torch.Tensor) -> torch.dtype:
    """The result's dtype: the markers' by default (SciPy's), a signed integer one in any case."""
    if output is None:
        return markers.dtype
    dtype = output.dtype if isinstance(output, torch.Tensor) else output
    if not isinstance(dtype, torch.dtype):
        raise TypeError(f"output must be None, a torch.dtype or a torch.Tensor, got {type(output).__name__}")
    if dtype not in _MARKERS:  # SciPy: RuntimeError
        raise DtypeError(f"output must have a signed integer dtype, got {dtype}")
    return dtype


@_ops.opaque_under_compile(_ops.one_result("input", lambda kw: kw["markers"].dtype))
def watershed_ift(input, markers, structure=None, output=None):
    """Watershed from markers by the image foresting transform, on every slice.

    Parameters
    ----------
    input : torch.Tensor
        ``(B, C, *spatial)`` ``uint8`` or ``uint16`` values (SciPy's dtypes).
    markers : torch.Tensor
        Signed integer markers of the input's shape: positive values are
        objects, negative ones background markers, processed after the
        objects at equal cost; 0 is unmarked.
    structure : array_like, optional
        A ``(3,) * S`` connectivity shared by all slices (nonzero is a
        neighbour); None: ``generate_binary_structure(S, 1)``.
    output : torch.Tensor or torch.dtype, optional
        A signed integer tensor of the input's shape that receives the
        result, or the result's dtype (default: the markers' dtype).

    Returns
    -------
    torch.Tensor
        The labels of the basin each voxel joins: the markers' labels.

    Notes
    -----
    Identical to SciPy's results, ties included: the flood is SciPy's
    algorithm step for step (queue order, neighbour offsets that wrap from
    the end of one row to the start of the next, as SciPy's do). That
    algorithm is sequential within a slice, so the native kernel runs it
    exactly that way, and in parallel across slices: on the CPU slices in
    parallel threads, on CUDA a thread per ``(b, c)`` slice, every slice in
    one launch, with no host read (scratch on the device: 12 bytes a voxel
    and 8 a cost level, 512 KiB a slice for uint16 input). Without the
    kernel (the torch backend, more than four spatial axes) the flood runs
    in Python on the host, one slice after the other: a Python step per
    voxel and neighbour (about a second per million steps) and, on an
    accelerator, one read of the input and markers (``morphaug._sync``) and
    a copy of the result back. Markers are read as C ``int``, as SciPy
    reads them (values beyond int32 wrap).

    See Also
    --------
    scipy.ndimage.watershed_ift : the reference, applied to each ``(b, c)`` slice.

    Examples
    --------
    >>> import torch
    >>> from morphaug.ndimage import watershed_ift
    >>> image = torch.tensor([[[0, 1, 5, 2, 0]]], dtype=torch.uint8)
    >>> markers = torch.tensor([[[1, 0, 0, 0, 2]]], dtype=torch.int8)
    >>> watershed_ift(image, markers)
    tensor([[[1, 1, 2, 2, 2]]], dtype=torch.int8)
    """
    input = check_input(input)
    if input.dtype not in (torch.uint8, torch.uint16):  # SciPy: TypeError
        raise TypeError(f"input must be uint8 or uint16 (SciPy's watershed_ift dtypes), got {input.dtype}")
    if not isinstance(markers, torch.Tensor):
        raise TypeError(f"markers must be a torch.Tensor, got {type(markers).__name__}")
    check_dense(markers, "markers")
    if markers.dtype not in _MARKERS:  # SciPy: RuntimeError
        raise DtypeError(f"markers must have a signed integer dtype, got {markers.dtype}")
    if markers.shape != input.shape:  # SciPy: RuntimeError
        raise ArgumentError(f"markers has shape {tuple(markers.shape)}, expected the input's shape "
                            f"{tuple(input.shape)}")
    if markers.device != input.device:
        raise ValueError(f"markers is on {markers.device}, expected the input's device {input.device}")
    dtype = _output_dtype(output, markers)
    output = check_output(output, input)
    offsets = _offsets(_structure(structure, input.ndim - 2), input.shape[2:])
    return finish_output(_WATERSHED(input, input, markers, offsets, dtype), output)
