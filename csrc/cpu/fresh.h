#pragma once
// Fresh outputs of the CPU launchers (fresh_empty, below).
//
// On Linux, from 32 MiB (which glibc maps fresh at every allocation, where
// smaller ones mostly reuse pages already touched) a new tensor's 2 MiB-aligned
// interior is advised to take transparent huge pages where the system allows
// them (as torch does with THP_MEM_ALLOC_ENABLE=1), and the calling thread then
// writes one byte of each 2 MiB, so that each huge page is faulted in, once,
// before the kernel's threads write. Measured on a 2-core VM (32x1x512^2
// float32 grey_erosion size 3, medians of 18 calls, 2 threads):
// - without the advice: 12.3 ms (8192 faults of 4 KiB, 1.1 us each);
// - advised, first written by the kernel's two threads: 18.4 ms (4.8 ms in a
//   few runs): huge pages faulted by two threads at once were up to 30x slower
//   than by one (a fill_ of a fresh 32 MiB: 2.3-125 ms against 3.3-4.3 ms);
// - advised and faulted here first: 6.0-6.2 ms, in every run (2.85 ms into an
//   output already written); faulted so but by torch's threads in parallel,
//   7.8-106 ms.
// Only advice: where it is refused, nothing is written here.

#include <ATen/ATen.h>

#include <cstddef>
#include <cstdint>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace morphaug {

inline void fault_in_huge_pages(const at::Tensor& fresh) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr size_t kFreshBytes = size_t{32} << 20;
  constexpr uintptr_t kHuge = uintptr_t{1} << 21;
  const uintptr_t begin = reinterpret_cast<uintptr_t>(fresh.data_ptr());
  const uintptr_t first = (begin + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t last = (begin + fresh.nbytes()) & ~(kHuge - 1);
  if (fresh.nbytes() < kFreshBytes || first >= last) return;
  if (madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE) != 0) return;
  for (uintptr_t page = first; page < last; page += kHuge) {
    *reinterpret_cast<volatile unsigned char*>(page) = 0;
  }
#else
  (void)fresh;
#endif
}

// A new CPU tensor for a launcher's output, its huge pages faulted in as above.
inline at::Tensor fresh_empty(at::IntArrayRef sizes, const at::TensorOptions& options) {
  at::Tensor fresh = at::empty(sizes, options);
  fault_in_huge_pages(fresh);
  return fresh;
}

}  // namespace morphaug
