"""``morphaug.backend_info()``: what is built, where each native kernel runs, and every dispatch table."""

from __future__ import annotations

import torch

from . import _library
from ._contracts import KERNELS, policy, why_not
from ._dispatch import TABLES
from ._library import DEVICE_TYPES

__all__ = ["BackendInfo", "backend_info"]


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

    Examples
    --------
    >>> import morphaug
    >>> info = morphaug.backend_info(verbose=False)
    >>> info["requested"] in ("auto", "torch", "native"), "edt" in info["kernels"]
    (True, True)
    >>> [row["kernel"] for row in info["tables"]["distance_transform_edt"]][-1]
    'torch'
    """
    module, error = _library.load_native()
    requested = policy()
    kernels = {}
    for name, spec in KERNELS.items():
        row = {"used_by": spec.used_by}
        for device in DEVICE_TYPES:
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
        native_devices=[d for d in DEVICE_TYPES if any(_library.built_for(k, d) for k in KERNELS)],
        native_error=error,
        native_library=getattr(module, "__file__", None),
        torch=torch.__version__,
        torch_cuda=torch.version.cuda,
        cuda_available=torch.cuda.is_available(),
        requested=requested,
        emulating_cuda=_library.emulating_cuda(),
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
    by_device = {device: [why for _, _, why in table.rows(device)] for device in DEVICE_TYPES}
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
                              for device in DEVICE_TYPES)
            lines.append(f"    {row['when']}: {row['kernel']}  ({where})")
    return "\n".join(lines)
