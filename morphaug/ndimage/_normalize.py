"""Argument normalisation shared by every ``morphaug.ndimage`` function.

SciPy's public functions normalise their arguments in ``_ni_support`` and then
call a private worker; this module plays that role for batched tensors.

Conventions (see ``morphaug.ndimage`` module docstring):

* ``input`` is a tensor ``(B, C, *spatial)`` with at least one spatial axis.
* ``axes`` index the *spatial* axes (``0 .. S-1``, negatives from the end),
  exactly as SciPy's ``axes`` index the axes of one ``(b, c)`` slice.
* A structuring element (``structure``, ``footprint``, ``mask`` of elements)
  has ``len(axes)`` trailing dimensions and is shared ``(*k)``, per sample
  ``(B, *k)`` or per sample and channel ``(B, C, *k)``: the rank difference
  decides. It is returned as a ``(B|1, C|1, *k)`` tensor on the input's device,
  copied there without blocking the host when given on the host.
* Tensor arguments are dense (strided): a sparse layout or a nested tensor is
  a ``TypeError`` naming the argument. A tensor that receives a result
  (``output=``, ``distances=``, ``indices=``) must not have elements sharing
  memory (e.g. made by ``expand``): a ``ValueError`` naming it.
"""

from __future__ import annotations

import operator
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence

import numpy as np
import torch

from .. import _sync
from .._checks import check_int, check_mode, is_int

__all__ = [
    "check_input",
    "check_dense",
    "check_no_overlap",
    "foreground",
    "normalize_axes",
    "tensor_argument",
    "normalize_sequence",
    "normalize_modes",
    "normalize_origin",
    "validate_origin",
    "normalize_element",
    "normalize_iterations",
    "normalize_mask",
    "check_output",
    "written_in_place",
    "finish_output",
]

_SUPPORTED_DTYPES = (
    torch.bool,
    torch.uint8,
    torch.uint16,
    torch.uint32,
    torch.uint64,
    torch.int8,
    torch.int16,
    torch.int32,
    torch.int64,
    torch.float16,
    torch.bfloat16,
    torch.float32,
    torch.float64,
)


def foreground(tensor: torch.Tensor) -> torch.Tensor:
    """``tensor != 0`` as a bool tensor; a bool tensor itself (to be read only).

    Comparing a bool tensor with 0 costs a full conversion on CPU, many times a copy.
    """
    return tensor if tensor.dtype == torch.bool else tensor != 0


def check_dense(tensor: torch.Tensor, name: str) -> torch.Tensor:
    """Refuse sparse and other non-strided layouts, and nested tensors: no op takes them."""
    if tensor.is_nested:
        raise TypeError(f"{name} must be a dense (strided) tensor, got a nested tensor")
    if tensor.layout != torch.strided:
        raise TypeError(f"{name} must be a dense (strided) tensor, got layout {tensor.layout}; "
                        "use .to_dense()")
    return tensor


def check_no_overlap(tensor: torch.Tensor, name: str) -> torch.Tensor:
    """Check that ``tensor`` can receive a result: no two of its elements share memory."""
    if torch._debug_has_internal_overlap(tensor) == 1:  # what copy_ refuses
        raise ValueError(
            f"{name} has elements that share memory (e.g. a tensor made by expand(), with "
            f"strides {tuple(tensor.stride())}), so it cannot receive a result; clone() it"
        )
    return tensor


def check_input(input, name: str = "input") -> torch.Tensor:
    """Check that ``input`` is a real ``(B, C, *spatial)`` tensor."""
    if not isinstance(input, torch.Tensor):
        raise TypeError(
            f"{name} must be a torch.Tensor of shape (B, C, *spatial), "
            f"got {type(input).__name__}"
        )
    check_dense(input, name)
    if input.is_complex():
        raise TypeError(f"{name} must be real, got complex dtype {input.dtype}")
    if input.dtype not in _SUPPORTED_DTYPES:
        raise TypeError(
            f"{name} has unsupported dtype {input.dtype}; supported: "
            + ", ".join(str(d).replace("torch.", "") for d in _SUPPORTED_DTYPES)
        )
    if input.ndim < 3:
        raise ValueError(
            f"{name} must have shape (B, C, *spatial) with at least one spatial "
            f"axis, got a {input.ndim}-D tensor of shape {tuple(input.shape)}"
        )
    return input


