// The dtype-specific work of the flat grey kernels, which grey.cpp
// (grey_box) and grey_footprint.cpp dispatch to. Their loops
// (grey_box_loops.h, grey_footprint_loops.h) are instantiated for every dtype,
// twice each for the CPU clones: the files grey_passes_*.cpp compile them by
// dtype size, in parallel, and this header only declares them (with the
// plain-value set-up of grey_setup.h, so that those files need not parse ATen).
#pragma once

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <cstdint>

#include "../core/common.h"
#include "../grey_setup.h"

namespace morphaug {

// Box extents up to which grey_box combines whole rows directly (beyond, van
// Herk / Gil-Werman), and which the fused pass takes before the last axis.
constexpr int64_t kDirect = 8;

// The fused pass's view of a contiguous (B, C, *spatial) tensor: (outer,
// planes, rows, columns) on the last three spatial axes (extent 1 where the
// rank has fewer), each with its box axis (k = 1 where it is not filtered).
struct FusedBox {
  int64_t outer, nc, nb, na;
  BoxAxis c, b, a;
};

// The C++ types of the dtypes of MORPHAUG_DISPATCH_FLAT_GREY (grey_dispatch.h).
#define MORPHAUG_FLAT_GREY_TYPES(X)                                                           \
  X(bool) X(uint8_t) X(int8_t) X(int16_t) X(uint16_t) X(c10::Half) X(c10::BFloat16) X(int32_t) \
  X(uint32_t) X(float) X(int64_t) X(uint64_t) X(double)

// For each of those types T (overloads, each defined in one grey_passes_*.cpp):
// grey_box_strided_pass: one pass of the box along the axis of `lines`;
// grey_box_fused_pass: the fused pass over the last axes;
// grey_footprint_pass: the filter of `slices` slices by the footprint.
// Each writes `out` (not `in`); maximum: the maximum filter, else the minimum.
#define MORPHAUG_DECLARE_GREY_PASSES(T)                                                          \
  void grey_box_strided_pass(const T* in, T* out, const Lines& lines, const BoxAxis& a, T cval,  \
                             bool maximum);                                                      \
  void grey_box_fused_pass(const T* in, T* out, const FusedBox& f, T cval, bool maximum);        \
  void grey_footprint_pass(const T* in, T* out, int64_t slices, const FootprintSetup& f, T cval, \
                           bool maximum);
MORPHAUG_FLAT_GREY_TYPES(MORPHAUG_DECLARE_GREY_PASSES)
#undef MORPHAUG_DECLARE_GREY_PASSES

}  // namespace morphaug
