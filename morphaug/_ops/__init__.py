"""The binding layer: morphaug's native kernels (``morphaug._C``, csrc/), the one place that
loads them, says whether a kernel can take a call and why not, and applies the
``MORPHAUG_BACKEND`` policy (``_library``).

``morphaug.ndimage``, ``morphaug.ot`` and ``morphaug.transforms`` ask
:func:`use_native` for the kernel a call would take, then run it through
:mod:`morphaug._ops.kernels` (the Python contracts of the ops) or on their
torch backend. Importing this package loads the library and registers the
fake kernels of every op (``_fakes``), so ``torch.ops.morphaug.*`` run under
FakeTensor and ``torch.compile`` from the start.
"""

from __future__ import annotations

from . import kernels
from ._library import (
    KERNELS,
    backend_info,
    built_for,
    emulating_cuda,
    load_emulation,
    load_native,
    ops_for,
    use_native,
    why_not,
)

__all__ = ["KERNELS", "kernels", "backend_info", "built_for", "emulating_cuda", "load_emulation", "load_native",
           "ops_for", "use_native", "why_not"]

load_native()
