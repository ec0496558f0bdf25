// Host-side set-up of euler_number, shared by its CPU and CUDA launchers.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/ops/zeros.h>

#include <cstdint>

#include "core/euler.h"
#include "launch.h"

namespace morphaug {

// The table of 16 (2-D) or 256 (3-D) configurations, by value (a kernel argument).
struct EulerTable {
  int8_t value[256];
};

struct EulerSetup {
  at::Tensor mask;  // contiguous bool
  at::Tensor out;   // (B, C) int64 zeros: the sums
  EulerShape shape;
  EulerTable table;
  int64_t slices;   // B * C
};

inline EulerSetup euler_setup(const at::Tensor& mask, at::IntArrayRef table) {
  check_mask(mask, "euler_number");
  const int64_t rank = mask.dim() - 2;
  TORCH_CHECK(rank == 2 || rank == 3, "morphaug::euler_number: expected 2 or 3 spatial axes, got ", rank);
  const int64_t codes = rank == 2 ? 16 : 256;
  TORCH_CHECK(static_cast<int64_t>(table.size()) == codes, "morphaug::euler_number: expected a table of ",
              codes, " values for ", rank, " spatial axes, got ", table.size());
  EulerSetup setup;
  for (int64_t c = 0; c < codes; ++c) {
    TORCH_CHECK(table[c] >= -128 && table[c] <= 127, "morphaug::euler_number: table values must fit int8, got ",
                table[c]);
    setup.table.value[c] = static_cast<int8_t>(table[c]);
  }
  setup.mask = mask.contiguous();
  setup.out = at::zeros({mask.size(0), mask.size(1)}, mask.options().dtype(at::kLong));
  setup.shape = EulerShape{rank == 3 ? mask.size(2) : 0, mask.size(-2), mask.size(-1)};
  setup.slices = mask.size(0) * mask.size(1);
  return setup;
}

}  // namespace morphaug
