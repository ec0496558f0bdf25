// CPU launcher of morphaug::binary_erosion (core/binary_erosion.h): each step
// a row of bytes at a time along the last axis (rows in parallel): the AND of
// each flagged offset's shifted row (its negation for misses) into one row,
// the border's term on the ends that read outside.
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

#include "../core/binary_erosion.h"
#include "../launch.h"
#include "launchers.h"
#include "parallel.h"

namespace morphaug {
namespace {

// Row `row` (within its slice) of one step: `v` the slice's input, `flags`
// its offsets' flags, `acc` scratch of n bytes. Returns whether it changed.
bool erosion_row(const ErosionOffsets& o, const uint8_t* __restrict__ v, const uint8_t* __restrict__ mask,
                 const uint8_t* flags, int64_t row, bool border, bool invert, uint8_t* __restrict__ acc,
                 uint8_t* __restrict__ out) {
  const int last = o.rank - 1;
  const int32_t n = o.size[last];
  int32_t coord[kErosionMaxRank];
  int64_t q = row;
  for (int k = last - 1; k >= 0; --k) {
    coord[k] = static_cast<int32_t>(q % o.size[k]);
    q /= o.size[k];
  }
  const int64_t start = row * n;
  std::memset(acc, 1, n);
  for (int e = 0; e < o.count; ++e) {
    const int flag = flags[e];
    if (flag == 0) continue;
    bool inside = true;
    for (int k = 0; k < last; ++k) {
      inside &= static_cast<uint32_t>(coord[k] + o.step[e][k]) < static_cast<uint32_t>(o.size[k]);
    }
    const bool outside_term = erosion_term(flag, border);
    if (!inside || flag == (kErosionHit | kErosionMiss)) {
      // a constant term: false for both flags inside, the border's term outside
      if (inside || !outside_term) {
        std::memset(acc, 0, n);
        break;
      }
      continue;
    }
    int32_t lo, hi;
    erosion_row_range(n, o.step[e][last], lo, hi);
    if (!outside_term) {
      std::memset(acc, 0, lo);
      std::memset(acc + hi, 0, n - hi);
    }
    const uint8_t* __restrict__ src = v + start + o.delta[e];
    const uint8_t flip = flag == kErosionMiss ? 1 : 0;
    for (int32_t j = lo; j < hi; ++j) acc[j] &= src[j] ^ flip;
  }
  const uint8_t flip = invert ? 1 : 0;
  uint8_t* __restrict__ dst = out + start;
  const uint8_t* __restrict__ x = v + start;
  uint8_t changed = 0;
  if (mask == nullptr) {
    for (int32_t j = 0; j < n; ++j) {
      const uint8_t r = acc[j] ^ flip;
      dst[j] = r;
      changed |= r ^ x[j];
    }
  } else {
    const uint8_t* m = mask + start;
    for (int32_t j = 0; j < n; ++j) {
      const uint8_t r = m[j] ? static_cast<uint8_t>(acc[j] ^ flip) : x[j];
      dst[j] = r;
      changed |= r ^ x[j];
    }
  }
  return changed != 0;
}

}  // namespace

at::Tensor binary_erosion_cpu(const at::Tensor& input, const std::optional<at::Tensor>& mask, const at::Tensor& hit,
                              const at::Tensor& miss, at::IntArrayRef offsets, int64_t iterations, bool border,
                              bool invert) {
  const ErosionOffsets o = erosion_setup(input, mask, hit, miss, offsets, iterations);
  const at::Tensor x = input.contiguous();
  at::Tensor out = at::empty(x.sizes(), x.options());
  if (x.numel() == 0) return out;
  const at::Tensor m = mask.has_value() ? mask->contiguous() : at::Tensor();
  const at::Tensor hits = hit.contiguous(), misses = miss.contiguous();
  const int64_t slices = x.size(0) * x.size(1), count = o.count;
  const int64_t slice_numel = x.numel() / slices, n = o.size[o.rank - 1], rows = slice_numel / n;
  // each slice's flag per offset (hit and miss bits)
  std::vector<uint8_t> flags(slices * count);
  const bool* h = hits.data_ptr<bool>();
  const bool* s = misses.data_ptr<bool>();
  int64_t active = 0;
  for (int64_t i = 0; i < slices * count; ++i) {
    flags[i] = static_cast<uint8_t>((h[i] ? kErosionHit : 0) | (s[i] ? kErosionMiss : 0));
    active += flags[i] != 0;
  }
  const int64_t row_work = n * (1 + active / std::max<int64_t>(1, slices));
  const at::Tensor scratch = iterations > 1 ? at::empty(x.sizes(), x.options()) : at::Tensor();
  const uint8_t* source = reinterpret_cast<const uint8_t*>(x.data_ptr<bool>());
  const uint8_t* mk = mask.has_value() ? reinterpret_cast<const uint8_t*>(m.data_ptr<bool>()) : nullptr;
  // Steps stop at a fixpoint (a step that changes nothing): the result is its input.
  uint8_t* result = reinterpret_cast<uint8_t*>(out.data_ptr<bool>());
  for (int64_t step = 0; step < iterations; ++step) {
    uint8_t* target = reinterpret_cast<uint8_t*>(pass_target(static_cast<int>(step), static_cast<int>(iterations),
                                                             out, scratch).data_ptr<bool>());
    std::atomic<bool> changed{false};
    parallel_over(slices * rows, row_work, [&](int64_t begin, int64_t end) {
      std::vector<uint8_t> acc(n);
      bool any = false;
      for (int64_t r = begin; r < end; ++r) {
        const int64_t slice = r / rows, base = slice * slice_numel;
        any |= erosion_row(o, source + base, mk == nullptr ? nullptr : mk + base, flags.data() + slice * count,
                           r - slice * rows, border, invert, acc.data(), target + base);
      }
      if (any) changed.store(true, std::memory_order_relaxed);
    });
    source = target;
    if (!changed.load()) break;
  }
  if (source != result) std::memcpy(result, source, x.numel());
  return out;
}

}  // namespace morphaug
