"""Grey-scale morphology: ``scipy.ndimage.grey_*`` and the ops built on them.

Each public function checks its arguments, normalises them into an
erosion-form :class:`~morphaug.ndimage._elements.Filter`
(``_grey_filter.prepare``) and runs the chain of min/max filters its op is
(``_grey_dispatch.filter_steps``, where the op's dispatch table chooses each
kernel); the compound ops then combine the results with NumPy's arithmetic,
as SciPy does. What users need to know (batching, SciPy parity and its few
differences) is in every public docstring (``_docs.GREY``).
"""

from __future__ import annotations

import numpy as np
import torch

from .. import _ops
from . import _unsigned
from ._docs import GREY, filler
from ._grey_dispatch import filter_steps
from ._grey_filter import prepare as _prepare
from ._grey_filter import reflected
from ._normalize import check_input, check_output, finish_output, written_in_place

__all__ = [
    "grey_erosion",
    "grey_dilation",
    "grey_opening",
    "grey_closing",
    "morphological_gradient",
    "morphological_laplace",
    "white_tophat",
    "black_tophat",
]


def _opening(filt):
    """SciPy's ``grey_opening`` as min/max steps: erosion, then dilation."""
    return [(filt, True), (reflected(filt), False)]


def _closing(filt):
    """SciPy's ``grey_closing`` as min/max steps: dilation, then erosion."""
    return [(reflected(filt), False), (filt, True)]


# --------------------------------------------------------------------------
# Arithmetic of the compound ops (NumPy's rules, as SciPy applies them)
# --------------------------------------------------------------------------

def _output_dtype(input: torch.Tensor, output) -> torch.dtype:
    if output is None:
        return input.dtype
    return output if isinstance(output, torch.dtype) else output.dtype


def _check_arithmetic(input: torch.Tensor, out_dtype: torch.dtype, name: str, *,
                      xor_bool: bool) -> None:
    """Raise where NumPy would: boolean subtract, or an unsafe cast into ``output``."""
    work = _unsigned.result_dtype(input.dtype, out_dtype)
    if work == torch.bool and not xor_bool:
        raise TypeError(
            f"{name} does not support boolean input (NumPy's boolean subtract, as "
            "used by SciPy, is not supported); convert the input to an integer dtype"
        )
    if not np.can_cast(_unsigned.numpy_dtype(work), _unsigned.numpy_dtype(out_dtype), casting="same_kind"):
        raise TypeError(
            f"output dtype {out_dtype} cannot hold the {work} result of {name} "
            "(NumPy's same_kind casting rule, as in SciPy)"
        )


