"""The binding layer: morphaug's native kernels (``morphaug._C``, csrc/), the one place that
loads them, says whether a kernel can take a call and why not, and applies the
``MORPHAUG_BACKEND`` policy (``_library``).

Each public op of ``morphaug.ndimage``, ``morphaug.ot`` and
``morphaug.transforms`` that has native kernels holds one dispatch
:class:`Table` (``_dispatch``): its cases in order, each a predicate and the
kernel that takes the calls it accepts (run through
:mod:`morphaug._ops.kernels`, the Python contracts of the ops), ending in its
torch backend. Importing this package loads the library and registers the
fake kernels of every op (``_fakes``), so ``torch.ops.morphaug.*`` run under
FakeTensor and ``torch.compile`` from the start. Under ``torch.compile``, a
public function decorated with :func:`opaque_under_compile` (``_opaque``) is one
opaque op, so host reads inside it do not break the graph.
"""

from __future__ import annotations

from . import kernels
from ._dispatch import TABLES, Case, Table
from ._opaque import Results, distances, one_result, opaque_under_compile
from ._library import (
    KERNELS,
    NativeKernelsWarning,
    backend_info,
    built_for,
    emulating_cuda,
    load_emulation,
    load_native,
    ops_for,
    use_native,
    why_not,
)

__all__ = ["KERNELS", "NativeKernelsWarning", "TABLES", "Case", "Table", "Results", "kernels", "backend_info", "built_for", "distances",
           "emulating_cuda", "load_emulation", "load_native", "one_result", "opaque_under_compile", "ops_for",
           "use_native", "why_not"]

load_native()
