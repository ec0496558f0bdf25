"""The binding layer: morphaug's native kernels (``morphaug._C``, csrc/).

* ``_library`` loads them (the one place that imports ``morphaug._C``) and
  says where each is built;
* ``kernels`` holds their Python functions, ``_fakes`` their fake kernels;
* ``_contracts`` holds one row per kernel, :data:`KERNELS`, with everything
  the kernel takes (dtypes, rank, sizes), and applies the ``MORPHAUG_BACKEND``
  policy (:func:`use_native`);
* ``_dispatch`` holds the dispatch :class:`Table` of each public op of
  ``morphaug.ndimage`` and ``morphaug.ot`` that has native kernels: its cases
  in order, each a predicate and the kernel that takes the calls it accepts,
  ending in its torch backend;
* ``_report`` prints all of it (:func:`backend_info`).

:func:`opaque_under_compile` (``morphaug._opaque``, which every layer uses)
is handed on here for the public modules that dispatch.

Importing this package loads the library and registers the fake kernels of
every op, so ``torch.ops.morphaug.*`` run under FakeTensor and
``torch.compile`` from the start.
"""

from __future__ import annotations

from . import kernels
from ._contracts import KERNELS, Kernel, use_native, why_not
from ._dispatch import TABLES, Case, Table
from ._library import (NativeKernelsWarning, built_for, emulating_cuda, launcher_device, load_emulation, load_native,
                       ops_for)
from .._opaque import Results, distances, one_result, opaque_under_compile
from ._report import BackendInfo, backend_info

__all__ = ["KERNELS", "Kernel", "NativeKernelsWarning", "TABLES", "Case", "Table", "Results", "kernels",
           "BackendInfo", "backend_info", "built_for", "distances", "emulating_cuda", "launcher_device",
           "load_emulation", "load_native", "one_result", "opaque_under_compile", "ops_for", "use_native", "why_not"]

load_native()
