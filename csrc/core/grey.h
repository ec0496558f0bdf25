// Grey erosion / dilation by a box, one line at a time (shared by CPU and CUDA).
//
// scipy.ndimage.grey_erosion / grey_dilation with `size` run a 1-D minimum
// (maximum) filter per axis. Along one axis of length n the line is extended
// by `left` values before and k - 1 - left after with the border mode, and
// out[i] is the extremum of the k extended values starting at i. The van
// Herk / Gil-Werman scheme splits the extended line into blocks of k: out[i]
// = pick(suffix extremum of i's block from i, prefix extremum of the next
// block up to i + k - 1), 3 comparisons per value whatever k.
#pragma once

#include <cmath>
#include <limits>
#include <type_traits>

#include "common.h"

namespace morphaug {

// scipy.ndimage border modes for filters.
enum BorderMode : int { kReflect = 0, kMirror = 1, kNearest = 2, kWrap = 3, kConstant = 4 };

// Index in [0, n) that position j of the extended line reads, or -1 (cval).
MORPHAUG_HD int64_t border_index(int64_t j, int64_t n, int mode) {
  if (j >= 0 && j < n) return j;
  switch (mode) {
    case kNearest:
      return j < 0 ? 0 : n - 1;
    case kWrap: {
      const int64_t r = j % n;
      return r < 0 ? r + n : r;
    }
    case kReflect: {  // d c b a | a b c d | d c b a
      const int64_t period = 2 * n;
      int64_t r = j % period;
      if (r < 0) r += period;
      return r < n ? r : period - 1 - r;
    }
    case kMirror: {  // d c b | a b c d | c b a
      if (n == 1) return 0;
      const int64_t period = 2 * n - 2;
      int64_t r = j % period;
      if (r < 0) r += period;
      return r < n ? r : period - r;
    }
    default:
      return -1;
  }
}

// The extremum of a and b; a NaN wins (x != x only for NaN), so a NaN anywhere
// in a window gives NaN, as the torch backend does. Selects only, no
// branches, so that loops over it vectorise: a comparison with a NaN is
// false and keeps a, and a NaN b is taken last. Nan = false is for values
// known not to be NaN (integers, or floats checked beforehand): one min / max
// instruction on floats instead of four.
template <typename T, bool Max, bool Nan = true>
MORPHAUG_HD T pick(T a, T b) {
  if constexpr (Nan) {
    const T extreme = (Max ? a < b : b < a) ? b : a;
    return b != b ? b : extreme;
  } else {
    return (Max ? b < a : a < b) ? a : b;
  }
}

// out[j] = extremum of a[j] and a[j + shift] for j in [0, count): a window of
// w values from two overlapping windows of span >= w / 2 (min and max are
// idempotent). `out` must not overlap `a`.
template <typename T, bool Max, bool Nan = true>
MORPHAUG_HD void pair_extrema(const T* __restrict__ a, T* __restrict__ out, int64_t count,
                              int64_t shift) {
  for (int64_t j = 0; j < count; ++j) out[j] = pick<T, Max, Nan>(a[j], a[j + shift]);
}

// Filters `lanes` neighbouring lines at once: element i of lane l sits at
// i * stride + l. out[i] = extremum of the extended line over [i - left,
// i - left + k) for i in [0, n). `out` must not alias `in` (it holds the block
// suffixes first); `carry` and `fill` are scratch for `lanes` values.
template <typename T, bool Max>
MORPHAUG_HD void box_lines(const T* in, T* out, int64_t n, int64_t stride, int64_t lanes,
                           int64_t k, int64_t left, int mode, T cval, T* carry, T* fill) {
  for (int64_t l = 0; l < lanes; ++l) fill[l] = cval;
  // Extended position e reads the row of input position e - left (or cval).
  auto row = [&](int64_t e) -> const T* {
    const int64_t source = border_index(e - left, n, mode);
    return source < 0 ? fill : in + source * stride;
  };
  const int64_t total = n + k - 1;
  // Backward: suffix extrema inside each block of k, kept in out (e < n) or carry.
  for (int64_t start = (total - 1) / k * k; start >= 0; start -= k) {
    const int64_t end = start + k < total ? start + k : total;
    for (int64_t e = end - 1; e >= start; --e) {
      const T* value = row(e);
      T* target = e < n ? out + e * stride : carry;
      if (e == end - 1) {
        for (int64_t l = 0; l < lanes; ++l) target[l] = value[l];
      } else {
        const T* after = e + 1 < n ? out + (e + 1) * stride : carry;
        for (int64_t l = 0; l < lanes; ++l) target[l] = pick<T, Max>(value[l], after[l]);
      }
    }
  }
  // Forward: prefix extrema inside each block in carry, combined into the
  // window that ends at e.
  for (int64_t start = 0; start < total; start += k) {
    const int64_t end = start + k < total ? start + k : total;
    for (int64_t e = start; e < end; ++e) {
      const T* value = row(e);
      if (e == start) {
        for (int64_t l = 0; l < lanes; ++l) carry[l] = value[l];
      } else {
        for (int64_t l = 0; l < lanes; ++l) carry[l] = pick<T, Max>(carry[l], value[l]);
      }
      if (e >= k - 1) {
        T* target = out + (e - k + 1) * stride;
        for (int64_t l = 0; l < lanes; ++l) target[l] = pick<T, Max>(target[l], carry[l]);
      }
    }
  }
}

// --- elements over a border-extended copy ----------------------------------
//
// grey_structure (CPU and CUDA) and grey_footprint (CUDA) first copy each
// slice extended by its borders on every axis (extended[d] = size[d] + k[d]
// - 1 positions, left[d] of them before the input); output voxel i then reads
// extended voxel extended_position(i) + the offset of each true position.

struct ExtendedShape {
  int rank;
  int64_t size[kMaxRank], extended[kMaxRank], left[kMaxRank];
  int mode[kMaxRank];
};

// The input row (C order over every axis but the last) that extended row
// `row` reads, or -1 (cval).
MORPHAUG_HD int64_t extended_source_row(const ExtendedShape& s, int64_t row) {
  int64_t source = 0, stride = 1;
  for (int d = s.rank - 2; d >= 0; --d) {
    const int64_t i = border_index(row % s.extended[d] - s.left[d], s.size[d], s.mode[d]);
    if (i < 0) return -1;
    source += i * stride;
    row /= s.extended[d];
    stride *= s.size[d];
  }
  return source;
}

// The input voxel that extended voxel `e` reads, or -1 (cval).
MORPHAUG_HD int64_t extended_source(const ExtendedShape& s, int64_t e) {
  const int last = s.rank - 1;
  const int64_t n = s.extended[last];
  const int64_t row = extended_source_row(s, e / n);
  const int64_t i = border_index(e % n - s.left[last], s.size[last], s.mode[last]);
  return row < 0 || i < 0 ? -1 : row * s.size[last] + i;
}

// The extended voxel at the position of output voxel `voxel` (C order).
MORPHAUG_HD int64_t extended_position(const ExtendedShape& s, int64_t voxel) {
  int64_t position = 0, stride = 1;
  for (int d = s.rank - 1; d >= 0; --d) {
    position += voxel % s.size[d] * stride;
    voxel /= s.size[d];
    stride *= s.extended[d];
  }
  return position;
}

// --- non-flat elements -------------------------------------------------------
//
// The torch backend's arithmetic (_grey._candidate), which is SciPy's: the
// first true position (C order) adds its weight in float64 and rounds once to
// the accumulator; the others add the weight cast to the input dtype
// (rounded) for floating inputs, or truncated toward zero for integer and
// bool inputs, which accumulate in float64 and are truncated and saturated at
// the end (_grey._from_float64).

// Accumulator: the input dtype for floating inputs, float64 for the others.
template <typename T>
using StructureAcc = std::conditional_t<std::is_integral<T>::value, double, T>;

// The weight of a true position after the first, as it is added.
template <typename T>
MORPHAUG_HD StructureAcc<T> structure_weight(double w) {
  if constexpr (std::is_integral<T>::value) {
    return trunc(w);
  } else {
    return static_cast<T>(w);
  }
}

// x + w at the first true position.
template <typename T>
MORPHAUG_HD StructureAcc<T> structure_first(T x, double w) {
  return static_cast<StructureAcc<T>>(static_cast<double>(x) + w);
}

// x + w at every true position but the first.
template <typename T>
MORPHAUG_HD StructureAcc<T> structure_candidate(T x, StructureAcc<T> w) {
  if constexpr (std::is_integral<T>::value) {
    return static_cast<double>(x) + w;
  } else {
    return static_cast<T>(x + w);
  }
}

// The accumulated extremum in the input dtype: truncated toward zero and
// saturated for integers, non-zero for bool.
template <typename T>
MORPHAUG_HD T structure_finish(StructureAcc<T> v) {
  if constexpr (std::is_same<T, bool>::value) {
    return trunc(v) != 0.0;
  } else if constexpr (std::is_integral<T>::value) {
    constexpr double lo = static_cast<double>(std::numeric_limits<T>::min());
    // The largest double that T holds (int64: 2^63 - 1024, just below 2^63).
    constexpr double hi = sizeof(T) < 8 ? static_cast<double>(std::numeric_limits<T>::max())
                                        : 9223372036854774784.0;
    v = trunc(v);
    return static_cast<T>(v < lo ? lo : (v > hi ? hi : v));
  } else {
    return v;
  }
}

// The value that never wins a minimum (Max = false) or a maximum: an
// infinity, else the dtype's extreme (the result of an empty element).
template <typename T, bool Max>
MORPHAUG_HD T extremum_identity() {
  if constexpr (std::numeric_limits<T>::has_infinity) {
    return Max ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
  } else {
    return Max ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
  }
}

}  // namespace morphaug