def normalize_axes(axes, rank: int) -> tuple[int, ...]:
    """Spatial axes as a tuple of non-negative ints (SciPy's ``_check_axes``)."""
    if axes is None:
        return tuple(range(rank))
    if is_int(axes) and not isinstance(axes, torch.Tensor):
        axes = (axes,)
    if isinstance(axes, torch.Tensor):
        axes = tensor_argument(axes)
    if not isinstance(axes, Iterable) or isinstance(axes, str):
        raise TypeError(f"axes must be an int, a sequence of ints or None, got {axes!r}")
    result = []
    for ax in axes:
        try:
            ax = operator.index(ax)
        except TypeError:
            raise TypeError(f"axes must contain ints, got {ax!r}") from None
        if not -rank <= ax < rank:
            raise ValueError(
                f"axes: axis {ax} is out of range for {rank} spatial axes "
                "(axes index the spatial axes of (B, C, *spatial))"
            )
        result.append(ax % rank)
    if len(set(result)) != len(result):
        raise ValueError(f"axes must be unique, got {tuple(axes)!r}")
    if not result:
        raise ValueError("axes must name at least one spatial axis")
    return tuple(result)


def tensor_argument(value: torch.Tensor):
    """``value.tolist()``: an argument given as a tensor, needed on the host (a host read on an accelerator)."""
    return value.tolist() if value.device.type == "cpu" else _sync.host_read(value, "tensor arguments")


def normalize_sequence(value, n: int, name: str) -> list:
    """A scalar repeated ``n`` times, or a sequence checked to have length ``n``."""
    if isinstance(value, torch.Tensor):
        value = tensor_argument(value)
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if not isinstance(value, str) and isinstance(value, Iterable):
        value = list(value)
        if len(value) != n:
            raise ValueError(
                f"{name} must be a scalar or a sequence of length {n} "
                f"(one per axis), got length {len(value)}"
            )
        return value
    return [value] * n


def normalize_modes(mode, n: int) -> list[str]:
    """One canonical mode per axis (a sequence of modes is allowed)."""
    return [check_mode(m) for m in normalize_sequence(mode, n, "mode")]


def normalize_origin(origin, n: int, name: str = "origin") -> list[int]:
    values = normalize_sequence(origin, n, name)
    result = []
    for value in values:
        try:
            result.append(operator.index(value))
        except TypeError:
            raise TypeError(f"{name} must contain ints, got {value!r}") from None
    return result


