"""The dispatch tables agree with the code: for every case of every table, a call that the
case takes runs its kernel (seen as the ``torch.ops.morphaug`` op it launches), and a call
no case takes runs none. A case added without a call here fails
``test_every_case_has_a_call``."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from morphaug import _ops, measure, metrics, morphology, ndimage, ot, segmentation, transforms
from morphaug.ndimage._distance import squared_edt

NATIVE, WHY_NOT = _ops.load_native()
pytestmark = pytest.mark.skipif(NATIVE is None, reason=WHY_NOT or "")

GEN = torch.Generator().manual_seed(3)
X = torch.rand(2, 1, 12, 11, generator=GEN)
M = X > 0.4
LABELS = (torch.rand(2, 1, 12, 11, generator=GEN) * 3).long()
LABELS_9D = torch.ones((1, 1) + (1,) * 8 + (2,), dtype=torch.long)
A = torch.softmax(torch.rand(3, 6, generator=GEN, dtype=torch.float64), -1)
B = torch.softmax(torch.rand(3, 5, generator=GEN, dtype=torch.float64), -1)
COST = torch.rand(6, 5, generator=GEN, dtype=torch.float64)
HISTS = torch.softmax(torch.rand(2, 2, 36, generator=GEN, dtype=torch.float64), -1).view(2, 2, 6, 6)
LONG = np.ones((1, 257), bool)  # more offsets than the binary_erosion kernel takes
NO_CENTRE = np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]], bool)  # no native kernel takes an element without its centre

def torch_policy(call, error: type[Exception]):
    """``call`` under ``MORPHAUG_BACKEND=torch``, raising ``error`` (a table whose torch row refuses)."""
    def run():
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("MORPHAUG_BACKEND", "torch")
            with pytest.raises(error):
                call()
    return run


def torch_backend(call):
    """``call`` under ``MORPHAUG_BACKEND=torch`` (a table whose torch row only that policy reaches)."""
    def run():
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("MORPHAUG_BACKEND", "torch")
            call()
    return run


def case(case_id: str, op: str, kernel: str, call):
    """The case of table ``op`` whose kernel is ``kernel`` (``"torch"``: its last row, the torch
    backend), and a call it must take; ``case_id`` names the test."""
    return pytest.param(op, kernel, call, id=case_id)


GREY = (("erosion", ndimage.grey_erosion), ("dilation", ndimage.grey_dilation))
MORPHOLOGY = "label morphology (RandLabelMorphology)"
THRESHOLDS = "distance thresholds (LabelBoundary)"
SIGNED = "signed distance maps (DistanceMap, RandBoundaryJitter)"
SIZES = "component sizes (the torch backends of the component filters and draws)"
FILTERS = "component filters (KeepLargestComponents, RemoveSmallComponents)"
DRAWS = "component draws (RandRemoveComponent)"
BINARY = "binary masks (morphaug.metrics)"
LISTS = "surface distance lists (morphaug.metrics on the CPU)"
SINKHORN = "sinkhorn (method 'sinkhorn', SinkhornLoss)"
BARYCENTER = "wasserstein_barycenter (method 'sinkhorn', or 'auto' choosing it)"
LEE = "skeletonize(method='lee')"
PARALLEL = "skeletonize(method='parallel')"
MEASUREMENTS = "measurements"

CASES = [
    case("erosion-propagate", "binary_erosion", "propagate", lambda: ndimage.binary_erosion(M, iterations=0)),
    case("erosion-ball", "binary_erosion", "ball_morphology",
         lambda: ndimage.binary_erosion(M, np.ones((3, 3), bool), iterations=2)),
    case("erosion-structure", "binary_erosion", "binary_erosion", lambda: ndimage.binary_erosion(M, mask=~M)),
    case("erosion-torch", "binary_erosion", "torch", lambda: ndimage.binary_erosion(M, LONG)),
    case("dilation-propagate", "binary_dilation", "propagate",
         lambda: ndimage.binary_propagation(M, mask=X > 0.2)),
    case("dilation-ball", "binary_dilation", "ball_morphology", lambda: ndimage.binary_dilation(M)),
    case("dilation-structure", "binary_dilation", "binary_erosion",
         lambda: ndimage.binary_dilation(M, border_value=1)),
    case("dilation-torch", "binary_dilation", "torch", lambda: ndimage.binary_dilation(M, LONG)),
    case("hit-or-miss", "binary_hit_or_miss", "binary_erosion", lambda: ndimage.binary_hit_or_miss(M, NO_CENTRE)),
    case("hit-or-miss-torch", "binary_hit_or_miss", "torch", lambda: ndimage.binary_hit_or_miss(M, LONG)),
    case("fill-holes", "binary_fill_holes", "fill_holes", lambda: ndimage.binary_fill_holes(M)),
    case("fill-holes-torch", "binary_fill_holes", "torch", lambda: ndimage.binary_fill_holes(M, NO_CENTRE)),
    case("edt", "distance_transform_edt", "edt", lambda: ndimage.distance_transform_edt(M)),
    case("edt-torch-17-axes", "distance_transform_edt", "torch",  # more axes than the kernel takes
         lambda: ndimage.distance_transform_edt(torch.zeros((1, 1) + (1,) * 17))),
    case("squared-edt", "squared_edt", "edt", lambda: squared_edt(M)),  # surfel_distances' squares
    case("squared-edt-torch-17-axes", "squared_edt", "torch", lambda: squared_edt(torch.zeros((1, 1) + (1,) * 17) > 0)),
    case("cdt", "distance_transform_cdt", "cdt", lambda: ndimage.distance_transform_cdt(M)),
    case("bf", "distance_transform_bf", "distance_bf", lambda: ndimage.distance_transform_bf(M, "taxicab")),
    case("bf-torch-7-axes", "distance_transform_bf", "torch",
         lambda: ndimage.distance_transform_bf(torch.zeros((1, 1) + (2,) * 7))),
    case("cdt-torch-7-axes", "distance_transform_cdt", "torch",
         lambda: ndimage.distance_transform_cdt(torch.zeros((1, 1) + (2,) * 7))),
    case("label", "label", "label", lambda: ndimage.label(M, np.ones((3, 3)))),
    case("label-torch-9-axes", "label", "torch", lambda: ndimage.label(torch.ones((1, 1) + (1,) * 9))),
    *[c for name, fn in GREY for c in (
        case(f"grey-{name}-box", f"grey_{name}", "grey_box", lambda fn=fn: fn(X, size=3)),
        case(f"grey-{name}-footprint", f"grey_{name}", "grey_footprint",
             lambda fn=fn: fn(X, footprint=np.eye(3, dtype=bool))),
        case(f"grey-{name}-structure", f"grey_{name}", "grey_structure",
             lambda fn=fn: fn(X, structure=np.ones((3, 2)))),
        case(f"grey-{name}-element", f"grey_{name}", "grey_element",
             lambda fn=fn: fn(X, footprint=torch.rand(2, 3, 3, generator=GEN) < 0.5)),
        case(f"grey-{name}-torch-bool-structure", f"grey_{name}", "torch",  # SciPy's byte arithmetic
             lambda fn=fn: fn(M, structure=torch.ones(2, 3, 2))))],
    case("sinkhorn", SINKHORN, "sinkhorn_scaling", lambda: ot.sinkhorn(A, B, COST, 0.5, method="sinkhorn")),
    case("sinkhorn-torch", SINKHORN, "torch",
         lambda: ot.sinkhorn(A, B, COST.expand(3, 6, 5), 0.5, method="sinkhorn")),
    case("barycenter", BARYCENTER, "grid_barycenter",
         lambda: ot.wasserstein_barycenter(HISTS, 0.5, method="sinkhorn")),
    case("barycenter-torch", BARYCENTER, "torch", lambda: ot.wasserstein_barycenter(HISTS, 0.5, method="log")),
    case("label-morphology", MORPHOLOGY, "ball_morphology",
         lambda: transforms.RandLabelMorphology("l", num_classes=3, prob=1.0, radius=2)(LABELS)),
    case("label-morphology-torch-radius-130", MORPHOLOGY, "torch",  # past the CPU kernel's radii
         lambda: transforms.RandLabelMorphology("l", num_classes=3, prob=1.0, radius=130)(LABELS)),
    case("thresholds", THRESHOLDS, "ball_morphology",
         lambda: transforms.LabelBoundary("l", thickness=2, num_classes=3)(LABELS)),
    case("thresholds-torch-radius-130", THRESHOLDS, "torch",
         lambda: transforms.LabelBoundary("l", thickness=130, num_classes=3)(LABELS)),
    case("signed-distance", SIGNED, "signed_edt",
         lambda: transforms.DistanceMap("l", signed=True, num_classes=3)(LABELS)),
    case("signed-distance-torch", SIGNED, "torch",
         lambda: transforms.DistanceMap("l", signed=True, metric="taxicab", num_classes=3)(LABELS)),
    case("component-sizes-9-axes", SIZES, "label_sizes",  # past the draw's and label's kernels
         lambda: transforms.RandRemoveComponent("l", prob=1.0, num_classes=2)(LABELS_9D)),
    case("component-sizes-torch", SIZES, "torch",  # every call fits the kernel (one slice of ids)
         torch_backend(lambda: transforms.RandRemoveComponent("l", prob=1.0, num_classes=2)(LABELS_9D))),
    case("component-draws", DRAWS, "pick_component",
         lambda: transforms.RandRemoveComponent("l", prob=1.0, num_classes=3)(LABELS)),
    case("component-draws-torch-9-axes", DRAWS, "torch",
         lambda: transforms.RandRemoveComponent("l", prob=1.0, num_classes=2)(LABELS_9D)),
    case("component-filters", FILTERS, "filter_components",
         lambda: transforms.KeepLargestComponents("l", num_classes=3)(LABELS)),
    case("component-filters-torch-9-axes", FILTERS, "torch",
         lambda: transforms.RemoveSmallComponents("l", min_size=3, num_classes=2)(LABELS_9D)),
    case("binary-values", BINARY, "binary_values", lambda: metrics.hausdorff_distance(M.float(), M.roll(1, -1))),
    case("binary-values-torch-bool", BINARY, "torch",  # bool masks need no check
         lambda: metrics.hausdorff_distance(M, M.roll(1, -1))),
    case("surface-lists", LISTS, "surface_distance_lists", lambda: metrics.hausdorff_distance(M, M.roll(1, -1))),
    case("surface-lists-torch-taxicab", LISTS, "torch",
         lambda: metrics.hausdorff_distance(M, M.roll(1, -1), distance_metric="taxicab")),
    case("measurements", MEASUREMENTS, "region_stats", lambda: ndimage.extrema(X, LABELS, [0, 2])),
    case("measurements-torch-labels-shared-along-space", MEASUREMENTS, "torch",
         lambda: ndimage.mean(X, LABELS[..., :1, :], [0, 2])),
    case("median", "median", "region_median", lambda: ndimage.median(X, LABELS, [0, 2])),
    case("median-torch-labels-shared-along-space", "median", "torch",
         lambda: ndimage.median(X, LABELS[..., :1, :], [0, 2])),
    case("histogram", "histogram", "region_histogram", lambda: ndimage.histogram(X, 0, 1, 5, LABELS, [0, 2])),
    case("value-indices", "value_indices", "value_indices", lambda: ndimage.value_indices(LABELS, ignore_value=0)),
    case("value-indices-torch-wide-range", "value_indices", "torch",
         lambda: ndimage.value_indices(LABELS * 2**40)),
    case("histogram-torch-labels-shared-along-space", "histogram", "torch",
         lambda: ndimage.histogram(X, 0, 1, 5, LABELS[..., :1, :], [0, 2])),
    case("measure-label", "measure.label", "label_values", lambda: measure.label(LABELS)),
    case("measure-label-torch-9-axes", "measure.label", "torch", lambda: measure.label(LABELS_9D, connectivity=1)),
    case("skeletonize-lee", LEE, "skeletonize_lee", lambda: morphology.skeletonize(M, method="lee")),
    case("skeletonize-lee-torch", LEE, "torch",  # no torch Lee: the policy's refusal says why
         torch_policy(lambda: morphology.skeletonize(M, method="lee"), NotImplementedError)),
    case("skeletonize-zhang", "skeletonize(method='zhang')", "thinning2d", lambda: morphology.skeletonize(M)),
    case("skeletonize-zhang-torch", "skeletonize(method='zhang')", "torch",
         torch_backend(lambda: morphology.skeletonize(M))),
    case("thin", "thin", "thinning2d", lambda: morphology.thin(M, 2)),
    case("thin-torch", "thin", "torch", torch_backend(lambda: morphology.thin(M))),
    case("skeletonize-parallel", PARALLEL, "skeletonize_parallel",
         lambda: morphology.skeletonize(M, method="parallel")),
    case("skeletonize-parallel-torch", PARALLEL, "torch",
         torch_backend(lambda: morphology.skeletonize(M, method="parallel"))),
    case("expand-labels", "segmentation.expand_labels", "expand_labels",
         lambda: segmentation.expand_labels(LABELS, 2)),
    case("expand-labels-torch", "segmentation.expand_labels", "torch",
         torch_backend(lambda: segmentation.expand_labels(LABELS, 2))),
    case("euler-number", "measure.euler_number", "euler_number", lambda: measure.euler_number(M)),
    case("euler-number-torch", "measure.euler_number", "torch", torch_backend(lambda: measure.euler_number(M))),
    case("panoptic", "metrics.panoptic_quality", "panoptic_confusion",
         lambda: metrics.panoptic_quality(LABELS, LABELS.flip(-1))),
    case("panoptic-torch-below-half", "metrics.panoptic_quality", "torch",
         lambda: metrics.panoptic_quality(LABELS, LABELS.flip(-1), match_iou_threshold=0.3)),
    case("find-boundaries", "segmentation.find_boundaries", "find_boundaries",
         lambda: segmentation.find_boundaries(LABELS, 2, "outer")),
    case("find-boundaries-torch-subpixel", "segmentation.find_boundaries", "torch",
         lambda: segmentation.find_boundaries(LABELS, mode="subpixel")),
    case("watershed", "watershed_ift", "watershed_ift",
         lambda: ndimage.watershed_ift((X * 4).to(torch.uint8), (LABELS - 1).to(torch.int8))),
    case("watershed-torch-5-axes", "watershed_ift", "torch",
         lambda: ndimage.watershed_ift(torch.zeros((1, 1) + (2,) * 5, dtype=torch.uint8),
                                       torch.ones((1, 1) + (2,) * 5, dtype=torch.int8))),
]


class NativeOps(TorchDispatchMode):
    """Records the ``torch.ops.morphaug`` ops a call launches."""

    def __init__(self):
        super().__init__()
        self.seen = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func.namespace == "morphaug":
            self.seen.add(func._opname)
        return func(*args, **(kwargs or {}))


def test_every_case_has_a_call():
    cases = {(op, kernel) for op, table in _ops.TABLES.items() for _, kernel, _ in table.rows("cpu")}
    assert cases == {tuple(param.values[:2]) for param in CASES}


def test_case_ids_are_unique():
    assert len({param.id for param in CASES}) == len(CASES)


@pytest.mark.parametrize("op, kernel, call", CASES)
def test_each_case_runs_its_kernel(op, kernel, call, monkeypatch):
    monkeypatch.delenv("MORPHAUG_BACKEND", raising=False)
    monkeypatch.delenv("MORPHAUG_EMULATE_CUDA", raising=False)
    table, fell_through = _ops.TABLES[op], []
    fallback = table.fallback
    monkeypatch.setattr(table, "fallback", lambda *args: fell_through.append(True) or fallback(*args))
    with NativeOps() as mode:
        call()
    if kernel == "torch":  # no case takes the call: the table's torch algorithm runs (whose calls of public ops
        # may take kernels through their own tables, as RandLabelMorphology's do), or no kernel of it at all
        assert fell_through or not mode.seen & {k for _, k, _ in table.rows("cpu")}
    else:
        assert kernel in mode.seen and not fell_through


def test_every_kernel_has_one_contract():
    """Each op of ``torch.ops.morphaug`` has a row of KERNELS, which holds its function and fake."""
    ops = {name.split("::")[1] for name in torch._C._dispatch_get_all_op_names()
           if name.startswith("morphaug::") and "." not in name}
    assert ops == set(_ops.KERNELS)
    for name, kernel in _ops.KERNELS.items():
        assert kernel.function.__name__ == name and kernel.fake.__name__ == name
        assert kernel.function is getattr(_ops.kernels, name)


def test_a_call_past_a_kernel_contract_falls_through_whatever_the_policy(monkeypatch):
    """A call that the kernel does not fit (radius 130 on the CPU ball kernel) is none of its
    calls: under MORPHAUG_BACKEND=native too it runs on the torch backend, and gives its result."""
    x = torch.zeros(1, 1, 300, dtype=torch.bool)
    x[0, 0, 150] = True
    cross = np.ones(3, bool)
    monkeypatch.setenv("MORPHAUG_BACKEND", "torch")
    expected = ndimage.binary_dilation(x, cross, iterations=130)
    monkeypatch.setenv("MORPHAUG_BACKEND", "native")
    with NativeOps() as mode:
        got = ndimage.binary_dilation(x, cross, iterations=130)
    assert "ball_morphology" not in mode.seen and torch.equal(got, expected)
    assert int(got.sum()) == 261
