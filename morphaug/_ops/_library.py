"""Loading ``morphaug._C``, which native kernel can take a call, and the backend policy.

``morphaug._C`` is optional: it is built at install time when torch is
importable there and a compiler is found (see :mod:`morphaug.build`), or
after the fact by ``python -m morphaug.build`` into a cache folder, and is
loaded when this package is imported (the package's own, else the cached
one), its fake kernels with it. When it is missing, or not built for a
device, every op runs on the pure-torch backend; when it is missing, the first
call that a native kernel would take warns once (:class:`NativeKernelsWarning`)
with the command that builds it, unless ``MORPHAUG_BACKEND=torch`` says the
pure-torch backend is intended.

The environment variable ``MORPHAUG_BACKEND`` sets the policy, read at each
call:

``auto`` (default)
    a native kernel wherever it is built for the input's device, dtype and
    rank, else torch.
``torch``
    always the pure-torch backend.
``native``
    a call that a native kernel would take must run on it: a RuntimeError says
    why when it cannot (not built, other device, dtype or rank). Calls no
    kernel takes still run on torch.

``MORPHAUG_EMULATE_CUDA=1`` (tests only, read at each call) sends the native
calls on CPU tensors to the CUDA launchers instead, run on the CPU by the
emulator of the test-only extension ``morphaug._C_emu`` (csrc/emu/): every
choice is then the one a CUDA tensor would get, and kernels without a CUDA
launcher are not available.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import json
import math
import os
import sys
import warnings
from pathlib import Path

import torch

__all__ = ["KERNELS", "Kernel", "NativeKernelsWarning", "BackendInfo", "load_native", "load_emulation", "emulating_cuda", "ops_for", "built_for",
           "why_not", "use_native", "backend_info"]

_REAL_DTYPES = frozenset({
    torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
    torch.float16, torch.bfloat16, torch.float32, torch.float64,
})
_FLOAT_DTYPES = frozenset({torch.float32, torch.float64})
_LABEL_DTYPES = frozenset({torch.int32, torch.int64})
#: The flat grey kernels compare values only, so they take the wide unsigned dtypes too.
_FLAT_GREY_DTYPES = _REAL_DTYPES | {torch.uint16, torch.uint32, torch.uint64}


@dataclasses.dataclass(frozen=True)
class Kernel:
    """A native op of ``torch.ops.morphaug``: the input dtypes it takes (None: a bool mask,
    which its callers make from any input), its most spatial axes, who calls it, and the
    sizes it fits: the most voxels along one spatial axis (its int32 indices) and, where
    given, in a slice padded by one voxel on each side (its int32 offsets)."""

    dtypes: frozenset | None
    max_rank: int
    used_by: str
    max_axis: int = 2**31 - 1
    max_padded_slice: int | None = None

    def fits(self, spatial) -> str | None:
        """None when a slice of shape ``spatial`` fits the kernel, else why not."""
        longest = max(spatial, default=0)
        if longest > self.max_axis:
            return f"it takes at most {self.max_axis} voxels along an axis, got {longest}"
        if self.max_padded_slice is not None and math.prod(n + 2 for n in spatial) > self.max_padded_slice:
            return f"it takes slices of at most {self.max_padded_slice} voxels with a border, got {tuple(spatial)}"
        return None

    def sample_dtype(self) -> torch.dtype | None:
        """The dtype that backend_info reports the kernel for: float32 where it takes it."""
        if self.dtypes is None or torch.float32 in self.dtypes:
            return None if self.dtypes is None else torch.float32
        return min(self.dtypes, key=str)


#: Every native kernel, by its op name in ``torch.ops.morphaug``.
KERNELS = {
    "edt": Kernel(None, 16, "distance_transform_edt", max_axis=2**24 - 1),
    "cdt": Kernel(None, 6, "distance_transform_cdt", max_padded_slice=2**31 - 1),
    "label": Kernel(None, 8, "label"),
    "grey_box": Kernel(_FLAT_GREY_DTYPES, 16, "grey ops with size or an all-true footprint"),
    "grey_footprint": Kernel(_FLAT_GREY_DTYPES, 16, "grey ops with one footprint read on the host"),
    "grey_structure": Kernel(_REAL_DTYPES, 16, "grey ops with one structure read on the host"),
    "propagate": Kernel(None, 16, "binary ops with iterations < 1, binary_propagation (host element "
                                  "holding its centre)"),
    "fill_holes": Kernel(None, 16, "binary_fill_holes (host element holding its centre)"),
    "ball_morphology": Kernel(None, 16, "binary erosion / dilation by a host ball, cross or box; "
                                        "label morphology of the transforms"),
    "signed_edt": Kernel(None, 16, "signed distance maps of the transforms (Euclidean, unit sampling)"),
    "binary_values": Kernel(_FLAT_GREY_DTYPES, 16, "the surface metrics on the CPU: the binary check"),
    "surface_distance_lists": Kernel(None, 3, "the surface metrics on the CPU (Euclidean)"),
    "sinkhorn_scaling": Kernel(_FLOAT_DTYPES, 16, "ot.sinkhorn with a shared cost"),
    "grid_barycenter": Kernel(_FLOAT_DTYPES, 16, "ot.wasserstein_barycenter"),
    # the component tables and filters take the label maps of label's kernel (at most 8 axes, as it)
    "label_sizes": Kernel(_LABEL_DTYPES, 8, "RandRemoveComponent: the voxels of each component"),
    "filter_components": Kernel(None, 8, "KeepLargestComponents, RemoveSmallComponents"),
}

_DISPATCH_KEYS = {"cpu": "CPU", "cuda": "CUDA"}
_POLICIES = ("auto", "torch", "native")
_FIX = ("build them for this torch with `python -m morphaug.build`, or reinstall with "
        "`pip install --no-build-isolation .` from a clone (a C++ compiler is needed)")
_PACKAGE = Path(__file__).resolve().parent.parent
_loaded: dict[str, tuple[object | None, str | None]] = {}
# (namespace, kernel, dispatch key) -> whether the loaded library has it: read
# once at load, so that choosing a kernel stays traceable (torch.compile).
_built: dict[tuple[str, str, str], bool] = {}
_warned_missing = False


class NativeKernelsWarning(RuntimeWarning):
    """morphaug runs on its pure-torch backend because its native kernels are not built (or do not load)."""


def _build_record() -> dict:
    """What the install said of the native kernels (``morphaug/_native_build.json``, written by setup.py), or {}."""
    try:
        return json.loads((_PACKAGE / "_native_build.json").read_text())
    except (OSError, ValueError):
        return {}


def _why_missing(error: ImportError) -> str:
    """Why ``morphaug._C`` did not import, in a user's words, with the fix."""
    if isinstance(error, ModuleNotFoundError) or sys.modules.get("morphaug._C", ...) is None:  # absent or hidden
        record = _build_record()
        cause = record.get("reason") or "the install did not build them"
        return f"morphaug's native kernels are not built: {cause}; {_FIX}"
    return (f"morphaug's native kernels do not load ({error}); they were probably built against another torch "
            f"than {torch.__version__}: {_FIX}")


