"""scikit-image's measurements on ``(B, C, *spatial)`` batches, on the input's device.

Every function has ``skimage.measure``'s name, arguments and defaults
(scikit-image 0.26) and applies to each ``(b, c)`` slice of its input as
scikit-image applies to that slice alone; a number per slice comes back as a
``(B, C)`` tensor on the input's device, never read back.

euler_number
    Euler characteristic (``skimage.measure.euler_number``).
"""

from ._euler import euler_number

__all__ = ["euler_number"]
