"""Fake (meta) kernels of every native op, for FakeTensor, ``meta`` tensors and ``torch.compile``.

Registered for a namespace (``morphaug``, or ``morphaug_emu`` for the
emulated CUDA launchers) as soon as its library is loaded.
"""

from __future__ import annotations

import torch

__all__ = ["register_fakes"]


def register_fakes(namespace: str) -> None:
    """Registers the fake kernel of every op of ``torch.ops.<namespace>``."""
    def index_shape(mask, return_indices):
        return (mask.ndim - 2, *mask.shape) if return_indices else (0,)

    @torch.library.register_fake(f"{namespace}::edt")
    def _edt_fake(mask, sampling, return_indices, dtype, squared):
        return (mask.new_empty(mask.shape, dtype=dtype),
                mask.new_empty(index_shape(mask, return_indices), dtype=torch.int32))

    @torch.library.register_fake(f"{namespace}::cdt")
    def _cdt_fake(mask, metric, return_indices):
        return (mask.new_empty(mask.shape, dtype=torch.int32),
                mask.new_empty(index_shape(mask, return_indices), dtype=torch.int32))

    @torch.library.register_fake(f"{namespace}::label")
    def _label_fake(mask, structure, dtype):
        return mask.new_empty(mask.shape, dtype=dtype), mask.new_empty(mask.shape[:2], dtype=torch.int64)

    @torch.library.register_fake(f"{namespace}::label_sizes")
    def _label_sizes_fake(labels, width):
        return labels.new_empty((*labels.shape[:2], width), dtype=torch.int64)

    @torch.library.register_fake(f"{namespace}::filter_components")
    def _filter_components_fake(mask, structure, keep, min_size):
        return mask.new_empty((mask.shape[0], 1, *mask.shape[2:]))

    @torch.library.register_fake(f"{namespace}::grey_box")
    def _grey_box_fake(input, size, origin, modes, cval, maximum):
        return input.new_empty(input.shape)

    @torch.library.register_fake(f"{namespace}::grey_footprint")
    def _grey_footprint_fake(input, shape, footprint, origin, modes, cval, maximum):
        return input.new_empty(input.shape)

    @torch.library.register_fake(f"{namespace}::grey_structure")
    def _grey_structure_fake(input, shape, structure, footprint, origin, modes, cval, maximum):
        return input.new_empty(input.shape)

    def _write_out(*args, out):  # the .out variants return nothing: they write out
        return None

    for op in ("edt", "grey_box", "grey_footprint", "grey_structure", "ball_morphology"):
        torch.library.register_fake(f"{namespace}::{op}.out")(_write_out)

    @torch.library.register_fake(f"{namespace}::propagate")
    def _propagate_fake(input, mask, weights, offsets, border):
        return input.new_empty(input.shape)

    @torch.library.register_fake(f"{namespace}::fill_holes")
    def _fill_holes_fake(input, weights, offsets):
        return input.new_empty(input.shape)

    @torch.library.register_fake(f"{namespace}::signed_edt")
    def _signed_edt_fake(mask):
        return mask.new_empty(mask.shape, dtype=torch.float32)

    @torch.library.register_fake(f"{namespace}::binary_values")
    def _binary_values_fake(input):
        return input.new_empty(input.shape, dtype=torch.bool), input.new_empty((), dtype=torch.int64)

    @torch.library.register_fake(f"{namespace}::surface_distance_lists")
    def _surface_distance_lists_fake(pred, ref, sampling, reach, budget, symmetric):
        listed = torch.library.get_ctx().new_dynamic_size()
        return (pred.new_empty((listed,), dtype=torch.int64), pred.new_empty((listed,), dtype=torch.float32),
                pred.new_empty((2, *pred.shape[:2]), dtype=torch.int64))

    @torch.library.register_fake(f"{namespace}::sinkhorn_scaling")
    def _sinkhorn_scaling_fake(a, b, kernel, max_iter, tol, check_every):
        return (torch.empty_like(a), torch.empty_like(b), torch.empty_like(a), a.new_empty((a.shape[0], 1)),
                a.new_empty(a.shape[:1], dtype=torch.int64))

    @torch.library.register_fake(f"{namespace}::grid_barycenter")
    def _grid_barycenter_fake(log_hists, weights, kernels, max_iter, tol, check_every):
        return log_hists.new_empty((log_hists.shape[0], *log_hists.shape[2:]))

    @torch.library.register_fake(f"{namespace}::ball_morphology")
    def _ball_morphology_fake(mask, radius, metric, erode):
        return mask.new_empty(mask.shape)
