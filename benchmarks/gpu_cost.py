"""What each public call costs on CUDA, counted on the CPU (FakeTensor ``cuda`` inputs, no GPU).

    python benchmarks/gpu_cost.py [--fast] [--write PATH]

Runs one representative call of every public function and transform of
morphaug on FakeTensor CUDA inputs (shapes and dtypes, no data) under
:class:`CostCounter`, a dispatch mode that sees every op the call queues, and
prints a markdown table, one row per call:

* **native**: launches of morphaug's own kernels (``torch.ops.morphaug``), by name;
  **aten**: other device ops (views, allocations and ``detach`` excluded);
* **fallback**: the kernels a CUDA build should take (``Call.native``) that the
  call did not reach, so that torch ops ran instead;
* **syncs**: undocumented device reads (``.item()``, ``bool()``, a copy to the
  host, an op whose output shape depends on the data); **reads**: the documented
  reads of ``morphaug._sync.READS``, answered "settled / valid" here;
* **H2D**: blocking host-to-device copies (pageable memory, ``non_blocking=False``),
  **staged**: asynchronous ones (``morphaug._sync.to_device``);
* **B/voxel**: bytes every launch reads and writes (its device operands and
  results, each once), per voxel of the call's input: a lower bound on the
  call's memory traffic, to compare with the ideal (input + output bytes).

Goals per call: 0 syncs and 0 H2D outside documented reads, no fallback, a few
launches per op. The choices are those of a CUDA build of ``morphaug._C``
(its fake kernels run); without one the table says so and every call runs on
the torch backend. ``--fast`` takes smaller inputs (the counts do not depend on
the size; the bytes per voxel barely do). ``tests/test_gpu_cost.py`` runs it.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from torch._subclasses.fake_tensor import (
    DataDependentOutputException,
    DynamicOutputShapeException,
    FakeTensor,
    FakeTensorMode,
    unset_fake_temporarily,
)
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode

from morphaug import _ops, _sync, footprints, losses, measure, metrics, morphology, ndimage, ot, segmentation, transforms

aten = torch.ops.aten

#: Ops that hand device data to the host as Python values.
READ_OPS = {aten._local_scalar_dense.default, aten.equal.default, aten.is_nonzero.default,
            aten.allclose.default}
#: Device ops that queue no work: allocations, autograd bookkeeping, tensors wrapped from Python values,
#: a tensor's device asked for (``prim.device``, dispatched for ``.device`` under a dispatch mode).
NO_WORK = {aten.empty.memory_format, aten.empty_strided.default, aten.empty_like.default,
           aten.detach.default, aten.lift_fresh.default, aten.lift_fresh_copy.default,
           aten.new_empty.default, aten.new_empty_strided.default, aten._assert_async.msg,
           aten._assert_async.default, torch.ops.prim.device.default}
COPIES = {aten._to_copy.default, aten.copy_.default}

#: What the replaced ``host_read`` answers for each documented read: everything settled and valid.
ANSWERS = {
    "binary fixpoint": lambda flags: [True, False],
    "label classes": lambda flags: [value < 3 for value in range(flags.numel())],
    "find_objects max_label": lambda top: 2,
    "ot arguments": lambda problems: [False] * problems.numel() if problems.ndim else False,
    "ot cost range": lambda span: 1.0,
    "ot convergence": lambda n_active: 0,
    "value_indices": lambda keys: [0] * keys.numel(),
    "panoptic assignment": lambda table: [0.0] * table.numel(),
    "regionprops max_label": lambda top: 2,
    "lesion-wise sizes": lambda sizes: [2] * sizes.numel(),
    "watershed_ift": lambda values: np.zeros(values.shape, int).tolist(),  # the torch backend: a flat image
    "tensor arguments": lambda value: np.ones(value.shape, float if value.is_floating_point() else int).tolist(),
}


def _on_device(tensor: torch.Tensor) -> bool:
    return isinstance(tensor, FakeTensor) or tensor.device.type != "cpu"


def _bytes(tensor: torch.Tensor) -> int:
    """The bytes an op touches of ``tensor``: its elements, at most its storage (expanded views)."""
    size = tensor.numel() * tensor.element_size()
    try:
        return min(size, tensor.untyped_storage().nbytes())
    except (RuntimeError, NotImplementedError):
        return size


class SyncError(RuntimeError):
    """Raised where a call would read device data (there is none to read)."""


@dataclasses.dataclass
class Cost:
    native: Counter = dataclasses.field(default_factory=Counter)
    aten: int = 0
    syncs: list = dataclasses.field(default_factory=list)
    reads: list = dataclasses.field(default_factory=list)
    h2d: list = dataclasses.field(default_factory=list)
    staged: int = 0
    bytes: int = 0
    error: str | None = None


class CostCounter(TorchDispatchMode):
    """Counts the launches, syncs, copies and bytes of the ops dispatched on device tensors;
    host work on host data runs for real (elements are read on the host)."""

    def __init__(self, fake_mode: FakeTensorMode):
        super().__init__()
        self.fake_mode = fake_mode
        self.cost = Cost()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        tensors = [t for t in pytree.tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
        target = kwargs.get("device")
        on_device = any(_on_device(t) for t in tensors)
        if not on_device and (target is None or torch.device(target).type == "cpu"):
            with unset_fake_temporarily():
                return func(*args, **kwargs)
        if func in READ_OPS or (target is not None and torch.device(target).type == "cpu"):
            self.cost.syncs.append(str(func))
            raise SyncError(f"{func} reads device data back to the host")
        host = [t for t in tensors if not _on_device(t)]
        if func in COPIES and host:
            blocking = not (kwargs.get("non_blocking") or (func is aten.copy_.default and len(args) > 2 and args[2]))
            if blocking:
                self.cost.h2d.append(str(func))
            else:
                self.cost.staged += 1
            return func(*args, **kwargs)
        try:
            out = func(*args, **kwargs)
        except (DataDependentOutputException, DynamicOutputShapeException) as error:
            self.cost.syncs.append(f"{func} (a data-dependent shape)")
            raise SyncError(str(error)) from error
        if any(isinstance(t, torch.Tensor) and t.device.type == "cpu" for t in pytree.tree_leaves(out)):
            self.cost.syncs.append(f"{func} (a copy to the host)")
        if func.is_view or func in NO_WORK:
            return out
        if func.namespace.startswith("morphaug"):
            self.cost.native[func._opname] += 1
        else:
            self.cost.aten += 1
        self.cost.bytes += sum(_bytes(t) for t in tensors if _on_device(t))
        self.cost.bytes += sum(_bytes(t) for t in pytree.tree_leaves(out) if isinstance(t, torch.Tensor))
        return out


# --------------------------------------------------------------------------- the calls
@dataclasses.dataclass(frozen=True)
class Call:
    """One representative call: ``make(device, size)`` returns ``(fn, args, kwargs)`` for inputs on
    ``device`` (``size``: the spatial side of 3-D volumes); ``reads``: the documented reads it makes
    (``morphaug._sync.READS``) on a CUDA build; ``native``: the kernels a CUDA build takes."""

    name: str
    make: Callable
    reads: frozenset = frozenset()
    native: frozenset = frozenset()


def _mask(device, *shape):
    return torch.rand(shape, device=device) < 0.6


def _image(device, *shape):
    return torch.rand(shape, device=device)


def _labels(device, *shape, classes=3):
    return torch.randint(0, classes, shape, device=device, dtype=torch.uint8)


def _hist(device, *shape, axes=1):
    """Histograms over the last ``axes`` axes (a grid's), each of mass 1."""
    values = torch.rand(shape, device=device) + 0.1
    return values / values.sum(dim=tuple(range(-axes, 0)), keepdim=True)


def _per_sample_balls(device):
    """A radius-1 or radius-2 ball per sample in one 5^3 box, on ``device`` (RandGreyMorphology's draws)."""
    return footprints.footprints_from_params(torch.zeros(B, dtype=torch.long, device=device),
                                             torch.arange(B, device=device) % 2 + 1, ("ball",), 2, 3)


def call(name, make, reads=(), native=()):
    return Call(name, make, frozenset(reads), frozenset(native))


B = 4  # samples per batch
STRUCTURE = np.full((3, 3, 3), 0.5)
CALLS = [
    call("ndimage.binary_erosion", lambda d, n: (ndimage.binary_erosion, (_mask(d, B, 1, n, n, n),), {}),
         native={"ball_morphology"}),
    call("ndimage.binary_dilation", lambda d, n: (ndimage.binary_dilation, (_mask(d, B, 1, n, n, n),),
                                                  {"structure": footprints.ball(2, 3)}), native={"ball_morphology"}),
    call("ndimage.binary_dilation (iterations=3, mask)",
         lambda d, n: (ndimage.binary_dilation, (_mask(d, B, 1, n, n, n),),
                       {"iterations": 3, "mask": _mask(d, B, 1, n, n, n)}), native={"binary_erosion"}),
    call("ndimage.binary_erosion (per-sample element, border_value=1)",
         lambda d, n: (ndimage.binary_erosion, (_mask(d, B, 1, n, n, n),),
                       {"structure": _mask(d, B, 3, 3, 3), "border_value": 1}), native={"binary_erosion"}),
    call("ndimage.binary_opening", lambda d, n: (ndimage.binary_opening, (_mask(d, B, 1, n, n, n),),
                                                 {"structure": footprints.cube(3, 3)}), native={"ball_morphology"}),
    call("ndimage.binary_closing", lambda d, n: (ndimage.binary_closing, (_mask(d, B, 1, n, n, n),), {}),
         native={"ball_morphology"}),
    call("ndimage.binary_hit_or_miss", lambda d, n: (ndimage.binary_hit_or_miss, (_mask(d, B, 1, n, n, n),), {}),
         native={"binary_erosion"}),
    call("ndimage.binary_propagation", lambda d, n: (ndimage.binary_propagation, (_mask(d, B, 1, n, n, n),),
                                                     {"mask": _mask(d, B, 1, n, n, n)}), native={"propagate"}),
    call("ndimage.binary_fill_holes", lambda d, n: (ndimage.binary_fill_holes, (_mask(d, B, 1, n, n, n),), {}),
         native={"fill_holes"}),
    call("ndimage.grey_erosion (size=3)", lambda d, n: (ndimage.grey_erosion, (_image(d, B, 1, n, n, n),),
                                                        {"size": 3}), native={"grey_box"}),
    call("ndimage.grey_dilation (footprint)", lambda d, n: (ndimage.grey_dilation, (_image(d, B, 1, n, n, n),),
                                                            {"footprint": footprints.ball(2, 3)}),
         native={"grey_footprint"}),
    call("ndimage.grey_opening (structure)", lambda d, n: (ndimage.grey_opening, (_image(d, B, 1, n, n, n),),
                                                           {"structure": STRUCTURE}), native={"grey_structure"}),
    call("ndimage.grey_erosion (footprint per sample)",
         lambda d, n: (ndimage.grey_erosion, (_image(d, B, 1, n, n, n),), {"footprint": _per_sample_balls(d)}),
         native={"grey_element"}),
    call("ndimage.grey_opening (structure per sample)",
         lambda d, n: (ndimage.grey_opening, (_image(d, B, 1, n, n, n),),
                       {"footprint": _per_sample_balls(d), "structure": _per_sample_balls(d).double() / 2}),
         native={"grey_element"}),
    call("ndimage.grey_closing", lambda d, n: (ndimage.grey_closing, (_image(d, B, 1, n, n, n),), {"size": 5}),
         native={"grey_box"}),
    call("ndimage.morphological_gradient", lambda d, n: (ndimage.morphological_gradient,
                                                         (_image(d, B, 1, n, n, n),), {"size": 3}),
         native={"grey_box"}),
    call("ndimage.morphological_laplace", lambda d, n: (ndimage.morphological_laplace,
                                                        (_image(d, B, 1, n, n, n),), {"size": 3}),
         native={"grey_box"}),
    call("ndimage.white_tophat", lambda d, n: (ndimage.white_tophat, (_image(d, B, 1, n, n, n),), {"size": 3}),
         native={"grey_box"}),
    call("ndimage.black_tophat", lambda d, n: (ndimage.black_tophat, (_image(d, B, 1, n, n, n),),
                                               {"footprint": footprints.cross(1, 3)}), native={"grey_footprint"}),
    call("ndimage.distance_transform_edt", lambda d, n: (ndimage.distance_transform_edt,
                                                         (_mask(d, B, 1, n, n, n),), {"sampling": (1.0, 0.7, 2.0)}),
         native={"edt"}),
    call("ndimage.distance_transform_edt (indices)",
         lambda d, n: (ndimage.distance_transform_edt, (_mask(d, B, 1, n, n, n),), {"return_indices": True}),
         native={"edt"}),
    call("ndimage.distance_transform_cdt", lambda d, n: (ndimage.distance_transform_cdt,
                                                         (_mask(d, B, 1, n, n, n),), {"metric": "taxicab"}),
         native={"cdt"}),
    call("ndimage.distance_transform_cdt (chessboard)", lambda d, n: (ndimage.distance_transform_cdt,
                                                                      (_mask(d, B, 1, n, n, n),), {}),
         native={"cdt"}),
    call("ndimage.distance_transform_cdt (indices)",
         lambda d, n: (ndimage.distance_transform_cdt, (_mask(d, B, 1, n, n, n),), {"return_indices": True}),
         native={"cdt"}),
    call("ndimage.distance_transform_bf", lambda d, n: (ndimage.distance_transform_bf,
                                                        (_mask(d, B, 1, 12, 12, 12),), {}),
         native={"distance_bf"}),
    call("ndimage.label", lambda d, n: (ndimage.label, (_mask(d, B, 1, n, n, n),), {}), native={"label"}),
    call("ndimage.sum_labels", lambda d, n: (ndimage.sum_labels, (_image(d, B, 1, n, n, n),
                                                                  _labels(d, B, 1, n, n, n)), {"index": [1, 2]}),
         native={"region_stats"}),
    call("ndimage.mean", lambda d, n: (ndimage.mean, (_image(d, B, 1, n, n, n), _labels(d, B, 1, n, n, n)), {}),
         native={"region_stats"}),
    call("ndimage.minimum", lambda d, n: (ndimage.minimum, (_image(d, B, 1, n, n, n),
                                                            _labels(d, B, 1, n, n, n)), {"index": 1}),
         native={"region_stats"}),
    call("ndimage.maximum", lambda d, n: (ndimage.maximum, (_image(d, B, 1, n, n, n),
                                                            _labels(d, B, 1, n, n, n)), {"index": [1, 2]}),
         native={"region_stats"}),
    call("ndimage.center_of_mass", lambda d, n: (ndimage.center_of_mass, (_image(d, B, 1, n, n, n),
                                                                          _labels(d, B, 1, n, n, n), [1, 2]), {}),
         native={"region_stats"}),
    call("ndimage.variance", lambda d, n: (ndimage.variance, (_image(d, B, 1, n, n, n), _labels(d, B, 1, n, n, n)),
                                           {"index": [1, 2]}), native={"region_stats"}),
    call("ndimage.median", lambda d, n: (ndimage.median, (_image(d, B, 1, n, n, n), _labels(d, B, 1, n, n, n)),
                                         {"index": [1, 2]}), native={"region_median"}),
    call("ndimage.extrema", lambda d, n: (ndimage.extrema, (_image(d, B, 1, n, n, n), _labels(d, B, 1, n, n, n)),
                                          {"index": [1, 2]}), native={"region_stats"}),
    call("ndimage.histogram", lambda d, n: (ndimage.histogram, (_image(d, B, 1, n, n, n), 0.0, 1.0, 16), {}),
         native={"region_histogram"}),
    call("ndimage.value_indices", lambda d, n: (ndimage.value_indices, (_labels(d, B, 1, n, n, n),), {}),
         reads={"value_indices"}),
    call("ndimage.find_objects", lambda d, n: (ndimage.find_objects, (_labels(d, B, 1, n, n, n),),
                                               {"max_label": 2}), native={"region_stats"}),
    call("ndimage.find_objects (no max_label)", lambda d, n: (ndimage.find_objects, (_labels(d, B, 1, n, n, n),), {}),
         reads={"find_objects max_label"}, native={"region_stats"}),
    call("ndimage.watershed_ift",
         lambda d, n: (ndimage.watershed_ift, (_labels(d, B, 1, 4 * n, 4 * n, classes=9),
                                               _labels(d, B, 1, 4 * n, 4 * n).to(torch.int16) - 1),
                       {"structure": np.ones((3, 3))}), native={"watershed_ift"}),
    call("ndimage.iterate_structure", lambda d, n: (ndimage.iterate_structure,
                                                    (footprints.cross(1, 3, device=d), 2), {})),
    call("footprints.random_footprints", lambda d, n: (footprints.random_footprints,
                                                       (B, footprints.SHAPES, (1, 3), 3), {"device": d})),
    call("footprints.footprints_from_params",
         lambda d, n: (footprints.footprints_from_params,
                       (torch.zeros(B, dtype=torch.long, device=d), torch.ones(B, dtype=torch.long, device=d),
                        tuple(footprints.SHAPE_METRICS), 3, 2), {})),
    call("morphology.skeletonize (parallel)", lambda d, n: (morphology.skeletonize, (_mask(d, B, 1, n, n, n),),
                                                            {"method": "parallel"}), reads={"binary fixpoint"},
         native={"skeletonize_parallel"}),
    call("morphology.skeletonize (zhang)", lambda d, n: (morphology.skeletonize, (_mask(d, B, 1, 4 * n, 4 * n),), {}),
         reads={"binary fixpoint"}, native={"thinning2d"}),
    call("morphology.thin", lambda d, n: (morphology.thin, (_mask(d, B, 1, 4 * n, 4 * n),), {}),
         reads={"binary fixpoint"}, native={"thinning2d"}),
    call("measure.euler_number", lambda d, n: (measure.euler_number, (_mask(d, B, 1, n, n, n),), {}),
         native={"euler_number"}),
    call("measure.regionprops_table", lambda d, n: (measure.regionprops_table, (_labels(d, B, 1, n, n, n, classes=9),),
                                                    {"properties": ("label", "area", "bbox", "centroid"),
                                                     "max_label": 8})),
    call("measure.label", lambda d, n: (measure.label, (_labels(d, B, 1, n, n, n),), {"return_num": True}),
         native={"label_values"}),
    call("segmentation.expand_labels", lambda d, n: (segmentation.expand_labels, (_labels(d, B, 1, n, n, n),),
                                                     {"distance": 2}), native={"expand_labels"}),
    call("segmentation.find_boundaries", lambda d, n: (segmentation.find_boundaries, (_labels(d, B, 1, n, n, n),),
                                                       {"mode": "inner"}), native={"find_boundaries"}),
    call("metrics.cl_dice", lambda d, n: (metrics.cl_dice, (_mask(d, B, 1, n, n, n), _mask(d, B, 1, n, n, n)),
                                          {"method": "parallel"}), reads={"binary fixpoint"},
         native={"skeletonize_parallel"}),
    call("metrics.panoptic_quality", lambda d, n: (metrics.panoptic_quality,
                                                   (_labels(d, B, 1, n, n, n, classes=9),) * 2, {}),
         native={"panoptic_confusion"}),
    call("metrics.betti_numbers", lambda d, n: (metrics.betti_numbers, (_mask(d, B, 1, n, n, n),), {}),
         native={"label", "euler_number"}),
    call("metrics.surface_distance_metrics",
         lambda d, n: (metrics.surface_distance_metrics, (_mask(d, B, 1, n, n, n), _mask(d, B, 1, n, n, n), 1.0),
                       {"percentile": 95}),
         native={"ball_morphology", "edt"}),
    call("metrics.surfel_distances",
         lambda d, n: (lambda p, r: metrics.surfel_distances(p, r, (1.5, 0.8, 0.8)).robust_hausdorff(95),
                       (_mask(d, B, 1, n, n, n), _mask(d, B, 1, n, n, n)), {}), native={"edt"}),
    call("metrics.lesion_wise_metrics",
         lambda d, n: (metrics.lesion_wise_metrics, (_mask(d, B, 1, n, n, n), _mask(d, B, 1, n, n, n)), {}),
         reads={"lesion-wise sizes"}, native={"binary_erosion", "label", "edt", "region_stats"}),
    call("metrics.hausdorff_distance",
         lambda d, n: (metrics.hausdorff_distance, (_mask(d, B, 1, n, n, n), _mask(d, B, 1, n, n, n)),
                       {"percentile": 95}), native={"ball_morphology", "edt"}),
    call("metrics.average_surface_distance",
         lambda d, n: (metrics.average_surface_distance, (_mask(d, B, 1, n, n, n), _mask(d, B, 1, n, n, n)), {}),
         native={"ball_morphology", "edt"}),
    call("metrics.normalized_surface_dice",
         lambda d, n: (metrics.normalized_surface_dice, (_mask(d, B, 1, n, n, n), _mask(d, B, 1, n, n, n), 1.0), {}),
         native={"ball_morphology", "edt"}),
    call("losses.BoundaryLoss", lambda d, n: (losses.BoundaryLoss(softmax=True, to_onehot_y=True),
                                              (_image(d, B, 2, n, n, n), _labels(d, B, 1, n, n, n, classes=2)), {}),
         native={"edt"}),
    call("losses.HausdorffDTLoss", lambda d, n: (losses.HausdorffDTLoss(softmax=True, to_onehot_y=True),
                                                 (_image(d, B, 2, n, n, n), _labels(d, B, 1, n, n, n, classes=2)), {}),
         native={"edt"}),
    call("ot.sinkhorn", lambda d, n: (ot.sinkhorn, (_hist(d, B, 64), _hist(d, B, 64), _image(d, 64, 64), 0.1), {}),
         reads={"ot arguments", "ot cost range", "ot convergence"}),
    call("ot.SinkhornLoss", lambda d, n: (ot.SinkhornLoss(reg=0.1), (_hist(d, B, 64), _hist(d, B, 64),
                                                                     _image(d, 64, 64)), {}),
         reads={"ot arguments", "ot cost range", "ot convergence"}),
    call("ot.grid_sinkhorn", lambda d, n: (ot.grid_sinkhorn, (_hist(d, B, n, n, axes=2), _hist(d, B, n, n, axes=2), 0.05), {}),
         reads={"ot arguments", "ot convergence"}),
    call("ot.wasserstein_barycenter", lambda d, n: (ot.wasserstein_barycenter, (_hist(d, B, 2, n, n, axes=2), 0.05), {}),
         reads={"ot arguments", "ot convergence"}),
]


def _data(d, n):
    return {"image": _image(d, B, 1, n, n, n), "label": _labels(d, B, 1, n, n, n)}


TRANSFORMS = [
    ("transforms.RandLabelMorphology", lambda: transforms.RandLabelMorphology("label", radius=(1, 2), prob=1.0,
                                                                              num_classes=3), (), {"ball_morphology"}),
    ("transforms.RandGreyMorphology", lambda: transforms.RandGreyMorphology("image", radius=2, prob=1.0), (),
     {"grey_element"}),
    ("transforms.DistanceMap", lambda: transforms.DistanceMap("label", "sdf", signed=True, num_classes=3), (),
     {"signed_edt"}),
    ("transforms.LabelBoundary", lambda: transforms.LabelBoundary("label", "edge", num_classes=3), (),
     {"ball_morphology"}),
    ("transforms.FillHoles", lambda: transforms.FillHoles("label", num_classes=3), (), {"fill_holes"}),
    ("transforms.ExpandLabels", lambda: transforms.ExpandLabels("label", distance=2), (), {"expand_labels"}),
    ("transforms.InstanceBoundary", lambda: transforms.InstanceBoundary("label", "edge"), (), {"find_boundaries"}),
    ("transforms.RandBoundaryJitter", lambda: transforms.RandBoundaryJitter("label", prob=1.0, num_classes=3), (),
     {"signed_edt"}),
    ("transforms.KeepLargestComponents", lambda: transforms.KeepLargestComponents("label", num_classes=3), (),
     {"filter_components"}),
    ("transforms.RemoveSmallComponents", lambda: transforms.RemoveSmallComponents("label", min_size=8,
                                                                                  num_classes=3), (), {"filter_components"}),
    ("transforms.RandRemoveComponent", lambda: transforms.RandRemoveComponent("label", prob=1.0, num_classes=3), (),
     {"pick_component"}),
    ("transforms.RandHistogramTransfer", lambda: transforms.RandHistogramTransfer("image", prob=1.0),
     {"ot arguments", "ot cost range", "ot convergence"}, ()),
    ("transforms.RandWassersteinMix", lambda: transforms.RandWassersteinMix("image", "label", prob=1.0,
                                                                            num_classes=3),
     {"ot arguments", "ot convergence"}, ()),
    ("transforms.FillHoles (classes inferred)", lambda: transforms.FillHoles("label"), {"label classes"},
     {"fill_holes"}),
]
CALLS += [call(name, (lambda build: lambda d, n: (build(), (_data(d, n),), {}))(build), reads, native)
          for name, build, reads, native in TRANSFORMS]


# --------------------------------------------------------------------------- counting
@contextlib.contextmanager
def _answered_reads(cost_of):
    """``_sync.host_read`` answering from :data:`ANSWERS`, recording each read in the current cost."""
    original = _sync.host_read

    def host_read(tensor, why):
        cost_of().reads.append(why)
        return ANSWERS[why](tensor)

    _sync.host_read = host_read
    try:
        yield
    finally:
        _sync.host_read = original


def measure_call(entry: Call, size: int) -> Cost:
    """The cost of ``entry`` on FakeTensor CUDA inputs with spatial side ``size``."""
    fake_mode = FakeTensorMode(allow_non_fake_inputs=True)
    counter = CostCounter(fake_mode)
    with fake_mode, _answered_reads(lambda: counter.cost), counter:
        fn, args, kwargs = entry.make(torch.device("cuda", 0), size)  # host constants made for real
        counter.cost = Cost()  # the inputs' own launches are not the call's
        try:
            fn(*args, **kwargs)
        except SyncError:
            counter.cost.error = "stopped at a sync"
    volumes = [t for t in pytree.tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor) and t.ndim >= 4]
    counter.cost.voxels = volumes[0].numel() if volumes else None
    return counter.cost


