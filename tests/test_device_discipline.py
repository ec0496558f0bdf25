"""Device discipline without a GPU: every public entry point, on a device this machine does not compute on.

Each case calls one public function, transform or metric class on inputs that live on
``meta`` or on FakeTensor ``cuda`` (shapes and dtypes, no data) under
:class:`DeviceChecker`, a dispatch mode that sees every aten op and fails the
case on

* device work done on the host: a tensor that a factory op (``zeros``,
  ``arange``, ...) creates on the host during the call, or anything computed
  from one, copied to the device; a host tensor used as an operand of device
  work (only copies to the device may take one); an output on a third device;
* device data read back to the host: ``.item()``, ``bool()``, ``.tolist()``,
  ``.cpu()``, ``torch.equal``, or an op whose output shape depends on the
  data (``nonzero``, boolean indexing, ``unique``).

* a blocking host-to-device copy, whatever made the host tensor: a copy from
  pageable memory (``non_blocking=False``) waits for the device's queue, a sync
  (``morphaug._sync.to_device`` stages host data in pinned memory and copies it
  asynchronously).

Host work on host data is allowed: elements given as CPU tensors, NumPy
arrays or lists are read on the host and copied to the device without blocking
(``morphaug.ndimage``), Python values may become tensors, metadata on the
host (MONAI affines) is copied on the host. The reads morphaug documents,
listed in ``morphaug._sync.READS``, go through ``morphaug._sync.host_read``,
which is replaced here: it answers "settled / valid" (:data:`ANSWERS`) and
records why; each case lists the reads it makes. Each case also runs on small
CPU tensors: the outputs must have the same structure, types, dtypes and
shapes, and live on the input's device.

Runs: ``meta`` on the torch backend; FakeTensor ``cuda`` on the torch backend
and, for the cases that reach a native kernel, on the default backend, where
the CUDA kernels of ``morphaug._C`` are selected and their fake kernels run.
Tensor subclasses (MONAI MetaTensor, torchvision tv_tensors) cannot wrap a
FakeTensor and the autograd engine needs a real CUDA device, so those cases
run on ``meta`` only. The Kornia cases call the adapters' own methods
(``generate_parameters``, ``apply_transform*``), not Kornia's container.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import os
import traceback
from collections.abc import Callable

import numpy as np
import pytest
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
from torch.utils.weak import WeakIdKeyDictionary

from morphaug import _ops, _sync, footprints, measure, metrics, morphology, ndimage, ot, segmentation, transforms


def _optional(name: str):
    """Module ``name``, or None where it (or the library it adapts) is not installed: the cases that
    need it are then skipped, the others run."""
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


monai_data = _optional("monai.data")
tv_tensors = _optional("torchvision.tv_tensors")
monai_adapters = monai_data and _optional("morphaug.adapters.monai")
tv_adapters = tv_tensors and _optional("morphaug.adapters.torchvision")
kornia_adapters = _optional("morphaug.adapters.kornia")

# The CPU runs compute for real: one thread, as in the other solver tests (a shared CPU)
pytestmark = pytest.mark.usefixtures("one_thread")

aten = torch.ops.aten

#: Ops that hand device data to the host as Python values.
READ_OPS = {aten._local_scalar_dense.default, aten.equal.default, aten.is_nonzero.default,
            aten.allclose.default}
#: The ops that may take host tensors into device work: copies to the device.
COPIES = {aten._to_copy.default, aten.copy_.default}

#: What the replaced ``host_read`` answers for each documented read: everything settled and valid.
ANSWERS = {
    "binary fixpoint": lambda flags: [True, False],  # the last chunk changed nothing; no cycle
    # the classes of labels(): 0, 1 and 2 are present, no value is too large to count
    "label classes": lambda flags: (np.arange(flags.numel()) < 3).reshape(flags.shape).tolist(),
    "find_objects max_label": lambda top: 2,  # the largest label of LABEL2
    "ot arguments": lambda problems: [False] * problems.numel() if problems.ndim else False,
    "ot cost range": lambda span: 1.0,  # one Gibbs kernel is exact
    "ot convergence": lambda n_active: 0,  # every problem has converged
    "value_indices": lambda keys: [0] * keys.numel(),  # one value everywhere
    "watershed_ift": lambda values: np.zeros(values.shape, int).tolist(),  # no marker, a flat image
    "panoptic assignment": lambda table: [0.0] * table.numel(),  # no overlapping instances
    "regionprops max_label": lambda top: 2,  # the largest label of LABEL2
    "lesion-wise sizes": lambda sizes: [1] * sizes.numel(),  # one lesion and one prediction (LESION3)
    # ones: a valid size, sampling or CDT metric
    "tensor arguments": lambda value: np.ones(value.shape, float if value.is_floating_point() else int).tolist(),
}


def _on_device(tensor: torch.Tensor) -> bool:
    return isinstance(tensor, FakeTensor) or tensor.device.type != "cpu"


def _non_blocking(func, args, kwargs) -> bool:
    """Whether a copy op (``_to_copy`` or ``copy_``) was asked not to block."""
    if func is aten.copy_.default and len(args) > 2:
        return bool(args[2])
    return bool(kwargs.get("non_blocking", False))


class HostRead(RuntimeError):
    """Raised where device data would be read back (there is none to read)."""


class DeviceChecker(TorchDispatchMode):
    """Records every op of a run on ``device`` that breaks the rules of the module docstring,
    and the native ops (``torch.ops.morphaug``) it dispatches."""

    def __init__(self, device: torch.device, fake_mode: FakeTensorMode | None):
        super().__init__()
        self.device = device
        self.fake_mode = fake_mode
        self.violations: list[str] = []
        self.native_ops: set[str] = set()
        self.made_on_host = WeakIdKeyDictionary()  # host tensors from factory ops -> where

    @staticmethod
    def where() -> str:
        """The innermost line of the code under test (outside torch and this checker)."""
        frames = [frame for frame in traceback.extract_stack()[:-2]
                  if f"{os.sep}torch{os.sep}" not in frame.filename and frame.name != "__torch_dispatch__"]
        frame = frames[-1]
        return f"{frame.filename.split(os.sep + 'morphaug' + os.sep)[-1]}:{frame.lineno}"

    def flag(self, what: str) -> None:
        self.violations.append(f"{what} ({self.where()})")

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        tensors = [t for t in pytree.tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
        device_inputs = any(_on_device(t) for t in tensors)
        target = kwargs.get("device")
        if func.namespace.startswith("morphaug"):
            self.native_ops.add(func._opname)
        if not device_inputs and (target is None or torch.device(target).type == "cpu"):
            return self._on_host(func, tensors, args, kwargs)
        if func in READ_OPS or (target is not None and torch.device(target).type == "cpu"):
            self.flag(f"{func} reads device data back to the host")
            raise HostRead(str(func))
        host = [t for t in tensors if not _on_device(t)]
        if host and func not in COPIES:
            self.flag(f"{func} takes host tensors into device work")
        if host and func in COPIES and not _non_blocking(func, args, kwargs):
            self.flag(f"{func} is a blocking host-to-device copy (stage it: morphaug._sync.to_device)")
        for t in host:
            if t in self.made_on_host:
                self.flag(f"{func} copies to the device a tensor made on the host ({self.made_on_host[t]})")
        try:
            out = func(*args, **kwargs)
        except (DataDependentOutputException, DynamicOutputShapeException, NotImplementedError):
            self.flag(f"{func} needs the data (a host read or a data-dependent shape)")
            raise
        for t in pytree.tree_leaves(out):
            if isinstance(t, torch.Tensor) and t.device.type == "cpu":
                self.flag(f"{func} reads device data back to the host")
            elif isinstance(t, torch.Tensor) and t.device != self.device:
                self.flag(f"{func} puts device data on {t.device}")
        return out

    def _on_host(self, func, tensors, args, kwargs):
        """Host work on host data, run for real; factory outputs (and what follows from them) are noted."""
        with unset_fake_temporarily() if self.fake_mode else contextlib.nullcontext():
            out = func(*args, **kwargs)
        origins = [self.made_on_host[t] for t in tensors if t in self.made_on_host]
        if origins or not tensors:
            for t in pytree.tree_leaves(out):
                if isinstance(t, torch.Tensor):
                    self.made_on_host[t] = origins[0] if origins else f"{func} at {self.where()}"
        return out


# --------------------------------------------------------------------------- inputs
@dataclasses.dataclass(frozen=True)
class On:
    """An input on the run's device, built from a CPU tensor; ``wrap``: a tensor subclass."""

    tensor: torch.Tensor
    wrap: Callable | None = None
    requires_grad: bool = False


