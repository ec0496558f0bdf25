"""Which backend runs an op: the native kernels of ``morphaug._C`` or pure PyTorch.

``morphaug._C`` is optional: it is built at install time when a compiler is
found (CUDA kernels too when torch is a CUDA build and nvcc is found), and is
loaded lazily on first use. When it is missing, or not built for a device,
every op runs on the pure-torch backend.

The environment variable ``MORPHAUG_BACKEND`` overrides the choice, read at
each call:

``auto`` (default)
    native when its kernels are built for the input's device and dtype, else torch.
``torch``
    always the pure-torch backend.
``native``
    ops that have native kernels must use them: a RuntimeError says why when
    they cannot (not built, other device or dtype). Ops without native kernels
    still run on torch.

``MORPHAUG_EMULATE_CUDA=1`` (tests only, read at each call) sends the native
calls on CPU tensors to the CUDA launchers instead, run on the CPU by the
emulator of the test-only extension ``morphaug._C_emu`` (csrc/emu/): every
choice is then the one a CUDA tensor would get, and ops without a CUDA kernel
run on torch.
"""

from __future__ import annotations

import importlib
import os

import torch

__all__ = ["backend_info", "select", "load_native", "load_emulation", "emulating_cuda", "ops_namespace",
           "built_for", "NATIVE_OPS"]

_REAL_DTYPES = frozenset({
    torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
    torch.float16, torch.bfloat16, torch.float32, torch.float64,
})

#: Public functions with a native kernel: (op in ``torch.ops.morphaug``,
#: input dtypes it takes, or None for any (converted to a mask first), most
#: spatial axes).
NATIVE_OPS = {
    "distance_transform_edt": ("edt", None, 16),
    "distance_transform_cdt": ("cdt", None, 6),
    # boxes (size, all-true footprints); a shared footprint known on the host
    # takes "grey_footprint", a shared non-flat structure known on the host
    # "grey_structure" (CPU and CUDA); other elements stay on torch
    "grey_erosion": ("grey_box", _REAL_DTYPES, 16),
    "grey_dilation": ("grey_box", _REAL_DTYPES, 16),
    # iterations < 1 with a centred, symmetric element known on the host (the
    # connected-component case of the torch backend); other elements stay on torch
    "binary_propagation": ("propagate", None, 16),
    "binary_fill_holes": ("propagate", None, 16),
    # a host element that is a centred Euclidean ball (one step), cross or box
    # (any iterations), border_value 0 and no mask; other cases stay on torch
    "binary_erosion": ("ball_morphology", None, 16),
    "binary_dilation": ("ball_morphology", None, 16),
    # the transforms' label morphology by per-sample balls of radius <= 127
    # (morphaug.transforms RandLabelMorphology, LabelBoundary, ...)
    "label_morphology": ("ball_morphology", None, 16),
    # the transforms' signed distance maps (DistanceMap(signed=True),
    # RandBoundaryJitter): Euclidean, unit sampling
    "signed_distance": ("signed_edt", None, 16),
    # the Sinkhorn-Knopp loop of morphaug.ot.sinkhorn / SinkhornLoss with a
    # shared cost (method "sinkhorn", or "auto" choosing it)
    "sinkhorn": ("sinkhorn_scaling", frozenset({torch.float32, torch.float64}), 0),
    # morphaug.ot.wasserstein_barycenter with method "sinkhorn" (or "auto" choosing it)
    "wasserstein_barycenter": ("grid_barycenter", frozenset({torch.float32, torch.float64}), 16),
}

_DISPATCH_KEYS = {"cpu": "CPU", "cuda": "CUDA"}
_CHOICES = ("auto", "torch", "native")
_loaded: dict[str, tuple[object | None, str | None]] = {}
_HOW_TO_BUILD = {
    "morphaug._C": "reinstall morphaug with a C++ compiler to build it",
    "morphaug._C_emu": "reinstall morphaug with MORPHAUG_CUDA_EMULATION=1 to build it (make test does)",
}


def _load(name: str):
    if name not in _loaded:
        try:
            _loaded[name] = (importlib.import_module(name), None)
        except ImportError as error:
            _loaded[name] = (None, f"{name} is not importable ({error}); {_HOW_TO_BUILD[name]}")
    return _loaded[name]


def emulating_cuda() -> bool:
    """Whether ``MORPHAUG_EMULATE_CUDA=1``: native calls on CPU tensors go to the emulated CUDA launchers."""
    return os.environ.get("MORPHAUG_EMULATE_CUDA", "").strip() == "1"


def load_emulation():
    """``(module, None)`` once the test-only ``morphaug._C_emu`` is imported, else ``(None, reason)``."""
    return _load("morphaug._C_emu")


def load_native():
    """``(module, None)`` once ``morphaug._C`` is imported (and ``morphaug._C_emu`` when
    emulating CUDA), else ``(None, reason)``."""
    loaded = _load("morphaug._C")
    if loaded[0] is not None and emulating_cuda():
        return load_emulation()
    return loaded


def ops_namespace(device_type: str) -> str:
    """The ``torch.ops`` namespace whose kernels serve ``device_type`` tensors."""
    return "morphaug_emu" if device_type == "cpu" and emulating_cuda() else "morphaug"


