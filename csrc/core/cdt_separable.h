// Separable taxicab and chessboard CDT distances (no indices), used by the CPU
// launcher of cdt.
//
// SciPy's taxicab (faces) chamfer distance is the exact L1 distance to the
// nearest background voxel, so it separates into 1-D passes, one axis after
// the other, over int32 values with kCdtUnreached (2^30) for "no background
// yet"; values stay below 2^31 because a slice's sides sum to less than 2^30
// (checked by the launcher). On every axis, h(i) = min_j f(j) + |i - j|: a
// forward and a backward +1 sweep (the first axis starts from the mask:
// 0 on background, unreached elsewhere). Unreached values (>= 2^30) become
// SciPy's -1 after the last axis (a slice without background).
//
// Chessboard (the full 3^rank cube) is the exact L-infinity distance too: any
// shortest chessboard path may take its steps in any order, so SciPy's forward
// then backward raster pass reaches every voxel's nearest background exactly.
// Without indices it separates axis by axis from the last one: first the 1-D
// distance along the last axis (as for taxicab), then on each earlier axis k a
// forward and a backward sweep over its hyperplanes,
//   H(i) = min(H(i), box(H(i -/+ 1)) + 1),
// where box is the 3^m min over the axes after k (out-of-bounds neighbours
// ignored). By induction over the axes this is exact: a path to the nearest
// background first moves within the background's hyperplane (exact from the
// later axes) to the point from which the remaining steps all move along k.
#pragma once

#include <vector>

#include "cdt.h"
#include "common.h"

namespace morphaug {

// Unreached in a buffer of T. int16_t holds the chessboard distances of slices
// whose sizes are all below 2^14 (a distance is below the largest size), and
// unreached + size: twice the lanes of int32_t, and a native SSE2 min.
template <typename T>
struct CdtUnreached;
template <>
struct CdtUnreached<int32_t> {
  static constexpr int32_t value = kCdtUnreached;
};
template <>
struct CdtUnreached<int16_t> {
  static constexpr int16_t value = 1 << 14;
};

// Chessboard rows (values as above, in a T of CdtUnreached): min over x - 1,
// x, x + 1 of a row of n, clipped at its ends.
template <typename T>
MORPHAUG_HD void cdt_box3_row(T* __restrict__ out, const T* __restrict__ in, int64_t n) {
  if (n == 1) {
    out[0] = in[0];
    return;
  }
  out[0] = in[1] < in[0] ? in[1] : in[0];
  for (int64_t x = 1; x < n - 1; ++x) {
    const T a = in[x - 1], b = in[x], c = in[x + 1];
    const T ab = a < b ? a : b;
    out[x] = c < ab ? c : ab;
  }
  out[n - 1] = in[n - 2] < in[n - 1] ? in[n - 2] : in[n - 1];
}

// One sweep step along the last but one axis: row = min(row, box3(near) + 1).
template <typename T>
MORPHAUG_HD void cdt_box3_row_step(T* __restrict__ row, const T* __restrict__ near, int64_t n) {
  if (n == 1) {
    const T c = static_cast<T>(near[0] + 1);
    row[0] = c < row[0] ? c : row[0];
    return;
  }
  const T first = static_cast<T>((near[1] < near[0] ? near[1] : near[0]) + 1);
  row[0] = first < row[0] ? first : row[0];
  for (int64_t x = 1; x < n - 1; ++x) {
    const T a = near[x - 1], b = near[x], c = near[x + 1];
    const T ab = a < b ? a : b;
    const T m = static_cast<T>((c < ab ? c : ab) + 1);
    row[x] = m < row[x] ? m : row[x];
  }
  const T last = static_cast<T>((near[n - 2] < near[n - 1] ? near[n - 2] : near[n - 1]) + 1);
  row[n - 1] = last < row[n - 1] ? last : row[n - 1];
}

// out = min(a, b, c) elementwise over n (a box along a strided axis).
template <typename T>
MORPHAUG_HD void cdt_min3(T* __restrict__ out, const T* a, const T* b, const T* c, int64_t n) {
  for (int64_t x = 0; x < n; ++x) {
    const T ab = a[x] < b[x] ? a[x] : b[x];
    out[x] = c[x] < ab ? c[x] : ab;
  }
}

// row = min(row, min(a, b, c) + 1) elementwise over n (the last box axis fused with the step).
template <typename T>
MORPHAUG_HD void cdt_min3_step(T* __restrict__ row, const T* a, const T* b, const T* c, int64_t n) {
  for (int64_t x = 0; x < n; ++x) {
    const T ab = a[x] < b[x] ? a[x] : b[x];
    const T m = static_cast<T>((c[x] < ab ? c[x] : ab) + 1);
    row[x] = m < row[x] ? m : row[x];
  }
}

// Whether the flags of a (3,) * rank metric (C order) are exactly the faces (taxicab).
inline bool cdt_is_taxicab(const std::vector<bool>& flags, int rank) {
  for (size_t e = 0; e < flags.size(); ++e) {
    int64_t rest = static_cast<int64_t>(e), away = 0;
    for (int k = 0; k < rank; ++k) {
      away += rest % 3 != 1;
      rest /= 3;
    }
    if (flags[e] != (away <= 1)) return false;
  }
  return true;
}

}  // namespace morphaug
