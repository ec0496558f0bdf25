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
// false and keeps a, and a NaN b is taken last.
template <typename T, bool Max>
MORPHAUG_HD T pick(T a, T b) {
  const T extreme = (Max ? a < b : b < a) ? b : a;
  return b != b ? b : extreme;
}

// out[j] = extremum of a[j] and a[j + shift] for j in [0, count): a window of
// w values from two overlapping windows of span >= w / 2 (min and max are
// idempotent). `out` must not overlap `a`.
template <typename T, bool Max>
MORPHAUG_HD void pair_extrema(const T* __restrict__ a, T* __restrict__ out, int64_t count,
                              int64_t shift) {
  for (int64_t j = 0; j < count; ++j) out[j] = pick<T, Max>(a[j], a[j + shift]);
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

}  // namespace morphaug
