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
    params=...)`` replays it: every parameter of the draw must be there,
    of its kind and shape (batch size first) on the batch's device or the
    CPU; the values are checked where that is free (params on the CPU), so
    an accelerator replays without a host sync.
Labels
    Index maps ``(B, 1, ...)`` (class values, 0 is background, any dtype) or
    one-hot ``(B, K, ...)``; ``label_format=None`` infers index for one
    channel and one-hot otherwise. Label outputs are valid labels of the
    input's format and dtype. Float labels (as MONAI loads them) must hold
    whole numbers: a fraction, NaN or inf raises ``ValueError`` naming the
    key. That is checked where reading the values is free, on the CPU
    outside ``torch.compile``; on an accelerator it is not (a host sync),
    and such a value is no class there.
Classes
    ``classes=`` when given; else the one-hot channels, ``0 .. num_classes-1``
    for index maps with ``num_classes=``, 0 and 1 for bool maps; else the
    classes present in the index map, read from the data: its distinct
    values that are integers in ``0 .. 4095`` (background 0 always among them
    for the transforms that include background). Negative values are no
    class and are kept (as any value outside the classes a transform works
    on); a value of 4096 or more needs ``classes=``. Reading
    the classes is free on the CPU and one host sync per call on an
    accelerator (``morphaug._sync.READS["label classes"]``; once per label
    key for the transforms that draw nothing per class), which
    ``num_classes=`` or ``classes=`` avoid. Inferred classes follow the data:
    for outputs with one channel per class (``DistanceMap``,
    ``LabelBoundary``) pass ``num_classes=`` or ``classes=`` to fix them.
Empty inputs
    A batch of no sample, no channel or an empty spatial axis comes back as
    an empty result of the usual type, dtype and shape.
"""

from ._base import BatchTransform
from ._components import KeepLargestComponents, RandRemoveComponent, RemoveSmallComponents
from ._instances import ExpandLabels, InstanceBoundary
from ._morphology import FillHoles, RandGreyMorphology, RandLabelMorphology
from ._ot import RandHistogramTransfer, RandWassersteinMix
from ._targets import DistanceMap, LabelBoundary, RandBoundaryJitter, SkeletonTarget

__all__ = [
    "BatchTransform",
    "RandLabelMorphology",
    "RandGreyMorphology",
    "DistanceMap",
    "LabelBoundary",
    "SkeletonTarget",
    "FillHoles",
    "RandBoundaryJitter",
    "KeepLargestComponents",
    "RemoveSmallComponents",
    "RandRemoveComponent",
    "RandHistogramTransfer",
    "RandWassersteinMix",
    "ExpandLabels",
    "InstanceBoundary",
]