def validate_origin(origin: Sequence[int], shape: Sequence[int], name: str = "origin"):
    """SciPy's rule: ``-(k // 2) <= origin <= (k - 1) // 2`` on every axis."""
    for o, k in zip(origin, shape):
        if o < -(k // 2) or o > (k - 1) // 2:
            raise ValueError(
                f"{name} {tuple(origin)} is out of range for an element of shape "
                f"{tuple(shape)}: each origin must lie in [-(k // 2), (k - 1) // 2]"
            )


def normalize_iterations(iterations) -> int:
    return check_int(iterations, "iterations")


def host_tensor(value) -> torch.Tensor:
    """An array-like ``value`` (not a tensor) as a CPU tensor, sharing a NumPy array's memory
    where torch can: a view with negative strides (``np.flip``, ``a[::-1]``) is copied."""
    array = np.asarray(value)
    try:
        return torch.as_tensor(array)
    except ValueError:  # "At least one stride in the given numpy array is negative"
        return torch.as_tensor(array.copy())


def _as_tensor(value, name: str) -> torch.Tensor:
    """``value`` as a tensor where it is (array-likes on the host)."""
    if isinstance(value, torch.Tensor):
        tensor = check_dense(value, name)
    else:
        try:
            tensor = host_tensor(value)
        except (TypeError, ValueError, RuntimeError) as error:
            raise TypeError(f"{name} must be array-like, got {type(value).__name__}") from error
    if tensor.is_complex():
        raise TypeError(f"{name} must be real, got complex dtype {tensor.dtype}")
    return tensor


#: Small host elements on accelerators, by device, stream and content: a pipeline calls with
#: the same few (the default cross among them), and each is copied to a device once, not on
#: every call. Keyed by the stream too, so that a copy is only read on the stream it was
#: queued on (and freed in that stream's order). Elements of more than
#: ``_DEVICE_COPIES_SIZE`` values are staged on every call.
_DEVICE_COPIES: OrderedDict = OrderedDict()
_DEVICE_COPIES_COUNT = 64
_DEVICE_COPIES_SIZE = 4096
_DEVICE_COPIES_LOCK = threading.Lock()


def stream_key(device: torch.device):
    """What identifies the current stream of ``device`` (None where streams do not matter)."""
    if device.type == "cuda" and torch.cuda.is_available():
        return torch.cuda.current_stream(device).cuda_stream
    return None


def device_element(host: torch.Tensor, device: torch.device) -> torch.Tensor:
    """A normalised host element on ``device`` (``host`` itself on the CPU), never modified:
    copied without blocking (:func:`morphaug._sync.to_device`), once per device and stream
    for small elements (:data:`_DEVICE_COPIES`)."""
    if device.type == "cpu":
        return host
    key = None
    if host.numel() <= _DEVICE_COPIES_SIZE and type(host) is torch.Tensor:
        content = host.contiguous().view(-1).view(torch.uint8).numpy().tobytes()
        key = (str(device), stream_key(device), host.dtype, tuple(host.shape), content)
        with _DEVICE_COPIES_LOCK:
            tensor = _DEVICE_COPIES.get(key)
            if tensor is not None:
                _DEVICE_COPIES.move_to_end(key)
                return tensor
    tensor = _sync.to_device(host, device)
    if key is not None and type(tensor) is torch.Tensor:  # not a FakeTensor of a tracing mode
        with _DEVICE_COPIES_LOCK:
            _DEVICE_COPIES[key] = tensor
            while len(_DEVICE_COPIES) > _DEVICE_COPIES_COUNT:
                _DEVICE_COPIES.popitem(last=False)
    return tensor


def normalize_element(element, input: torch.Tensor, n_axes: int, name: str,
                      dtype: torch.dtype) -> torch.Tensor:
    """A structuring element as a ``(B|1, C|1, *k)`` tensor on ``input.device``.

    ``element`` has ``n_axes`` trailing dimensions and 0, 1 or 2 leading ones:
    shared ``(*k)``, per sample ``(B, *k)``, per sample and channel ``(B, C, *k)``.
    A host element is normalised on the host and then copied (:func:`device_element`);
    one given on the input's device stays there.
    """
    tensor = _as_tensor(element, name)
    if tensor.device.type != "cpu":
        tensor = tensor.to(input.device)
    extra = tensor.ndim - n_axes
    batch, channels = input.shape[0], input.shape[1]
    if extra not in (0, 1, 2):
        raise ValueError(
            f"{name} must have {n_axes} dimensions (shared), {n_axes + 1} "
            f"(per sample, (B, *k)) or {n_axes + 2} (per sample and channel, "
            f"(B, C, *k)) for {n_axes} filtered axes; got shape {tuple(tensor.shape)}"
        )
    if extra >= 1 and tensor.shape[0] != batch:
        raise ValueError(
            f"{name} of shape {tuple(tensor.shape)} is per sample but its first "
            f"dimension {tensor.shape[0]} does not match the batch size {batch}"
        )
    if extra == 2 and tensor.shape[1] != channels:
        raise ValueError(
            f"{name} of shape {tuple(tensor.shape)} is per sample and channel but "
            f"its second dimension {tensor.shape[1]} does not match the {channels} channels"
        )
    if any(k < 1 for k in tensor.shape[extra:]):
        raise ValueError(f"{name} must not be empty, got shape {tuple(tensor.shape)}")
    if dtype == torch.bool:
        tensor = tensor if tensor.dtype == torch.bool else tensor != 0
    else:
        # Reading values back is a host sync: only host elements are checked.
        if tensor.device.type == "cpu" and tensor.dtype.is_floating_point and torch.isnan(tensor).any():
            raise ValueError(f"{name} must not contain NaN")
        tensor = tensor.to(dtype)
    if extra == 0:
        tensor = tensor.view(1, 1, *tensor.shape)
    elif extra == 1:
        tensor = tensor.unsqueeze(1)
    return device_element(tensor, input.device) if tensor.device.type == "cpu" else tensor


def normalize_mask(mask, input: torch.Tensor, name: str = "mask") -> torch.Tensor | None:
    """A boolean mask broadcastable to ``input`` (same shape, or ``(*spatial)``)."""
    if mask is None:
        return None
    tensor = _as_tensor(mask, name)
    if tuple(tensor.shape) not in (tuple(input.shape), tuple(input.shape[2:])):
        raise ValueError(
            f"{name} must have the input's shape {tuple(input.shape)} or its spatial "
            f"shape {tuple(input.shape[2:])}, got {tuple(tensor.shape)}"
        )
    tensor = _sync.to_device(foreground(tensor), input.device)
    return tensor if tensor.shape == input.shape else tensor.expand(input.shape)


def check_output(output, input: torch.Tensor, name: str = "output",
                 dtypes: Sequence[torch.dtype] | None = None):
    """Validate ``output``: ``None``, a ``torch.dtype`` or a pre-allocated tensor.

    As in SciPy, a dtype asks for a new result of that dtype and a tensor of
    the input's shape (and device) receives the result. ``dtypes`` restricts
    the accepted dtypes (default: any real dtype).
    """
    if output is None:
        return None
    if isinstance(output, torch.dtype):
        if output.is_complex or output not in _SUPPORTED_DTYPES:
            raise TypeError(f"{name} dtype {output} is not supported")
        if dtypes is not None and output not in dtypes:
            raise TypeError(
                f"{name} must have dtype " + " or ".join(str(d) for d in dtypes)
                + f", got {output}"
            )
        return output
    if not isinstance(output, torch.Tensor):
        raise TypeError(
            f"{name} must be None, a torch.dtype or a torch.Tensor, got {type(output).__name__}"
        )
    check_dense(output, name)
    if tuple(output.shape) != tuple(input.shape):
        raise ValueError(
            f"{name} has shape {tuple(output.shape)}, expected the input's shape "
            f"{tuple(input.shape)}"
        )
    if output.device != input.device:
        raise ValueError(f"{name} is on {output.device}, expected the input's device {input.device}")
    if output.is_complex():
        raise TypeError(f"{name} must be real, got complex dtype {output.dtype}")
    if dtypes is not None and output.dtype not in dtypes:
        raise TypeError(
            f"{name} must have dtype "
            + " or ".join(str(d) for d in dtypes)
            + f", got {output.dtype}"
        )
    return check_no_overlap(output, name)


def written_in_place(output, input: torch.Tensor, dtype: torch.dtype | None = None) -> torch.Tensor | None:
    """``output`` (checked) when a kernel can write the result straight into it: a contiguous
    tensor of the result's ``dtype`` (default: the input's) that shares no memory with the
    input. Else None: the result is a new tensor, which :func:`finish_output` casts or copies."""
    if (isinstance(output, torch.Tensor) and output.dtype == (dtype or input.dtype)
            and output.is_contiguous() and not torch._C._overlaps(output, input)):
        return output
    return None


def finish_output(result: torch.Tensor, output) -> torch.Tensor:
    """Return ``result``, cast to a requested dtype or copied into ``output`` (unless it is
    ``output``, written in place)."""
    if output is None or result is output:
        return result
    if isinstance(output, torch.dtype):
        return result.to(output)
    output.copy_(result)
    return output
