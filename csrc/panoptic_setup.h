// Host-side set-up of panoptic_confusion, shared by its CPU and CUDA launchers.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>

#include <cstdint>

#include "core/panoptic.h"
#include "id_types.h"
#include "launch.h"

namespace morphaug {

struct PanopticSetup {
  at::Tensor pred, ref;  // contiguous
  at::Tensor out;        // (B, C, 4) float32: tp, fp, fn, the sum of the matched IoUs
  int64_t slices;        // B * C
  int64_t slice;         // voxels of a slice
  float threshold;       // as torch compares a float32 IoU with it
};

inline PanopticSetup panoptic_setup(const at::Tensor& pred, const at::Tensor& ref, double threshold) {
  for (const at::Tensor* x : {&pred, &ref}) {
    check_batched(*x, "panoptic_confusion");
    TORCH_CHECK(x->scalar_type() == at::kBool || at::isIntegralType(x->scalar_type(), false),
                "morphaug::panoptic_confusion: expected bool or integer instance ids, got ", x->scalar_type());
  }
  TORCH_CHECK(pred.sizes() == ref.sizes() && pred.scalar_type() == ref.scalar_type() && pred.device() == ref.device(),
              "morphaug::panoptic_confusion: expected pred and ref of one shape, dtype and device, got ",
              pred.sizes(), " ", pred.scalar_type(), " ", pred.device(), " and ", ref.sizes(), " ",
              ref.scalar_type(), " ", ref.device());
  TORCH_CHECK(threshold >= 0.5 && threshold <= 1.0,
              "morphaug::panoptic_confusion: match_iou_threshold must be in [0.5, 1], got ", threshold);
  PanopticSetup setup;
  setup.pred = pred.contiguous();
  setup.ref = ref.contiguous();
  setup.out = at::empty({pred.size(0), pred.size(1), 4}, pred.options().dtype(at::kFloat));
  setup.slices = pred.size(0) * pred.size(1);
  setup.slice = 1;
  for (int64_t d = 2; d < pred.dim(); ++d) {
    setup.slice *= pred.size(d);
    TORCH_CHECK(setup.slice < (int64_t{1} << 31), "morphaug::panoptic_confusion: slices of ", setup.slice,
                " voxels and more do not fit its int32 counts");
  }
  setup.threshold = static_cast<float>(threshold);
  return setup;
}

}  // namespace morphaug
