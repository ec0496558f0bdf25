"""scikit-image's skeletons on ``(B, C, *spatial)`` batches, on the input's device.

Every function has ``skimage.morphology``'s name, arguments and defaults
(scikit-image 0.26) and applies to each ``(b, c)`` slice of its input as
scikit-image applies to that slice alone.

skeletonize
    Skeleton by thinning (``skimage.morphology.skeletonize``): scikit-image's
    methods bit for bit (``'zhang'`` on every device, ``'lee'`` on the CPU),
    and ``'parallel'``, a topology-preserving thinning on any device.
thin
    Morphological thinning (``skimage.morphology.thin``).

Conventions shared by all functions
-----------------------------------
Inputs
    ``(B, C, *spatial)`` tensors, bool or with values 0 and 1 only, never
    modified. scikit-image binarises any image (nonzero is foreground);
    morphaug asks for a binary one, so that a label map or a probability
    map is not skeletonized by mistake: other values are a ``ValueError`` on
    the CPU and a device-side assert (``torch._assert_async``) elsewhere.
Outputs
    Bool tensors of the input's shape, on its device.
Bad input
    ``TypeError`` / ``ValueError`` naming the argument, as scikit-image
    raises them (a method for the wrong rank, ``max_num_iter < 0``).
"""

from ._skeleton import skeletonize, thin

__all__ = ["skeletonize", "thin"]
