"""scipy.ndimage's morphology, distance transforms, labelling and measurements on batched tensors.

Every function has SciPy's name, arguments, defaults and semantics (SciPy
1.17), applied to each ``(b, c)`` slice of an input of shape
``(B, C, *spatial)`` with one or more spatial axes, on the input's device.
SciPy's 0-d arrays are refused: a ``(B, C)`` tensor is far more often an
image without its batch axes than a batch of points.

Conventions shared by all functions
-----------------------------------
Batching
    ``input`` is ``(B, C, *spatial)``; every ``(b, c)`` slice is processed as
    SciPy would process that slice alone. ``axes`` (keyword) indexes the
    *spatial* axes, ``0 .. S-1`` (negative values count from the end).
Structuring elements
    ``structure``, ``footprint`` (and ``structure1``/``structure2``) have
    ``len(axes)`` trailing dimensions and are shared ``(*k)``, per sample
    ``(B, *k)`` or per sample and channel ``(B, C, *k)``: the rank difference
    decides. Tensors, NumPy arrays and nested lists are accepted. A CPU
    element is read on the host to skip its false positions; an element on
    an accelerator is never read back (no host sync).
Dtypes
    Inputs are bool, any integer dtype (``uint16``, ``uint32`` and
    ``uint64`` included) or floating; binary ops, distance transforms and
    ``label`` read nonzero as true.
Outputs
    Binary ops return ``torch.bool``; grey ops the input dtype; CDT
    ``int32``; EDT/BF distances ``float32`` (``float64`` when a float64
    ``distances=`` is given); indices ``int32`` of shape ``(S, B, C, *spatial)``;
    ``label``: ``int32`` labels and the ``(B, C)`` ``int64`` feature counts.
    ``output=`` (a tensor of the input's shape and device, or a dtype),
    ``distances=`` and ``indices=`` behave as in SciPy. Inputs are never
    modified.
Gradients
    Grey ops are differentiable on every backend, with ``max_pool``'s
    subgradient (each output's gradient goes to the input voxel that
    attains it). Binary ops, distance transforms and their outputs are not:
    they never require grad.
Measurements
    ``sum_labels`` (``sum``), ``mean``, ``variance``,
    ``standard_deviation``, ``median``, ``minimum``, ``maximum``,
    ``extrema``, ``histogram``, ``labeled_comprehension`` and the positions
    (``center_of_mass``, ``minimum_position``, ``maximum_position``) return
    ``(B, C, *index.shape)`` tensors (``(B, C)`` where SciPy returns a
    scalar; a last axis of ``S`` coordinates for positions, of ``bins``
    counts for ``histogram``) where SciPy returns scalars, arrays, tuples
    or lists of them; ``find_objects`` returns int64 bounding boxes and a
    presence mask where SciPy returns slices; ``value_indices`` one dict
    for the whole batch. ``labels``: integer or bool, of the input's shape,
    an axis of size 1 shared (``(B, 1, *spatial)``: one label map for all
    channels); every value is a label, negative ones included; ``None``: the
    whole slice is one region. ``index``: the labels to measure, shared by
    all slices (``None``: all positive labels together; an int; or a
    sequence, array or integer tensor of any shape). Float labels or index
    values are a ``TypeError``. Result dtypes are SciPy's: ``sum_labels``
    NumPy's sum dtype (int64 for bool and signed inputs, uint64 for
    unsigned ones, the float dtype for floats) for one region and float64
    for an index sequence; ``mean`` and ``center_of_mass`` float64;
    ``minimum`` and ``maximum`` the input's dtype.
Border modes
    ``reflect`` (``dcba|abcd|dcba``), ``mirror`` (``dcb|abcd|cba``),
    ``nearest``, ``wrap`` and ``constant`` (``cval`` cast to the input
    dtype), plus SciPy's ``grid-*`` aliases.
"""

from ._binary import (
    binary_closing,
    binary_dilation,
    binary_erosion,
    binary_hit_or_miss,
    binary_opening,
    iterate_structure,
)
from ._distance import distance_transform_bf, distance_transform_cdt, distance_transform_edt
from ._grey import (
    black_tophat,
    grey_closing,
    grey_dilation,
    grey_erosion,
    grey_opening,
    morphological_gradient,
    morphological_laplace,
    white_tophat,
)
from ._label import label
from ._measurements import center_of_mass, find_objects, maximum, mean, minimum, sum_labels
from ._positions import extrema, maximum_position, minimum_position, value_indices
from ._propagation import binary_fill_holes, binary_propagation
from ._statistics import histogram, labeled_comprehension, median, standard_deviation, sum, variance
from ._structure import generate_binary_structure
from ._watershed import watershed_ift

__all__ = [
    "binary_erosion",
    "binary_dilation",
    "binary_opening",
    "binary_closing",
    "binary_hit_or_miss",
    "binary_propagation",
    "binary_fill_holes",
    "grey_erosion",
    "grey_dilation",
    "grey_opening",
    "grey_closing",
    "morphological_gradient",
    "morphological_laplace",
    "white_tophat",
    "black_tophat",
    "distance_transform_edt",
    "distance_transform_cdt",
    "distance_transform_bf",
    "generate_binary_structure",
    "iterate_structure",
    "label",
    "sum_labels",
    "mean",
    "minimum",
    "maximum",
    "center_of_mass",
    "sum",
    "variance",
    "standard_deviation",
    "median",
    "extrema",
    "minimum_position",
    "maximum_position",
    "histogram",
    "labeled_comprehension",
    "value_indices",
    "watershed_ift",
    "find_objects",
]