def _ufunc(op, a: torch.Tensor, b: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """NumPy's ``op(a, b, out=<array of dtype>)``: NumPy's result dtype (wide unsigned: on the
    signed view, which wraps alike), stored as ``dtype``."""
    work = _unsigned.result_dtype(a.dtype, b.dtype)
    result = op(_unsigned.wrapping(a.to(work)), _unsigned.wrapping(b.to(work)))
    return _unsigned.from_wrapping(result, work).to(dtype)


# --------------------------------------------------------------------------
# Public functions
# --------------------------------------------------------------------------

_document = filler(GREY)
_opaque = _ops.opaque_under_compile(_ops.one_result("input", lambda kw: kw["input"].dtype))


@_opaque
@_document
def grey_erosion(input, size=None, footprint=None, structure=None, output=None,
                 mode="reflect", cval=0.0, origin=0, *, axes=None):
    """Grey-scale erosion: the minimum over the element, batched.

    ``out[x] = min_{y in footprint} input[x + y - c] - structure[y]`` with
    ``c = k // 2 + origin``.

    Parameters
    ----------
{parameters}
    Returns
    -------
    torch.Tensor
        The eroded input, in the input's dtype (or ``output``).

    Notes
    -----
{notes}
    See Also
    --------
    scipy.ndimage.grey_erosion

    Examples
    --------
    >>> import torch
    >>> from morphaug.ndimage import grey_erosion
    >>> x = torch.tensor([[[3., 1., 4., 1., 5., 9.]]])
    >>> grey_erosion(x, size=3)
    tensor([[[1., 1., 1., 1., 1., 5.]]])
    """
    input = check_input(input)
    output = check_output(output, input)
    filt = _prepare(input, size, footprint, structure, mode, cval, origin, axes)
    return finish_output(filter_steps(input, [(filt, True)], written_in_place(output, input)), output)


@_opaque
@_document
def grey_dilation(input, size=None, footprint=None, structure=None, output=None,
                  mode="reflect", cval=0.0, origin=0, *, axes=None):
    """Grey-scale dilation: the maximum over the reflected element, batched.

    As in SciPy, the element is reflected and ``origin`` negated (minus 1
    on axes of even length), so dilation is the adjoint of erosion.

    Parameters
    ----------
{parameters}
    Returns
    -------
    torch.Tensor
        The dilated input, in the input's dtype (or ``output``).

    Notes
    -----
{notes}
    See Also
    --------
    scipy.ndimage.grey_dilation

    Examples
    --------
    >>> import torch
    >>> from morphaug.ndimage import grey_dilation
    >>> x = torch.tensor([[[0, 0, 7, 0, 0, 0]]], dtype=torch.uint8)
    >>> grey_dilation(x, footprint=[1, 1, 0])
    tensor([[[0, 7, 7, 0, 0, 0]]], dtype=torch.uint8)
    """
    input = check_input(input)
    output = check_output(output, input)
    filt = reflected(_prepare(input, size, footprint, structure, mode, cval, origin, axes))
    return finish_output(filter_steps(input, [(filt, False)], written_in_place(output, input)), output)


@_opaque
@_document
def grey_opening(input, size=None, footprint=None, structure=None, output=None,
                 mode="reflect", cval=0.0, origin=0, *, axes=None):
    """Grey-scale opening: erosion, then dilation by the same element, batched.

    Parameters
    ----------
{parameters}
    Returns
    -------
    torch.Tensor
        The opened input, in the input's dtype (or ``output``).

    Notes
    -----
{notes}
    See Also
    --------
    scipy.ndimage.grey_opening

    Examples
    --------
    >>> import torch
    >>> from morphaug.ndimage import grey_opening
    >>> x = torch.tensor([[[1., 1., 9., 1., 5., 5., 5., 1.]]])
    >>> grey_opening(x, size=3)
    tensor([[[1., 1., 1., 1., 5., 5., 5., 1.]]])
    """
    input = check_input(input)
    output = check_output(output, input)
    filt = _prepare(input, size, footprint, structure, mode, cval, origin, axes)
    return finish_output(filter_steps(input, _opening(filt), written_in_place(output, input)), output)


@_opaque
@_document
def grey_closing(input, size=None, footprint=None, structure=None, output=None,
                 mode="reflect", cval=0.0, origin=0, *, axes=None):
    """Grey-scale closing: dilation, then erosion by the same element, batched.

    Parameters
    ----------
{parameters}
    Returns
    -------
    torch.Tensor
        The closed input, in the input's dtype (or ``output``).

    Notes
    -----
{notes}
    See Also
    --------
    scipy.ndimage.grey_closing

    Examples
    --------
    >>> import torch
    >>> from morphaug.ndimage import grey_closing
    >>> x = torch.tensor([[[5., 5., 0., 5., 1., 1., 1., 5.]]])
    >>> grey_closing(x, size=3)
    tensor([[[5., 5., 5., 5., 1., 1., 1., 5.]]])
    """
    input = check_input(input)
    output = check_output(output, input)
    filt = _prepare(input, size, footprint, structure, mode, cval, origin, axes)
    return finish_output(filter_steps(input, _closing(filt), written_in_place(output, input)), output)


@_opaque
@_document
def morphological_gradient(input, size=None, footprint=None, structure=None, output=None,
                           mode="reflect", cval=0.0, origin=0, *, axes=None):
    """Morphological gradient: dilation minus erosion, batched.

    Computed as SciPy does: in the input's dtype (integers wrap around), or,
    with ``output``, the erosion stored in ``output``'s dtype and subtracted
    from the dilation with NumPy's type promotion. Boolean input is a
    ``TypeError``, as in SciPy (NumPy has no boolean subtract).

    Parameters
    ----------
{parameters}
    Returns
    -------
    torch.Tensor
        ``grey_dilation(input) - grey_erosion(input)``.

    Notes
    -----
{notes}
    ``output`` given as a dtype is honoured (SciPy ignores it here).

    See Also
    --------
    scipy.ndimage.morphological_gradient

    Examples
    --------
    >>> import torch
    >>> from morphaug.ndimage import morphological_gradient
    >>> x = torch.tensor([[[0., 0., 2., 2., 2., 0.]]])
    >>> morphological_gradient(x, size=3)
    tensor([[[0., 2., 2., 0., 2., 2.]]])
    """
    input = check_input(input)
    output = check_output(output, input)
    dtype = _output_dtype(input, output)
    _check_arithmetic(input, dtype, "morphological_gradient", xor_bool=False)
    filt = _prepare(input, size, footprint, structure, mode, cval, origin, axes)
    dilated = filter_steps(input, [(reflected(filt), False)])
    eroded = filter_steps(input, [(filt, True)]).to(dtype)
    return finish_output(_ufunc(torch.sub, dilated, eroded, dtype), output)


@_opaque
@_document
def morphological_laplace(input, size=None, footprint=None, structure=None, output=None,
                          mode="reflect", cval=0.0, origin=0, *, axes=None):
    """Morphological Laplace: dilation + erosion - 2 * input, batched.

    Computed in SciPy's order, ``((dilation + erosion) - input) - input``,
    each step in NumPy's promoted dtype and stored in the result's dtype (the
    input's, or ``output``'s): integers wrap around as in SciPy. Boolean
    input is a ``TypeError``, as in SciPy.

    Parameters
    ----------
{parameters}
    Returns
    -------
    torch.Tensor
        ``grey_dilation(input) + grey_erosion(input) - 2 * input``.

    Notes
    -----
{notes}
    ``output`` given as a dtype is honoured (SciPy ignores it here).

    See Also
    --------
    scipy.ndimage.morphological_laplace

    Examples
    --------
    >>> import torch
    >>> from morphaug.ndimage import morphological_laplace
    >>> x = torch.tensor([[[0., 0., 2., 2., 2., 0.]]])
    >>> morphological_laplace(x, size=3)
    tensor([[[ 0.,  2., -2.,  0., -2.,  2.]]])
    """
    input = check_input(input)
    output = check_output(output, input)
    dtype = _output_dtype(input, output)
    _check_arithmetic(input, dtype, "morphological_laplace", xor_bool=False)
    filt = _prepare(input, size, footprint, structure, mode, cval, origin, axes)
    dilated = filter_steps(input, [(reflected(filt), False)])
    result = filter_steps(input, [(filt, True)]).to(dtype)
    result = _ufunc(torch.add, dilated, result, dtype)
    result = _ufunc(torch.sub, result, input, dtype)
    result = _ufunc(torch.sub, result, input, dtype)
    return finish_output(result, output)


@_opaque
@_document
def white_tophat(input, size=None, footprint=None, structure=None, output=None,
                 mode="reflect", cval=0.0, origin=0, *, axes=None):
    """White top-hat: the input minus its grey opening, batched.

    As in SciPy, boolean input (with a boolean result) uses exclusive or;
    otherwise the subtraction follows NumPy's promotion and integers wrap.

    Parameters
    ----------
{parameters}
    Returns
    -------
    torch.Tensor
        ``input - grey_opening(input)``.

    Notes
    -----
{notes}
    See Also
    --------
    scipy.ndimage.white_tophat

    Examples
    --------
    >>> import torch
    >>> from morphaug.ndimage import white_tophat
    >>> x = torch.tensor([[[1., 1., 9., 1., 5., 5., 5., 1.]]])
    >>> white_tophat(x, size=3)
    tensor([[[0., 0., 8., 0., 0., 0., 0., 0.]]])
    """
    input = check_input(input)
    output = check_output(output, input)
    dtype = _output_dtype(input, output)
    _check_arithmetic(input, dtype, "white_tophat", xor_bool=True)
    filt = _prepare(input, size, footprint, structure, mode, cval, origin, axes)
    opened = filter_steps(input, _opening(filt)).to(dtype)
    if input.dtype == torch.bool and dtype == torch.bool:
        result = input ^ opened
    else:
        result = _ufunc(torch.sub, input, opened, dtype)
    return finish_output(result, output)


@_opaque
@_document
def black_tophat(input, size=None, footprint=None, structure=None, output=None,
                 mode="reflect", cval=0.0, origin=0, *, axes=None):
    """Black top-hat: the grey closing minus the input, batched.

    As in SciPy, boolean input (with a boolean result) uses exclusive or;
    otherwise the subtraction follows NumPy's promotion and integers wrap.

    Parameters
    ----------
{parameters}
    Returns
    -------
    torch.Tensor
        ``grey_closing(input) - input``.

    Notes
    -----
{notes}
    See Also
    --------
    scipy.ndimage.black_tophat

    Examples
    --------
    >>> import torch
    >>> from morphaug.ndimage import black_tophat
    >>> x = torch.tensor([[[5., 5., 0., 5., 1., 1., 1., 5.]]])
    >>> black_tophat(x, size=3)
    tensor([[[0., 0., 5., 0., 0., 0., 0., 0.]]])
    """
    input = check_input(input)
    output = check_output(output, input)
    dtype = _output_dtype(input, output)
    _check_arithmetic(input, dtype, "black_tophat", xor_bool=True)
    filt = _prepare(input, size, footprint, structure, mode, cval, origin, axes)
    closed = filter_steps(input, _closing(filt)).to(dtype)
    if input.dtype == torch.bool and dtype == torch.bool:
        result = closed ^ input
    else:
        result = _ufunc(torch.sub, closed, input, dtype)
    return finish_output(result, output)
