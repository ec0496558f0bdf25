// The argument checks and set-up of morphaug::watershed_ift, shared by its CPU
// and CUDA launchers (core/watershed_ift.h has the flood).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <type_traits>

#include "core/watershed_ift.h"
#include "launch.h"

namespace morphaug {

struct WatershedSetup {
  WatershedOffsets offsets;
  int64_t slices;  // B * C
  int32_t size;    // voxels of a slice
  int32_t levels;  // cost levels of the input dtype: 256 (uint8) or 65536 (uint16)
};

inline WatershedSetup watershed_setup(const at::Tensor& input, const at::Tensor& markers, at::IntArrayRef offsets,
                                      at::ScalarType dtype) {
  check_batched(input, "watershed_ift");
  TORCH_CHECK(input.scalar_type() == at::kByte || input.scalar_type() == at::kUInt16,
              "morphaug::watershed_ift: expected uint8 or uint16 input, got ", input.scalar_type());
  TORCH_CHECK(at::isSignedType(markers.scalar_type()) && at::isIntegralType(markers.scalar_type(), false),
              "morphaug::watershed_ift: expected signed integer markers, got ", markers.scalar_type());
  TORCH_CHECK(at::isSignedType(dtype) && at::isIntegralType(dtype, false),
              "morphaug::watershed_ift: expected a signed integer dtype, got ", dtype);
  TORCH_CHECK(markers.sizes() == input.sizes() && markers.device() == input.device(),
              "morphaug::watershed_ift: expected markers of the input's shape and device ", input.sizes(), " ",
              input.device(), ", got ", markers.sizes(), " ", markers.device());
  TORCH_CHECK(static_cast<int64_t>(offsets.size()) <= kWatershedMaxOffsets,
              "morphaug::watershed_ift: expected at most ", kWatershedMaxOffsets, " offsets, got ", offsets.size());
  WatershedSetup s{};
  s.slices = input.size(0) * input.size(1);
  const int64_t size = s.slices == 0 ? 0 : input.numel() / s.slices;
  TORCH_CHECK(size < (int64_t{1} << 31), "morphaug::watershed_ift: slices of ", size,
              " voxels do not fit the int32 indices");
  s.size = static_cast<int32_t>(size);
  s.levels = input.scalar_type() == at::kByte ? 256 : 65536;
  s.offsets.count = static_cast<int>(offsets.size());
  for (int e = 0; e < s.offsets.count; ++e) {
    TORCH_CHECK(offsets[e] > -(int64_t{1} << 31) && offsets[e] < (int64_t{1} << 31),
                "morphaug::watershed_ift: offset ", offsets[e], " does not fit int32");
    s.offsets.step[e] = static_cast<int32_t>(offsets[e]);
  }
  return s;
}

// body(V{}, M{}, L{}) for the input's, the markers' and the result's C types.
template <typename Body>
void with_watershed_types(at::ScalarType input, at::ScalarType markers, at::ScalarType dtype, const Body& body) {
  auto with_signed = [](at::ScalarType t, const auto& next) {
    switch (t) {
      case at::kChar: return next(int8_t{});
      case at::kShort: return next(int16_t{});
      case at::kInt: return next(int32_t{});
      default: return next(int64_t{});  // kLong, the last the checks let through
    }
  };
  auto with_labels = [&](auto v, auto m) { with_signed(dtype, [&](auto l) { body(v, m, l); }); };
  auto with_markers = [&](auto v) { with_signed(markers, [&](auto m) { with_labels(v, m); }); };
  if (input == at::kByte) {
    with_markers(uint8_t{});
  } else {
    with_markers(uint16_t{});
  }
}

}  // namespace morphaug