#: Stands for the run's device in ``device=`` arguments.
DEVICE = object()


def place(value, device: torch.device):
    """``value`` with every :class:`On` and :data:`DEVICE` replaced for a run on ``device``."""
    if isinstance(value, On):
        x = value.tensor.to(device, copy=True).requires_grad_(value.requires_grad)
        return x if value.wrap is None else value.wrap(x)
    if value is DEVICE:
        return device
    if isinstance(value, dict):
        return {key: place(item, device) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(place(item, device) for item in value)
    return value


def subclassed(value) -> bool:
    if isinstance(value, On):
        return value.wrap is not None
    if isinstance(value, dict):
        return any(subclassed(item) for item in value.values())
    if isinstance(value, (list, tuple)):
        return any(subclassed(item) for item in value)
    return False


_seed = torch.Generator().manual_seed(0)


def rand(*shape, dtype=torch.float32):
    return torch.rand(shape, generator=_seed).to(dtype)


def mask(*shape):
    return torch.rand(shape, generator=_seed) < 0.6


def labels(*shape, classes=3, dtype=torch.uint8):
    return torch.randint(0, classes, shape, generator=_seed).to(dtype)


def histograms(*shape, dtype=torch.float32):
    values = torch.rand(shape, generator=_seed, dtype=torch.float64) + 0.1
    return (values / values.flatten(1).sum(-1).view(-1, *[1] * (len(shape) - 1))).to(dtype)


# --------------------------------------------------------------------------- cases
@dataclasses.dataclass(frozen=True)
class Case:
    """One call of ``fn`` on ``args`` / ``kwargs``.

    ``covers``: the public names it stands for (``"module.name"``); ``reads``:
    the documented host reads of a device run on the torch backend; ``native``:
    the native ops it reaches on CUDA with the default backend, and
    ``native_reads`` its reads there (default: ``reads``); ``host_output``: the
    outputs live on the host whatever the device (a host constructor);
    ``meta_only``: not on FakeTensor ``cuda`` (tensor subclasses, autograd).
    """

    covers: tuple[str, ...]
    fn: Callable
    args: tuple
    kwargs: dict
    reads: frozenset[str]
    native: frozenset[str]
    native_reads: frozenset[str]
    host_output: bool
    meta_only: bool

    @property
    def id(self) -> str:
        return self.covers[0]


def case(covers, fn, *args, reads=(), native=(), native_reads=None, host_output=False, meta_only=False,
         **kwargs) -> Case:
    covers = (covers,) if isinstance(covers, str) else tuple(covers)
    reads = frozenset(reads)
    return Case(covers, fn, args, kwargs, reads, frozenset(native),
                reads if native_reads is None else frozenset(native_reads), host_output,
                meta_only or subclassed((args, kwargs)))


def sinkhorn_loss_backward(a, b, cost):
    """``SinkhornLoss`` and its implicit gradient."""
    loss = ot.SinkhornLoss(reg=0.1)(a, b, cost)
    loss.backward()
    return loss, a.grad


class Passthrough(transforms.BatchTransform):
    """The smallest subclass: the base's ``make_params`` and ``__call__`` around a copy."""

    def apply(self, x, params):
        return x.clone()


def kornia_call(aug, image, mask):
    """What Kornia's container runs of a morphaug augmentation: draw on the device, apply to both."""
    aug.set_rng_device_and_dtype(image.device, torch.float32)
    params = aug.generate_parameters(image.shape)
    params["batch_prob"] = torch.ones(image.shape[0], device=image.device)
    return aug.apply_transform(image, params, aug.flags), aug.apply_transform_mask(mask, params, aug.flags)


X2, X3 = mask(2, 2, 6, 7), mask(2, 1, 4, 5, 6)
F2, F3 = rand(2, 2, 6, 7), rand(2, 1, 4, 5, 6)
CROSS2 = ndimage.generate_binary_structure(2, 1)
PER_SAMPLE = torch.stack([CROSS2, footprints.square(3)])  # (B, 3, 3), host
STRUCTURE = np.arange(9.0).reshape(3, 3) / 4
IMAGE2, LABEL2 = rand(2, 1, 8, 9), labels(2, 1, 8, 9)
IMAGE3, LABEL3 = rand(2, 1, 5, 6, 7), labels(2, 1, 5, 6, 7)
ONEHOT3 = torch.nn.functional.one_hot(LABEL3[:, 0].long(), 3).movedim(-1, 1).float()
A, B, COST = histograms(3, 5), histograms(3, 6), rand(5, 6)
GRID_A, GRID_B = histograms(2, 5, 6), histograms(2, 5, 6)
HISTS = histograms(4, 5, 6).view(2, 2, 5, 6)
DATA2 = {"image": On(IMAGE2), "label": On(LABEL2)}
DATA3 = {"image": On(IMAGE3), "label": On(LABEL3)}


def meta_batch(x):
    """``x`` as MONAI collates MetaTensors: a batch with one affine (spacing 2 x 1) per sample."""
    affine = torch.diag(torch.tensor([2.0, 1.0, 1.0]))
    return monai_data.list_data_collate([{"x": monai_data.MetaTensor(sample, affine=affine)} for sample in x])["x"]


NDIMAGE = [
    case("ndimage.binary_erosion", ndimage.binary_erosion, On(X2), native={"ball_morphology"}),
    case("ndimage.binary_erosion", ndimage.binary_erosion, On(X2), PER_SAMPLE, iterations=-1,
         mask=On(mask(2, 2, 6, 7)), reads={"binary fixpoint"}, native={"propagate"}, native_reads=()),
    case("ndimage.binary_dilation", ndimage.binary_dilation, On(F2), footprints.disk(2),
         native={"ball_morphology"}),
    case("ndimage.binary_dilation", ndimage.binary_dilation, On(X2), On(PER_SAMPLE), iterations=3, origin=(0, 1),
         native={"binary_erosion"}),
    case("ndimage.binary_dilation", ndimage.binary_dilation, On(X2), [[0, 1, 1]], iterations=0,
         reads={"binary fixpoint"}),
    case("ndimage.binary_opening", ndimage.binary_opening, On(X2), iterations=2, mask=On(mask(6, 7)),
         border_value=1, native={"binary_erosion"}),
    case("ndimage.binary_closing", ndimage.binary_closing, On(X3), footprints.cube(3), native={"ball_morphology"}),
    case("ndimage.binary_hit_or_miss", ndimage.binary_hit_or_miss, On(X2), [[0, 1, 0], [0, 1, 0], [0, 0, 0]],
         output=On(torch.empty(2, 2, 6, 7, dtype=torch.uint8)), native={"binary_erosion"}),
    case("ndimage.binary_propagation", ndimage.binary_propagation, On(X3), mask=On(mask(2, 1, 4, 5, 6)),
         reads={"binary fixpoint"}, native={"propagate"}, native_reads=()),
    case("ndimage.binary_fill_holes", ndimage.binary_fill_holes, On(X2), axes=(1,),
         reads={"binary fixpoint"}, native={"fill_holes"}, native_reads=()),
    case("ndimage.grey_erosion", ndimage.grey_erosion, On(F2), size=3, native={"grey_box"}),
    case("ndimage.grey_erosion", ndimage.grey_erosion, On(F2), footprint=On(PER_SAMPLE),
         native={"grey_element"}),
    case("ndimage.grey_erosion", ndimage.grey_erosion, On(labels(2, 2, 6, 7, classes=200)),
         footprint=footprints.disk(2), mode="constant", cval=7, native={"grey_footprint"}),
    case("ndimage.grey_dilation", ndimage.grey_dilation, On(F2), structure=STRUCTURE, native={"grey_structure"}),
    case("ndimage.grey_dilation", ndimage.grey_dilation, On(F2), footprint=On(PER_SAMPLE)),
    case("ndimage.grey_dilation", ndimage.grey_dilation, On(labels(2, 2, 6, 7, dtype=torch.int16)),
         footprint=PER_SAMPLE, structure=np.stack([STRUCTURE, -STRUCTURE]), axes=(0, 1)),
    case("ndimage.grey_opening", ndimage.grey_opening, On(F3.half()), size=(2, 3, 1), native={"grey_box"}),
    case("ndimage.grey_closing", ndimage.grey_closing, On(F2.bfloat16()), footprint=CROSS2,
         native={"grey_footprint"}),
    case("ndimage.morphological_gradient", ndimage.morphological_gradient, On(F2), size=3,
         output=On(torch.empty(2, 2, 6, 7, dtype=torch.float64)), native={"grey_box"}),
    case("ndimage.morphological_laplace", ndimage.morphological_laplace, On(labels(2, 2, 6, 7, dtype=torch.int16)),
         footprint=CROSS2, output=torch.float32, native={"grey_footprint"}),
    case("ndimage.white_tophat", ndimage.white_tophat, On(X2), size=3, native={"grey_box"}),
    case("ndimage.black_tophat", ndimage.black_tophat, On(labels(2, 2, 6, 7, classes=9)), structure=STRUCTURE,
         mode="nearest", native={"grey_structure"}),
    case("ndimage.distance_transform_edt", ndimage.distance_transform_edt, On(X3), return_indices=True,
         native={"edt"}),
    case("ndimage.distance_transform_edt", ndimage.distance_transform_edt, On(X2), sampling=(0.5, 2.0),
         return_indices=True, distances=On(torch.empty(2, 2, 6, 7, dtype=torch.float64)),
         indices=On(torch.empty(2, 2, 2, 6, 7, dtype=torch.int32)), native={"edt"}),
    case("ndimage.distance_transform_edt", ndimage.distance_transform_edt, On(X2),
         sampling=On(torch.tensor([0.5, 2.0])), reads={"tensor arguments"}, native={"edt"}),
    case("ndimage.distance_transform_cdt", ndimage.distance_transform_cdt, On(X2), metric="taxicab",
         return_indices=True, native={"cdt"}),
    case("ndimage.distance_transform_cdt", ndimage.distance_transform_cdt, On(X3), metric=On(footprints.cube(3)),
         reads={"tensor arguments"}, native={"cdt"}),
    case("ndimage.distance_transform_bf", ndimage.distance_transform_bf, On(X2), metric="chessboard",
         return_indices=True, native={"distance_bf"}),
    case("ndimage.distance_transform_bf", ndimage.distance_transform_bf, On(X2), sampling=(1.0, 3.0),
         native={"distance_bf"}),
    case("ndimage.label", ndimage.label, On(X3), reads={"binary fixpoint"}, native={"label"}, native_reads=()),
    case("ndimage.label", ndimage.label, On(labels(2, 2, 6, 7, dtype=torch.uint16)), np.ones((3, 3)),
         output=On(torch.empty(2, 2, 6, 7, dtype=torch.int64)), reads={"binary fixpoint"}, native={"label"},
         native_reads=()),
    case("ndimage.generate_binary_structure", ndimage.generate_binary_structure, 3, 2, host_output=True),
    case("ndimage.sum_labels", ndimage.sum_labels, On(F2), On(labels(2, 2, 6, 7)), [0, 2, 5], native={"region_stats"}),
    case("ndimage.sum_labels", ndimage.sum_labels, On(LABEL2.to(torch.uint16)), On(LABEL2), native={"region_stats"}),
    case("ndimage.mean", ndimage.mean, On(F2), On(labels(2, 1, 6, 7, dtype=torch.int64)), On(torch.tensor([1, 2])),
         native={"region_stats"}),
    case("ndimage.minimum", ndimage.minimum, On(LABEL2.to(torch.uint64)), On(LABEL2), torch.tensor([-1, 1]),
         native={"region_stats"}),
    case("ndimage.maximum", ndimage.maximum, On(F3), On(labels(2, 1, 4, 5, 6, dtype=torch.int32)), 1,
         native={"region_stats"}),
    case("ndimage.center_of_mass", ndimage.center_of_mass, On(F3), On(labels(1, 1, 4, 5, 6)), [1, 2],
         native={"region_stats"}),
    case("ndimage.center_of_mass", ndimage.center_of_mass, On(X2), native={"region_stats"}),
    case("ndimage.sum", ndimage.sum, On(IMAGE2), On(LABEL2), [0, 2, 5], native={"region_stats"}),
    case("ndimage.variance", ndimage.variance, On(IMAGE3), On(LABEL3), torch.tensor([1, 2]),
         native={"region_stats"}),
    case("ndimage.standard_deviation", ndimage.standard_deviation, On(IMAGE2), On(LABEL2),
         native={"region_stats"}),
    case("ndimage.median", ndimage.median, On(IMAGE2), On(LABEL2), [1, 2, 7], native={"region_median"}),
    case("ndimage.median", ndimage.median, On(F2), native={"region_median"}),
    case("ndimage.extrema", ndimage.extrema, On(LABEL2.to(torch.int16)), On(LABEL2), [1, 2],
         native={"region_stats"}),
    case("ndimage.minimum_position", ndimage.minimum_position, On(IMAGE3), On(LABEL3), 1,
         native={"region_stats"}),
    case("ndimage.maximum_position", ndimage.maximum_position, On(F2), native={"region_stats"}),
    case("ndimage.histogram", ndimage.histogram, On(IMAGE2), 0, 1, 4, On(LABEL2), [1, 2], native={"region_histogram"}),
    case("ndimage.labeled_comprehension", ndimage.labeled_comprehension, On(IMAGE2), On(LABEL2), [1, 2],
         np.median, float, -1, native={"region_stats", "region_median"}),
    case("ndimage.value_indices", ndimage.value_indices, On(torch.zeros(2, 1, 4, 5, dtype=torch.int32)),
         reads={"value_indices"}),
    case("ndimage.watershed_ift", ndimage.watershed_ift, On(LABEL2), On(torch.zeros(2, 1, 8, 9, dtype=torch.int16)),
         reads={"watershed_ift"}, native={"watershed_ift"}, native_reads=()),
    case("ndimage.find_objects", ndimage.find_objects, On(LABEL3), max_label=3, native={"region_stats"}),
    case("ndimage.find_objects", ndimage.find_objects, On(LABEL2), reads={"find_objects max_label"},
         native={"region_stats"}),
    case("ndimage.iterate_structure", ndimage.iterate_structure, On(CROSS2), 3, origin=(0, 1)),
]

FOOTPRINTS = [
    case("footprints.ball", footprints.ball, 2, 3, device=DEVICE),
    case("footprints.disk", footprints.disk, 2, device=DEVICE),
    case("footprints.cube", footprints.cube, 2, 2, device=DEVICE),
    case("footprints.square", footprints.square, 3, device=DEVICE),
    case("footprints.cross", footprints.cross, 2, 3, device=DEVICE),
    case("footprints.ellipsoid", footprints.ellipsoid, (1, 2.5, 0), device=DEVICE),
    case(("footprints.random_footprints", "footprints.RandomFootprints", "footprints.SHAPES"),
         footprints.random_footprints, 4, footprints.SHAPES, (1, 2), 2, device=DEVICE),
    case(("footprints.footprints_from_params", "footprints.SHAPE_METRICS"), footprints.footprints_from_params,
         On(torch.tensor([0, 2, 1])), On(torch.tensor([2, 0, 1])), tuple(footprints.SHAPE_METRICS), 2, 3),
]

OT_READS = {"ot arguments", "ot cost range", "ot convergence"}
OT = [
    case(("ot.sinkhorn", "ot.SinkhornResult"), ot.sinkhorn, On(A), On(B), On(COST), 0.1, reads=OT_READS),
    case("ot.sinkhorn", ot.sinkhorn, On(A), On(B), On(rand(3, 5, 6)), 0.1, method="stabilized", epsilon_scaling=0.5,
         return_plan=True, reads=OT_READS),
    case("ot.sinkhorn", ot.sinkhorn, On(A.double()), On(B), On(COST), 0.1, method="log", reads=OT_READS),
    case("ot.SinkhornLoss", ot.SinkhornLoss(reg=0.1, reduction="none"), On(A), On(B), On(COST), reads=OT_READS),
    case("ot.SinkhornLoss", sinkhorn_loss_backward, On(A, requires_grad=True), On(B), On(COST), reads=OT_READS,
         meta_only=True),
    case("ot.grid_sinkhorn", ot.grid_sinkhorn, On(GRID_A), On(GRID_B), 0.05, reads={"ot arguments", "ot convergence"}),
    case("ot.grid_sinkhorn", ot.grid_sinkhorn, On(GRID_A), On(GRID_B), 0.05, method="log",
         reads={"ot arguments", "ot convergence"}),
    case("ot.wasserstein_barycenter", ot.wasserstein_barycenter, On(HISTS), 0.05,
         reads={"ot arguments", "ot convergence"}),
    case("ot.wasserstein_barycenter", ot.wasserstein_barycenter, On(HISTS.double()), 0.05,
         On(torch.tensor([[0.3, 0.7], [1.0, 0.0]])), method="log", reads={"ot arguments", "ot convergence"}),
]

TRANSFORMS = [
    case("transforms.BatchTransform", Passthrough("label", prob=0.5), DATA2),
    case("transforms.RandLabelMorphology", transforms.RandLabelMorphology("label", radius=(1, 2), prob=1.0,
                                                                          num_classes=3), DATA2,
         native={"ball_morphology"}),
    case("transforms.RandLabelMorphology", transforms.RandLabelMorphology("label", radius=1, prob=1.0,
                                                                          label_format="onehot"),
         {"label": On(ONEHOT3)}, native={"ball_morphology"}),
    case("transforms.RandLabelMorphology", transforms.RandLabelMorphology("label", prob=1.0), DATA3,
         reads={"label classes"}, native={"ball_morphology"}),
    case("transforms.RandGreyMorphology", transforms.RandGreyMorphology("image", radius=1, prob=1.0), DATA3),
    case("transforms.DistanceMap", transforms.DistanceMap("label", "sdf", signed=True, num_classes=3), DATA2,
         native={"signed_edt"}),
    case("transforms.DistanceMap", transforms.DistanceMap("label", metric="taxicab", normalize="max", clip=3,
                                                          num_classes=3), DATA3, native={"cdt"}),
    case("transforms.DistanceMap", transforms.DistanceMap("label", sampling=(1.0, 2.0), normalize="diagonal"),
         DATA2, reads={"label classes"}, native={"edt"}),
    case("transforms.LabelBoundary", transforms.LabelBoundary("label", "edge", thickness=(1, 2), side="both",
                                                              num_classes=3), DATA3, native={"ball_morphology"}),
    case("transforms.LabelBoundary", transforms.LabelBoundary("label", "edge", side="outer"), DATA2,
         reads={"label classes"}, native={"ball_morphology"}),
    case("transforms.FillHoles", transforms.FillHoles("label", num_classes=3, connectivity=2), DATA2,
         reads={"binary fixpoint"}, native={"fill_holes"}, native_reads=()),
    case("transforms.FillHoles", transforms.FillHoles("label"), DATA3, reads={"binary fixpoint", "label classes"},
         native={"fill_holes"}, native_reads={"label classes"}),
    case("transforms.RandBoundaryJitter", transforms.RandBoundaryJitter("label", prob=1.0, num_classes=3), DATA2,
         native={"signed_edt"}),
    case("transforms.RandBoundaryJitter", transforms.RandBoundaryJitter("label", prob=1.0), DATA3,
         reads={"label classes"}, native={"signed_edt"}),
    case("transforms.KeepLargestComponents", transforms.KeepLargestComponents("label", 2, num_classes=3), DATA2,
         reads={"binary fixpoint"}, native={"filter_components"}, native_reads=()),
    case("transforms.KeepLargestComponents", transforms.KeepLargestComponents("label", independent=False),
         {"label": On(ONEHOT3)}, reads={"binary fixpoint"}, native={"filter_components"}, native_reads=()),
    case("transforms.RemoveSmallComponents", transforms.RemoveSmallComponents(
        "label", min_size=3.0, sampling=(1.0, 2.0, 0.5), by_measure=True), DATA3,
         reads={"binary fixpoint", "label classes"}, native={"filter_components"}, native_reads={"label classes"}),
    case("transforms.RandRemoveComponent", transforms.RandRemoveComponent(
        "label", prob=1.0, prob_other_class=0.5, num_classes=3), DATA2,
         reads={"binary fixpoint"}, native={"pick_component"}, native_reads=()),
    case("transforms.RandRemoveComponent", transforms.RandRemoveComponent("label", prob=1.0), DATA3,
         reads={"binary fixpoint", "label classes"}, native={"pick_component"}, native_reads={"label classes"}),
    case("transforms.RandHistogramTransfer", transforms.RandHistogramTransfer("image", prob=1.0), DATA3,
         reads=OT_READS),
    case("transforms.RandWassersteinMix", transforms.RandWassersteinMix("image", "label", prob=1.0, num_classes=3),
         DATA2, reads={"ot arguments", "ot convergence"}),
    case("transforms.RandWassersteinMix", transforms.RandWassersteinMix("image", "label", prob=1.0), DATA2,
         reads={"label classes", "ot arguments", "ot convergence"}),
    case("transforms.ExpandLabels", transforms.ExpandLabels("label", distance=2, sampling=(1.0, 2.0)), DATA2,
         native={"expand_labels"}),
    case("transforms.InstanceBoundary", transforms.InstanceBoundary("label", "edge", mode="outer"), DATA3,
         native={"find_boundaries"}),
    case("transforms.SkeletonTarget", transforms.SkeletonTarget("label", "skel", method="parallel"), DATA3,
         reads={"binary fixpoint"}, native={"ball_morphology", "skeletonize_parallel"}),
]

#: scikit-image's modules: multi-value maps label by label_values (by propagation on the torch backend); bool
#: maps by ndimage.label
SKIMAGE = [
    case("measure.label", measure.label, On(LABEL3), reads={"binary fixpoint"}, native={"label_values"},
         native_reads=()),
    case("measure.label", measure.label, On(X3), connectivity=1, return_num=True, reads={"binary fixpoint"},
         native={"label"}, native_reads=()),
    case("segmentation.expand_labels", segmentation.expand_labels, On(LABEL2), 2, native={"expand_labels"}),
    case("segmentation.find_boundaries", segmentation.find_boundaries, On(LABEL3.long()), 3, "outer",
         native={"find_boundaries"}),
    case("segmentation.find_boundaries", segmentation.find_boundaries, On(LABEL2), mode="subpixel"),
    case("measure.euler_number", measure.euler_number, On(X3), connectivity=3, native={"euler_number"}),
    case("measure.regionprops_table", measure.regionprops_table, On(LABEL2), On(IMAGE2),
         ("label", "area", "bbox", "centroid", "extent", "intensity_max"), reads={"regionprops max_label"}),
    case("measure.regionprops_table", measure.regionprops_table, On(LABEL3),
         properties=("equivalent_diameter_area", "num_pixels"), spacing=2.0, max_label=3),
    case("morphology.skeletonize", morphology.skeletonize, On(X2), reads={"binary fixpoint"}, native={"thinning2d"}),
    case("morphology.skeletonize", morphology.skeletonize, On(X3), method="parallel", reads={"binary fixpoint"},
         native={"skeletonize_parallel"}),
    case("morphology.thin", morphology.thin, On(X2), max_num_iter=2, reads={"binary fixpoint"},
         native={"thinning2d"}, native_reads=()),  # the kernel's 2 iterations: the bound, nothing to read
]

def _handler_update(name: str, **options):
    """A call that makes MONAI's handler ``name`` (morphaug's; it needs pytorch-ignite) and updates it with
    ``(y_pred, y)``, returning its metric's buffer."""
    def update(y_pred, y):
        pytest.importorskip("ignite")
        handler = getattr(monai_adapters, name)(**options)
        handler.update([y_pred, y])
        return handler.metric_fn.get_buffer()
    return update


MONAI = []
#: The reads of MONAI's drop-ins (adapters.monai_post): the classes present, and the component filters' fixpoints.
_MONAI_READS = {"KeepLargestConnectedComponent": {"label classes", "binary fixpoint"},
                "RemoveSmallObjects": {"label classes"},
                "FillHoles": {"label classes", "binary fixpoint"}}
if monai_adapters is not None:
    MONAI = [
        case("adapters.monai.RandLabelMorphologyd",
             monai_adapters.RandLabelMorphologyd("label", prob=1.0, num_classes=3, batched=True), DATA2,
             native={"ball_morphology"}),
        case("adapters.monai.RandGreyMorphologyd", monai_adapters.RandGreyMorphologyd("image", prob=1.0, batched=True),
             DATA2),
        case("adapters.monai.DistanceMapd", monai_adapters.DistanceMapd("label", num_classes=3, batched=True), DATA3,
             native={"edt"}),
        case("adapters.monai.DistanceMapd",
             monai_adapters.DistanceMapd("label", num_classes=3, spacing_from_meta=True, batched=True),
             {"label": On(LABEL2, wrap=meta_batch)}),
        case("adapters.monai.LabelBoundaryd", monai_adapters.LabelBoundaryd("label", num_classes=3, batched=True),
             DATA2, native={"ball_morphology"}),
        case("adapters.monai.FillHolesd", monai_adapters.FillHolesd("label", applied_labels=(1, 2), batched=True), DATA3,
             reads={"binary fixpoint"}, native={"fill_holes"}, native_reads=(), meta_only=True),
        *[case([f"adapters.monai.{name}"], getattr(monai_adapters, name)(batched=True), On(LABEL3.float()),
               reads=_MONAI_READS.get(name, ()), meta_only=True)
          for name in ("KeepLargestConnectedComponent", "RemoveSmallObjects", "FillHoles", "DistanceTransformEDT",
                       "LabelToContour")],
        case("adapters.monai.LabelFilter", monai_adapters.LabelFilter((1, 2), batched=True), On(LABEL3),
             meta_only=True),
        *[case([f"adapters.monai.{name}{suffix}" for suffix in ("d", "D", "Dict")],
               getattr(monai_adapters, f"{name}d")("label", batched=True), {"label": On(LABEL3.float())},
               reads=_MONAI_READS.get(name, ()), meta_only=True)
          for name in ("KeepLargestConnectedComponent", "RemoveSmallObjects", "FillHoles", "DistanceTransformEDT",
                       "LabelToContour")],
        case([f"adapters.monai.LabelFilter{suffix}" for suffix in ("d", "D", "Dict")],
             monai_adapters.LabelFilterd("label", (1, 2), batched=True), {"label": On(LABEL3)}, meta_only=True),
        case("adapters.monai.RandBoundaryJitterd",
             monai_adapters.RandBoundaryJitterd("label", prob=1.0, num_classes=3, batched=True), DATA2,
             native={"signed_edt"}),
        case("adapters.monai.KeepLargestComponentsd",
             monai_adapters.KeepLargestComponentsd("label", num_classes=3, batched=True), DATA3,
             reads={"binary fixpoint"}, native={"filter_components"}, native_reads=()),
        case("adapters.monai.RemoveSmallComponentsd",
             monai_adapters.RemoveSmallComponentsd("label", min_size=4.0, by_measure=True, num_classes=3, batched=True),
             {"label": On(LABEL2, wrap=meta_batch)}, reads={"binary fixpoint"}),
        case("adapters.monai.RandRemoveComponentd",
             monai_adapters.RandRemoveComponentd("label", prob=1.0, num_classes=3, batched=True), DATA2,
             reads={"binary fixpoint"}, native={"pick_component"}, native_reads=()),
        case("adapters.monai.ExpandLabelsd", monai_adapters.ExpandLabelsd("label", batched=True), DATA2,
             native={"expand_labels"}),
        case("adapters.monai.InstanceBoundaryd", monai_adapters.InstanceBoundaryd("label", mode="outer", batched=True),
             DATA3, native={"find_boundaries"}),
        case("adapters.monai.SkeletonTargetd", monai_adapters.SkeletonTargetd("label", batched=True), DATA2,
             reads={"binary fixpoint"}, native={"ball_morphology", "thinning2d"}),
        case("adapters.monai.RandHistogramTransferd", monai_adapters.RandHistogramTransferd("image", prob=1.0), DATA2,
             reads=OT_READS),
        case("adapters.monai.RandWassersteinMixd",
             monai_adapters.RandWassersteinMixd("image", "label", prob=1.0, num_classes=3), DATA2,
             reads={"ot arguments", "ot convergence"}),
        # MONAI's metric classes: one-hot float masks, spacing given at call time
        case("adapters.monai.HausdorffDistanceMetric", monai_adapters.HausdorffDistanceMetric(percentile=95),
             On(ONEHOT3.roll(1, -1)), On(ONEHOT3), spacing=(2.0, 1.0, 0.5), native={"ball_morphology", "edt"}),
        case("adapters.monai.SurfaceDistanceMetric", monai_adapters.SurfaceDistanceMetric(distance_metric="taxicab"),
             On(ONEHOT3.roll(1, -1)), On(ONEHOT3), native={"ball_morphology", "cdt"}),
        case("adapters.monai.SurfaceDiceMetric", monai_adapters.SurfaceDiceMetric([1.0, 2.0]),
             On(ONEHOT3.roll(1, -1)), On(ONEHOT3), spacing=[(2.0, 1.0, 0.5), (1.0, 1.0, 1.0)],
             native={"ball_morphology", "edt"}),
        case("adapters.monai.compute_hausdorff_distance", monai_adapters.compute_hausdorff_distance,
             On(ONEHOT3.roll(1, -1)), On(ONEHOT3), percentile=95, spacing=(2.0, 1.0, 0.5),
             native={"ball_morphology", "edt"}),
        case("adapters.monai.compute_average_surface_distance", monai_adapters.compute_average_surface_distance,
             On(ONEHOT3.roll(1, -1)), On(ONEHOT3), symmetric=True, native={"ball_morphology", "edt"}),
        case("adapters.monai.compute_surface_dice", monai_adapters.compute_surface_dice,
             On(ONEHOT3.roll(1, -1)), On(ONEHOT3), [1.0, 2.0], native={"ball_morphology", "edt"}),
        *[case(f"adapters.monai.{name}", getattr(monai_adapters, name)(softmax=True), On(ONEHOT3.roll(1, -1)),
               On(ONEHOT3), native={"edt"}) for name in ("HausdorffDTLoss", "LogHausdorffDTLoss", "BoundaryLoss")],
        *[case(f"adapters.monai.{name}", getattr(monai_adapters, name)(softmax=True), On(ONEHOT3.roll(1, -1)),
               On(ONEHOT3)) for name in ("SoftclDiceLoss", "SoftDiceclDiceLoss")],
        *[case(f"adapters.monai.{name}", getattr(monai_adapters, name), On(ONEHOT3), 3, native={"ball_morphology"})
          for name in ("erode", "dilate")],
        case("adapters.monai.PanopticQualityMetric", monai_adapters.PanopticQualityMetric(2),
             On(torch.cat([LABEL3, LABEL3.roll(1, -1)], 1).float()), On(torch.cat([LABEL3, LABEL3], 1).float()),
             native={"panoptic_confusion"}),
        case("adapters.monai.compute_panoptic_quality", monai_adapters.compute_panoptic_quality,
             On(LABEL3[0, 0]), On(LABEL3[1, 0]), match_iou_threshold=0.3, reads={"panoptic assignment"}),
        # MONAI's ignite handlers: one update, the metric's buffer
        case("adapters.monai.HausdorffDistance", _handler_update("HausdorffDistance", percentile=95),
             On(ONEHOT3.roll(1, -1)), On(ONEHOT3), native={"ball_morphology", "edt"}),
        case("adapters.monai.SurfaceDistance", _handler_update("SurfaceDistance", symmetric=True),
             On(ONEHOT3.roll(1, -1)), On(ONEHOT3), native={"ball_morphology", "edt"}),
        case("adapters.monai.PanopticQuality", _handler_update("PanopticQuality", num_classes=2),
             On(torch.cat([LABEL3, LABEL3.roll(1, -1)], 1).float()), On(torch.cat([LABEL3, LABEL3], 1).float()),
             native={"panoptic_confusion"}),
    ]

TORCHVISION = []
if tv_adapters is not None:
    TV_DATA = {"image": On(IMAGE2, wrap=tv_tensors.Image), "mask": On(LABEL2, wrap=tv_tensors.Mask)}
    TORCHVISION = [
        case("adapters.torchvision.RandLabelMorphology", tv_adapters.RandLabelMorphology(num_classes=3, p=1.0), TV_DATA),
        case("adapters.torchvision.RandGreyMorphology", tv_adapters.RandGreyMorphology(p=1.0), TV_DATA),
        case("adapters.torchvision.DistanceMap", tv_adapters.DistanceMap(signed=True, num_classes=3), TV_DATA),
        case("adapters.torchvision.LabelBoundary", tv_adapters.LabelBoundary(num_classes=3), TV_DATA),
        case("adapters.torchvision.FillHoles", tv_adapters.FillHoles(num_classes=3), TV_DATA, reads={"binary fixpoint"}),
        case("adapters.torchvision.RandBoundaryJitter", tv_adapters.RandBoundaryJitter(num_classes=3, p=1.0), TV_DATA),
        case("adapters.torchvision.KeepLargestComponents", tv_adapters.KeepLargestComponents(num_classes=3), TV_DATA,
             reads={"binary fixpoint"}),
        case("adapters.torchvision.RemoveSmallComponents", tv_adapters.RemoveSmallComponents(num_classes=3), TV_DATA,
             reads={"binary fixpoint"}),
        case("adapters.torchvision.RandRemoveComponent", tv_adapters.RandRemoveComponent(num_classes=3, p=1.0), TV_DATA,
             reads={"binary fixpoint"}),
        case("adapters.torchvision.ExpandLabels", tv_adapters.ExpandLabels(distance=3), TV_DATA,
             native={"expand_labels"}),
        case("adapters.torchvision.InstanceBoundary", tv_adapters.InstanceBoundary(mode="inner"), TV_DATA,
             native={"find_boundaries"}),
        case("adapters.torchvision.SkeletonTarget", tv_adapters.SkeletonTarget(), TV_DATA, reads={"binary fixpoint"},
             native={"ball_morphology"}),
        case("adapters.torchvision.RandHistogramTransfer", tv_adapters.RandHistogramTransfer(p=1.0), TV_DATA,
             reads=OT_READS),
        case("adapters.torchvision.RandWassersteinMix", tv_adapters.RandWassersteinMix(num_classes=3, p=1.0), TV_DATA,
             reads={"ot arguments", "ot convergence"}),
    ]

#: Per core transform: the Kornia arguments and the expectations (see :class:`Case`).
KORNIA_CORES = {
    "RandLabelMorphology": ({"num_classes": 3, "radius": 1, "p": 1.0}, {"native": {"ball_morphology"}}),
    "RandGreyMorphology": ({"radius": 1, "p": 1.0}, {}),
    "DistanceMap": ({"num_classes": 3}, {"native": {"edt"}}),
    "LabelBoundary": ({"num_classes": 3}, {"native": {"ball_morphology"}}),
    "FillHoles": ({"num_classes": 3}, {"reads": {"binary fixpoint"}, "native": {"fill_holes"}, "native_reads": ()}),
    "RandBoundaryJitter": ({"num_classes": 3, "p": 1.0}, {"native": {"signed_edt"}}),
    "KeepLargestComponents": ({"num_classes": 3}, {"reads": {"binary fixpoint"}, "native": {"filter_components"},
                                                   "native_reads": ()}),
    "RemoveSmallComponents": ({"num_classes": 3, "min_size": 4}, {"reads": {"binary fixpoint"},
                                                                   "native": {"filter_components"},
                                                                   "native_reads": ()}),
    "RandRemoveComponent": ({"num_classes": 3, "p": 1.0}, {"reads": {"binary fixpoint"},
                                                          "native": {"pick_component"}, "native_reads": ()}),
    "RandHistogramTransfer": ({"p": 1.0}, {"reads": OT_READS}),
    "ExpandLabels": ({"distance": 2}, {"native": {"expand_labels"}}),
    "InstanceBoundary": ({}, {"native": {"find_boundaries"}}),
    "SkeletonTarget": ({"method": "parallel"}, {"reads": {"binary fixpoint"},
                                                "native": {"ball_morphology", "skeletonize_parallel"}}),
    "RandWassersteinMix": ({"num_classes": 3, "p": 1.0}, {"reads": {"ot arguments", "ot convergence"}}),
}
KORNIA = []
if kornia_adapters is not None:
    KORNIA = [
        case(f"adapters.kornia.{name}{dim}D", kornia_call, getattr(kornia_adapters, f"{name}{dim}D")(**kwargs),
             On(image), On(label.float()), **expected)
        for name, (kwargs, expected) in KORNIA_CORES.items()
        for dim, image, label in ((2, IMAGE2, LABEL2), (3, IMAGE3, LABEL3))
    ]

LESION3 = torch.zeros(2, 1, 5, 6, 7, dtype=torch.bool)
LESION3[0, 0, 1:3, 2:4, 2:5] = True  # one lesion in the batch
METRICS = [
    case("metrics.lesion_wise_metrics", lambda p, r: tuple(metrics.lesion_wise_metrics(p, r, volume_threshold=0)),
         On(LESION3.roll(1, -1)), On(LESION3), reads={"lesion-wise sizes", "binary fixpoint"},
         native_reads={"lesion-wise sizes"}, native={"binary_erosion", "label", "edt", "region_stats"}),
    case("metrics.panoptic_quality", metrics.panoptic_quality, On(LABEL3.roll(1, -1)), On(LABEL3),
         native={"panoptic_confusion"}),
    case("metrics.surfel_distances", lambda p, r: metrics.surfel_distances(p, r, (2.0, 1.0, 0.5)).robust_hausdorff(95),
         On(X3), On(X3.roll(1, -1)), native={"edt"}),
]

CASES = NDIMAGE + FOOTPRINTS + OT + TRANSFORMS + SKIMAGE + MONAI + TORCHVISION + KORNIA + METRICS

ADAPTERS = {"adapters.monai": monai_adapters, "adapters.torchvision": tv_adapters,
            "adapters.kornia": kornia_adapters}
MODULES = {"ndimage": ndimage, "footprints": footprints, "ot": ot, "transforms": transforms, "measure": measure,
           "segmentation": segmentation, "morphology": morphology,
           **{name: module for name, module in ADAPTERS.items() if module is not None}}


# --------------------------------------------------------------------------- runs
class DeviceRun:
    """Calls on ``kind`` ("meta", or "cuda" FakeTensors) under a :class:`DeviceChecker`, with
    ``_sync.host_read`` answering from :data:`ANSWERS` and recording each read in ``reads``."""

    def __init__(self, kind: str, monkeypatch):
        self.fake_mode = FakeTensorMode(allow_non_fake_inputs=True) if kind == "cuda" else None
        self.device = torch.device("cuda", 0) if kind == "cuda" else torch.device("meta")
        self.checker = DeviceChecker(self.device, self.fake_mode)
        self.reads: list[str] = []
        monkeypatch.setattr(_sync, "host_read", self.host_read)
        # Neither device can make a torch.Generator; MONAI asks for one on the batch's device
        monkeypatch.setattr(torch, "Generator", self._generator_class())

    def host_read(self, tensor, why):
        if why not in _sync.READS:
            self.checker.flag(f"host_read({why!r}) is not in morphaug._sync.READS")
        if not _on_device(tensor):
            self.checker.flag(f"host_read({why!r}) of a host tensor")
        self.reads.append(why)
        return ANSWERS[why](tensor) if why in ANSWERS else None

    def _generator_class(self):
        run, base = self, torch.Generator

        class DeviceGenerator(base):
            """A generator of the run's device: draws then come from that device's default generator."""

            def __new__(cls, device="cpu"):
                return super().__new__(cls)

            def __init__(self, device="cpu"):
                super().__init__()
                if torch.device(device) != run.device:
                    run.checker.flag(f"torch.Generator(device={device!r}) for a batch on {run.device}")

            def manual_seed(self, seed):
                return None  # the core draws from the default generator of the batch's device

        return DeviceGenerator

    def __call__(self, fn, *args, **kwargs):
        """``fn`` on the arguments placed on the device; fails with the checker's findings."""
        with self.fake_mode or contextlib.nullcontext():
            args, kwargs = place((args, kwargs), self.device)
            error = None
            try:
                with self.checker:
                    out = fn(*args, **kwargs)
            except Exception as caught:  # reported with the violations that caused it
                error = caught
        if self.checker.violations:
            raise AssertionError("device discipline broken:\n  " + "\n  ".join(self.checker.violations)) from error
        if error is not None:
            raise error
        return out


def summary(out, device: torch.device):
    """The structure of ``out`` with each tensor as (type, dtype, shape, on ``device``)."""
    leaves, spec = pytree.tree_flatten(out)
    described = [(torch.Tensor if isinstance(x, FakeTensor) else type(x), x.dtype, tuple(x.shape), x.device == device)
                 if isinstance(x, torch.Tensor) else x for x in leaves]
    return spec, described


def _native_built(kernels) -> bool:
    return all(_ops.built_for(kernel, "cuda") for kernel in kernels)


def _params():
    for name, module in ADAPTERS.items():
        if module is None:
            yield pytest.param(None, "meta", "torch", id=f"missing-{name}",
                               marks=pytest.mark.skip(reason=f"morphaug.{name} needs a library that is not installed"))
    for c in CASES:
        yield pytest.param(c, "meta", "torch", id=f"meta-torch-{c.id}")
        if not c.meta_only:
            yield pytest.param(c, "cuda", "torch", id=f"fakecuda-torch-{c.id}")
            if c.native:
                yield pytest.param(c, "cuda", "auto", id=f"fakecuda-auto-{c.id}")


@pytest.mark.parametrize("entry, kind, backend", list(_params()))
def test_device_discipline(entry: Case, kind: str, backend: str, monkeypatch):
    monkeypatch.setenv("MORPHAUG_BACKEND", backend)
    if backend == "auto" and not _native_built(entry.native):
        pytest.skip(f"morphaug._C has no CUDA kernel of {sorted(entry.native)}")
    expected = entry.fn(*place(entry.args, torch.device("cpu")), **place(entry.kwargs, torch.device("cpu")))
    run = DeviceRun(kind, monkeypatch)
    out = run(entry.fn, *entry.args, **entry.kwargs)
    home = torch.device("cpu") if entry.host_output else run.device
    assert summary(out, home) == summary(expected, torch.device("cpu"))
    native = backend == "auto"
    assert set(run.reads) == (entry.native_reads if native else entry.reads)
    assert run.checker.native_ops == (entry.native if native else set())


#: Public names that compute nothing: the types the adapters return, tables of names.
NOT_CALLS = {"adapters.torchvision.DenseTarget", "measure.PROPERTIES"}


def test_every_public_name_has_a_case():
    covered = {name for c in CASES for name in c.covers} | NOT_CALLS
    for module_name, module in MODULES.items():
        names = {name.split(".")[-1] for name in covered if name.rsplit(".", 1)[0] == module_name}
        assert names == set(module.__all__), module_name


def test_every_documented_read_is_answered_and_made():
    assert set(ANSWERS) == set(_sync.READS)
    assert set().union(*(c.reads | c.native_reads for c in CASES)) == set(_sync.READS)


def test_every_cuda_kernel_fake_is_reached():
    cuda_kernels = {kernel for kernel in _ops.KERNELS if _ops.built_for(kernel, "cuda")}
    assert cuda_kernels <= set().union(*(c.native for c in CASES))


# --------------------------------------------------------------------------- the checker itself
PLANTED = [
    pytest.param(lambda x: x + torch.zeros(x.shape[-1]), "takes host tensors into device work", id="cpu-tensor"),
    pytest.param(lambda x: x + torch.zeros(x.shape).to(x.device), "copies to the device a tensor made on the host",
                 id="cpu-tensor-copied"),
    pytest.param(lambda x: x / x.sum().item(), "reads device data back", id="item"),
    pytest.param(lambda x: x if bool((x > 0).all()) else -x, "reads device data back", id="bool"),
    pytest.param(lambda x: x.cpu(), "reads device data back", id="cpu"),
    pytest.param(lambda x: x[x > 0.5], "needs the data", id="boolean-index"),
    pytest.param(lambda x: _sync.host_read(x.sum(), "a convergence check"), "is not in morphaug._sync.READS",
                 id="unlisted-read"),
]


@pytest.mark.parametrize("kind", ["meta", pytest.param("cuda", id="fakecuda")])
@pytest.mark.parametrize("planted, message", PLANTED)
def test_checker_fails_on_planted_defects(planted, message, kind, monkeypatch):
    run = DeviceRun(kind, monkeypatch)
    with pytest.raises(AssertionError, match=message):
        run(planted, On(rand(2, 3)))


GREY_EROSION = ndimage.grey_erosion.__wrapped__.__globals__  # the module that runs grey_erosion


@pytest.mark.parametrize("kind", ["meta", pytest.param("cuda", id="fakecuda")])
@pytest.mark.parametrize("plant, message", [
    pytest.param(lambda input: torch.from_numpy(np.ones(4)).to(input.device), "blocking host-to-device copy",
                 id="numpy-copied"),
    pytest.param(lambda input: input.sum().item(), "reads device data back", id="item"),
])
def test_a_defect_planted_in_grey_erosion_fails(plant, message, kind, monkeypatch):
    """The checker sees a blocking copy of host data made by no factory op, and a scalar read, in a public op."""
    prepare = GREY_EROSION["_prepare"]

    def planted(input, *args):
        plant(input)
        return prepare(input, *args)

    run = DeviceRun(kind, monkeypatch)
    run(ndimage.grey_erosion, On(F2), size=3)  # clean before the plant
    monkeypatch.setitem(GREY_EROSION, "_prepare", planted)
    with pytest.raises(AssertionError, match=message):
        DeviceRun(kind, monkeypatch)(ndimage.grey_erosion, On(F2), size=3)


def test_staged_host_elements_are_copied_once_per_device(monkeypatch):
    """A host element (the default cross) reaches a device without blocking, and once: later calls reuse it."""
    from morphaug.ndimage import _normalize

    copies = []
    monkeypatch.setattr(_sync, "to_device", lambda t, d: copies.append(d) or t.to(d, non_blocking=True))
    monkeypatch.setattr(_normalize, "_DEVICE_COPIES", type(_normalize._DEVICE_COPIES)())
    x = torch.zeros(1, 1, 5, 5, dtype=torch.bool, device="meta")
    structure = np.array([[0, 1, 0], [1, 1, 1], [0, 1, 1]])
    first = _normalize.normalize_element(structure, x, 2, "structure", torch.bool)
    again = _normalize.normalize_element(structure.copy(), x, 2, "structure", torch.bool)
    assert again is first and copies == [x.device]


def test_recent_elements_are_thread_safe(monkeypatch):
    """8 threads over more host elements than the cache holds, switching threads every microsecond."""
    from conftest import run_in_threads
    from morphaug.ndimage import _elements

    structures = [np.random.default_rng(seed).random((3, 3)) < 0.5 for seed in range(3 * _elements._kept_element.cache_info().maxsize)]
    for structure in structures:
        structure[1, 1] = True
    x = torch.zeros(1, 1, 6, 6, dtype=torch.bool)
    errors = []

    def work(offset):
        try:
            for i in range(len(structures)):
                structure = structures[(i + offset) % len(structures)]
                element = _elements.Element.from_argument(structure, x, (0, 1), 0)
                assert torch.equal(element.host[0, 0], torch.from_numpy(structure))
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(error)

    run_in_threads(work, [17 * k for k in range(8)])
    assert not errors, errors[:3]
    info = _elements._kept_element.cache_info()
    assert info.currsize <= info.maxsize


@pytest.mark.parametrize("fn", [
    pytest.param(lambda x: ndimage.binary_fill_holes(x), id="binary_fill_holes"),
    pytest.param(lambda x: ndimage.grey_erosion(x.float(), footprint=CROSS2), id="grey_erosion"),
    pytest.param(lambda x: ndimage.label(x)[0], id="label"),
])
def test_compiled_calls_stay_out_of_cuda_graphs(fn):
    """Under torch.compile each call is one opaque op that may read the host or stage memory: tagged
    cudagraph_unsafe, so that mode="reduce-overhead" (CUDA graphs) runs it outside its graphs."""
    from torch._inductor.utils import get_first_incompatible_cudagraph_node

    graphs = []

    def backend(gm, inputs):
        graphs.append(gm)
        return gm

    torch.compile(fn, backend=backend, fullgraph=True)(mask(2, 1, 6, 7))
    opaque = [node for node in graphs[0].graph.nodes if node.op == "call_function"
              and str(node.target).startswith("morphaug_opaque.")]
    assert opaque and all(torch.Tag.cudagraph_unsafe in node.target.tags for node in opaque)
    assert get_first_incompatible_cudagraph_node(graphs[0]) in opaque


def test_native_ops_read_nothing_back_so_cuda_graphs_may_capture_them():
    """No native kernel reads the host (propagation and hole filling label on CUDA: no convergence flag)."""
    if not _ops.load_native()[0]:
        pytest.skip("morphaug._C is not built")
    ops = [getattr(torch.ops.morphaug, name) for name in dir(torch.ops.morphaug)]
    overloads = [getattr(op, o) for op in ops if isinstance(op, torch._ops.OpOverloadPacket) for o in op.overloads()]
    assert overloads and not [o for o in overloads if torch.Tag.cudagraph_unsafe in o.tags]
