"""One dispatch table per public op: which native kernel takes which calls.

A :class:`Table` is the ordered list of a public op's :class:`Case` s, each a
predicate on the call's normalised arguments and the kernel that takes the
calls it accepts, ending in the op's torch backend. A case says what the
op's semantics allow (an element that holds its centre, a Euclidean metric);
what the kernel can take (dtypes, rank, sizes) is the kernel's contract, its
row of ``KERNELS``, which the case only feeds with the call's size facts
(:attr:`Case.sizes`). Calling the table runs the first case that accepts the
call and whose kernel takes it (:func:`~morphaug._ops._contracts.use_native`),
else the torch backend. The predicates read host facts only (shapes, flags,
elements read on the host), so the choice stays traceable. :data:`TABLES`
holds every table, and ``morphaug.backend_info()`` prints them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from ._contracts import KERNELS, use_native, why_not

__all__ = ["Case", "Table", "TABLES"]


@dataclasses.dataclass(frozen=True)
class Case:
    """Calls that ``accepts(*args)`` says yes to run on ``kernel`` through ``run(*args)``, where
    the kernel fits them: ``sizes(*args)`` gives the size facts its contract reads
    (:meth:`~morphaug._ops._contracts.Kernel.fits`), None that it reads the shape alone."""

    when: str  # the calls, in words, for backend_info
    kernel: str  # a key of KERNELS
    accepts: Callable[..., bool]
    run: Callable
    sizes: Callable[..., dict] | None = None


#: Every public op's table, by op name.
TABLES: dict[str, Table] = {}


class Table:
    """The dispatch table of public op ``op``: ``cases`` in order, then ``fallback(*args)``,
    the torch backend.

    ``table(tensor, *args)`` runs the call: ``tensor`` is the ``(B, C,
    *spatial)`` input the kernels would take (its device, dtype and rank decide
    whether they can), ``args`` what the cases' predicates and runners take.
    """

    def __init__(self, op: str, cases: list[Case], fallback: Callable):
        self.op, self.cases, self.fallback = op, tuple(cases), fallback
        TABLES[op] = self

    def __call__(self, tensor, *args):
        for case in self.cases:
            if case.accepts(*args) and use_native(case.kernel, tensor, self.op,
                                                  None if case.sizes is None else case.sizes(*args)):
                return case.run(*args)
        return self.fallback(*args)

    def rows(self, device_type: str) -> list[tuple[str, str, str | None]]:
        """``(when, kernel, why not)`` per case on ``device_type`` (inputs of rank 3, float32 where
        the kernel takes it), then ``("otherwise", "torch", None)``."""
        rows = []
        for case in self.cases:
            dtype = KERNELS[case.kernel].sample_dtype()
            rows.append((case.when, case.kernel, why_not(case.kernel, device_type, dtype, 3)))
        return rows + [("otherwise", "torch", None)]
