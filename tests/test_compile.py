"""``torch.compile(fullgraph=True)`` over every public function and every transform's ``apply``.

Under compilation each call of a morphaug function is one opaque op
(``morphaug._opaque``): it compiles without a graph break, whatever the
function reads on the host, and gives eager mode's result, bit for bit,
and eager mode's gradients. The cases cover every name of
``morphaug.ndimage.__all__``, ``morphaug.ot.__all__``,
``morphaug.transforms.__all__``, ``morphaug.metrics.__all__`` and
``morphaug.losses.__all__`` (checked below), with results given as
dtypes and as tensors, elements given as lists, arrays and tensors, and
per-sample elements.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import assert_parity

from morphaug import footprints, losses, measure, metrics, morphology, ndimage, ot, segmentation, transforms

_g = torch.Generator().manual_seed(0)
X = torch.rand(2, 1, 12, 11, generator=_g)
X64 = X.double()
MASK = X > 0.4
LABELS = (X * 3).long()
HISTS = torch.rand(2, 3, 12, 11, generator=_g)
CROSS = np.array([[0, 1, 0], [1, 1, 1], [0, 1, 0]], bool)
ASYMMETRIC = torch.tensor([[0, 1, 0], [1, 1, 1], [0, 1, 1]], dtype=torch.bool)
HEIGHTS = torch.rand(3, 3, dtype=torch.float64, generator=_g)
PER_SAMPLE = torch.stack([torch.ones(3, 3, dtype=torch.bool), torch.from_numpy(CROSS)])


def _into(like, dtype=None):
    return torch.full_like(like, 7, dtype=dtype or like.dtype)


FUNCTIONS = {
    "binary_erosion": lambda: ndimage.binary_erosion(MASK, iterations=2),
    "binary_erosion per sample": lambda: ndimage.binary_erosion(MASK, structure=PER_SAMPLE, border_value=1),
    "binary_dilation": lambda: ndimage.binary_dilation(MASK, structure=CROSS, iterations=-1, mask=X > 0.2),
    "binary_dilation output tensor": lambda: ndimage.binary_dilation(MASK, output=_into(X)),
    "binary_opening": lambda: ndimage.binary_opening(MASK, structure=[[1, 1], [0, 1]]),
    "binary_closing": lambda: ndimage.binary_closing(MASK, iterations=2, output=torch.uint8),
    "binary_hit_or_miss": lambda: ndimage.binary_hit_or_miss(MASK, structure1=ASYMMETRIC, origin1=(0, 1)),
    "binary_propagation": lambda: ndimage.binary_propagation(MASK, mask=X > 0.2),
    "binary_fill_holes": lambda: ndimage.binary_fill_holes(MASK),
    "binary_fill_holes asymmetric": lambda: ndimage.binary_fill_holes(MASK, structure=ASYMMETRIC),
    "grey_erosion": lambda: ndimage.grey_erosion(X, size=3),
    "grey_erosion footprint": lambda: ndimage.grey_erosion(X, footprint=[[1, 0, 1], [1, 1, 1]], mode="wrap"),
    "grey_dilation": lambda: ndimage.grey_dilation(X, size=(3, 2), mode="constant", cval=float("-inf")),
    "grey_dilation structure": lambda: ndimage.grey_dilation(X64, structure=HEIGHTS),
    "grey_opening": lambda: ndimage.grey_opening(X, size=(2, 3), output=_into(X64)),
    "grey_closing": lambda: ndimage.grey_closing(X, size=3, origin=1, axes=[1]),
    "morphological_gradient": lambda: ndimage.morphological_gradient(LABELS, size=3, output=torch.int16),
    "morphological_laplace": lambda: ndimage.morphological_laplace(X, footprint=CROSS),
    "white_tophat": lambda: ndimage.white_tophat(X, size=3),
    "black_tophat": lambda: ndimage.black_tophat(X, structure=CROSS.astype(float)),
    "distance_transform_edt": lambda: ndimage.distance_transform_edt(MASK, sampling=(1.0, 2.0)),
    "distance_transform_edt both": lambda: ndimage.distance_transform_edt(MASK, return_indices=True),
    "distance_transform_edt into": lambda: ndimage.distance_transform_edt(
        MASK, return_indices=True, distances=_into(X64), indices=torch.zeros((2, *MASK.shape), dtype=torch.int32)),
    "distance_transform_cdt": lambda: ndimage.distance_transform_cdt(MASK, metric="taxicab"),
    "distance_transform_cdt metric array": lambda: ndimage.distance_transform_cdt(MASK, metric=CROSS,
                                                                                  return_indices=True),
    "distance_transform_bf": lambda: ndimage.distance_transform_bf(MASK, metric="chessboard", return_indices=True),
    "label": lambda: ndimage.label(MASK, structure=np.ones((3, 3))),
    "label output tensor": lambda: ndimage.label(X, output=_into(X, torch.int64)),
    "label output dtype": lambda: ndimage.label(LABELS, output=torch.uint8),
    "generate_binary_structure": lambda: torch.as_tensor(ndimage.generate_binary_structure(3, 2)),
    "iterate_structure": lambda: torch.as_tensor(ndimage.iterate_structure(CROSS, 2)),
    "sum_labels": lambda: ndimage.sum_labels(X, LABELS, [0, 2, 5]),
    "sum_labels one region": lambda: ndimage.sum_labels(LABELS, LABELS),
    "mean": lambda: ndimage.mean(X64, LABELS, torch.tensor([1, 2])),
    "minimum": lambda: ndimage.minimum(X, LABELS, 1),
    "maximum": lambda: ndimage.maximum(LABELS.to(torch.uint16), LABELS[:1], [1, 2]),
    "center_of_mass": lambda: ndimage.center_of_mass(X, LABELS, [1, 2]),
    "find_objects": lambda: ndimage.find_objects(LABELS, max_label=3),
    "sum": lambda: ndimage.sum(X, LABELS, [0, 2]),
    "variance": lambda: ndimage.variance(X64, LABELS, [0, 2, 5]),
    "standard_deviation": lambda: ndimage.standard_deviation(X, LABELS),
    "median": lambda: ndimage.median(X, LABELS, [1, 2, 9]),
    "median one region": lambda: ndimage.median(LABELS),
    "extrema": lambda: ndimage.extrema(X, LABELS, [1, 2]),
    "minimum_position": lambda: ndimage.minimum_position(X, LABELS, 1),
    "maximum_position": lambda: ndimage.maximum_position(LABELS),
    "histogram": lambda: ndimage.histogram(X, 0, 1, 5, LABELS, [1, 2]),
    "labeled_comprehension": lambda: ndimage.labeled_comprehension(X, LABELS, [1, 2], np.median, float, -1),
    "watershed_ift": lambda: ndimage.watershed_ift((X * 9).to(torch.uint8), (LABELS - 1) * (X > 0.9)),
    "watershed_ift output tensor": lambda: ndimage.watershed_ift((X * 9).to(torch.uint8), LABELS - 1,
                                                                 output=_into(LABELS, torch.int16)),
}
#: Public names that torch.compile(fullgraph=True) cannot trace, and why.
NOT_COMPILED = {"value_indices": "a dict with one entry per value of the data: its structure is the data's",
                "regionprops_table": "a dict of tables sized by the data's largest label",
                "surfel_distances": "lists as long as the batch's longest surface on the CPU",
                "SurfelDistances": "what surfel_distances returns",
                "lesion_wise_metrics": "per-lesion results sized by the number of lesions of the data",
                "LesionWiseResult": "what lesion_wise_metrics returns"}

_A = torch.softmax(torch.randn(3, 16, generator=_g, dtype=torch.float64), -1)
_B = torch.softmax(torch.randn(3, 16, generator=_g, dtype=torch.float64), -1)
_GRID = torch.linspace(0, 1, 16, dtype=torch.float64)
_COST = (_GRID[:, None] - _GRID[None, :]) ** 2
OT = {
    "sinkhorn": lambda: tuple(t for t in ot.sinkhorn(_A, _B, _COST, 0.05, return_plan=True) if t is not None),
    "SinkhornLoss": lambda: ot.SinkhornLoss(0.05)(_A, _B, _COST),
    "grid_sinkhorn": lambda: ot.grid_sinkhorn(_A.view(3, 4, 4), _B.view(3, 4, 4), 0.05).f,
    "wasserstein_barycenter": lambda: ot.wasserstein_barycenter(torch.stack([_A, _B], 1).view(3, 2, 4, 4), 0.05),
    "SinkhornResult": lambda: ot.SinkhornResult(*ot.sinkhorn(_A, _B, _COST, 0.05)).cost,
}

_ONEHOT = torch.nn.functional.one_hot(LABELS[:, 0], 3).movedim(-1, 1).float()
METRICS = {
    "hausdorff_distance": lambda: metrics.hausdorff_distance(MASK, X > 0.5, percentile=95, sampling=(1.0, 2.0)),
    "average_surface_distance": lambda: metrics.average_surface_distance(MASK.float(), X > 0.5, True),
    "normalized_surface_dice": lambda: metrics.normalized_surface_dice(MASK, X > 0.5, torch.tensor([1.5]),
                                                                       distance_metric="taxicab"),
    "surface_distance_metrics": lambda: metrics.surface_distance_metrics(MASK, X > 0.5, [1.5], 95, (1.0, 2.0)),
    "SurfaceDistanceResult": lambda: metrics.SurfaceDistanceResult(*metrics.surface_distance_metrics(
        _ONEHOT, _ONEHOT.roll(1, -1), 1.0, distance_metric="chessboard")).hausdorff_distance,
    "cl_dice": lambda: metrics.cl_dice(MASK, X > 0.5),
    "betti_numbers": lambda: metrics.betti_numbers(MASK),
    "betti_errors": lambda: metrics.betti_errors(MASK, X > 0.5),
    "panoptic_quality": lambda: metrics.panoptic_quality(LABELS, LABELS.roll(1, -1), metric_name="sq"),
    "panoptic_quality confusion": lambda: metrics.panoptic_quality(LABELS, LABELS.roll(1, -1), match_iou_threshold=0.2,
                                                                   output_confusion_matrix=True),
}
#: The scikit-image mirrors (morphaug.morphology, .measure, .segmentation).
SKIMAGE = {
    "skeletonize": lambda: morphology.skeletonize(MASK),
    "skeletonize parallel": lambda: morphology.skeletonize(MASK, method="parallel"),
    "thin": lambda: morphology.thin(MASK, max_num_iter=3),
    "euler_number": lambda: measure.euler_number(MASK, connectivity=1),
    "label": lambda: measure.label(LABELS, return_num=True),
    "expand_labels": lambda: segmentation.expand_labels(LABELS, distance=2),
    "find_boundaries": lambda: segmentation.find_boundaries(LABELS, mode="outer"),
}
LOSSES = {
    "HausdorffDTLoss": lambda: losses.HausdorffDTLoss(softmax=True),
    "LogHausdorffDTLoss": lambda: losses.LogHausdorffDTLoss(softmax=True),
    "BoundaryLoss": lambda: losses.BoundaryLoss(softmax=True, reduction="none"),
    "SoftclDiceLoss": lambda: losses.SoftclDiceLoss(softmax=True, reduction="none"),
    "SoftDiceclDiceLoss": lambda: losses.SoftDiceclDiceLoss(softmax=True),
    "SkeletonRecallLoss": lambda: losses.SkeletonRecallLoss(softmax=True, reduction="none"),
}

TRANSFORMS = {
    "RandLabelMorphology": (lambda: transforms.RandLabelMorphology("label", num_classes=3, prob=1.0), LABELS),
    "RandLabelMorphology one-hot": (
        lambda: transforms.RandLabelMorphology("label", footprint=("ball", "cross"), prob=1.0),
        torch.nn.functional.one_hot(LABELS[:, 0], 3).movedim(-1, 1)),
    "RandGreyMorphology": (lambda: transforms.RandGreyMorphology("image", prob=1.0), X),
    "DistanceMap": (lambda: transforms.DistanceMap("label", num_classes=3), LABELS),
    "DistanceMap taxicab": (lambda: transforms.DistanceMap("label", num_classes=3, metric="taxicab"), LABELS),
    "LabelBoundary": (lambda: transforms.LabelBoundary("label", num_classes=3), LABELS),
    "FillHoles": (lambda: transforms.FillHoles("label", num_classes=3), LABELS),
    "ExpandLabels": (lambda: transforms.ExpandLabels("label", distance=2), LABELS),
    "InstanceBoundary": (lambda: transforms.InstanceBoundary("label", mode="outer", connectivity=2), LABELS),
    "SkeletonTarget": (lambda: transforms.SkeletonTarget("label", output_format="onehot", num_classes=3), LABELS),
    "RandBoundaryJitter": (lambda: transforms.RandBoundaryJitter("label", num_classes=3, prob=1.0), LABELS),
    "KeepLargestComponents": (lambda: transforms.KeepLargestComponents("label", num_classes=3), LABELS),
    "KeepLargestComponents union": (
        lambda: transforms.KeepLargestComponents("label", 2, independent=False, label_format="onehot"), _ONEHOT),
    "RemoveSmallComponents": (lambda: transforms.RemoveSmallComponents("label", min_size=4, num_classes=3), LABELS),
    "RandRemoveComponent": (
        lambda: transforms.RandRemoveComponent("label", num_classes=3, prob=1.0, prob_other_class=0.5), LABELS),
    "RandHistogramTransfer": (lambda: transforms.RandHistogramTransfer("image", prob=1.0), HISTS),
    "RandWassersteinMix": (lambda: transforms.RandWassersteinMix("image", prob=1.0), HISTS),
}


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def test_every_public_name_is_covered():
    covered = {name.split()[0] for name in (*FUNCTIONS, *OT, *TRANSFORMS)}
    public = set(ndimage.__all__) | set(ot.__all__) | set(transforms.__all__) - {"BatchTransform"}
    assert public <= covered | set(NOT_COMPILED), sorted(public - covered)
    constants = {"DISTANCE_METRICS", "PANOPTIC_METRICS", "BRATS_2023"}
    assert set(metrics.__all__) - constants - set(NOT_COMPILED) == {name.split()[0] for name in METRICS}
    assert set(losses.__all__) == set(LOSSES)
    skimage = set(morphology.__all__) | set(measure.__all__) | set(segmentation.__all__)
    assert skimage - {"PROPERTIES"} - set(NOT_COMPILED) == {name.split()[0] for name in SKIMAGE}


@pytest.mark.parametrize("name", list(FUNCTIONS) + list(OT) + list(METRICS) + [f"skimage {name}" for name in SKIMAGE])
def test_function_compiles_without_a_graph_break(name):
    call = {**FUNCTIONS, **OT, **METRICS, **{f"skimage {name}": f for name, f in SKIMAGE.items()}}[name]
    assert_parity(torch.compile(call, fullgraph=True, backend="eager")(), call(), exact=True, dtype="expected")


def test_value_indices_breaks_the_graph():
    with pytest.raises(torch._dynamo.exc.Unsupported):
        torch.compile(lambda: ndimage.value_indices(LABELS), fullgraph=True, backend="eager")()
    assert list(torch.compile(lambda: ndimage.value_indices(LABELS), backend="eager")()) == [0, 1, 2]


@pytest.mark.parametrize("name", list(TRANSFORMS))
def test_transform_apply_compiles_without_a_graph_break(name):
    make, x = TRANSFORMS[name]
    transform = make()
    params = transform.make_params(x, torch.Generator().manual_seed(1))
    compiled = torch.compile(transform.apply, fullgraph=True, backend="eager")
    assert_parity(compiled(x, params), transform.apply(x, params), exact=True, dtype="expected")


@pytest.mark.parametrize("name", list(LOSSES))
def test_loss_and_its_gradient_compile_without_a_graph_break(name):
    loss = LOSSES[name]()

    def value_and_gradient(function):
        x = X64.expand(2, 3, 12, 11).clone().requires_grad_()
        value = function(x, _ONEHOT)
        value.sum().backward()
        return value, x.grad

    assert_parity(value_and_gradient(torch.compile(loss, fullgraph=True, backend="eager")), value_and_gradient(loss),
                  exact=True, dtype="expected")


def test_results_given_as_tensors_are_written():
    output = torch.zeros_like(X)
    distances = torch.zeros_like(X64)

    def call(x, output, distances):
        eroded = ndimage.grey_erosion(x, size=3, output=output)
        return eroded, ndimage.distance_transform_edt(x > 0.4, distances=distances)

    eroded, returned = torch.compile(call, fullgraph=True, backend="eager")(X, output, distances)
    assert eroded is output and returned is None
    expected = torch.empty_like(X64)
    ndimage.distance_transform_edt(MASK, distances=expected)
    assert_parity((output, distances), (ndimage.grey_erosion(X, size=3), expected), exact=True, dtype="expected")


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_other_compiler_backends(backend):
    def pipeline(x):
        closed = ndimage.grey_closing(x, size=3)
        holes = ndimage.binary_fill_holes(closed > 0.5)
        return ndimage.distance_transform_edt(holes) + closed

    assert_parity(torch.compile(pipeline, fullgraph=True, backend=backend)(X), pipeline(X), exact=True, dtype="expected")


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_gradients_are_eager_modes(backend):
    weights = torch.rand(2, 1, 12, 11, generator=_g, dtype=torch.float64)

    def loss(x, a):
        eroded = ndimage.grey_erosion(x, size=3)
        return (eroded * weights).sum() + ot.sinkhorn(a, _B, _COST, 0.05).cost.sum()

    def gradients(function):
        x, a = X64.clone().requires_grad_(), _A.clone().requires_grad_()
        function(x, a).backward()
        return x.grad, a.grad

    eager = gradients(loss)
    assert all(g is not None and g.abs().sum() > 0 for g in eager)
    assert_parity(gradients(torch.compile(loss, fullgraph=True, backend=backend)), eager, exact=True, dtype="expected")


def test_footprints_compile():
    assert_parity(torch.compile(lambda: footprints.ball(3, 2), fullgraph=True, backend="eager")(), footprints.ball(3, 2),
                  exact=True, dtype="expected")
