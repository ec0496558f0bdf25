"""scikit-image's ``skimage.segmentation`` on batched tensors.

Every function has scikit-image's name, arguments, defaults and semantics
(scikit-image 0.26), applied to each ``(b, c)`` slice of a label map of
shape ``(B, C, *spatial)``, on the map's device, as :mod:`morphaug.ndimage`
does for ``scipy.ndimage``: a pipeline ports with a change of import.
Labels are bool or any integer dtype; float labels are a ``TypeError``.
"""

from ._boundaries import find_boundaries
from ._expand import expand_labels

__all__ = [
    "expand_labels",
    "find_boundaries",
]
