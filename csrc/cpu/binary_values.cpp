// CPU launcher of morphaug::binary_values: a binary input (0 and 1 only) as
// a bool mask, with the count of its other values, in one pass.
//
// The surface metrics take one-hot float predictions (MONAI's y_pred[:, 1:],
// often channels-last). As torch ops, the mask and the check take two
// comparisons, a second mask and two counts, each a pass over the input.
#include <ATen/core/Tensor.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/Dispatch_v2.h>
#include <ATen/TensorIterator.h>

#include <atomic>

#include "../launch.h"
#include "launchers.h"
#include "fresh.h"

namespace morphaug {
namespace {

// out[i * out_step] = values[i * step] == 1 for `count` values; returns how
// many are neither 0 nor 1. Inlined with unit steps, the loop vectorises.
template <typename T>
inline int64_t ones_of(const T* values, int64_t step, bool* out, int64_t out_step, int64_t count) {
  int64_t others = 0;
  for (int64_t i = 0; i < count; ++i) {
    const T v = values[i * step];
    const bool one = v == T(1);
    out[i * out_step] = one;
    others += !one & (v != T(0));
  }
  return others;
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> binary_values_cpu(const at::Tensor& input) {
  check_batched(input, "binary_values");
  TORCH_CHECK(!input.is_complex(), "morphaug::binary_values: expected a real tensor, got ",
              input.scalar_type());
  at::Tensor mask = fresh_empty(input.sizes(), input.options().dtype(at::kBool));
  // The iterator reads the input in place, whatever its strides (a channel
  // slice of a one-hot, channels-last or not).
  at::TensorIterator iter = at::TensorIteratorConfig()
                                .add_output(mask)
                                .add_const_input(input)
                                .check_all_same_dtype(false)
                                .resize_outputs(false)
                                .build();
  std::atomic<int64_t> others{0};
  AT_DISPATCH_V2(input.scalar_type(), "morphaug::binary_values (CPU)", AT_WRAP([&] {
    iter.for_each([&](char** data, const int64_t* strides, int64_t inner, int64_t outer) {
      constexpr int64_t kSize = sizeof(scalar_t);
      const bool contiguous = strides[0] == 1 && strides[1] == kSize;
      int64_t found = 0;
      for (int64_t j = 0; j < outer; ++j) {
        bool* out = reinterpret_cast<bool*>(data[0] + j * strides[2]);
        const char* in = data[1] + j * strides[3];
        found += contiguous ? ones_of(reinterpret_cast<const scalar_t*>(in), 1, out, 1, inner)
                            : ones_of(reinterpret_cast<const scalar_t*>(in), strides[1] / kSize, out,
                                      strides[0], inner);
      }
      others += found;
    });
  }), AT_EXPAND(AT_ALL_TYPES), AT_EXPAND(AT_BAREBONES_UNSIGNED_TYPES), at::kBool, at::kHalf, at::kBFloat16);
  return {mask, at::scalar_tensor(at::Scalar(others.load()), input.options().dtype(at::kLong))};
}

}  // namespace morphaug
