"""One contract per native kernel (:data:`KERNELS`), and the ``MORPHAUG_BACKEND`` policy.

A row of :data:`KERNELS` owns everything about a kernel of ``torch.ops.morphaug``:
its Python function (``kernels``), its fake (``_fakes``, registered as its
library loads), the input dtypes and spatial rank it takes, and the sizes it
fits (:meth:`Kernel.fits`: index widths, radii, squared-distance range). Nothing
else in the package repeats a kernel's limits: :func:`use_native` checks the
whole contract, so a call the kernel cannot take falls through its dispatch
table (``_dispatch``) to the next case, in the end the torch backend.

The environment variable ``MORPHAUG_BACKEND`` sets the policy, read at each
call:

``auto`` (default)
    a native kernel wherever it is built for the input's device, dtype and
    rank, else torch.
``torch``
    always the pure-torch backend.
``native``
    a call that a native kernel would take must run on it: a RuntimeError says
    why when it cannot (not built, other device, dtype or rank). Calls no
    kernel takes, and calls a kernel does not fit (sizes), still run on torch.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Callable, Mapping

import torch

from . import _fakes, _library, kernels

__all__ = ["KERNELS", "Kernel", "why_not", "use_native", "policy"]

_REAL_DTYPES = frozenset({
    torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
    torch.float16, torch.bfloat16, torch.float32, torch.float64,
})
_FLOAT_DTYPES = frozenset({torch.float32, torch.float64})
_LABEL_DTYPES = frozenset({torch.int32, torch.int64})
#: The flat grey kernels compare values only, so they take the wide unsigned dtypes too.
_FLAT_GREY_DTYPES = _REAL_DTYPES | {torch.uint16, torch.uint32, torch.uint64}
#: Every integer dtype but bool (label_values compares their bits).
_INTEGER_DTYPES = frozenset({torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
                             torch.uint16, torch.uint32, torch.uint64})
#: expand_labels, find_boundaries and panoptic_confusion take labels of bool and every integer dtype.
_LABEL_IMAGE_DTYPES = _INTEGER_DTYPES | {torch.bool}
_POLICIES = ("auto", "torch", "native")

#: The most voxels an int32 index or offset counts.
_INT32 = 2**31 - 1


# ------------------------------------------------------------------ what a kernel fits
# Each limit takes the spatial shape of a slice, the call's size facts (``args``: what the
# op's table case says of the call, see Case.sizes; None: nothing said) and the device type,
# and says why the kernel does not fit, or None.

def _padded_slice(default_reach: int):
    """Slices padded by ``args["reach"]`` voxels (per axis; else ``default_reach``) on each side
    must fit int32 offsets."""
    def limit(spatial, args, device_type):
        reach = (args or {}).get("reach") or [default_reach] * len(spatial)
        padded = math.prod(n + 2 * r for n, r in zip(spatial, reach))
        if padded > _INT32:
            return (f"it takes slices of at most {_INT32} voxels with a border of {list(reach)}, "
                    f"got {tuple(spatial)}")
        return None
    return limit


def _flood(spatial, args, device_type):
    """Slices padded by the element's reach fit int32 offsets; on CUDA, where the kernels label the
    region's components, an element within ``(3,) * S`` that every slice holds centrosymmetric
    (``args["two_way"]``)."""
    misfit = _padded_slice(0)(spatial, args, device_type)
    if misfit or device_type != "cuda" or args is None:
        return misfit
    if max(args.get("reach") or [0], default=0) > 1:
        return f"on CUDA it takes elements within (3,) * S, got a reach of {list(args['reach'])}"
    if not args.get("two_way", True):
        return "on CUDA it takes elements that are centrosymmetric in every slice"
    return None


def _slice_voxels(spatial, args, device_type):
    """Slices must fit int32 indices."""
    if math.prod(spatial) > _INT32:
        return f"it takes slices of at most {_INT32} voxels, got {tuple(spatial)}"
    return None


#: The digit counts of region_median's radix select on CUDA: 2 KiB per column of a slice.
_MEDIAN_COLUMN_BYTES = 2 * 256 * 4


def _median_columns(spatial, args, device_type):
    """Slices fit int32 indices; on CUDA, the digit counts of the columns (``args["slots"]``) take at
    most 4 bytes per voxel of a slice, or 256 KiB."""
    misfit = _slice_voxels(spatial, args, device_type)
    slots, most = (args or {}).get("slots", 1), max(4 * math.prod(spatial), 2**18) // _MEDIAN_COLUMN_BYTES
    if misfit or device_type != "cuda" or slots <= most:
        return misfit
    return f"on CUDA it takes at most {most} columns for slices of shape {tuple(spatial)}, got {slots}"


#: The largest radius of the CPU ball kernel (its int16 values hold distances just above it);
#: the CUDA kernel clamps radii instead.
_BALL_MAX_RADIUS_CPU = 127


def _ball_radii(spatial, args, device_type):
    """On the CPU, radii (``args["radius"]``: an int, or a CPU tensor of them, read there) up to
    :data:`_BALL_MAX_RADIUS_CPU`."""
    radius = (args or {}).get("radius")
    if device_type != "cpu" or radius is None:
        return None
    if isinstance(radius, torch.Tensor):
        radius = int(radius.max()) if radius.numel() else 0
    if radius > _BALL_MAX_RADIUS_CPU:
        return f"it takes radii up to {_BALL_MAX_RADIUS_CPU} on the CPU, got {radius}"
    return None


#: The most offsets, and their reach along an axis, of the binary_erosion kernel (its CUDA
#: launcher takes them by value, steps in int8).
_EROSION_MAX_OFFSETS = 256
_EROSION_MAX_REACH = 127


def _erosion_offsets(spatial, args, device_type):
    """At most :data:`_EROSION_MAX_OFFSETS` offsets (``args["count"]``), each within
    :data:`_EROSION_MAX_REACH` voxels along every axis (``args["reach"]``); int32 slices."""
    args = args or {}
    if args.get("count", 0) > _EROSION_MAX_OFFSETS:
        return f"it takes at most {_EROSION_MAX_OFFSETS} element offsets, got {args['count']}"
    if max(args.get("reach") or [0]) > _EROSION_MAX_REACH:
        return f"it takes offsets of at most {_EROSION_MAX_REACH} voxels along an axis, got {args['reach']}"
    return _slice_voxels(spatial, args, device_type)


def _value_span(spatial, args, device_type):
    """Values in a range (``args["span"]``) of at most twice the voxels (``args["voxels"]``), or 2^16."""
    span, voxels = (args or {}).get("span", 1), (args or {}).get("voxels", 0)
    if span > max(2**16, 2 * voxels):
        return f"it takes values in a range of at most max(2^16, twice the voxels), got {span} for {voxels} voxels"
    return None


def _squared_distances(spatial, args, device_type):
    """The squared distances of a slice (and a diagonal beyond them) in 32 bits."""
    reach = [(n - 1) ** 2 for n in spatial]
    top = 2**32 - 1
    longest = max(reach, default=0)
    if longest >= top or sum(reach) >= top - longest:
        return f"its squared distances take 32 bits, too few for a slice of shape {tuple(spatial)}"
    return None


def _thinning_tiles(spatial, args, device_type):
    """Slices fit int32 indices; on CUDA, rows fit a grid of 65535 tiles of 8 (csrc/cuda/thinning2d.cu)."""
    if device_type == "cuda" and spatial[0] > 65535 * 8:
        return f"on CUDA it takes at most {65535 * 8} rows, got {spatial[0]}"
    return _slice_voxels(spatial, args, device_type)


@dataclasses.dataclass(frozen=True)
class Kernel:
    """The contract of the native op ``name`` of ``torch.ops.morphaug``: the input dtypes it takes
    (None: a bool mask, which its callers make from any input), its most spatial axes, who calls
    it (for ``backend_info``), and the sizes it fits: the most voxels along one spatial axis
    (``max_axis``: its int32 indices) and ``limit``, its own (see :meth:`fits`). ``writes_out``:
    it has an ``.out`` variant. Its Python function and its fake are named after it."""

    name: str
    dtypes: frozenset | None
    max_rank: int
    used_by: str
    max_axis: int = _INT32
    limit: Callable[[tuple, Mapping | None, str], str | None] | None = None
    writes_out: bool = False

    @property
    def function(self) -> Callable:
        """Its Python function, in ``kernels``."""
        return getattr(kernels, self.name)

    @property
    def fake(self) -> Callable:
        """Its fake kernel, in ``_fakes``."""
        return getattr(_fakes, self.name)

    def fits(self, spatial, args: Mapping | None = None, device_type: str = "cpu") -> str | None:
        """None when a call on slices of shape ``spatial`` fits the kernel, else why not.

        ``args``: the call's size facts, as its table case gives them (``reach``: per axis,
        the offsets' reach of an element; ``radius``: the ball radii); ``device_type``: where
        it runs."""
        longest = max(spatial, default=0)
        if longest > self.max_axis:
            return f"it takes at most {self.max_axis} voxels along an axis, got {longest}"
        return None if self.limit is None else self.limit(tuple(spatial), args, device_type)

    def sample_dtype(self) -> torch.dtype | None:
        """The dtype that backend_info reports the kernel for: float32 where it takes it."""
        if self.dtypes is None or torch.float32 in self.dtypes:
            return None if self.dtypes is None else torch.float32
        return min(self.dtypes, key=str)


#: Every native kernel, by its op name in ``torch.ops.morphaug``.
KERNELS = {kernel.name: kernel for kernel in [
    # float32 coordinates: exact integers up to 2**24
    Kernel("edt", None, 16, "distance_transform_edt", max_axis=2**24 - 1, writes_out=True),
    Kernel("expand_labels", _LABEL_IMAGE_DTYPES, 16, "segmentation.expand_labels", max_axis=2**24 - 1,
           limit=_slice_voxels),
    Kernel("euler_number", None, 3, "measure.euler_number, metrics.betti_numbers"),
    Kernel("find_boundaries", _LABEL_IMAGE_DTYPES, 8, "segmentation.find_boundaries (thick, inner, outer)",
           limit=_slice_voxels),
    Kernel("panoptic_confusion", _LABEL_IMAGE_DTYPES, 16, "metrics.panoptic_quality (match_iou_threshold >= 0.5)",
           limit=_slice_voxels),
    Kernel("cdt", None, 6, "distance_transform_cdt", limit=_padded_slice(1)),
    Kernel("distance_bf", None, 6, "distance_transform_bf", limit=_slice_voxels),
    Kernel("label", None, 8, "label"),
    Kernel("label_values", _INTEGER_DTYPES, 8, "measure.label of integer maps"),
    Kernel("grey_box", _FLAT_GREY_DTYPES, 16, "grey ops with size or an all-true footprint", writes_out=True),
    Kernel("grey_footprint", _FLAT_GREY_DTYPES, 16, "grey ops with one footprint read on the host",
           writes_out=True),
    Kernel("grey_structure", _REAL_DTYPES, 16, "grey ops with one structure read on the host", writes_out=True),
    Kernel("grey_element", _FLAT_GREY_DTYPES, 16, "grey ops with elements per sample or on the device",
           writes_out=True),
    Kernel("propagate", None, 16, "binary ops with iterations < 1, binary_propagation (host element holding "
                                  "its centre)", limit=_flood),
    Kernel("fill_holes", None, 16, "binary_fill_holes (host element holding its centre)", limit=_flood),
    Kernel("binary_erosion", None, 8, "binary ops by any element with iterations >= 1, binary_hit_or_miss",
           limit=_erosion_offsets),
    Kernel("ball_morphology", None, 16, "binary erosion / dilation by a host ball, cross or box; label "
                                        "morphology of the transforms", limit=_ball_radii, writes_out=True),
    Kernel("signed_edt", None, 16, "signed distance maps of the transforms (Euclidean, unit sampling)",
           limit=_squared_distances),
    Kernel("binary_values", _FLAT_GREY_DTYPES, 16, "the surface metrics on the CPU: the binary check"),
    Kernel("surface_distance_lists", None, 3, "the surface metrics on the CPU (Euclidean)"),
    Kernel("skeletonize_lee", None, 3, "morphology.skeletonize(method='lee') (CPU only)"),
    Kernel("thinning2d", None, 2, "morphology.skeletonize(method='zhang'), morphology.thin",
           limit=_thinning_tiles),
    Kernel("skeletonize_parallel", None, 3, "morphology.skeletonize(method='parallel'), metrics.cl_dice",
           limit=_padded_slice(1)),
    Kernel("sinkhorn_scaling", _FLOAT_DTYPES, 16, "ot.sinkhorn with a shared cost"),
    Kernel("grid_barycenter", _FLOAT_DTYPES, 16, "ot.wasserstein_barycenter"),
    # the component kernels take the label maps of label's kernel (at most 8 axes, as it)
    Kernel("value_indices", frozenset({torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64}), 16,
           "value_indices (CPU)", limit=_value_span),
    Kernel("label_sizes", _LABEL_DTYPES, 8,
           "the voxels of each component, where filter_components and pick_component do not run"),
    Kernel("filter_components", None, 8, "KeepLargestComponents, RemoveSmallComponents", limit=_slice_voxels),
    Kernel("pick_component", None, 8, "RandRemoveComponent", limit=_slice_voxels),
    Kernel("region_stats", _FLAT_GREY_DTYPES, 16, "the measurements (sum_labels .. find_objects)",
           limit=_slice_voxels),
    Kernel("region_histogram", _FLAT_GREY_DTYPES, 16, "histogram", limit=_slice_voxels),
    Kernel("region_median", _FLAT_GREY_DTYPES, 16, "median", limit=_median_columns),
    # at most 80 neighbour offsets: a (3,) * S structure of up to 4 axes
    Kernel("watershed_ift", frozenset({torch.uint8, torch.uint16}), 4, "watershed_ift", limit=_slice_voxels),
]}


def _register_fakes(namespace: str) -> None:
    """Registers every kernel's fake for ``torch.ops.<namespace>`` (its ``.out`` variant's too).
    A library built before a kernel existed lacks its op: that kernel is then not built there
    (``why_not`` says so) and its calls fall through, instead of ``import morphaug`` failing."""
    ops = getattr(torch.ops, namespace)
    for name, kernel in KERNELS.items():
        if not hasattr(ops, name):
            continue
        torch.library.register_fake(f"{namespace}::{name}")(kernel.fake)
        if kernel.writes_out:
            torch.library.register_fake(f"{namespace}::{name}.out")(_fakes.write_out)


_library.on_load(_register_fakes)


# ------------------------------------------------------------------ whether a kernel takes a call
def why_not(kernel: str, device_type: str, dtype: torch.dtype | None = None, rank: int | None = None,
            spatial: tuple | None = None, args: Mapping | None = None) -> str | None:
    """None when ``kernel`` can take a call on ``device_type`` (of ``dtype``, spatial ``rank``,
    spatial shape ``spatial`` and size facts ``args``, where given), else the reason it cannot."""
    spec = KERNELS[kernel]
    emulate = _library.emulating_cuda()  # read once per call: each read of the environment costs a microsecond
    module, reason = _library.load_native(emulate)
    if module is None:
        return reason
    if not _library.built_for(kernel, device_type, emulate):
        return f"morphaug._C has no {kernel!r} kernel for {device_type} tensors"
    if spec.dtypes is not None and dtype is not None and dtype not in spec.dtypes:
        return f"the native {kernel!r} kernel does not take {dtype}"
    if rank is not None and rank > spec.max_rank:
        return f"the native {kernel!r} kernel takes at most {spec.max_rank} spatial axes, got {rank}"
    misfit = None if spatial is None else spec.fits(spatial, args, device_type)
    if misfit:
        return f"the native {kernel!r} kernel does not fit: {misfit}"
    return None


def policy() -> str:
    """``MORPHAUG_BACKEND``: ``auto``, ``torch`` or ``native`` (ValueError otherwise)."""
    choice = os.environ.get("MORPHAUG_BACKEND", "auto").strip().lower() or "auto"
    if choice not in _POLICIES:
        raise ValueError(f"MORPHAUG_BACKEND must be one of {', '.join(_POLICIES)}, got {choice!r}")
    return choice


def use_native(kernel: str, tensor: torch.Tensor, what: str | None = None, args: Mapping | None = None) -> bool:
    """Whether a call that ``kernel`` takes runs on it for ``tensor`` (shape ``(B, C, *spatial)``,
    with the size facts ``args``, see :meth:`Kernel.fits`), under the ``MORPHAUG_BACKEND`` policy.

    A call the kernel does not fit (its sizes) is no call of it, whatever the
    policy: False. Raises RuntimeError when the policy is ``native`` and the
    kernel cannot take the call otherwise (``what`` names the call in the
    message), ValueError on an unknown policy.
    """
    if KERNELS[kernel].fits(tensor.shape[2:], args, _library.launcher_device(tensor)) is not None:
        return False
    choice = policy()
    if choice == "torch":
        return False
    reason = why_not(kernel, tensor.device.type, tensor.dtype, tensor.ndim - 2)
    if reason is None:
        return True
    if choice == "native":
        raise RuntimeError(
            f"MORPHAUG_BACKEND=native, but {what or kernel} on a {tensor.device.type} {tensor.dtype} "
            f"tensor of shape {tuple(tensor.shape)} cannot run natively: {reason}"
        )
    if not torch.compiler.is_compiling():
        _library.warn_if_missing()
    return False
