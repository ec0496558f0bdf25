"""Connected-component labelling: SciPy's ``label`` on ``(B, C, *spatial)`` tensors.

Backends
--------
:func:`label` normalises its arguments, then runs its dispatch table: the
native ``label`` kernel where it is built (at most 8 spatial axes; CPU: a
union-find over the foreground runs of the rows, or over the voxels for a
structure without the link along the last axis, per chunk of a slice,
slices and chunks in parallel; CUDA: a union-find per tile in shared memory, merged across tiles with
atomics), else the torch backend (``morphaug.ndimage._torch.label``:
min-label propagation with hooking and pointer jumping). Both keep each
component's root at its minimum raster index and number the roots by a
prefix sum, which is SciPy's numbering.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from .. import _ops
from ._errors import ArgumentError
from ._normalize import check_dense, check_input, check_output, foreground, tensor_argument
from ._structure import generate_binary_structure
from ._torch import label as _torch_label

__all__ = ["label"]


def _structure(structure, rank: int) -> np.ndarray:
    """``structure`` as SciPy checks it: a centrosymmetric ``(3,) * rank`` bool array
    (nonzero is true); None is the cross."""
    if structure is None:
        return generate_binary_structure(rank, 1).numpy()
    if isinstance(structure, torch.Tensor):
        check_dense(structure, "structure")
        if structure.is_complex():
            raise TypeError(f"structure must be real, got complex dtype {structure.dtype}")
        values = structure.tolist() if structure.device.type == "cpu" else tensor_argument(structure)
        structure = np.asarray(values).reshape(structure.shape)
    try:
        array = np.asarray(structure)
    except (TypeError, ValueError) as error:
        raise TypeError(f"structure must be array_like, got {type(structure).__name__}") from error
    if array.dtype.kind not in "biuf":
        raise TypeError(f"structure must be a real array, got dtype {array.dtype}")
    if array.ndim != rank:  # SciPy: RuntimeError
        raise ArgumentError(f"structure must have one dimension per spatial axis of input ({rank}), "
                             f"got shape {array.shape}")
    if array.shape != (3,) * rank:
        raise ValueError(f"structure dimensions must be equal to 3, got shape {array.shape}")
    flags = array != 0
    if not np.array_equal(flags, flags[(slice(None, None, -1),) * rank]):  # SciPy: AssertionError
        raise ValueError("structure must be centrosymmetric (equal to itself reversed along every axis), "
                         f"got {flags.astype(int).tolist()}")
    return flags


def _default_dtype(spatial) -> torch.dtype:
    """int32 labels, int64 for slices of ``2**31`` voxels or more (SciPy: int32, intp when needed)."""
    return torch.int32 if math.prod(spatial) <= torch.iinfo(torch.int32).max else torch.int64


def _most_labels(spatial, structure: np.ndarray) -> int:
    """The most components a slice can hold, from its shape: with a face neighbour along an
    axis of ``n`` voxels, each line along it holds at most ``ceil(n / 2)`` runs."""
    voxels = math.prod(spatial)
    bound = voxels
    for axis, n in enumerate(spatial):
        face = [1] * len(spatial)
        face[axis] = 0
        if voxels and structure[tuple(face)]:
            bound = min(bound, voxels // n * ((n + 1) // 2))
    return bound


def _largest_label(dtype: torch.dtype) -> int:
    """The largest label ``dtype`` holds with every smaller one: a float's consecutive integers."""
    if dtype == torch.bool:
        return 1
    if dtype.is_floating_point:
        return int(2 / torch.finfo(dtype).eps)
    return torch.iinfo(dtype).max


def _returned(kw):
    x = kw["input"]
    counts = (tuple(x.shape[:2]), torch.int64)
    output = kw.get("output")
    if isinstance(output, torch.Tensor):
        return [counts]
    dtype = output if isinstance(output, torch.dtype) else _default_dtype(x.shape[2:])
    return [(tuple(x.shape), dtype), counts]


def _rebuild(kw, tensors):
    return tensors[0] if isinstance(kw.get("output"), torch.Tensor) else tuple(tensors)


_LABEL = _ops.Table("label", [
    _ops.Case("every input", "label", lambda mask, structure, dtype: True, _ops.kernels.label),
], _torch_label.label)


