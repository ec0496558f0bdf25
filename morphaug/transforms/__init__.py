"""Dictionary-aware batch transforms for segmentation pipelines.

Every transform is called on a tensor ``(B, C, *spatial)`` or on a mapping
whose ``keys`` entries are such tensors (other entries pass through
untouched) and returns a new object; inputs are never modified. MONAI
MetaTensors and torchvision tv_tensors come back as the same type with a copy
of their metadata.

Roles
    Each key is a ``"label"`` or an ``"image"``: ``keys`` is a mapping
    ``{key: role}``, or keys that all take the transform's role (``role``;
    a bare tensor has it too). A key of a role the transform does not change
    passes through untouched, so one mapping can serve a whole pipeline.

Randomness
    All random parameters are drawn once per call for the whole batch, as
    tensors on the batch's device (``make_params``), from ``generator=`` or
    torch's default generator (so ``torch.manual_seed`` works); ``prob`` is a
    per-sample probability and every key of a sample shares its draw. The
    draw is kept in ``transform.last_params`` and ``transform(data,
    params=...)`` replays it.
Labels
    Index maps ``(B, 1, ...)`` (values ``0 .. K-1``, 0 is background, any
    dtype) or one-hot ``(B, K, ...)``; ``label_format=None`` infers index for
    one channel and one-hot otherwise. Index maps need ``num_classes`` (or
    ``classes``) where the class count matters: it is never read from the
    data (a host sync). Label outputs are valid labels of the input's format
    and dtype.
"""

from ._base import BatchTransform
from ._morphology import FillHoles, RandGreyMorphology, RandLabelMorphology
from ._ot import RandHistogramTransfer, RandWassersteinMix
from ._targets import DistanceMap, LabelBoundary, RandBoundaryJitter

__all__ = [
    "BatchTransform",
    "RandLabelMorphology",
    "RandGreyMorphology",
    "DistanceMap",
    "LabelBoundary",
    "FillHoles",
    "RandBoundaryJitter",
    "RandHistogramTransfer",
    "RandWassersteinMix",
]
