"""morphaug: batched, on-device mathematical morphology, distance transforms and
optimal transport for data-augmentation pipelines.

Subpackages: :mod:`morphaug.ndimage` (scipy.ndimage on ``(B, C, *spatial)``
tensors), :mod:`morphaug.morphology`, :mod:`morphaug.measure` and :mod:`morphaug.segmentation`
(scikit-image's skeletons, Euler number, ``label``, ``expand_labels``, ``find_boundaries``), :mod:`morphaug.footprints`, :mod:`morphaug.transforms`,
:mod:`morphaug.ot`, :mod:`morphaug.metrics` and :mod:`morphaug.losses`
(MONAI's surface-distance metrics and distance-map losses on batches) and
:mod:`morphaug.adapters` (MONAI, torchvision v2, Kornia; imported on demand).
:func:`backend_info` says which backend runs each op (a :class:`BackendInfo`); ``python -m morphaug.build``
builds the native kernels for the installed torch when the install did not
(:class:`NativeKernelsWarning` says so at the first call they would take).
"""

from . import footprints, losses, measure, metrics, morphology, ndimage, ot, segmentation, transforms
from ._ops import BackendInfo, NativeKernelsWarning, backend_info

__version__ = "0.1.0"

__all__ = ["ndimage", "morphology", "measure", "segmentation", "footprints", "transforms", "ot", "metrics", "losses",
           "backend_info", "BackendInfo", "NativeKernelsWarning", "__version__"]
