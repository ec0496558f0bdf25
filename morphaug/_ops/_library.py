"""Loading ``morphaug._C``: the one place that imports the native kernels, and where each is built.

``morphaug._C`` is optional: it is built at install time when torch is
importable there and a compiler is found (see :mod:`morphaug.build`), or
after the fact by ``python -m morphaug.build`` into a cache folder, and is
loaded when this package is imported (the package's own, else the cached
one). When it is missing, or not built for a device, every op runs on the
pure-torch backend; when it is missing, the first call that a native kernel
would take warns once (:class:`NativeKernelsWarning`) with the command that
builds it, unless ``MORPHAUG_BACKEND=torch`` says the pure-torch backend is
intended.

``MORPHAUG_EMULATE_CUDA=1`` (tests only, read at each call) sends the native
calls on CPU tensors to the CUDA launchers instead, run on the CPU by the
emulator of the test-only extension ``morphaug._C_emu`` (csrc/emu/): every
choice is then the one a CUDA tensor would get, and kernels without a CUDA
launcher are not available.

What a kernel takes (its contract) is ``_contracts``' business; it registers
the fake kernels of a library as it loads (:func:`on_load`).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import sys
import warnings
from pathlib import Path

import torch

__all__ = ["DEVICE_TYPES", "NativeKernelsWarning", "load_native", "load_emulation", "emulating_cuda",
           "launcher_device", "ops_for", "built_for", "on_load", "warn_if_missing"]

#: The device types a kernel can be built for, and their dispatch keys.
DEVICE_TYPES = {"cpu": "CPU", "cuda": "CUDA"}
_FIX = ("build them for this torch with `python -m morphaug.build`, or reinstall with "
        "`pip install --no-build-isolation .` from a clone (a C++ compiler is needed)")
_PACKAGE = Path(__file__).resolve().parent.parent
_loaded: dict[str, tuple[object | None, str | None]] = {}
# (namespace, kernel, dispatch key) -> whether the loaded library has it: read
# once at load, so that choosing a kernel stays traceable (torch.compile).
_built: dict[tuple[str, str, str], bool] = {}
# called with a namespace once its library is loaded (on_load)
_on_load: list = []
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


_NAMESPACES = {"morphaug._C": "morphaug", "morphaug._C_emu": "morphaug_emu"}


def on_load(callback) -> None:
    """Calls ``callback(namespace)`` for each library loaded, now and later (``_contracts``
    registers its fake kernels so)."""
    _on_load.append(callback)
    for name, namespace in _NAMESPACES.items():
        if _loaded.get(name, (None,))[0] is not None:
            callback(namespace)


def _load(name: str):
    if name not in _loaded:
        try:
            _loaded[name] = (_import_native(name), None)
        except ImportError as error:
            _loaded[name] = (None, str(error) if name == "morphaug._C" else
                             f"{name} is not importable ({error}); reinstall morphaug with "
                             "MORPHAUG_CUDA_EMULATION=1 to build it (make test does)")
        else:
            namespace = _NAMESPACES[name]
            for callback in _on_load:
                callback(namespace)
            for op in torch._C._dispatch_get_all_op_names():
                if op.startswith(f"{namespace}::") and "." not in op:
                    for key in DEVICE_TYPES.values():
                        _built[namespace, op.split("::")[1], key] = (
                            torch._C._dispatch_has_kernel_for_dispatch_key(op, key))
    return _loaded[name]


def emulating_cuda() -> bool:
    """Whether ``MORPHAUG_EMULATE_CUDA=1``: native calls on CPU tensors go to the emulated CUDA launchers."""
    return os.environ.get("MORPHAUG_EMULATE_CUDA", "").strip() == "1"


def launcher_device(tensor) -> str:
    """The device type whose launcher a native call on ``tensor`` runs: ``"cuda"`` for a CPU tensor while
    CUDA is emulated, else the tensor's."""
    return "cuda" if tensor.device.type == "cpu" and emulating_cuda() else tensor.device.type


def load_emulation():
    """``(module, None)`` once the test-only ``morphaug._C_emu`` is imported, else ``(None, reason)``."""
    return _load("morphaug._C_emu")


def load_native(emulate: bool | None = None):
    """``(module, None)`` once ``morphaug._C`` is imported (and ``morphaug._C_emu`` when
    emulating CUDA: ``emulate``, read from the environment when None), else ``(None, reason)``."""
    loaded = _load("morphaug._C")
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
    key = DEVICE_TYPES.get(device_type)
    return (key is not None and load_native(emulate)[0] is not None
            and _built.get((_namespace(device_type, emulate), kernel, key), False))


def warn_if_missing() -> None:
    """Warn once per process that ``morphaug._C`` is missing (a call it would take runs on torch)."""
    global _warned_missing
    if _warned_missing:
        return
    module, reason = load_native(False)
    if module is None:
        _warned_missing = True
        warnings.warn(f"{reason}. Until then morphaug runs on its pure-torch backend (exact, often 10x slower "
                      "on the CPU); MORPHAUG_BACKEND=torch says that is intended and silences this warning.",
                      NativeKernelsWarning, stacklevel=4)
