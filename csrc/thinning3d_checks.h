// The argument checks of morphaug::skeletonize_parallel, shared by its CPU and
// CUDA launchers (core/thinning3d.h has the per-voxel rules).
#pragma once

#include <ATen/core/Tensor.h>

#include "launch.h"

namespace morphaug {

inline void check_skeletonize_parallel(const at::Tensor& mask, const at::Tensor& active,
                                       at::IntArrayRef euler_changes) {
  check_mask(mask, "skeletonize_parallel");
  TORCH_CHECK(mask.dim() == 5, "morphaug::skeletonize_parallel: expected (B, C, D, H, W), got shape ", mask.sizes());
  TORCH_CHECK(active.scalar_type() == at::kBool && active.device() == mask.device() &&
                  active.sizes() == mask.sizes().slice(0, 2),
              "morphaug::skeletonize_parallel: expected active bool (B, C) on the mask's device, got ",
              active.scalar_type(), " ", active.sizes(), " on ", active.device());
  TORCH_CHECK(euler_changes.size() == 128, "morphaug::skeletonize_parallel: expected 128 euler_changes, got ",
              euler_changes.size());
}

}  // namespace morphaug
