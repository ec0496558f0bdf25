// CPU helpers of the grey kernels that combine whole rows (grey.cpp,
// grey_footprint.cpp): vectorised along the rows, each called from a hot
// loop compiled for AVX2 and for the baseline (MORPHAUG_CPU_CLONES).
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>

#include "../core/grey.h"
#include "clones.h"

namespace morphaug {

// Whether values of T can be NaN: the loops' NaN-aware versions (Nan = true)
// are compiled for those types only, as integers would never run them.
template <typename T>
constexpr bool kMayBeNan = !std::numeric_limits<T>::is_integer;

// Whether any of the `count` values is NaN (never, for integers).
template <typename T>
inline MORPHAUG_CLONE_INLINE bool has_nan(const T* values, int64_t count) {
  if constexpr (!kMayBeNan<T>) {
    return false;
  } else {
    int nan = 0;
    for (int64_t j = 0; j < count; ++j) nan |= values[j] != values[j];
    return nan != 0;
  }
}

// out[j] = extremum of rows[0][j] .. rows[K - 1][j] (and of out[j] itself
// when Into), j in [0, n): blocks of 64 bytes, which vectorise at full width
// (an accumulator array per chunk of j did not: GCC spilled it), the last
// one overlapping the one before instead of a scalar tail (the values are
// the same when computed twice).
template <typename T, bool Max, bool Nan, int K, bool Into>
inline MORPHAUG_CLONE_INLINE void extrema_of(const T* const* rows, T* __restrict__ out, int64_t n) {
  static_assert(K >= 1 && K <= 8, "one to eight rows per pass");
  const T* __restrict__ r0 = rows[0];
  const T* __restrict__ r1 = rows[K > 1 ? 1 : 0];
  const T* __restrict__ r2 = rows[K > 2 ? 2 : 0];
  const T* __restrict__ r3 = rows[K > 3 ? 3 : 0];
  const T* __restrict__ r4 = rows[K > 4 ? 4 : 0];
  const T* __restrict__ r5 = rows[K > 5 ? 5 : 0];
  const T* __restrict__ r6 = rows[K > 6 ? 6 : 0];
  const T* __restrict__ r7 = rows[K > 7 ? 7 : 0];
  const auto at = [&](int64_t j) MORPHAUG_CLONE_INLINE {
    T v = r0[j];
    if constexpr (K > 1) v = pick<T, Max, Nan>(v, r1[j]);
    if constexpr (K > 2) v = pick<T, Max, Nan>(v, r2[j]);
    if constexpr (K > 3) v = pick<T, Max, Nan>(v, r3[j]);
    if constexpr (K > 4) v = pick<T, Max, Nan>(v, r4[j]);
    if constexpr (K > 5) v = pick<T, Max, Nan>(v, r5[j]);
    if constexpr (K > 6) v = pick<T, Max, Nan>(v, r6[j]);
    if constexpr (K > 7) v = pick<T, Max, Nan>(v, r7[j]);
    if constexpr (Into) v = pick<T, Max, Nan>(out[j], v);
    out[j] = v;
  };
  constexpr int64_t kBlock = sizeof(T) < 64 ? 64 / sizeof(T) : 1;
  int64_t j = 0;
  for (; j + kBlock <= n; j += kBlock) {
    for (int64_t i = 0; i < kBlock; ++i) at(j + i);
  }
  if (j < n && n >= kBlock) {
    for (int64_t i = n - kBlock; i < n; ++i) at(i);
  } else {
    for (; j < n; ++j) at(j);
  }
}

// extrema_of with K = count (1 to 8) chosen at run time.
template <typename T, bool Max, bool Nan, bool Into>
inline MORPHAUG_CLONE_INLINE void extrema_of(const T* const* rows, int64_t count, T* out, int64_t n) {
  switch (count) {
    case 1: return extrema_of<T, Max, Nan, 1, Into>(rows, out, n);
    case 2: return extrema_of<T, Max, Nan, 2, Into>(rows, out, n);
    case 3: return extrema_of<T, Max, Nan, 3, Into>(rows, out, n);
    case 4: return extrema_of<T, Max, Nan, 4, Into>(rows, out, n);
    case 5: return extrema_of<T, Max, Nan, 5, Into>(rows, out, n);
    case 6: return extrema_of<T, Max, Nan, 6, Into>(rows, out, n);
    case 7: return extrema_of<T, Max, Nan, 7, Into>(rows, out, n);
    default: return extrema_of<T, Max, Nan, 8, Into>(rows, out, n);
  }
}

// out[j] = extremum over the `count` rows of row[j], j in [0, n) (out not
// one of the rows): eight rows in the first pass, seven more in each next.
template <typename T, bool Max, bool Nan>
inline MORPHAUG_CLONE_INLINE void combine_rows(const T* const* rows, int64_t count, T* out,
                                               int64_t n) {
  extrema_of<T, Max, Nan, false>(rows, std::min<int64_t>(count, 8), out, n);
  for (int64_t r = 8; r < count; r += 7) {
    extrema_of<T, Max, Nan, true>(rows + r, std::min<int64_t>(count - r, 7), out, n);
  }
}

}  // namespace morphaug
