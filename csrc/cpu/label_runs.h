#pragma once
// binary_fill_holes by the run scan (fill_holes_by_runs.cpp, label_scan.h),
// for the CPU launcher of morphaug::fill_holes (propagate.cpp).

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace morphaug {

// binary_fill_holes of each slice of the bool (B, C, *spatial) `input` with
// the centrosymmetric (3,) * S structure `structure` (its 3^S flags in C
// order, at most 8 axes, slices under 2^31 voxels): the input and every
// component of its background that no structure step leads out of the slice
// from. The background is labelled by the run scan, its runs kept with their
// labels (none written). Undefined when the run scan does not apply (no step
// along the last axis, on rows longer than one voxel).
at::Tensor fill_holes_by_runs(const at::Tensor& input, const std::vector<int64_t>& structure);

}  // namespace morphaug