def _import_native(name: str):
    """``morphaug._C`` (the package's own, else the one ``python -m morphaug.build`` cached) or ``morphaug._C_emu``."""
    if name != "morphaug._C":
        return importlib.import_module(name)
    try:
        return importlib.import_module(name)
    except ImportError as error:
        from .. import build

        cached = build.cached_library()
        if cached is None:
            raise ImportError(_why_missing(error), name=name) from error
        spec = importlib.util.spec_from_file_location(name, cached)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except ImportError as cached_error:
            del sys.modules[name]
            raise ImportError(f"{cached} does not load ({cached_error}); rebuild it with "
                              "`python -m morphaug.build --force`", name=name) from cached_error
        return module


def _load(name: str, namespace: str):
    if name not in _loaded:
        try:
            _loaded[name] = (_import_native(name), None)
        except ImportError as error:
            _loaded[name] = (None, str(error) if name == "morphaug._C" else
                             f"{name} is not importable ({error}); reinstall morphaug with "
                             "MORPHAUG_CUDA_EMULATION=1 to build it (make test does)")
        else:
            from ._fakes import register_fakes

            register_fakes(namespace)
            for kernel in KERNELS:
                for key in _DISPATCH_KEYS.values():
                    _built[namespace, kernel, key] = torch._C._dispatch_has_kernel_for_dispatch_key(
                        f"{namespace}::{kernel}", key)
    return _loaded[name]


def emulating_cuda() -> bool:
    """Whether ``MORPHAUG_EMULATE_CUDA=1``: native calls on CPU tensors go to the emulated CUDA launchers."""
    return os.environ.get("MORPHAUG_EMULATE_CUDA", "").strip() == "1"


def load_emulation():
    """``(module, None)`` once the test-only ``morphaug._C_emu`` is imported, else ``(None, reason)``."""
    return _load("morphaug._C_emu", "morphaug_emu")


def load_native(emulate: bool | None = None):
    """``(module, None)`` once ``morphaug._C`` is imported (and ``morphaug._C_emu`` when
    emulating CUDA: ``emulate``, read from the environment when None), else ``(None, reason)``."""
    loaded = _load("morphaug._C", "morphaug")
    if loaded[0] is not None and (emulating_cuda() if emulate is None else emulate):
        return load_emulation()
    return loaded


