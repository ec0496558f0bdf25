#pragma once
// Fresh outputs of the CPU launchers (fresh_empty, below).
//
// An output from 32 MiB is memory that glibc maps fresh at every allocation
// (smaller ones mostly reuse pages already touched), so a kernel writing it
// first pays a page fault every 4 KiB. On Linux its 2 MiB-aligned interior is
// therefore advised to take transparent huge pages where the system allows
// them (as torch does with THP_MEM_ALLOC_ENABLE=1), and the calling thread
// writes one byte of each 2 MiB, so that each huge page is faulted in once,
// before the kernel's threads write. It is faulted here, by one thread:
// huge pages faulted by several threads at once can take many times longer
// than by one, which would cost more than the small pages saved.
// Only advice: where it is refused, nothing is written here.

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>

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

// A new contiguous CPU tensor like x, as above.
inline at::Tensor empty_output(const at::Tensor& x) {
  return fresh_empty(x.sizes(), x.options());
}

}  // namespace morphaug
