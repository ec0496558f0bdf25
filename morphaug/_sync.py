"""The host reads of morphaug: the only places that read device data back.

morphaug queues its work on the input's device and reads nothing back but
the values listed in :data:`READS`, each through :func:`host_read`, which the
test suite replaces to count them and to prove that nothing else reads the
device (``tests/test_device_discipline.py``). On the CPU a read costs nothing.

Not listed: elements and other arguments given as CPU
tensors or NumPy arrays are read on the host by design (they are host data,
never device reads); and an error being raised may read values for its message.

Host data goes the other way through :func:`to_device`: a copy from pageable
host memory blocks the host until the device's queue has drained (a sync as
costly as a read), so morphaug stages it in pinned memory and copies it
asynchronously. ``tests/test_device_discipline.py`` fails on any blocking
host-to-device copy.
"""

from __future__ import annotations

import torch

__all__ = ["READS", "host_read", "to_device"]

#: Why morphaug reads device data back, and where.
READS = {
    "binary fixpoint": "binary ops repeated to a fixpoint (iterations < 1: binary_propagation and "
                       "binary_fill_holes on the torch backend; the thinnings of morphaug.morphology) or more "
                       "than 4 times: whether the last chunk "
                       "of steps (or of labelling rounds) changed anything, and where the voxels it reached "
                       "lie when it followed one-way offsets (their bounding box), once per chunk",
    "label classes": "morphaug.transforms: the classes present in an index label map when neither num_classes= "
                     "nor classes= is given, one flag per class value, once per call (once per label key for "
                     "the transforms that draw nothing per class)",
    "find_objects max_label": "find_objects without max_label (max_label < 1): the batch's largest label, which "
                              "sizes the result, once per call",
    "ot arguments": "morphaug.ot value checks (finite, non-negative histograms of equal mass, barycentric "
                    "weights, a finite cost), one read per checked argument group, once per call",
    "ot cost range": "sinkhorn: max(C) - min(C) of the cost, which decides whether one Gibbs kernel is exact, "
                     "once per call",
    "ot convergence": "sinkhorn, grid_sinkhorn, wasserstein_barycenter: how many problems still iterate, "
                      "every 10 iterations (POT's check)",
    "value_indices": "ndimage.value_indices: the batch's values, sorted on the device, which size its dict, "
                     "once per call",
    "watershed_ift": "ndimage.watershed_ift without its native kernel (the torch backend, more than four "
                     "spatial axes): the input and the markers, flooded on the host by SciPy's sequential "
                     "algorithm, once each per call",
    "regionprops max_label": "measure.regionprops_table without max_label: the batch's largest label, which "
                             "sizes the tables, once per call",
    "panoptic assignment": "metrics.panoptic_quality with match_iou_threshold < 0.5: the overlapping pairs of "
                           "instances, matched by SciPy's linear_sum_assignment per slice on the host (MONAI's "
                           "Munkres assignment), once per call",
    "lesion-wise sizes": "metrics.lesion_wise_metrics: the numbers of lesions of the batch (reference and "
                         "predicted), which size the match table, then the box of each lesion and its "
                         "prediction, which size the groups of boxes, once each per call",
    "tensor arguments": "an argument that shapes the computation given as an accelerator tensor (a CDT metric "
                        "array; size, origin, sampling or axes), read once (morphaug.ndimage)",
}


def host_read(tensor: torch.Tensor, why: str):
    """``tensor.tolist()``: a value morphaug must know on the host (``why``: a key of :data:`READS`)."""
    return tensor.tolist()


def to_device(tensor: torch.Tensor, device: torch.device) -> torch.Tensor:
    """``tensor`` on ``device`` without blocking the host: a host tensor bound for a CUDA
    device is copied into pinned memory, then to the device asynchronously on the current
    stream (the caching host allocator keeps the pinned block until that copy is done)."""
    if tensor.device.type != "cpu" or torch.device(device).type == "cpu":
        return tensor.to(device)
    if torch.device(device).type == "cuda" and torch.cuda.is_available():
        tensor = tensor.pin_memory()
    return tensor.to(device, non_blocking=True)