def rows(size: int) -> list[dict]:
    """One dict per call of :data:`CALLS`."""
    table = []
    for entry in CALLS:
        cost = measure_call(entry, size)
        reached = set(cost.native)
        table.append(dict(
            call=entry.name, native=dict(cost.native), aten=cost.aten,
            fallback=sorted(entry.native - reached), syncs=cost.syncs, reads=sorted(set(cost.reads)),
            documented=sorted(entry.reads), h2d=cost.h2d, staged=cost.staged,
            bytes_per_voxel=None if not cost.voxels else cost.bytes / cost.voxels, error=cost.error))
    return table


def cuda_build() -> bool:
    """Whether the loaded ``morphaug._C`` has its CUDA kernels (so the choices are a GPU's)."""
    return all(_ops.built_for(kernel, "cuda") for kernel in ("edt", "label", "grey_box"))


def markdown(table: list[dict], size: int) -> str:
    lines = [f"Inputs: FakeTensor CUDA, batch {B}, 3-D volumes {size}^3 (`benchmarks/gpu_cost.py`); "
             + ("kernels chosen as on a CUDA build of morphaug._C." if cuda_build() else
                "**morphaug._C has no CUDA kernels here: every call runs on the torch backend.**"),
             "",
             "| call | native launches | aten launches | fallback | syncs | documented reads | H2D | staged | B/voxel |",
             "|---|---|---:|---|---:|---|---:|---:|---:|"]
    for row in table:
        native = ", ".join(f"{k} x{v}" for k, v in sorted(row["native"].items())) or "-"
        per_voxel = "-" if row["bytes_per_voxel"] is None else f"{row['bytes_per_voxel']:.0f}"
        syncs = str(len(row["syncs"])) + (f" ({row['error']})" if row["error"] else "")
        lines.append(f"| {row['call']} | {native} | {row['aten']} | {', '.join(row['fallback']) or '-'} | "
                     f"{syncs} | {', '.join(row['reads']) or '-'} | {len(row['h2d'])} | {row['staged']} | "
                     f"{per_voxel} |")
    with_syncs = sum(bool(r["syncs"]) for r in table)
    with_copies = sum(bool(r["h2d"]) for r in table)
    with_fallback = sum(bool(r["fallback"]) for r in table)
    lines += ["", f"{len(table)} calls: {with_syncs} with undocumented syncs, {with_copies} with blocking "
                  f"host-to-device copies, {with_fallback} with a fallback to torch where a CUDA kernel exists."]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fast", action="store_true", help="16^3 volumes instead of 96^3")
    parser.add_argument("--write", type=Path, help="also write the table to this file")
    options = parser.parse_args(argv)
    size = 16 if options.fast else 96
    text = markdown(rows(size), size)
    print(text)
    if options.write:
        options.write.write_text("# CUDA cost per call, counted on the CPU\n\n" + text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
