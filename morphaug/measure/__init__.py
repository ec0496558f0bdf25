"""scikit-image's ``skimage.measure`` on batched tensors.

Every function has scikit-image's name, arguments, defaults and semantics
(scikit-image 0.26), applied to each ``(b, c)`` slice of an input of shape
``(B, C, *spatial)``, on the input's device, as :mod:`morphaug.ndimage`
does for ``scipy.ndimage``: a pipeline ports with a change of import.
Counts that scikit-image returns as ints come back as ``(B, C)`` tensors
(nothing is read back from the device); ``regionprops_table``'s columns as
``(B, C, max_label)`` tensors, one entry per label.
"""

from ._euler import euler_number
from ._label import label
from ._regionprops import PROPERTIES, regionprops_table

__all__ = [
    "euler_number",
    "label",
    "PROPERTIES",
    "regionprops_table",
]
