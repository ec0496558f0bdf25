// Host-side set-up of find_boundaries, shared by its CPU and CUDA launchers.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>

#include <cstdint>
#include <optional>

#include "core/find_boundaries.h"
#include "id_types.h"
#include "launch.h"

namespace morphaug {

struct BoundarySetup {
  at::Tensor labels;  // contiguous
  at::Tensor out;     // bool, the labels' shape
  BoundaryGeometry geometry;
  int64_t slices;     // B * C
  int64_t slice;      // voxels of a slice
  int64_t background;  // its bits, in the labels' width
  bool has_background;
};

inline BoundarySetup boundary_setup(const at::Tensor& labels, int64_t connectivity, int64_t mode,
                                    std::optional<int64_t> background) {
  check_batched(labels, "find_boundaries");
  TORCH_CHECK(labels.scalar_type() == at::kBool || at::isIntegralType(labels.scalar_type(), false),
              "morphaug::find_boundaries: expected bool or integer labels, got ", labels.scalar_type());
  const int rank = static_cast<int>(labels.dim() - 2);
  TORCH_CHECK(rank <= kBoundaryMaxRank, "morphaug::find_boundaries: at most ", kBoundaryMaxRank,
              " spatial axes, got ", rank);
  TORCH_CHECK(connectivity >= 1 && connectivity <= rank, "morphaug::find_boundaries: connectivity must be in 1 .. ",
              rank, ", got ", connectivity);
  TORCH_CHECK(mode >= kBoundaryThick && mode <= kBoundaryOuter,
              "morphaug::find_boundaries: mode must be 0 (thick), 1 (inner) or 2 (outer), got ", mode);
  BoundarySetup setup;
  setup.labels = labels.contiguous();
  setup.out = at::empty(labels.sizes(), labels.options().dtype(at::kBool));
  setup.slices = labels.size(0) * labels.size(1);
  setup.slice = 1;
  BoundaryGeometry& g = setup.geometry;
  g.rank = rank;
  g.connectivity = static_cast<int>(connectivity);
  g.mode = static_cast<int>(mode);
  for (int k = rank - 1; k >= 0; --k) {
    g.size[k] = static_cast<int32_t>(labels.size(k + 2));
    g.stride[k] = static_cast<int32_t>(setup.slice);
    setup.slice *= labels.size(k + 2);
    TORCH_CHECK(setup.slice < (int64_t{1} << 31), "morphaug::find_boundaries: slices of ", setup.slice,
                " voxels and more do not fit its int32 indices");
  }
  setup.has_background = background.has_value();
  setup.background = background.value_or(0);
  return setup;
}

}  // namespace morphaug