def _requested() -> str:
    choice = os.environ.get("MORPHAUG_BACKEND", "auto").strip().lower() or "auto"
    if choice not in _CHOICES:
        raise ValueError(f"MORPHAUG_BACKEND must be one of {', '.join(_CHOICES)}, got {choice!r}")
    return choice


def built_for(op: str, device_type: str) -> bool:
    """Whether the loaded library has a kernel of ``torch.ops.morphaug.<op>`` for ``device_type``
    (of the emulated CUDA launcher for CPU tensors, when emulating CUDA)."""
    key = _DISPATCH_KEYS.get(device_type)
    return key is not None and torch._C._dispatch_has_kernel_for_dispatch_key(
        f"{ops_namespace(device_type)}::{op}", key)


def _why_not_native(op_name: str, device_type: str, dtype: torch.dtype | None,
                    rank: int | None) -> str | None:
    """None when ``op_name`` can run natively there, else the reason it cannot."""
    op, dtypes, max_rank = NATIVE_OPS[op_name]
    module, reason = load_native()
    if module is None:
        return reason
    if not built_for(op, device_type):
        return f"morphaug._C has no {op!r} kernel for {device_type} tensors"
    if dtypes is not None and dtype is not None and dtype not in dtypes:
        return f"the native {op!r} kernel does not take {dtype}"
    if rank is not None and rank > max_rank:
        return f"the native {op!r} kernel takes at most {max_rank} spatial axes, got {rank}"
    return None


def select(op_name: str, tensor: torch.Tensor) -> str:
    """``"native"`` or ``"torch"``: the backend that runs ``op_name`` on ``tensor``.

    ``op_name`` is a public function name (e.g. ``"distance_transform_edt"``);
    functions without a native kernel always get ``"torch"``. Honours
    ``MORPHAUG_BACKEND`` (see the module docstring); raises RuntimeError when
    native is forced but unavailable, ValueError on an unknown setting.
    """
    choice = _requested()
    if choice == "torch" or op_name not in NATIVE_OPS:
        return "torch"
    reason = _why_not_native(op_name, tensor.device.type, tensor.dtype, tensor.ndim - 2)
    if reason is None:
        return "native"
    if choice == "native":
        raise RuntimeError(
            f"MORPHAUG_BACKEND=native, but {op_name} on a {tensor.device.type} {tensor.dtype} "
            f"tensor of shape {tuple(tensor.shape)} cannot run natively: {reason}"
        )
    return "torch"


def backend_info(verbose: bool = True) -> dict:
    """What is built and which backend each op uses per device; printed unless ``verbose=False``.

    Returns a dict with keys ``native_built`` (bool), ``native_devices``
    (device types with native kernels for some op; ``ops`` says which),
    ``native_error`` (why ``morphaug._C`` is missing, or None), ``torch``,
    ``torch_cuda`` (CUDA version torch was built with, or None),
    ``cuda_available``, ``requested`` (the ``MORPHAUG_BACKEND`` setting),
    ``emulating_cuda`` (``MORPHAUG_EMULATE_CUDA=1``: the cpu column is then
    the emulated CUDA launchers') and ``ops``: ``{function: {device:
    backend}}`` for cpu and cuda (float32 inputs of rank 3).
    """
    module, error = load_native()
    devices = [d for d in _DISPATCH_KEYS if module is not None
               and any(built_for(op, d) for op, _, _ in NATIVE_OPS.values())]
    requested = _requested()
    ops = {}
    for name in NATIVE_OPS:
        ops[name] = {}
        for device in _DISPATCH_KEYS:
            why = _why_not_native(name, device, torch.float32, 3)
            if requested == "torch":
                ops[name][device] = "torch"
            elif why is None:
                ops[name][device] = "native"
            elif requested == "native":
                ops[name][device] = "unavailable (native forced)"
            else:
                ops[name][device] = "torch"
    info = {
        "native_built": module is not None,
        "native_devices": devices,
        "native_error": error,
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "cuda_available": torch.cuda.is_available(),
        "requested": requested,
        "emulating_cuda": emulating_cuda(),
        "ops": ops,
    }
    if verbose:
        print(_summary(info))
    return info


def _summary(info: dict) -> str:
    built = "built for " + (", ".join(info["native_devices"]) or "no device")
    lines = [
        f"morphaug native kernels (morphaug._C): {built if info['native_built'] else 'not built'}",
        f"torch {info['torch']}, CUDA build {info['torch_cuda'] or 'no'}, "
        f"CUDA device {'available' if info['cuda_available'] else 'not available'}",
        f"MORPHAUG_BACKEND={info['requested']}",
    ]
    if info["native_error"]:
        lines.append(f"why not built: {info['native_error']}")
    if info["emulating_cuda"]:
        lines.append("MORPHAUG_EMULATE_CUDA=1: cpu calls run the CUDA launchers, emulated (morphaug._C_emu)")
    width = max(len(name) for name in info["ops"])
    lines.append(f"{'op'.ljust(width)}  cpu     cuda")
    for name, per_device in info["ops"].items():
        lines.append(f"{name.ljust(width)}  {per_device['cpu']:<7} {per_device['cuda']}")
    lines.append("ops not listed always run on the torch backend")
    return "\n".join(lines)
