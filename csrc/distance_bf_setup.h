// Host-side set-up of distance_bf, shared by its CPU and CUDA launchers.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>

#include <cstdint>
#include <optional>
#include <type_traits>
#include <vector>

#include "core/distance_bf.h"
#include "launch.h"

namespace morphaug {

struct BfSetup {
  at::Tensor mask;       // contiguous
  at::Tensor distances;  // the distances' dtype, the mask's shape
  at::Tensor indices;    // int32 (S, B, C, *spatial) when asked for, else empty
  BfGeometry geometry;
  int metric;            // BfMetric: kBfSquares for Euclidean distances it holds
  int64_t slices;        // B * C
  int64_t slice;         // voxels of a slice
};

// metric: a BfMetric (0 Euclidean, 1 taxicab, 2 chessboard); sampling (Euclidean only) per axis.
inline BfSetup bf_setup(const at::Tensor& mask, int64_t metric, std::optional<at::ArrayRef<double>> sampling,
                        bool return_indices, at::ScalarType dtype) {
  check_mask(mask, "distance_bf");
  const int rank = static_cast<int>(mask.dim() - 2);
  TORCH_CHECK(rank <= kBfMaxRank, "morphaug::distance_bf: at most ", kBfMaxRank, " spatial axes, got ", rank);
  TORCH_CHECK(metric >= 0 && metric <= 2, "morphaug::distance_bf: metric must be 0 (Euclidean), 1 (taxicab) or 2 "
              "(chessboard), got ", metric);
  const bool euclidean = metric == 0;
  TORCH_CHECK(euclidean ? dtype == at::kFloat || dtype == at::kDouble : dtype == at::kInt,
              "morphaug::distance_bf: expected float32 or float64 Euclidean distances and int32 others, got ", dtype);
  TORCH_CHECK(!sampling.has_value() || (euclidean && static_cast<int>(sampling->size()) == rank),
              "morphaug::distance_bf: sampling takes a value per spatial axis, with the Euclidean metric only");
  BfSetup setup;
  setup.mask = mask.contiguous();
  setup.distances = at::empty(mask.sizes(), mask.options().dtype(dtype));
  if (return_indices) {
    std::vector<int64_t> shape{rank};
    shape.insert(shape.end(), mask.sizes().begin(), mask.sizes().end());
    setup.indices = at::empty(shape, mask.options().dtype(at::kInt));
  } else {
    setup.indices = at::empty({0}, mask.options().dtype(at::kInt));
  }
  setup.metric = static_cast<int>(metric);
  setup.slices = mask.size(0) * mask.size(1);
  setup.slice = 1;
  BfGeometry& g = setup.geometry;
  g.rank = rank;
  for (int k = 0; k < rank; ++k) {
    g.size[k] = static_cast<int32_t>(mask.size(k + 2));
    g.sampling[k] = sampling.has_value() ? (*sampling)[k] : 1.0;
    setup.slice *= mask.size(k + 2);
    TORCH_CHECK(setup.slice < (int64_t{1} << 31), "morphaug::distance_bf: slices of ", setup.slice,
                " voxels and more do not fit its int32 indices");
  }
  int64_t squares = 0;  // the largest squared distance of a slice (each axis below 2^31 voxels)
  bool unit = true;
  for (int k = 0; k < rank; ++k) {
    squares += int64_t{g.size[k] - 1} * (g.size[k] - 1);
    unit = unit && g.sampling[k] == 1.0;
  }
  if (euclidean && unit && squares < (int64_t{1} << 31)) setup.metric = kBfSquares;
  return setup;
}

// f(std::integral_constant<int, M>{}, T{}): M the setup's BfMetric, T the distances' C type.
template <typename F>
void dispatch_bf(const BfSetup& setup, const F& f) {
  using Euclidean = std::integral_constant<int, kBfEuclidean>;
  using Squares = std::integral_constant<int, kBfSquares>;
  const bool single = setup.distances.scalar_type() == at::kFloat;
  switch (setup.metric) {
    case kBfEuclidean: single ? f(Euclidean{}, float{}) : f(Euclidean{}, double{}); break;
    case kBfSquares: single ? f(Squares{}, float{}) : f(Squares{}, double{}); break;
    case kBfTaxicab: f(std::integral_constant<int, kBfTaxicab>{}, int32_t{}); break;
    default: f(std::integral_constant<int, kBfChessboard>{}, int32_t{}); break;
  }
}

}  // namespace morphaug