def _namespace(device_type: str, emulate: bool) -> str:
    return "morphaug_emu" if device_type == "cpu" and emulate else "morphaug"


def ops_for(tensor: torch.Tensor):
    """The ops serving ``tensor``'s device: ``torch.ops.morphaug`` (``morphaug_emu`` when emulating CUDA)."""
    emulate = emulating_cuda()
    module, reason = load_native(emulate)
    if module is None:
        raise RuntimeError(reason)
    return getattr(torch.ops, _namespace(tensor.device.type, emulate))


def built_for(kernel: str, device_type: str, emulate: bool | None = None) -> bool:
    """Whether the loaded library has ``kernel`` for ``device_type`` tensors (the emulated CUDA
    launcher for CPU tensors, when emulating CUDA: ``emulate``, read from the environment when
    None)."""
    emulate = emulating_cuda() if emulate is None else emulate
    key = _DISPATCH_KEYS.get(device_type)
    return (key is not None and load_native(emulate)[0] is not None
            and _built[_namespace(device_type, emulate), kernel, key])


def why_not(kernel: str, device_type: str, dtype: torch.dtype | None = None, rank: int | None = None,
            spatial: tuple | None = None) -> str | None:
    """None when ``kernel`` can take a call on ``device_type`` (of ``dtype``, spatial ``rank`` and
    spatial shape ``spatial``, where given), else the reason it cannot."""
    spec = KERNELS[kernel]
    emulate = emulating_cuda()  # read once per call: each read of the environment costs a microsecond
    module, reason = load_native(emulate)
    if module is None:
        return reason
    if not built_for(kernel, device_type, emulate):
        return f"morphaug._C has no {kernel!r} kernel for {device_type} tensors"
    if spec.dtypes is not None and dtype is not None and dtype not in spec.dtypes:
        return f"the native {kernel!r} kernel does not take {dtype}"
    if rank is not None and rank > spec.max_rank:
        return f"the native {kernel!r} kernel takes at most {spec.max_rank} spatial axes, got {rank}"
    misfit = None if spatial is None else spec.fits(spatial)
    if misfit:
        return f"the native {kernel!r} kernel does not fit: {misfit}"
    return None


def _policy() -> str:
    choice = os.environ.get("MORPHAUG_BACKEND", "auto").strip().lower() or "auto"
    if choice not in _POLICIES:
        raise ValueError(f"MORPHAUG_BACKEND must be one of {', '.join(_POLICIES)}, got {choice!r}")
    return choice


def use_native(kernel: str, tensor: torch.Tensor, what: str | None = None) -> bool:
    """Whether a call that ``kernel`` takes runs on it for ``tensor`` (shape ``(B, C, *spatial)``),
    under the ``MORPHAUG_BACKEND`` policy.

    Raises RuntimeError when the policy is ``native`` and the kernel cannot take
    the call (``what`` names the call in the message), ValueError on an unknown
    policy.
    """
    policy = _policy()
    if policy == "torch":
        return False
    reason = why_not(kernel, tensor.device.type, tensor.dtype, tensor.ndim - 2)
    if reason is None:
        return True
    if policy == "native":
        raise RuntimeError(
            f"MORPHAUG_BACKEND=native, but {what or kernel} on a {tensor.device.type} {tensor.dtype} "
            f"tensor of shape {tuple(tensor.shape)} cannot run natively: {reason}"
        )
    if not _warned_missing and not torch.compiler.is_compiling():
        _warn_if_missing()
    return False


def _warn_if_missing() -> None:
    """Warn once per process that ``morphaug._C`` is missing (a call it would take runs on torch)."""
    global _warned_missing
    module, reason = load_native(False)
    if module is None:
        _warned_missing = True
        warnings.warn(f"{reason}. Until then morphaug runs on its pure-torch backend (exact, often 10x slower "
                      "on the CPU); MORPHAUG_BACKEND=torch says that is intended and silences this warning.",
                      NativeKernelsWarning, stacklevel=4)


class BackendInfo(dict):
    """What :func:`backend_info` found: a dict (its keys are listed there) with a one-line repr."""

    def __repr__(self) -> str:
        native = ", ".join(self["native_devices"]) or "none"
        return (f"BackendInfo(native={native}, MORPHAUG_BACKEND={self['requested']}, torch={self['torch']}, "
                f"{len(self['kernels'])} kernels, {len(self['tables'])} dispatch tables)")


