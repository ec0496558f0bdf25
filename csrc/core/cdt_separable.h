// Separable taxicab and chessboard CDT distances (no indices), used by the CPU
// and CUDA launchers of cdt (the choice: cdt_path in launch.h).
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
//
// On CUDA, where a thread owns a line and cannot wait for its neighbours'
// lines, chessboard separates as nested 1-D transforms instead: after the
// last axis, each earlier axis maps its lines by h(x) = min_i max(|x - i|,
// g(i)) (the L-infinity distance is the max over the axes), Meijster et
// al.'s lower envelope of these cones (cdt_chessboard_line).
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

// A value as the output reports it: unreached (no background) as SciPy's -1.
template <typename T>
MORPHAUG_HD int32_t cdt_reported(T value) {
  return value >= CdtUnreached<T>::value ? -1 : static_cast<int32_t>(value);
}

// One step of a taxicab sweep: a voxel takes its neighbour's value + 1 where that is smaller.
MORPHAUG_HD int32_t cdt_sweep(int32_t own, int32_t near) { return near + 1 < own ? near + 1 : own; }

// The chessboard cone of site i (value g) at x: max(|x - i|, g).
MORPHAUG_HD int32_t cdt_cone(int32_t x, int32_t i, int32_t g) {
  const int32_t away = x > i ? x - i : i - x;
  return away > g ? away : g;
}

// h(x) = min_i max(|x - i|, g(i)) in place along a line of n values g at
// line[x * stride] (unreached as in CdtUnreached<int32_t>), by the lower
// envelope of the cones (Meijster, Roerdink and Hesselink 2000, with their
// L-infinity separator). The envelope is a stack of up to n segments: the
// site, the first x it owns and the site's value (the line is overwritten
// before the backward loop is done with it), entry q of each at
// stack[q * step]. `report` writes SciPy's -1 for unreached.
MORPHAUG_HD void cdt_chessboard_line(int32_t* line, int32_t stride, int32_t n, int32_t* site,
                                     int32_t* start, int32_t* value, int64_t step, bool report) {
  int32_t q = 0;
  site[0] = 0;
  start[0] = 0;
  value[0] = line[0];
  for (int32_t u = 1; u < n; ++u) {
    const int32_t g = line[u * stride];
    while (q >= 0 && cdt_cone(start[q * step], site[q * step], value[q * step]) >
                         cdt_cone(start[q * step], u, g)) {
      --q;
    }
    if (q < 0) {  // u's cone lies below every earlier one from 0 on
      q = 0;
      site[0] = u;
      start[0] = 0;
      value[0] = g;
      continue;
    }
    // the last x where site i's cone is at most u's (i + g < 2^31: see the launchers)
    const int32_t i = site[q * step], gi = value[q * step], middle = (i + u) / 2;
    const int32_t separator = gi <= g ? (i + g > middle ? i + g : middle)
                                      : (u - gi < middle ? u - gi : middle);
    if (separator + 1 < n) {
      ++q;
      site[q * step] = u;
      start[q * step] = separator + 1;
      value[q * step] = g;
    }
  }
  for (int32_t u = n - 1; u >= 0; --u) {
    const int32_t h = cdt_cone(u, site[q * step], value[q * step]);
    line[u * stride] = report ? cdt_reported(h) : h;
    if (u == start[q * step]) --q;
  }
}

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
