// The dtypes of the flat grey kernels (grey_box, grey_footprint, CPU and
// CUDA): every real dtype, uint16 / uint32 / uint64 included, which need no
// arithmetic to be compared.
#pragma once

#include <ATen/Dispatch_v2.h>

#define MORPHAUG_DISPATCH_FLAT_GREY(TYPE, NAME, ...)                                         \
  AT_DISPATCH_V2(TYPE, NAME, AT_WRAP(__VA_ARGS__), AT_EXPAND(AT_ALL_TYPES),                 \
                 AT_EXPAND(AT_BAREBONES_UNSIGNED_TYPES), at::kBool, at::kHalf, at::kBFloat16)
