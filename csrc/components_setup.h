// Host-side set-up of filter_components, shared by its CPU and CUDA launchers.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/ops/zeros.h>

#include <cstdint>
#include <vector>

#include "launch.h"

namespace morphaug {

// filter_components' setup: label's, with int32 labels (slices under 2**31 voxels), the rule's
// numbers checked, and its result: bool (B, 1, *S) zeros, the removed voxels of any channel.
struct FilterSetup {
  LabelSetup labels;
  at::Tensor out;
};

inline FilterSetup filter_setup(const at::Tensor& mask, at::IntArrayRef structure, int64_t keep, int64_t min_size) {
  TORCH_CHECK(keep >= 0 && min_size >= 0, "morphaug::filter_components: keep and min_size must be >= 0, got ",
              keep, " and ", min_size);
  FilterSetup f{label_setup(mask, structure, at::kInt), at::Tensor()};
  std::vector<int64_t> shape = mask.sizes().vec();
  shape[1] = 1;
  f.out = at::zeros(shape, mask.options());
  return f;
}

}  // namespace morphaug
