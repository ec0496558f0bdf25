"""The dispatch tables agree with the code: for every case of every table, a call that the
case takes runs its kernel (seen as the ``torch.ops.morphaug`` op it launches), and a call
no case takes runs none. A case added without a call here fails
``test_every_case_has_a_call``."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from morphaug import _ops, metrics, ndimage, ot, transforms

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
NO_CENTRE = np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]], bool)  # no native kernel takes an element without its centre

# (table, case): (call, the kernel it must run, or None for the torch backend)
CALLS = {
    ("binary_erosion", "iterations < 1 with an element read on the host that holds its centre, each padded "
                       "slice under 2^31 voxels"):
        (lambda: ndimage.binary_erosion(M, iterations=0), "propagate"),
    ("binary_erosion", "a centred ball, cross or box over every axis read on the host (iterated: cross or box), "
                       "border_value 0, no mask"):
        (lambda: ndimage.binary_erosion(M, np.ones((3, 3), bool), iterations=2), "ball_morphology"),
    ("binary_erosion", "otherwise"): (lambda: ndimage.binary_erosion(M, mask=~M), None),
    ("binary_dilation", "iterations < 1 with an element read on the host that holds its centre, each padded "
                        "slice under 2^31 voxels"):
        (lambda: ndimage.binary_propagation(M, mask=X > 0.2), "propagate"),
    ("binary_dilation", "a centred ball, cross or box over every axis read on the host (iterated: cross or box), "
                        "border_value 0, no mask"):
        (lambda: ndimage.binary_dilation(M), "ball_morphology"),
    ("binary_dilation", "otherwise"): (lambda: ndimage.binary_dilation(M, border_value=1), None),
    ("binary_fill_holes", "an element read on the host that holds its centre, each padded slice under 2^31 voxels"):
        (lambda: ndimage.binary_fill_holes(M), "fill_holes"),
    ("binary_fill_holes", "otherwise"): (lambda: ndimage.binary_fill_holes(M, NO_CENTRE), None),
    ("distance_transform_edt", "every input"): (lambda: ndimage.distance_transform_edt(M), "edt"),
    ("distance_transform_edt", "otherwise"):  # 17 axes: more than the kernel takes
        (lambda: ndimage.distance_transform_edt(torch.zeros((1, 1) + (1,) * 17)), None),
    ("distance_transform_cdt", "every metric"): (lambda: ndimage.distance_transform_cdt(M), "cdt"),
    ("distance_transform_cdt", "otherwise"):  # 7 axes: more than the kernel takes
        (lambda: ndimage.distance_transform_cdt(torch.zeros((1, 1) + (2,) * 7)), None),
    ("label", "every input"): (lambda: ndimage.label(M, np.ones((3, 3))), "label"),
    ("label", "otherwise"):  # 9 axes: more than the kernel takes
        (lambda: ndimage.label(torch.ones((1, 1) + (1,) * 9)), None),
    **{(op, case): (call, kernel) for op, fn in (("grey_erosion", ndimage.grey_erosion),
                                                 ("grey_dilation", ndimage.grey_dilation))
       for case, call, kernel in (
           ("size, or an all-true footprint", lambda fn=fn: fn(X, size=3), "grey_box"),
           ("one flat footprint for every slice, read on the host",
            lambda fn=fn: fn(X, footprint=np.eye(3, dtype=bool)), "grey_footprint"),
           ("one non-flat structure for every slice, read on the host, not on bool input",
            lambda fn=fn: fn(X, structure=np.ones((3, 2))), "grey_structure"),
           ("otherwise", lambda fn=fn: fn(X, footprint=torch.rand(2, 3, 3, generator=GEN) < 0.5), None))},
    ("sinkhorn (method 'sinkhorn', SinkhornLoss)", "one cost for every problem"):
        (lambda: ot.sinkhorn(A, B, COST, 0.5, method="sinkhorn"), "sinkhorn_scaling"),
    ("sinkhorn (method 'sinkhorn', SinkhornLoss)", "otherwise"):
        (lambda: ot.sinkhorn(A, B, COST.expand(3, 6, 5), 0.5, method="sinkhorn"), None),
    ("wasserstein_barycenter (method 'sinkhorn', or 'auto' choosing it)",
     "the Gibbs kernels' soft-min (not the exact one)"):
        (lambda: ot.wasserstein_barycenter(HISTS, 0.5, method="sinkhorn"), "grid_barycenter"),
    ("wasserstein_barycenter (method 'sinkhorn', or 'auto' choosing it)", "otherwise"):
        (lambda: ot.wasserstein_barycenter(HISTS, 0.5, method="log"), None),
    ("label morphology (RandLabelMorphology)", "radii up to 127 on CPU, any on CUDA"):
        (lambda: transforms.RandLabelMorphology("l", num_classes=3, prob=1.0, radius=2)(LABELS), "ball_morphology"),
    ("label morphology (RandLabelMorphology)", "otherwise"):
        (lambda: transforms.RandLabelMorphology("l", num_classes=3, prob=1.0, radius=130)(LABELS), None),
    ("distance thresholds (LabelBoundary)", "radii up to 127 on CPU, any on CUDA"):
        (lambda: transforms.LabelBoundary("l", thickness=2, num_classes=3)(LABELS), "ball_morphology"),
    ("distance thresholds (LabelBoundary)", "otherwise"):
        (lambda: transforms.LabelBoundary("l", thickness=130, num_classes=3)(LABELS), None),
    ("signed distance maps (DistanceMap, RandBoundaryJitter)",
     "Euclidean, unit sampling, squared distances within 32 bits"):
        (lambda: transforms.DistanceMap("l", signed=True, num_classes=3)(LABELS), "signed_edt"),
    ("signed distance maps (DistanceMap, RandBoundaryJitter)", "otherwise"):
        (lambda: transforms.DistanceMap("l", signed=True, metric="taxicab", num_classes=3)(LABELS), None),
    ("component sizes (RandRemoveComponent)", "every label map"):
        (lambda: transforms.RandRemoveComponent("l", prob=1.0, num_classes=3)(LABELS), "label_sizes"),
    ("component sizes (RandRemoveComponent)", "otherwise"):  # 9 axes: more than the kernel takes
        (lambda: transforms.RandRemoveComponent("l", prob=1.0, num_classes=2)(LABELS_9D), None),
    ("component filters (KeepLargestComponents, RemoveSmallComponents)", "slices under 2^31 voxels"):
        (lambda: transforms.KeepLargestComponents("l", num_classes=3)(LABELS), "filter_components"),
    ("binary masks (morphaug.metrics)", "every real dtype"):
        (lambda: metrics.hausdorff_distance(M.float(), M.roll(1, -1)), "binary_values"),
    ("binary masks (morphaug.metrics)", "otherwise"):  # bool masks need no check
        (lambda: metrics.hausdorff_distance(M, M.roll(1, -1)), None),
    ("surface distance lists (morphaug.metrics on the CPU)", "euclidean, at most 3 spatial axes"):
        (lambda: metrics.hausdorff_distance(M, M.roll(1, -1)), "surface_distance_lists"),
    ("surface distance lists (morphaug.metrics on the CPU)", "otherwise"):
        (lambda: metrics.hausdorff_distance(M, M.roll(1, -1), distance_metric="taxicab"), None),
    ("component filters (KeepLargestComponents, RemoveSmallComponents)", "otherwise"):
        (lambda: transforms.RemoveSmallComponents("l", min_size=3, num_classes=2)(LABELS_9D), None),
}


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
    cases = {(op, when) for op, table in _ops.TABLES.items() for when, _, _ in table.rows("cpu")}
    assert cases == set(CALLS)


@pytest.mark.parametrize("op, when", list(CALLS), ids=[f"{op}: {when}"[:80] for op, when in CALLS])
def test_each_case_runs_its_kernel(op, when, monkeypatch):
    monkeypatch.delenv("MORPHAUG_BACKEND", raising=False)
    monkeypatch.delenv("MORPHAUG_EMULATE_CUDA", raising=False)
    call, kernel = CALLS[op, when]
    table, fell_through = _ops.TABLES[op], []
    fallback = table.fallback
    monkeypatch.setattr(table, "fallback", lambda *args: fell_through.append(True) or fallback(*args))
    with NativeOps() as mode:
        call()
    if kernel is None:  # no case takes the call: the table's torch algorithm runs (whose calls of public ops
        # may take kernels through their own tables, as RandLabelMorphology's do), or no kernel of it at all
        assert fell_through or not mode.seen & {k for _, k, _ in table.rows("cpu")}
    else:
        assert kernel in mode.seen and not fell_through
