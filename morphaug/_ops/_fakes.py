"""Fake (meta) kernels of the native ops, for FakeTensor, ``meta`` tensors and ``torch.compile``.

One function per op of ``torch.ops.morphaug``, named after it, with the op's
schema; the op's row of ``KERNELS`` (``_contracts``) holds it and registers it
for a namespace (``morphaug``, or ``morphaug_emu`` for the emulated CUDA
launchers) as soon as that library is loaded. The ``.out`` variants return
nothing (:func:`write_out`).
"""

from __future__ import annotations

import torch

from .kernels import REGION_TABLES

__all__ = ["edt", "expand_labels", "find_boundaries", "panoptic_confusion", "euler_number", "cdt", "distance_bf", "label", "label_values", "label_sizes", "filter_components", "pick_component", "grey_box",
           "grey_footprint", "grey_structure", "grey_element", "propagate", "fill_holes", "binary_erosion", "ball_morphology",
           "signed_edt", "binary_values", "thinning2d", "skeletonize_parallel", "surface_distance_lists",
           "sinkhorn_scaling", "grid_barycenter", "region_stats", "region_histogram", "region_median",
           "watershed_ift", "value_indices",
           "write_out"]


def _index_shape(mask, return_indices):
    return (mask.ndim - 2, *mask.shape) if return_indices else (0,)


def edt(mask, sampling, return_indices, dtype, squared):
    return (mask.new_empty(mask.shape, dtype=dtype),
            mask.new_empty(_index_shape(mask, return_indices), dtype=torch.int32))


def expand_labels(labels, sampling, distance):
    return torch.empty_like(labels, memory_format=torch.contiguous_format)


def euler_number(mask, table):
    return mask.new_empty(mask.shape[:2], dtype=torch.int64)


def find_boundaries(labels, connectivity, boundary_mode, background):
    return labels.new_empty(labels.shape, dtype=torch.bool)


def panoptic_confusion(pred, ref, threshold):
    return pred.new_empty((*pred.shape[:2], 4), dtype=torch.float32)


def cdt(mask, metric, return_indices):
    return (mask.new_empty(mask.shape, dtype=torch.int32),
            mask.new_empty(_index_shape(mask, return_indices), dtype=torch.int32))


def distance_bf(mask, metric, sampling, return_indices, dtype):
    return (mask.new_empty(mask.shape, dtype=dtype),
            mask.new_empty(_index_shape(mask, return_indices), dtype=torch.int32))


def label(mask, structure, dtype):
    return mask.new_empty(mask.shape, dtype=dtype), mask.new_empty(mask.shape[:2], dtype=torch.int64)


def label_values(values, structure, background, dtype):
    return label(values, structure, dtype)


def value_indices(values, lowest, span, ignore):
    total = torch.library.get_ctx().new_dynamic_size()
    return (values.new_empty((span,), dtype=torch.int64),
            values.new_empty((values.ndim, total), dtype=torch.int64))


def skeletonize_lee(mask, euler_changes):
    return torch.empty_like(mask)


def thinning2d(mask, tables, iterations):
    return torch.empty_like(mask), mask.new_empty((), dtype=torch.int64)


def skeletonize_parallel(mask, active, euler_changes, rounds):
    return torch.empty_like(mask), torch.empty_like(active)


def label_sizes(labels, width):
    return labels.new_empty((*labels.shape[:2], width), dtype=torch.int64)


def region_stats(input, labels, table, rule, slots, what):
    rows, rank = input.shape[0] * input.shape[1], input.ndim - 2
    shapes = {"moments": (rows, slots, rank), "bounds": (rows, slots, rank)}
    dtypes = {"sum": torch.float64, "moments": torch.float64, "squares": torch.float64}
    return [input.new_empty(shapes.get(name, (rows, slots)), dtype=dtypes.get(name, torch.int64))
            for i, name in enumerate(REGION_TABLES) if what >> i & 1
            for _ in range(2 if name == "bounds" else 1)]


def region_histogram(input, labels, table, rule, slots, edges):
    return input.new_empty((input.shape[0] * input.shape[1], slots, len(edges) - 1), dtype=torch.int64)


def region_median(input, labels, table, rule, slots):
    rows = input.shape[0] * input.shape[1]
    return [input.new_empty((rows, slots), dtype=torch.int64) for _ in range(3)] + \
        [input.new_empty((rows,), dtype=torch.int64)]


def filter_components(mask, structure, keep, min_size):
    return mask.new_empty((mask.shape[0], 1, *mask.shape[2:]))


def pick_component(mask, structure, draw, max_size):
    return torch.empty_like(mask)


def grey_box(input, size, origin, modes, cval, maximum):
    return input.new_empty(input.shape)


def grey_footprint(input, shape, footprint, origin, modes, cval, maximum):
    return input.new_empty(input.shape)


def grey_structure(input, shape, structure, footprint, origin, modes, cval, maximum):
    return input.new_empty(input.shape)


def grey_element(input, footprint, structure, origin, modes, cval, maximum):
    return input.new_empty(input.shape)


def propagate(input, mask, weights, offsets, border):
    return input.new_empty(input.shape)


def fill_holes(input, weights, offsets):
    return input.new_empty(input.shape)


def binary_erosion(input, mask, hit, miss, offsets, iterations, border, invert):
    return input.new_empty(input.shape)


def ball_morphology(mask, radius, metric, erode):
    return mask.new_empty(mask.shape)


def signed_edt(mask):
    return mask.new_empty(mask.shape, dtype=torch.float32)


def binary_values(input):
    return input.new_empty(input.shape, dtype=torch.bool), input.new_empty((), dtype=torch.int64)


def surface_distance_lists(pred, ref, sampling, reach, budget, symmetric):
    listed = torch.library.get_ctx().new_dynamic_size()
    return (pred.new_empty((listed,), dtype=torch.int64), pred.new_empty((listed,), dtype=torch.float32),
            pred.new_empty((2, *pred.shape[:2]), dtype=torch.int64))


def sinkhorn_scaling(a, b, kernel, max_iter, tol, check_every):
    return (torch.empty_like(a), torch.empty_like(b), torch.empty_like(a), a.new_empty((a.shape[0], 1)),
            a.new_empty(a.shape[:1], dtype=torch.int64))


def grid_barycenter(log_hists, weights, kernels, max_iter, tol, check_every):
    return log_hists.new_empty((log_hists.shape[0], *log_hists.shape[2:]))


def watershed_ift(input, markers, offsets, dtype):
    return input.new_empty(input.shape, dtype=dtype)


def write_out(*args, out):
    """The fake of every ``.out`` variant: it writes ``out`` and returns nothing."""
    return None
