// Host-side set-up of filter_components and pick_component, shared by their CPU and CUDA launchers.
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

// pick_component's setup: label's, with int32 labels, the draws checked (float32, one per
// (b, c) slice, on the mask's device), and its result: bool (B, C, *S) zeros.
struct PickSetup {
  LabelSetup labels;
  at::Tensor draw;  // contiguous (B * C,)
  at::Tensor out;
};

inline PickSetup pick_setup(const at::Tensor& mask, at::IntArrayRef structure, const at::Tensor& draw,
                            int64_t max_size) {
  TORCH_CHECK(max_size >= 0, "morphaug::pick_component: max_size must be >= 0, got ", max_size);
  PickSetup p{label_setup(mask, structure, at::kInt), at::Tensor(), at::zeros(mask.sizes(), mask.options())};
  TORCH_CHECK(draw.scalar_type() == at::kFloat && draw.device() == mask.device() && draw.dim() == 2 &&
                  draw.size(0) == mask.size(0) && draw.size(1) == mask.size(1),
              "morphaug::pick_component: expected float32 draws (B, C) = (", mask.size(0), ", ", mask.size(1),
              ") on the mask's device, got ", draw.scalar_type(), " ", draw.sizes(), " on ", draw.device());
  p.draw = draw.contiguous().view(-1);
  return p;
}

}  // namespace morphaug
