"""One doc-filler for ``morphaug.ndimage``: repeated docstring text, written once.

A public function's docstring names a shared text by a line ``{name}`` (no
indentation); :func:`filler` replaces it with the text, which carries its
own indentation. The texts are SciPy-style ``Parameters`` entries (and the
grey ops' notes), so ``help()`` shows each function's whole documentation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

__all__ = ["BINARY", "DISTANCE", "GREY", "filler"]


def filler(texts: Mapping[str, str]) -> Callable:
    """A decorator that replaces each ``{name}`` in a docstring by ``texts[name]``."""
    def document(function):
        doc = function.__doc__
        for name, text in texts.items():
            doc = doc.replace("{" + name + "}", text)
        function.__doc__ = doc
        return function
    return document


# ---------------------------------------------------------------- grey ops

_GREY_PARAMETERS = """\
    input : torch.Tensor
        ``(B, C, *spatial)``, bool, integer or floating.
    size : int or sequence of int, optional
        Shape of a flat, all-true element (one entry per axis in ``axes``).
        Ignored (with a ``UserWarning``) when ``footprint`` is given.
    footprint : array-like or torch.Tensor, optional
        Flat element: which positions take part. Shared ``(*k)``, per sample
        ``(B, *k)`` or per sample and channel ``(B, C, *k)``; its ``k`` dims
        follow the filtered axes in increasing order. An all-true footprint
        equals ``size=footprint.shape``.
    structure : array-like or torch.Tensor, optional
        Non-flat element (float64 values subtracted by erosion, added by
        dilation), same layouts as ``footprint`` and the same shape when both
        are given. Takes precedence over ``footprint`` and ``size``.
    output : torch.Tensor or torch.dtype, optional
        A tensor of the input's shape and device that receives the result,
        or the dtype of a new result. Default: the input's dtype.
    mode : {'reflect', 'constant', 'nearest', 'mirror', 'wrap', 'grid-constant', 'grid-mirror', 'grid-wrap'} or sequence
        SciPy's border rule; a sequence (one per axis) only for separable
        filters (``size`` or an all-true footprint).
    cval : scalar, optional
        Border value for ``mode='constant'``, cast to the input dtype.
    origin : int or sequence of int, optional
        Element placement, ``-(k // 2) <= origin <= (k - 1) // 2`` per axis.
    axes : int or sequence of int, optional
        Spatial axes to filter (``0 .. S-1``); default all.
"""

_GREY_NOTES = """\
    Batching: every ``(b, c)`` slice is filtered as SciPy filters that slice
    alone, with its own element when the element is per sample. ``size``,
    ``origin`` and ``mode`` sequences follow ``axes``; the dimensions of
    ``footprint`` / ``structure`` follow the filtered axes in increasing
    order (SciPy's footprint expansion). A footprint on the CPU (or
    array-like) is read on the host: all true, it is a ``size``; all false,
    a ``ValueError``. One on an accelerator is never read back (no host
    sync): each of its positions is masked on the device, a per-axis
    ``mode`` sequence is accepted, and a sample whose footprint is all false
    gets the identity (the dtype's extreme; SciPy refuses it).

    Gradients: differentiable on every backend, each output's gradient going
    to one input voxel that attains it (``max_pool``'s subgradient).

    SciPy parity: identical results for every dtype, ``structure``
    arithmetic included (float64 at the element's first position, the
    structure cast to the input dtype elsewhere; bool input with SciPy's
    byte arithmetic). A NaN in the window gives NaN (SciPy's result depends
    on where it sits). Differences, all where SciPy overflows, rounds or is
    inconsistent with itself:

    * a ``structure`` that pushes an integer result out of the dtype's range
      saturates (SciPy wraps around); ``uint64`` input with a ``structure``
      is a ``TypeError``; ``int64`` / ``uint64`` values beyond 2**53 are
      exact without ``structure`` (SciPy rounds them through float64);
    * bool input with a ``structure``: a constant-mode ``cval`` counts as 0
      or 1, and a non-bool ``output`` receives the bool result (SciPy: the
      unwrapped float64 extreme of the last step);
    * unsorted ``axes`` follow the rule above in every case (SciPy maps an
      all-true footprint's dimensions, and with every axis listed
      ``origin``, in other orders);
    * ``size`` must be ints ``>= 1`` (SciPy skips an axis of size 0); a box
      wider than its axis costs no more than the whole axis;
    * a ``cval`` that an integer dtype cannot hold is a ``ValueError`` with a
      constant mode; a sequence of modes for a non-box element read on the
      host is a ``ValueError`` (SciPy: ``RuntimeError``); an all-false
      footprint is a ``ValueError`` even with ``structure``.
"""

#: ``{parameters}``: every grey op's parameters; ``{notes}``: their shared notes.
GREY = {"parameters": _GREY_PARAMETERS, "notes": _GREY_NOTES}


# -------------------------------------------------------------- binary ops

#: One ``Parameters`` entry per name (the ``Returns`` entry as ``returns``);
#: ``steps`` is erosion's and dilation's run from ``iterations`` to ``brute_force``.
BINARY = {
    "input": """\
    input : torch.Tensor
        ``(B, C, *spatial)``, any real dtype; nonzero is true.""",
    "structure": """\
    structure : array_like, optional
        Element ``(*k)``, ``(B, *k)`` or ``(B, C, *k)``; default: the cross.""",
    "iterations": """\
    iterations : int, optional
        Repeat count; below 1, repeat until the result stops changing.""",
    "mask": """\
    mask : array_like, optional
        Only voxels where ``mask`` is true are changed.""",
    "mask_twice": """\
    mask : array_like, optional
        Only voxels where ``mask`` is true are changed (in both steps).""",
    "output": """\
    output : torch.Tensor or torch.dtype, optional
        Tensor receiving the result, or the dtype of a new one.""",
    "border_value": """\
    border_value : int, optional
        Value of the voxels outside the input (0 or 1).""",
    "border_value_twice": """\
    border_value : int, optional
        Value of the voxels outside the input, in both steps.""",
    "origin": """\
    origin : int or sequence of int, optional
        Placement of the element, per filtered axis.""",
    "brute_force": """\
    brute_force : bool, optional
        Accepted for compatibility; the result does not depend on it.""",
    "returns": """\
    torch.Tensor
        ``(B, C, *spatial)``, ``torch.bool`` unless ``output`` says otherwise.""",
}
BINARY["steps"] = "\n".join(BINARY[name] for name in (
    "iterations", "mask", "output", "border_value", "origin", "brute_force"))


# ----------------------------------------------------- distance transforms

#: One ``Parameters`` entry per name.
DISTANCE = {
    "input": """\
    input : torch.Tensor
        ``(B, C, *spatial)``, any real dtype; nonzero is foreground.""",
    "return_distances": """\
    return_distances : bool, optional
        Whether to compute the distance transform. Default True.""",
    "return_indices": """\
    return_indices : bool, optional
        Whether to compute the feature transform. Default False.""",
    "indices": """\
    indices : torch.Tensor, optional
        ``int32`` tensor ``(S, B, C, *spatial)`` receiving the indices.""",
}
