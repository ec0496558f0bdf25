// CPU helpers of the grey kernels that combine whole rows (grey.cpp,
// grey_footprint.cpp): vectorised along the rows, each called from a hot
// loop compiled for AVX2 and for the baseline (MORPHAUG_CPU_CLONES).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <limits>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "../core/grey.h"
#include "../launch.h"

namespace morphaug {

// A new contiguous CPU tensor like x. On Linux its 2 MiB-aligned interior is
// advised to take transparent huge pages (where the system allows them, as
// torch does with THP_MEM_ALLOC_ENABLE=1): a fresh output's first writes then
// fault 512 times less often. Measured on a 2-core VM, filling a fresh 32 MiB
// tensor took 30 ms against 8 ms for one already touched, 10-14 ms with the
// advice. Only advice: where it is refused, nothing changes.
inline at::Tensor empty_output(const at::Tensor& x) {
  at::Tensor out = at::empty_like(x, at::MemoryFormat::Contiguous);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr uintptr_t kHuge = uintptr_t{1} << 21;
  const uintptr_t begin = reinterpret_cast<uintptr_t>(out.data_ptr());
  const uintptr_t first = (begin + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t last = (begin + out.nbytes()) & ~(kHuge - 1);
  if (last > first) madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
#endif
  return out;
}

// Whether any of the `count` values is NaN (never, for integers).
template <typename T>
inline MORPHAUG_CLONE_INLINE bool has_nan(const T* values, int64_t count) {
  if constexpr (std::numeric_limits<T>::is_integer) {
    return false;
  } else {
    int nan = 0;
    for (int64_t j = 0; j < count; ++j) nan |= values[j] != values[j];
    return nan != 0;
  }
}

// out[at + j] = extremum over the rows of row[at + j], j in [0, m), m <=
// kRowChunk: the accumulator stays in registers when m is the constant kRowChunk.
constexpr int64_t kRowChunk = 32;

template <typename T, bool Max, bool Nan>
inline MORPHAUG_CLONE_INLINE void combine_chunk(const T* const* rows, int64_t count, int64_t at,
                                                int64_t m, T* out) {
  T acc[kRowChunk];
  const T* first = rows[0] + at;
  for (int64_t j = 0; j < m; ++j) acc[j] = first[j];
  for (int64_t r = 1; r < count; ++r) {
    const T* row = rows[r] + at;
    for (int64_t j = 0; j < m; ++j) acc[j] = pick<T, Max, Nan>(acc[j], row[j]);
  }
  for (int64_t j = 0; j < m; ++j) out[at + j] = acc[j];
}

// out[j] = extremum over the `count` rows of row[j], j in [0, n). The
// caller takes MORPHAUG_NO_JAM (see launch.h).
template <typename T, bool Max, bool Nan>
inline MORPHAUG_CLONE_INLINE void combine_rows(const T* const* rows, int64_t count, T* out,
                                               int64_t n) {
  int64_t at = 0;
  for (; at + kRowChunk <= n; at += kRowChunk) combine_chunk<T, Max, Nan>(rows, count, at, kRowChunk, out);
  if (at < n) combine_chunk<T, Max, Nan>(rows, count, at, n - at, out);
}

// The minimum (maximum) filter of every (b, c) slice of contiguous `x` by the
// flat footprint `f` into `out` (contiguous, x's shape and dtype, not x):
// grey_footprint's CPU kernel (grey_footprint.cpp), which grey_box runs for
// the trailing axes of a box. `op` names the caller in errors.
void footprint_filter_cpu(const at::Tensor& x, const at::Tensor& out, const FootprintSetup& f,
                          const at::Scalar& cval, bool maximum, const char* op);

}  // namespace morphaug