def backend_info(verbose: bool = True, tables: bool = False) -> BackendInfo:
    """What is built and where each native kernel runs; a summary printed unless ``verbose=False``
    (with every op's dispatch table when ``tables=True``).

    Returns a :class:`BackendInfo`, a dict with a one-line repr, with keys
    ``native_built`` (bool), ``native_devices`` (device types with some native
    kernel), ``native_error`` (why ``morphaug._C`` is missing, with the command
    that builds it, or None), ``native_library`` (the path it was loaded from,
    or None), ``torch``, ``torch_cuda`` (CUDA version torch was built with, or
    None), ``cuda_available``, ``requested`` (the ``MORPHAUG_BACKEND``
    policy), ``emulating_cuda`` (``MORPHAUG_EMULATE_CUDA=1``: the cpu column is
    then the emulated CUDA launchers'), ``kernels``: ``{kernel: {"used_by":
    ..., "cpu": ..., "cuda": ...}}``, each device ``"native"``, ``"torch"``
    (with the reason when the kernel is missing there) or ``"unavailable
    (native forced)"``, for inputs of rank 3 and float32 where the kernel
    takes it (else its first dtype), and ``tables``: every public op's dispatch
    table, ``{op: [{"when", "kernel", "cpu", "cuda"}, ...]}`` with each
    device's reason the case falls through (None: it runs there), the last row
    ``"otherwise"`` on ``"torch"``.
    """
    from ._dispatch import TABLES

    module, error = load_native()
    requested = _policy()
    kernels = {}
    for name, spec in KERNELS.items():
        row = {"used_by": spec.used_by}
        for device in _DISPATCH_KEYS:
            why = why_not(name, device, spec.sample_dtype(), 3)
            if requested == "torch":
                row[device] = "torch"
            elif why is None:
                row[device] = "native"
            else:
                row[device] = "unavailable (native forced)" if requested == "native" else "torch"
                row[f"{device}_why"] = why
        kernels[name] = row
    info = BackendInfo(
        native_built=module is not None,
        native_devices=[d for d in _DISPATCH_KEYS if any(built_for(k, d) for k in KERNELS)],
        native_error=error,
        native_library=getattr(module, "__file__", None),
        torch=torch.__version__,
        torch_cuda=torch.version.cuda,
        cuda_available=torch.cuda.is_available(),
        requested=requested,
        emulating_cuda=emulating_cuda(),
        kernels=kernels,
        tables={op: [{"when": when, "kernel": kernel, **reasons}
                     for (when, kernel, _), reasons in zip(table.rows("cpu"), _reasons(table))]
                for op, table in TABLES.items()},
    )
    if verbose:
        print(_summary(info, tables))
    return info


def _reasons(table) -> list[dict]:
    """Per row of ``table``: why it falls through on cpu and on cuda (None: it runs there)."""
    by_device = {device: [why for _, _, why in table.rows(device)] for device in _DISPATCH_KEYS}
    return [dict(zip(by_device, whys)) for whys in zip(*by_device.values())]


def _summary(info: dict, tables: bool) -> str:
    built = "built for " + (", ".join(info["native_devices"]) or "no device")
    lines = [
        f"morphaug native kernels (morphaug._C): {built if info['native_built'] else 'not built'}"
        + (f" ({info['native_library']})" if info["native_library"] else ""),
        f"torch {info['torch']}, CUDA build {info['torch_cuda'] or 'no'}, "
        f"CUDA device {'available' if info['cuda_available'] else 'not available'}",
        f"MORPHAUG_BACKEND={info['requested']}",
    ]
    if info["native_error"]:
        lines.append(f"why not built: {info['native_error']}")
    if info["emulating_cuda"]:
        lines.append("MORPHAUG_EMULATE_CUDA=1: cpu calls run the CUDA launchers, emulated (morphaug._C_emu)")
    width = max(len(name) for name in info["kernels"])
    lines.append(f"{'kernel'.ljust(width)}  cpu     cuda    used by")
    for name, row in info["kernels"].items():
        lines.append(f"{name.ljust(width)}  {row['cpu']:<7} {row['cuda']:<7} {row['used_by']}")
    if not tables:
        lines.append("backend_info(tables=True) also prints each op's dispatch table")
        return "\n".join(lines)
    lines.append("dispatch tables: the first case that takes a call runs it (cpu / cuda: yes, or why not)")
    for op, rows in info["tables"].items():
        lines.append(f"  {op}")
        for row in rows:
            where = "  ".join(f"{device} " + ("yes" if row[device] is None else "no")
                              for device in _DISPATCH_KEYS)
            lines.append(f"    {row['when']}: {row['kernel']}  ({where})")
    return "\n".join(lines)