@_ops.opaque_under_compile(_ops.Results(("input",), _returned, _rebuild, written=("output",)))
def label(input, structure=None, output=None):
    """Label the connected components (features) of every slice.

    Every nonzero voxel belongs to a feature: the voxels connected to it
    through ``structure``. Features are numbered ``1 .. n`` in the raster
    order of their first voxel, the background is 0.

    Parameters
    ----------
    input : torch.Tensor
        ``(B, C, *spatial)``, any real dtype (``uint16/32/64`` included);
        nonzero (NaN included) is a feature. It is never modified.
    structure : array_like, optional
        Connectivity, a centrosymmetric array of shape ``(3,) * S`` for ``S``
        spatial axes (nonzero is true; the centre does not matter), shared by
        every slice: a tensor, NumPy array or nested lists. Default: the
        cross, ``generate_binary_structure(S, 1)``.
    output : torch.Tensor or torch.dtype, optional
        The dtype of the labels (any real dtype), or a tensor of the input's
        shape and device that receives them (it may be ``input`` itself).
        Default: ``torch.int32`` (``torch.int64`` for slices of ``2**31``
        voxels or more).

    Returns
    -------
    labels : torch.Tensor
        ``(B, C, *spatial)`` labels; not returned when ``output`` is a tensor.
    num_features : torch.Tensor
        ``torch.int64`` of shape ``(B, C)``: the number of features of each
        slice, on the input's device.

    Raises
    ------
    ValueError
        A ``structure`` of the wrong rank (also a ``RuntimeError``, as
        SciPy's), not 3 along every axis, or not centrosymmetric (SciPy:
        ``AssertionError``); an ``output`` tensor of the wrong shape or
        device; an ``output`` dtype that some slice's labels could overflow
        (also a ``RuntimeError``, as SciPy's).
    TypeError
        A complex or non-numeric ``input``, ``structure`` or ``output``.

    Notes
    -----
    Batching: every ``(b, c)`` slice is labelled as SciPy labels that slice
    alone, with its own numbering from 1, in one pass over the batch.

    SciPy parity: the labels are identical to SciPy's, numbering included.
    Differences: ``num_features`` is a ``(B, C)`` tensor on the input's
    device, not an int, so that nothing is read back to the host. Whether
    an ``output`` dtype is wide enough is decided from the shape alone,
    before labelling: it must hold the most features a slice of that shape
    can have (``N`` voxels, or ``N / n * ceil(n / 2)`` when the structure
    joins face neighbours along an axis of ``n`` voxels), where SciPy tries
    and raises ``RuntimeError`` only when the labels do not fit. Floating
    ``output`` dtypes hold labels up to their last consecutive integer
    (``2**24`` for float32). Only a structure shared by every slice is
    taken (SciPy's label has no batch to vary it over).

    Host syncs: none on the native kernels; the torch backend reads one flag
    per chunk of rounds (*Labelling* notes, docs/parity.md). A
    structure given as an accelerator tensor is read back once.

    See Also
    --------
    scipy.ndimage.label : the reference, applied to each ``(b, c)`` slice.

    Examples
    --------
    >>> import torch
    >>> from morphaug.ndimage import label
    >>> x = torch.tensor([[[[0, 1, 1, 0], [0, 0, 0, 1], [1, 0, 0, 1]]]])
    >>> labels, n = label(x)
    >>> labels[0, 0]
    tensor([[0, 1, 1, 0],
            [0, 0, 0, 2],
            [3, 0, 0, 2]], dtype=torch.int32)
    >>> n
    tensor([[3]])
    >>> label(x, structure=torch.ones(3, 3))[1]
    tensor([[2]])
    """
    input = check_input(input)
    spatial = tuple(input.shape[2:])
    structure = _structure(structure, len(spatial))
    output = check_output(output, input)
    wanted = output.dtype if isinstance(output, torch.Tensor) else output
    if wanted is not None and _most_labels(spatial, structure) > _largest_label(wanted):
        raise ArgumentError(
            f"output dtype {wanted} cannot hold the labels of a slice of shape {spatial}: it may have "
            f"{_most_labels(spatial, structure)} features (largest label {_largest_label(wanted)})")
    dtype = _default_dtype(spatial)
    if input.numel() == 0:
        labels = torch.zeros(input.shape, dtype=dtype, device=input.device)
        counts = torch.zeros(input.shape[:2], dtype=torch.int64, device=input.device)
    else:
        mask = foreground(input)
        labels, counts = _LABEL(mask, mask, structure, dtype)
    if isinstance(output, torch.Tensor):
        output.copy_(labels)
        return counts
    return labels.to(wanted or dtype), counts
