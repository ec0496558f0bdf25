"""MONAI's ignite metric handlers over morphaug's metric classes, under MONAI's names.

``HausdorffDistance``, ``SurfaceDistance`` and ``PanopticQuality`` subclass
MONAI's handlers of the same names (``monai.handlers``, each an
``IgniteMetricHandler``) with their signatures, and compute with
:mod:`morphaug.adapters.monai_metrics`' ``HausdorffDistanceMetric``,
``SurfaceDistanceMetric`` and ``PanopticQualityMetric`` instead of MONAI's.
Attaching, ``update``/``compute``, ``save_details`` and reductions are MONAI's.
MONAI's own handler tests pass against them (``tests/monai_suite``).

They need pytorch-ignite when made, not when imported: without it, making one
raises MONAI's ``OptionalImportError`` (``monai.handlers`` imports ignite
lazily, by ``optional_import``).

Example:
    >>> import torch
    >>> from morphaug.adapters.monai import HausdorffDistance
    >>> ref = torch.zeros(1, 1, 8, 8)
    >>> ref[..., 2:6, 2:6] = 1
    >>> handler = HausdorffDistance(include_background=True, save_details=False)
    >>> handler.update([ref.roll(1, -1), ref])
    >>> handler.compute()
    1.0
"""

from __future__ import annotations

import functools
import inspect

try:
    from monai import handlers as _monai
    from monai.handlers.ignite_metric import IgniteMetricHandler
except ImportError as error:  # pragma: no cover - exercised without MONAI
    raise ImportError("morphaug.adapters.monai_handlers needs MONAI: pip install monai") from error

from .monai_metrics import HausdorffDistanceMetric, PanopticQualityMetric, SurfaceDistanceMetric

__all__ = ["HausdorffDistance", "SurfaceDistance", "PanopticQuality"]


def _handler(monai_class: type, metric_class: type) -> type:
    """MONAI's handler ``monai_class`` computing with ``metric_class``: MONAI's handlers pass every argument
    but ``output_transform`` and ``save_details`` to their metric class by name, and so does this one."""
    signature = inspect.signature(monai_class.__init__)

    @functools.wraps(monai_class.__init__)
    def __init__(self, *args, **kwargs):
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        options = dict(bound.arguments)
        del options["self"]
        output_transform, save_details = options.pop("output_transform"), options.pop("save_details")
        IgniteMetricHandler.__init__(self, metric_fn=metric_class(**options), output_transform=output_transform,
                                     save_details=save_details)

    doc = f"MONAI's ``{monai_class.__name__}`` handler computed by :class:`{metric_class.__name__}`."
    return type(monai_class.__name__, (monai_class,), {"__init__": __init__, "__doc__": doc,
                                                       "__module__": __name__})


HausdorffDistance = _handler(_monai.HausdorffDistance, HausdorffDistanceMetric)
SurfaceDistance = _handler(_monai.SurfaceDistance, SurfaceDistanceMetric)
PanopticQuality = _handler(_monai.PanopticQuality, PanopticQualityMetric)
