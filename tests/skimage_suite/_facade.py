"""scikit-image's functions as its tests call them, computed by morphaug.

Each mirrored function takes a NumPy array (one image, as scikit-image does), runs morphaug on it
as a ``(1, 1, *shape)`` tensor and returns what scikit-image returns: an array of the image's shape
(``"subpixel"``: ``2 n - 1`` per axis), with ``label``'s count as a Python int, or a Python int for
``euler_number``. ``conftest.py`` puts
them into scikit-image's own modules for the suite, so that ``mark_boundaries`` and
``regionprops(...).euler_number`` reach morphaug too.
"""

from __future__ import annotations

import numpy as np
import torch

import morphaug.measure
import morphaug.segmentation


def _batch(image) -> torch.Tensor:
    array = np.asarray(image)
    return torch.from_numpy(np.ascontiguousarray(array))[None, None]


def find_boundaries(label_img, connectivity=1, mode="thick", background=0):
    return morphaug.segmentation.find_boundaries(_batch(label_img), connectivity, mode, background)[0, 0].numpy()


def expand_labels(label_image, distance=1, spacing=1):
    return morphaug.segmentation.expand_labels(_batch(label_image), distance, spacing)[0, 0].numpy()


def label(label_image, background=None, return_num=False, connectivity=None):
    out = morphaug.measure.label(_batch(label_image), background, return_num, connectivity)
    return (out[0][0, 0].numpy(), int(out[1][0, 0])) if return_num else out[0, 0].numpy()


def euler_number(image, connectivity=None):
    return int(morphaug.measure.euler_number(_batch(image), connectivity)[0, 0])
